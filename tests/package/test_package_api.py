"""The package API of AOTInductor's tutorial: aot_compile + package_aoti + load_package,
file-like packages, and the Inductor options aotc translates."""
from __future__ import annotations

import io

import pytest
import torch

import aotc
from aotc.package import load_package, package_aoti
from models import GeluMLP, ReadmeModel, ScaledLinear


def _export(module, *args, dynamic_shapes=None):
    with torch.no_grad():
        return torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)


def test_tutorial_two_models_in_one_package(tmp_path):
    torch.manual_seed(0)
    m1, m2 = ReadmeModel().eval(), GeluMLP().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    ep1 = _export(m1, torch.randn(8, 10), dynamic_shapes={"x": {0: batch}})
    ep2 = _export(m2, torch.randn(4, 32))
    a1 = aotc.aot_compile(ep1, options={"aot_inductor.package": True})
    a2 = aotc.aot_compile(ep2, options={"aot_inductor.package": True})
    path = package_aoti(str(tmp_path / "my_package.pt2"), {"model1": a1, "model2": a2})
    assert path == str(tmp_path / "my_package.pt2")
    c1, c2 = load_package(path, "model1"), load_package(path, "model2")
    x1, x2 = torch.randn(3, 10), torch.randn(4, 32)
    with torch.no_grad():
        torch.testing.assert_close(c1(x1), m1(x1))
        torch.testing.assert_close(c2(x2), m2(x2))
    with pytest.raises(aotc.PackageError, match=r"no model named 'model3'.*\['model1', 'model2'\]"):
        load_package(path, "model3")
    # torch's positional order: (path, model_name, run_single_threaded, num_runners)
    assert load_package(path, "model1", False, 3).num_runners == 3
    with pytest.raises(aotc.PackageError, match="run on the CPU"):
        load_package(path, "model1", device_index=0)


def test_aot_compile_takes_a_module_and_example_args(tmp_path):
    m = GeluMLP().eval()
    art = aotc.aot_compile(m, (torch.randn(2, 32),), options={"model_name": "mlp"})
    path = package_aoti(str(tmp_path / "p.pt2"), art)
    x = torch.randn(2, 32)
    with torch.no_grad():
        torch.testing.assert_close(load_package(path, "mlp")(x), m(x))
    with pytest.raises(aotc.CompileError, match="always returns an artifact"):
        aotc.aot_compile(m, (x,), options={"aot_inductor.package": False})
    with pytest.raises(aotc.CompileError, match="always writes a package"):
        aotc.compile_and_package(torch.export.export(m, (x,)), tmp_path / "q.pt2",
                                 options={"aot_inductor.package": False})


def test_packages_written_to_and_loaded_from_bytesio():
    m = ReadmeModel().eval()
    ep = _export(m, torch.randn(4, 10))
    buf = io.BytesIO()
    assert aotc.aoti_compile_and_package(ep, package_path=buf) is buf
    x = torch.randn(4, 10)
    with torch.no_grad():
        torch.testing.assert_close(aotc.aoti_load_package(buf)(x), m(x))
    # package_aoti into a file-like too, and torch's load_package spelling from it
    other = io.BytesIO()
    package_aoti(other, {"readme": aotc.aot_compile(ep)})
    with torch.no_grad():
        torch.testing.assert_close(load_package(other, "readme")(x), m(x))
    with pytest.raises(aotc.PackageError, match=r"no model named 'nope'.*\['readme'\]"):
        load_package(other, "nope")


@pytest.mark.parametrize("freezing", [True, False])
def test_freezing_folds_subgraphs_of_weights(tmp_path, freezing):
    m = ScaledLinear().eval()
    ep = _export(m, torch.randn(4, 8))
    path = aotc.compile_and_package(ep, tmp_path / "f.pt2", options={"freezing": freezing})
    model = aotc.load_package(path)
    table = [c["name"] for c in model.package_metadata["constants"]]
    assert ("_folded.mul" in table) is freezing
    assert sorted(model.constant_names()) == sorted(m.state_dict())
    x = torch.randn(4, 8)
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))


def test_inductor_keys_with_an_aotc_meaning(tmp_path):
    m = ReadmeModel().eval()
    ep = _export(m, torch.randn(4, 10))
    path = aotc.compile_and_package(ep, tmp_path / "o.pt2", options={
        "cpp.threads": 1, "aot_inductor.metadata": {"owner": "search", "version": "7"}})
    model = aotc.load_package(path)
    assert model.package_metadata["num_threads"] == 1
    meta = model.metadata()
    assert meta["owner"] == "search" and meta["version"] == "7" and meta["AOTI_DEVICE_KEY"] == "cpu"
    assert model.get_metadata() == meta
    x = torch.randn(4, 10)
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))


@pytest.mark.parametrize("key, says", [
    ("max_autotune_gemm", "whole model's ISA level and thread count"),
    ("triton.cudagraphs", "no Triton kernels"),
    ("aot_inductor.debug_intermediate_value_printer", "aotc.debug.compare"),
    ("fx_graph_cache", "aotc has no such setting"),
    ("no_such_key", "aotc understands"),
])
def test_other_inductor_keys_say_what_aotc_does_instead(tmp_path, key, says):
    ep = _export(ReadmeModel(), torch.randn(4, 10))
    with pytest.raises(aotc.CompileError, match=says):
        aotc.compile_and_package(ep, tmp_path / "x.pt2", options={key: True})
    with pytest.raises(aotc.CompileError, match="metadata"):
        aotc.compile_and_package(ep, tmp_path / "x.pt2", options={"aot_inductor.metadata": {1: 2}})


def test_max_autotune_keeps_the_fastest_measured_choice(tmp_path, capsys):
    from aotc.autotune import thread_candidates
    from aotc.cli import main

    m = GeluMLP(sizes=(64, 256, 256, 8)).eval()
    ep = _export(m, torch.randn(32, 64))
    path = aotc.compile_and_package(ep, tmp_path / "t.pt2", options={"max_autotune": True})
    model = aotc.load_package(path)
    tuned = model.package_metadata["autotune"]
    measured = tuned["measured"]
    assert {r["num_threads"] for r in measured} == set(thread_candidates())
    assert len({r["isa"] for r in measured}) >= 1
    best = min(measured, key=lambda r: r["seconds"])
    assert tuned["chosen"] == best
    assert model.package_metadata["num_threads"] == best["num_threads"]
    assert model.package_metadata["target"]["isa"] == best["isa"]
    x = torch.randn(32, 64)
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))
    assert main(["inspect", str(path)]) == 0
    assert (f"max_autotune chose {best['isa']} with {best['num_threads']} thread(s)"
            in capsys.readouterr().out)
    # options given explicitly are not varied
    fixed = aotc.load_package(aotc.compile_and_package(
        ep, tmp_path / "f.pt2", options={"max_autotune": True, "cpp.threads": 1}))
    assert {r["num_threads"] for r in fixed.package_metadata["autotune"]["measured"]} == {1}


class Moved(torch.nn.Module):
    """w is only viewed and copied (nothing to fold: it stays swappable); v is summed."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 16))
        self.v = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return x @ self.w.t().to(torch.float32).clone() + self.v.sum()


def test_freezing_leaves_moved_weights_alone(tmp_path):
    m = Moved().eval()
    ep = _export(m, torch.randn(4, 16))
    model = aotc.load_package(aotc.compile_and_package(ep, tmp_path / "m.pt2"))
    folded = {c["name"]: c["folded_from"] for c in model.package_metadata["constants"]
              if c.get("folded_from")}
    assert list(folded.values()) == [["v"]]
    x = torch.randn(4, 16)
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))
        new_w = torch.randn(8, 16)
        model.load_constants({"w": new_w}, check_full_update=False)
        torch.testing.assert_close(model(x), x @ new_w.t() + m.v.sum())
    with pytest.raises(aotc.InputError, match=r"\['v'\] were folded"):
        model.load_constants({"v": torch.zeros(8)}, check_full_update=False)
