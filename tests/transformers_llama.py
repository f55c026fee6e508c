"""The small LLaMA of the LLM tests, through transformers' own export path
(TorchExportableModuleForDecoderOnlyLM: a static KV cache held as module state, a dynamic
sequence length), and greedy decoding of it with the prompt they share."""
from __future__ import annotations

import warnings

import torch

PROMPT = [1, 5, 9, 33, 2, 7, 11, 3]


def llama_export(strict: bool) -> torch.export.ExportedProgram:
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                         max_position_embeddings=128)
    model = LlamaForCausalLM(config).eval()
    model.generation_config = GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=64,
        cache_config={"batch_size": 1, "max_cache_len": 64})
    wrapped = TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=64)
    seq = torch.export.Dim("seq", min=1, max=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return wrapped.export(input_ids=torch.tensor([PROMPT]),
                              cache_position=torch.arange(len(PROMPT)),
                              dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
                              strict=strict)


def greedy(step, steps: int = 24) -> list[int]:
    """Prefill the prompt, then decode one token at a time, each the argmax of the last."""
    logits = step(input_ids=torch.tensor([PROMPT]), cache_position=torch.arange(len(PROMPT)))
    tokens = [int(logits[0, -1].argmax())]
    for k in range(steps - 1):
        logits = step(input_ids=torch.tensor([[tokens[-1]]]),
                      cache_position=torch.tensor([len(PROMPT) + k]))
        tokens.append(int(logits[0, -1].argmax()))
    return tokens
