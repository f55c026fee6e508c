"""Text generation with a decoder LM package exported through transformers'
TorchExportableModuleForDecoderOnlyLM (a static KV cache held as model state): the prompt in
one call (prefill), then one token per call, greedy or sampled, until a stop token or the
token budget. Numpy only; the caller tokenizes.

    from aotc.runtime.generate import generate
    model = aotc.load_package("llama.pt2")
    tokens = generate(model, [1, 5, 9], max_new_tokens=32, eos_token_id=2)

Several sequences at once: each on a state of its own (model.new_state()), from as many
threads, with load_package(..., num_runners=n) so that n of them decode at the same time:

    with model.new_state() as state:
        tokens = generate(model, prompt, 32, state=state)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError


def cache_length(model) -> int | None:
    """The longest sequence the package's cache holds, as export's bound on the length of
    `cache_position` says (the `Dim(max=max_cache_len)` of the export); None when unbounded."""
    meta = model.package_metadata
    spec = next((i for i in meta["inputs"] if i["name"] == "cache_position"), None)
    if spec is None or not spec["sizes"] or not isinstance(spec["sizes"][0], str):
        return None
    bound = meta["symbols"].get(spec["sizes"][0], [None, None])[1]
    return int(bound) if bound is not None else None


def _choose(logits: np.ndarray, temperature: float, top_k: int | None,
            rng: np.random.Generator) -> int:
    """The next token from the last position's logits: the argmax when temperature is 0,
    else a draw from softmax(logits / temperature) over the top_k most likely tokens."""
    logits = np.asarray(logits, dtype=np.float64)
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = logits / temperature
    if top_k is not None and 0 < top_k < scaled.size:
        cut = np.partition(scaled, -top_k)[-top_k]
        scaled = np.where(scaled >= cut, scaled, -np.inf)
    p = np.exp(scaled - scaled.max())
    return int(rng.choice(scaled.size, p=p / p.sum()))


def generate(model, prompt: Sequence[int], max_new_tokens: int, *,
             eos_token_id: int | Sequence[int] | None = None, temperature: float = 0.0,
             top_k: int | None = None, seed: int | None = None,
             cache_len: int | None = None, reset: bool = True, state=None) -> list[int]:
    """The new tokens after `prompt` (at most `max_new_tokens`, ending with the stop token
    when one came). The model is called as model(input_ids=[1, T], cache_position=[T]) and
    returns logits [1, T, vocab]. `reset` starts from an empty cache (reset_buffers);
    `seed` makes sampling reproducible. A sequence longer than the cache (`cache_len`, by
    default cache_length(model)) is an InputError before any call. With `state` (a
    ModelState of `model`), the calls read and update that state's cache, not the model's."""
    return list(generate_steps(model, prompt, max_new_tokens, eos_token_id=eos_token_id,
                               temperature=temperature, top_k=top_k, seed=seed,
                               cache_len=cache_len, reset=reset, state=state))


def generate_steps(model, prompt: Sequence[int], max_new_tokens: int, *,
                   eos_token_id: int | Sequence[int] | None = None, temperature: float = 0.0,
                   top_k: int | None = None, seed: int | None = None,
                   cache_len: int | None = None, reset: bool = True, state=None):
    """generate's tokens one at a time, each as soon as its call returns (for streaming);
    the arguments are checked before the first call."""
    if not prompt:
        raise InputError("generate: the prompt is empty; give at least one token id")
    if max_new_tokens < 1:
        raise InputError(f"generate: max_new_tokens must be at least 1, got {max_new_tokens}")
    limit = cache_len if cache_len is not None else cache_length(model)
    if limit is not None and len(prompt) + max_new_tokens - 1 > limit:
        raise InputError(f"generate: {len(prompt)} prompt tokens and {max_new_tokens} new ones "
                         f"need a cache of {len(prompt) + max_new_tokens - 1} positions; the "
                         f"package's holds {limit}")
    stops = set() if eos_token_id is None else (
        {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id))
    return _steps(model if state is None else state, list(prompt), max_new_tokens, stops,
                  temperature, top_k, np.random.default_rng(seed), reset)


def _steps(run, prompt: list[int], max_new_tokens: int, stops: set, temperature: float,
           top_k: int | None, rng: np.random.Generator, reset: bool):
    if reset:
        run.reset_buffers()
    ids = np.asarray([prompt], dtype=np.int64)
    positions = np.arange(len(prompt), dtype=np.int64)
    for produced in range(1, max_new_tokens + 1):
        logits = np.asarray(run(input_ids=ids, cache_position=positions))
        token = _choose(logits[0, -1], temperature, top_k, rng)
        yield token
        if token in stops:
            return
        ids = np.asarray([[token]], dtype=np.int64)
        positions = np.asarray([len(prompt) + produced - 1], dtype=np.int64)
