"""aotc/generate.hpp and examples/cpp_generate: a decoder LM package decoded from C++,
several sequences at once on states of their own, each the tokens Python's generate gives;
the LLaMA of transformers' export path, strict and not, gives eager's tokens."""
from __future__ import annotations

import subprocess

import pytest
import torch
from cpp_builds import ROOT, cmake_build

import aotc
from aotc.runtime.generate import generate
from models import export_tiny_lm


def test_cpp_generation_matches_python(tmp_path):
    program = cmake_build(ROOT / "examples" / "cpp_generate", "generate") / "generate"
    package = aotc.compile_and_package(export_tiny_lm(), package_path=tmp_path / "lm.pt2")
    model = aotc.load_package(package)
    prompt = [4, 9, 1]
    want = generate(model, prompt, 8)
    run = [str(program), str(package), "8", *map(str, prompt)]
    proc = subprocess.run([*run, "--sequences", "3"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [list(map(int, ln.split())) for ln in proc.stdout.splitlines()] == [want] * 3
    stop = want[2]
    proc = subprocess.run([*run, "--stop", str(stop)], capture_output=True, text=True, timeout=120)
    assert list(map(int, proc.stdout.split())) == want[:want.index(stop) + 1]
    proc = subprocess.run([str(program), str(package), "16", *map(str, prompt)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "needs a cache of 18 positions" in proc.stderr


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non_strict"])
def test_cpp_decodes_transformers_llama_as_eager(tmp_path, strict):
    """An 8-token prefill then 24 greedy steps from C++: the tokens eager decodes."""
    pytest.importorskip("transformers")
    from transformers_llama import PROMPT, greedy, llama_export

    program = cmake_build(ROOT / "examples" / "cpp_generate", "generate") / "generate"
    ep = llama_export(strict)
    package = aotc.compile_and_package(ep, package_path=tmp_path / "llama.pt2")
    with torch.no_grad():
        want = greedy(ep.module())
    proc = subprocess.run([str(program), str(package), "24", *map(str, PROMPT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert list(map(int, proc.stdout.split())) == want
