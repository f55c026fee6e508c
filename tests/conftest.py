"""Shared fixtures: an isolated build cache and a compile-and-load helper."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# builds go to an ignored folder of the checkout, never to the user's home cache
os.environ.setdefault("AOTC_CACHE_DIR", str(ROOT / "build" / "test-cache"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "examples"))


@pytest.fixture
def compile_model(tmp_path):
    """compile_model(module, example_args, dynamic_shapes=None, options=None) -> (ep, model)."""
    import torch

    import aotc

    def run(module, args, dynamic_shapes=None, options=None, name="model.pt2"):
        with torch.no_grad():
            ep = torch.export.export(module.eval(), tuple(args), dynamic_shapes=dynamic_shapes)
            path = aotc.compile_and_package(ep, package_path=tmp_path / name, options=options)
        return ep, aotc.load_package(path)

    return run
