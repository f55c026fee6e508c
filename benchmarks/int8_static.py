"""PT2E static int8 against float32: a ResNet-18-like CNN (224x224, batch 1) and a BERT-base
encoder layer (seq 128, batch 1), quantized with X86InductorQuantizer's default scheme
(calibrated on a few random batches), compiled by aotc with each `int8_kernels` choice,
against aotc's float32 package of the same model and eager float32.

    python benchmarks/int8_static.py                 # prints a markdown table
    python benchmarks/int8_static.py --threads 1,2 --reps 7

Columns: eager fp32; aotc fp32; aotc int8 "on" (the quantized products on the int8 GEMM,
kernels/gemm_int8.cpp); aotc int8 "off" (their dequantized float form); "auto" is one of the
two (on where the CPU has VNNI). Each thread count runs in its own process; reps alternate
the runtimes in a rotating order (int8_linear.py's timing); cells are medians of per-call
times. Needs the quant extra.
"""
from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from int8_linear import _time, model_table_main

MODELS = ("resnet18", "bert_layer")


def _model(name: str):
    import torch
    from cnn_models import ResNet18
    from transformer_models import BertLayer

    torch.manual_seed(0)
    if name == "resnet18":
        return ResNet18().eval(), (1, 3, 224, 224)
    return BertLayer().eval(), (1, 128, 768)


def _pt2e(model, example, calibration):
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(torch.export.export(model, (example,)).module(), quantizer)
        for batch in calibration:
            prepared(batch)
        return torch.export.export(convert_pt2e(prepared), (example,))


def worker(threads: int, reps: int) -> dict:
    import torch

    import aotc

    torch.set_num_threads(threads)
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            model, shape = _model(name)
            x = torch.randn(*shape)
            with torch.no_grad():
                ep32 = torch.export.export(model, (x,))
            ep8 = _pt2e(model, x, [torch.randn(*shape) for _ in range(3)])
            calls = {"eager fp32": lambda m=model, x=x: m(x)}
            for label, ep, options in (("aotc fp32", ep32, {}),
                                       ("aotc int8 on", ep8, {"int8_kernels": "on"}),
                                       ("aotc int8 off", ep8, {"int8_kernels": "off"})):
                path = aotc.compile_and_package(ep, Path(tmp) / f"{name}.pt2", options=options)
                compiled = aotc.load_package(path, num_threads=threads)
                calls[label] = lambda m=compiled, x=x: m(x)
            out[name] = _time(calls, reps)
    return out


def main() -> None:
    model_table_main(__file__, worker, 7)


if __name__ == "__main__":
    main()
