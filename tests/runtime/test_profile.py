"""The run timed step by step (ABI version 7): the library's per-kernel counters through
the Python runtime, `aotc bench --profile` on a ResNet-style network (its table and its
Chrome trace), and the C++ loader's switch."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

import aotc
from aotc.cli import main as cli_main
from aotc.errors import InputError
from models import ReadmeModel


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    """The README model with a dynamic batch."""
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(4, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("r") / "r.pt2")
    return ep, path


def benchmark_resnet18() -> torch.nn.Module:
    """benchmarks/cnn_models.py's ResNet-18-like network, the one RESULTS.md times."""
    where = Path(__file__).resolve().parents[2] / "benchmarks" / "cnn_models.py"
    spec = importlib.util.spec_from_file_location("cnn_models", where)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ResNet18(classes=10)


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    torch.manual_seed(0)
    with torch.no_grad():  # at 64 x 64: the network's kernels, at a test's cost
        ep = torch.export.export(benchmark_resnet18().eval(), (torch.randn(1, 3, 64, 64),))
    return aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("n") / "n.pt2")


def test_counts_follow_the_calls_and_their_sizes(readme):
    ep, path = readme
    model = aotc.load_package(path)
    prof = model.profiler()
    kernels = [s.kernel for s in prof.steps]
    assert len(kernels) == 2 and all(k.startswith("aotc_sgemm") for k in kernels)
    assert "aten.linear.default" in prof.steps[0].ops and "model.py" in prof.steps[0].source
    prof.read(reset=True)
    x = torch.randn(7, 10)
    model(x)  # off: nothing counted
    assert all(c.runs == 0 and c.total_ns == 0 for c in prof.read())
    assert prof.enable(True) is False
    for _ in range(3):
        torch.testing.assert_close(model(x), ep.module()(x))  # timing changes no result
    counts = prof.read(reset=True)
    assert [c.runs for c in counts] == [3, 3]
    assert all(c.total_ns >= c.last_ns > 0 for c in counts)
    # fc1 at this call's batch: 2*M*N*K, and x, weight, bias and output bytes
    assert counts[0].last_flops == 2 * 7 * 16 * 10
    assert counts[0].last_bytes == 4 * (7 * 10 + 16 * 10 + 16 + 7 * 16)
    assert [c.runs for c in prof.read()] == [0, 0]  # reset
    assert prof.enable(False) is True


def test_bench_profile_lists_kernels_and_writes_a_trace(resnet, tmp_path, capsys):
    trace = tmp_path / "n.trace.json"
    calls = 3
    assert cli_main(["bench", str(resnet), "--profile", str(trace), "--iters", str(calls),
                     "--warmup", "1"]) == 0
    printed = capsys.readouterr().out
    model = aotc.load_package(resnet)
    steps = model.profiler().steps
    assert "aotc_sconv" in {s.kernel for s in steps}
    assert f"{len(steps)} kernels, {calls} calls" in printed and "%" in printed
    assert "(outside kernels)" in printed
    events = json.loads(trace.read_text())["traceEvents"]
    call_events = [e for e in events if e.get("cat") == "call"]
    kernel_events = [e for e in events if e.get("cat") == "kernel"]
    assert len(call_events) == calls
    assert len(kernel_events) == calls * len(steps)  # one per kernel per call
    spans = [(c["ts"], c["ts"] + c["dur"]) for c in call_events]
    for begin, end in spans:  # each call holds each of its kernels, on the same clock
        inside = [e for e in kernel_events if begin <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3]
        assert sorted(e["args"]["step"] for e in inside) == list(range(len(steps)))
    assert all(e["ph"] == "X" and e["name"] == steps[e["args"]["step"]].kernel
               for e in kernel_events)
    convs = [e for e in kernel_events if e["name"] == "aotc_sconv"]
    assert convs and all(e["args"]["flops"] > 0 and e["args"]["bytes"] > 0 for e in convs)
    # run again: a trace it wrote before is replaced
    assert cli_main(["bench", str(resnet), "--profile", str(trace), "--iters", "1",
                     "--warmup", "0"]) == 0
    assert len([e for e in json.loads(trace.read_text())["traceEvents"]
                if e.get("cat") == "call"]) == 1


def test_bench_profile_never_overwrites_another_file(readme, tmp_path, monkeypatch, capsys):
    _, path = readme
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "r.trace.json"  # the default name
    mine.write_text('{"my": "notes"}')
    assert cli_main(["bench", str(path), "--profile", "--iters", "2"]) == 1
    assert "not an aotc trace" in capsys.readouterr().err
    assert mine.read_text() == '{"my": "notes"}'
    with pytest.raises(InputError, match="one thread count"):
        from aotc.cli.profile import cmd_profile

        class Args:
            threads, profile, package, model = "1,2", str(tmp_path / "t.json"), str(path), None

        cmd_profile(Args, None)
