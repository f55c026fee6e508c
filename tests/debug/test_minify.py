"""`aotc minify` shrinks a 30+ node program to the node of a planted bug (a wrong lowering,
then a compile error) and writes a repro script that still fails. The faults are planted
in a subprocess, so this process's registry stays intact."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deep_model import make

HERE = Path(__file__).resolve().parent


def _run(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HERE / "plant.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _nodes(script: str) -> int:
    forward = script.split("def forward", 1)[1].split("\n\n", 1)[0]
    return len(re.findall(r"torch\.ops\.", forward))


@pytest.mark.parametrize("fault, expect", [
    ("relu-as-abs", "differs from eager"),
    ("tanh-fails", "planted compile error lowering aten.tanh.default"),
])
def test_minify_finds_the_planted_fault(tmp_path, fault, expect):
    m, args = make()
    ep = torch.export.export(m, args)
    assert len([n for n in ep.graph.nodes if n.op == "call_function"]) >= 30
    torch.export.save(ep, tmp_path / "prog.pt2")
    repro = tmp_path / "repro.py"
    done = _run(fault, "--", "minify", str(tmp_path / "prog.pt2"), "-o", str(repro), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "minimal failing subgraph" in done.stdout
    script = repro.read_text()
    assert 1 <= _nodes(script) <= 3, script
    op = "relu" if fault == "relu-as-abs" else "tanh"
    assert f"torch.ops.aten.{op}.default" in script
    assert "import aotc" in script and "from deep_model" not in script
    # the repro fails with the fault planted, and passes without it
    still = _run(fault, "--script", str(repro), cwd=tmp_path)
    assert still.returncode == 1 and expect in still.stdout, still.stdout + still.stderr
    fixed = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True,
                           timeout=600, cwd=tmp_path)
    assert fixed.returncode == 0 and "failure is fixed" in fixed.stdout, fixed.stdout + fixed.stderr


def test_minify_refuses_a_program_that_works(tmp_path):
    from aotc.cli import main

    m, args = make()
    torch.export.save(torch.export.export(m, args), tmp_path / "ok.pt2")
    assert main(["minify", str(tmp_path / "ok.pt2"), "-o", str(tmp_path / "r.py")]) == 1
