"""The command line: compile (a saved export or FILE.py:FACTORY), inspect, run, bench, ops."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from aotc.cli import main
from aotc.package.format import PackageReader
from aotc.target import target_for
from models import ReadmeModel

FACTORY = '''
import torch
from model import Model  # the README's model


def make():
    torch.manual_seed(0)
    return Model()
'''


def test_compile_info_and_ops(tmp_path, capsys):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    torch.export.save(ep, tmp_path / "prog.pt2")
    out = tmp_path / "model.pt2"
    assert main(["compile", str(tmp_path / "prog.pt2"), "-o", str(out),
                 "--option", "num_threads=1"]) == 0
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    # the weight's stored size follows the host's GEMM panel width (stored prepacked)
    stored = sum(c["nbytes"] for c in PackageReader(out).metadata("model")["constants"])
    assert stored >= 772
    assert "float32[2, 10]" in text and f"4 constants, {stored} bytes" in text
    assert main(["ops"]) == 0
    assert "aten.linear.default" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "missing.pt2")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_readme_model_compile_inspect_run_bench(tmp_path, capsys):
    (tmp_path / "factory.py").write_text(FACTORY)
    pkg = tmp_path / "model.pt2"
    assert main(["compile", f"{tmp_path / 'factory.py'}:make", "--input", "x=8,10",
                 "--dynamic", "x:0=batch:1:1024", "-o", str(pkg),
                 "--option", "aot_inductor.metadata={\"team\": \"ranking\"}"]) == 0
    assert "compiled in" in capsys.readouterr().out

    assert main(["inspect", str(pkg)]) == 0
    text = capsys.readouterr().out
    for want in ("model 'model'", "float32[s", "symbolic dims", "1024", "fc1.weight",
                 "fc2.bias", "4 constants", "x86-64", "torch 2", "import", "codegen",
                 "team=ranking"):
        assert want in text, (want, text)

    x = np.random.default_rng(1).standard_normal((5, 10)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(pkg), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    text = capsys.readouterr().out
    assert "output_0" in text and "[5, 1]" in text
    torch.manual_seed(0)
    from model import Model

    with torch.no_grad():
        want = Model().eval()(torch.from_numpy(x))
    with np.load(tmp_path / "out.npz") as got:
        torch.testing.assert_close(torch.from_numpy(got["output_0"]), want)

    assert main(["run", str(pkg), "--dim", "x:0=3"]) == 0  # random inputs by the spec
    assert "[3, 1]" in capsys.readouterr().out
    assert main(["run", str(pkg), "--random", "x=2000,10"]) == 1  # outside the batch range
    assert "[0, 1024]" in capsys.readouterr().err

    assert main(["bench", str(pkg), "--threads", "1,2", "--iters", "30", "--warmup", "3",
                 "--dim", "x:0=16"]) == 0
    text = capsys.readouterr().out
    assert "p50 ms" in text and "p99 ms" in text and "calls/s" in text and "30/30" in text
    rows = [line for line in text.splitlines() if line.strip().startswith(("│", "|"))]
    assert any(r.split("│")[1].strip() == "2" for r in rows if "│" in r), text


class KeywordInputs(torch.nn.Module):
    def forward(self, x, *, scale, shift):
        return x * scale + shift


def test_run_bench_and_profile_a_model_exported_with_keyword_inputs(tmp_path, capsys):
    """Inputs given by name reach a model exported with keyword arguments as keywords."""
    args, kwargs = (torch.randn(3, 4),), {"scale": torch.randn(4), "shift": torch.randn(3, 4)}
    with torch.no_grad():
        ep = torch.export.export(KeywordInputs(), args, kwargs)
    torch.export.save(ep, tmp_path / "prog.pt2")
    pkg = tmp_path / "model.pt2"
    assert main(["compile", str(tmp_path / "prog.pt2"), "-o", str(pkg)]) == 0
    np.savez(tmp_path / "in.npz", x=args[0].numpy(), scale=kwargs["scale"].numpy(),
             shift=kwargs["shift"].numpy())
    assert main(["run", str(pkg), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as got:
        torch.testing.assert_close(torch.from_numpy(got["output_0"]), ep.module()(*args, **kwargs))
    capsys.readouterr()
    assert main(["bench", str(pkg), "--iters", "5", "--warmup", "1", "--threads", "1"]) == 0
    assert "p50 ms" in capsys.readouterr().out
    trace = tmp_path / "trace.json"
    assert main(["bench", str(pkg), "--iters", "3", "--warmup", "1", "--threads", "1",
                 "--profile", str(trace)]) == 0
    assert trace.exists() and "(outside kernels)" in capsys.readouterr().out


def test_compile_errors_name_what_is_wrong(tmp_path, capsys):
    (tmp_path / "factory.py").write_text(FACTORY)
    assert main(["compile", f"{tmp_path / 'factory.py'}:make", "-o", str(tmp_path / "m.pt2")]) == 1
    assert "--input NAME=D0,D1" in capsys.readouterr().err
    assert main(["compile", f"{tmp_path / 'factory.py'}:make", "--input", "y=2,10",
                 "-o", str(tmp_path / "m.pt2")]) == 1
    assert "forward takes ['x']" in capsys.readouterr().err


def test_ops_table_in_docs_is_current():
    from pathlib import Path

    from aotc.cli import ops_markdown

    table = Path(__file__).resolve().parent.parent / "docs" / "OPS.md"
    assert table.read_text() == ops_markdown(), "regenerate: aotc ops --markdown > docs/OPS.md"


def test_prepare_builds_the_kernels(capsys):
    assert main(["prepare"]) == 0
    assert "aotc kernels for" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which(target_for("neon").compiler) is None,
                    reason="the aarch64 cross compiler (g++-aarch64-linux-gnu) is not installed")
def test_compile_for_aarch64(tmp_path, capsys):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    torch.export.save(ep, tmp_path / "prog.pt2")
    out = tmp_path / "a64.pt2"
    assert main(["compile", str(tmp_path / "prog.pt2"), "-o", str(out), "--target", "aarch64"]) == 0
    assert PackageReader(out).metadata("model")["target"]["arch"] == "armv8-a"
    assert main(["compile", str(tmp_path / "prog.pt2"), "-o", str(out), "--target", "sparc"]) == 1
    assert "unknown target 'sparc'" in capsys.readouterr().err
