"""Code-shape checks that run with the tests: ruff everywhere, mypy on the typed core."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPED = ["src/aotc/ir", "src/aotc/lowering", "src/aotc/scheduler"]  # STYLE.md: mypy here


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} is not installed (it comes with the dev extras)")
    return path


def test_ruff():
    proc = subprocess.run([_tool("ruff"), "check", "src", "tests", "examples", "benchmarks", "setup.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_on_the_typed_core():
    proc = subprocess.run([_tool("mypy"), *TYPED], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
