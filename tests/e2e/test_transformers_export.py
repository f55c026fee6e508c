"""Decoder LMs through transformers' own export path: TorchExportableModuleForDecoderOnlyLM
wraps a LLaMA with a static KV cache held as module state, exported with a dynamic sequence
length, strict and not; one package serves the prefill and every decode step, and greedy
decoding gives eager's tokens exactly."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from numpy_only import BLOCK_TORCH
from transformers_llama import PROMPT, greedy, llama_export

import aotc
from aotc.runtime.generate import cache_length, generate

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non_strict"])
def test_prefill_and_decode_give_eagers_tokens(tmp_path, strict):
    ep = llama_export(strict)
    path = aotc.compile_and_package(ep, package_path=tmp_path / "llama.pt2")
    compiled = aotc.load_package(path)
    # the cache (keys, values and their counters) is the model's state, one per layer
    assert len(compiled.buffer_names()) == 12
    with torch.no_grad():
        tokens = greedy(compiled)
        assert tokens == greedy(ep.module())
    compiled.reset_buffers()  # a new sequence on the same loaded model starts afresh
    assert greedy(compiled, 6) == tokens[:6]


@pytest.fixture(scope="module")
def llama_package(tmp_path_factory):
    ep = llama_export(strict=False)
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("llm") / "l.pt2")
    with torch.no_grad():
        return path, greedy(ep.module())


def test_generate_greedy_stop_and_budget(llama_package):
    path, want = llama_package
    model = aotc.load_package(path)
    assert cache_length(model) == 64
    assert generate(model, PROMPT, 24) == want
    assert generate(model, PROMPT, 24, eos_token_id=want[3]) == want[:want.index(want[3]) + 1]
    with pytest.raises(aotc.InputError, match="need a cache of 67 positions"):
        generate(model, PROMPT, 60)
    with pytest.raises(aotc.InputError, match="prompt is empty"):
        generate(model, [], 4)


def test_generate_sampling_is_reproducible(llama_package):
    model = aotc.load_package(llama_package[0])
    runs = [generate(model, PROMPT, 12, temperature=0.9, top_k=50, seed=s) for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert all(0 <= t < 512 for t in runs[2])


def test_generate_without_torch(llama_package):
    path, want = llama_package
    script = BLOCK_TORCH + textwrap.dedent(f"""
        from aotc.runtime import load_package
        from aotc.runtime.generate import generate
        model = load_package(sys.argv[1])
        print(json.dumps([generate(model, {PROMPT}, 24), "torch" in sys.modules]))
    """)
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [want, False]


def test_sequences_on_states_of_their_own_decode_at_once(llama_package):
    """Two prompts generated at the same time, each on its own state, from two threads on
    two runners: each gets the tokens it gets alone; the model's own state is untouched."""
    import threading

    path, want = llama_package
    model = aotc.load_package(path, num_runners=2, max_states=2)
    other_prompt = [4, 8, 15, 16]
    alone = generate(model, other_prompt, 20)
    model.reset_buffers()
    before = {n: model.get_buffer(n).clone() for n in model.buffer_names()}
    results: dict[str, list[int]] = {}

    def run(key, prompt, steps):
        with model.new_state() as state:
            results[key] = generate(model, prompt, steps, state=state)

    threads = [threading.Thread(target=run, args=("a", PROMPT, 24)),
               threading.Thread(target=run, args=("b", other_prompt, 20))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": want, "b": alone}
    for name, value in before.items():
        torch.testing.assert_close(model.get_buffer(name), value)
    assert model.states_in_use == 0
