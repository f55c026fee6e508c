"""A package loads and runs in a process where torch cannot be imported."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import torch
from numpy_only import BLOCK_TORCH

import aotc
from models import ReadmeModel

SCRIPT = BLOCK_TORCH + textwrap.dedent("""
    import numpy as np
    from aotc.runtime import load_package
    model = load_package(sys.argv[1])
    x = np.load(sys.argv[2])
    y = model(x)
    np.save(sys.argv[3], y)
    print(json.dumps({"torch_loaded": "torch" in sys.modules, "sympy_loaded": "sympy" in sys.modules,
                      "type": type(y).__name__}))
""")


def test_package_runs_without_torch(tmp_path):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(4, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    x = np.random.default_rng(1).standard_normal((7, 10), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, path, str(tmp_path / "x.npy"),
                           str(tmp_path / "y.npy")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"torch_loaded": False, "sympy_loaded": False, "type": "ndarray"}
    y = np.load(tmp_path / "y.npy")
    torch.testing.assert_close(torch.from_numpy(y), ep.module()(torch.from_numpy(x)))


def test_read_only_cache_falls_back_to_temp(tmp_path, monkeypatch):
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("AOTC_CACHE_DIR", str(blocked))
    model = aotc.load_package(path)
    x = np.float32(np.random.default_rng(0).standard_normal((2, 10)))
    torch.testing.assert_close(torch.from_numpy(model(x)), ep.module()(torch.from_numpy(x)))
