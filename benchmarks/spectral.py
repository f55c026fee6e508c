"""The complex and FFT models of benchmarks/spectral_models.py against eager: Whisper's
log-mel front end over 30 s of 16 kHz audio (stft of 3001 frames, 80 mels) and a LLaMA
block with complex rotary embeddings (dim 768, 12 heads / 4 KV heads, seq 256), batch 1.

    python benchmarks/spectral.py                  # prints markdown tables
    python benchmarks/spectral.py --threads 1,2 --reps 11

Each thread count runs in its own process (OMP_NUM_THREADS set before torch loads); reps
alternate the runtimes in a rotating order (int8_linear.py's timing), each cell the median
of per-call times; ratios are aotc's time over the cell's.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from int8_linear import _time, model_table_main

MODELS = ("log_mel_30s", "rotary_block_256")


def _model(name: str):
    import torch
    from spectral_models import LogMel, RotaryBlock

    torch.manual_seed(0)
    if name == "log_mel_30s":
        return LogMel().eval(), torch.randn(1, 30 * 16000)
    return RotaryBlock().eval(), torch.randn(1, 256, 768)


def worker(threads: int, reps: int) -> dict:
    import torch

    import aotc

    torch.set_num_threads(threads)
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            model, x = _model(name)
            with torch.no_grad():
                ep = torch.export.export(model, (x,))
            path = aotc.compile_and_package(ep, Path(tmp) / f"{name}.pt2")
            compiled = aotc.load_package(path, num_threads=threads)
            with torch.no_grad():
                torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
            out[name] = _time({"eager fp32": lambda m=model, x=x: m(x),
                               "aotc fp32": lambda m=compiled, x=x: m(x)}, reps)
    return out


def main() -> None:
    model_table_main(__file__, worker, 11)


if __name__ == "__main__":
    main()
