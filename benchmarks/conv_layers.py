"""Convolution speed at one thread: the ResNet-18- and MobileNetV2-shaped networks of
cnn_models.py whole, and each distinct convolution of them (with the activation that follows
it) alone, aotc against eager torch. Timed by the calling thread's CPU time (robust on a
loaded machine), interleaved repetitions, medians.

    python benchmarks/conv_layers.py [--layers] [--models resnet18 mobilenetv2] [--reps 7] [--ort]
                                     [--match REGEX] [--no-model]

--match keeps the layers whose description ("576->576 k3 s2 g576 14x14") matches REGEX (a
search); --no-model skips the whole network.

--ort adds ONNX Runtime (one intra-op thread, so it runs on the calling thread) as a third
contender, timed the same way.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cnn_models  # noqa: E402

import peers  # noqa: E402

nn = torch.nn
MODELS = {"resnet18": cnn_models.ResNet18, "mobilenetv2": cnn_models.MobileNetV2}


def compiled(model: nn.Module, x: torch.Tensor):
    import aotc

    ep = torch.export.export(model, (x,))
    path = Path(tempfile.mkdtemp()) / "m.pt2"
    aotc.compile_and_package(ep, package_path=str(path))
    return aotc.load_package(str(path), num_threads=1)


def cpu_ms(fn, x, iters: int) -> float:
    t = time.thread_time()
    for _ in range(iters):
        fn(x)
    return (time.thread_time() - t) / iters * 1e3


def ort_compiled(model: nn.Module, x: torch.Tensor):
    art = peers.compile_ort(Path(tempfile.mkdtemp()), "m", model, (x,))
    return peers.load_peer("ort", art["artifact"], 1)


def compare(model: nn.Module, x: torch.Tensor, reps: int, budget_ms: float = 150.0,
            ort: bool = False):
    model.eval()
    fns = {"eager": model, "aotc": compiled(model, x)}
    if ort:
        fns["ort"] = ort_compiled(model, x)
    with torch.no_grad():
        for k in fns:
            if k != "eager":
                torch.testing.assert_close(fns[k](x), model(x), rtol=1e-3, atol=1e-3)
        once = max(cpu_ms(fns["eager"], x, 1), 1e-3)
        iters = max(1, int(budget_ms / once))
        samples: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(reps):
            for k, f in fns.items():
                samples[k].append(cpu_ms(f, x, iters))
    return {k: statistics.median(v) for k, v in samples.items()}


class ConvAct(nn.Module):
    def __init__(self, conv: nn.Conv2d, act: nn.Module | None):
        super().__init__()
        self.conv, self.act = conv, act

    def forward(self, x):
        y = self.conv(x)
        return self.act(y) if self.act is not None else y


def distinct_convs(model: nn.Module, x: torch.Tensor):
    """(description, module, input) of each distinct convolution shape, with the ReLU/ReLU6
    that follows it in the network when there is one."""
    seen, out, inputs = set(), [], {}
    def keep(m, a, r):
        inputs.setdefault(m, a[0])

    hooks = [m.register_forward_hook(keep)
             for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    for m, xin in inputs.items():
        key = (tuple(xin.shape), m.out_channels, m.kernel_size, m.stride, m.padding, m.groups)
        if key in seen:
            continue
        seen.add(key)
        desc = (f"{m.in_channels}->{m.out_channels} k{m.kernel_size[0]} s{m.stride[0]} "
                f"g{m.groups} {xin.shape[2]}x{xin.shape[3]}")
        act = nn.ReLU6() if m.groups > 1 or m.kernel_size[0] == 1 else nn.ReLU()
        out.append((desc, ConvAct(m, act), xin.clone()))
    return out


def describe(r: dict[str, float]) -> str:
    text = f"eager {r['eager']:7.3f}  aotc {r['aotc']:7.3f}  ratio {r['aotc'] / r['eager']:.2f}"
    if "ort" in r:
        text += f"  ort {r['ort']:7.3f}  aotc/ort {r['aotc'] / r['ort']:.2f}"
    return text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--ort", action="store_true")
    ap.add_argument("--match", default="")
    ap.add_argument("--no-model", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for name in args.models:
        model = MODELS[name]().eval()
        x = torch.randn(1, 3, 224, 224)
        if not args.no_model:
            r = compare(model, x, args.reps, ort=args.ort)
            print(f"{name}: {describe(r)}", flush=True)
        if not args.layers:
            continue
        for desc, m, xin in distinct_convs(model, x):
            if not re.search(args.match, desc):
                continue
            r = compare(m, xin, args.reps, budget_ms=40.0, ort=args.ort)
            print(f"  {desc:32s} {describe(r)}", flush=True)


if __name__ == "__main__":
    main()
