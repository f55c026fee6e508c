"""benchmarks/spectral_models.py's models, the ones benchmarks/spectral.py times, against
eager and numpy-only: Whisper's log-mel front end (stft over a hann window, a mel matrix,
log10) on odd lengths of audio, and a LLaMA block with complex rotary embeddings
(view_as_complex times polar frequencies) at a dynamic sequence length."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc


def spectral_models():
    where = Path(__file__).resolve().parents[2] / "benchmarks" / "spectral_models.py"
    spec = importlib.util.spec_from_file_location("spectral_models", where)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def log_mel(tmp_path_factory):
    torch.manual_seed(0)
    model = spectral_models().LogMel(n_mels=40).eval()
    audio = torch.randn(2, 4001)
    with torch.no_grad():
        ep = torch.export.export(model, (audio,))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("m") / "m.pt2")
    return model, path


@pytest.fixture(scope="module")
def rotary_block(tmp_path_factory):
    torch.manual_seed(1)
    model = spectral_models().RotaryBlock(dim=96, heads=4, kv_heads=2, hidden=160,
                                          max_seq=48).eval()
    x = torch.randn(1, 13, 96)
    seq = torch.export.Dim("seq", min=2, max=48)
    with torch.no_grad():
        ep = torch.export.export(model, (x,), dynamic_shapes=({1: seq},))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("r") / "r.pt2")
    return model, path


def test_log_mel_matches_eager(log_mel):
    model, path = log_mel
    compiled = aotc.load_package(path)
    for scale in (1.0, 0.01):  # quiet audio: energies near the clamp
        audio = torch.randn(2, 4001) * scale
        with torch.no_grad():
            torch.testing.assert_close(compiled(audio), model(audio), rtol=1e-4, atol=1e-4)


def test_rotary_block_matches_eager(rotary_block):
    model, path = rotary_block
    compiled = aotc.load_package(path)
    for seq in (13, 2, 48):
        x = torch.randn(1, seq, 96)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("which", ["log_mel", "rotary_block"])
def test_numpy_only(which, request, tmp_path):
    model, path = request.getfixturevalue(which)
    xs = ([torch.randn(2, 4001)] if which == "log_mel"
          else [torch.randn(1, 5, 96), torch.randn(1, 31, 96)])
    results = run_without_torch(path, [[x.numpy()] for x in xs], tmp_path)
    for x, outs in zip(xs, results):
        with torch.no_grad():
            np.testing.assert_allclose(outs[0], model(x).numpy(), rtol=1e-4, atol=1e-4)
