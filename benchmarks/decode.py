"""Decode step of a ~124M-parameter LLaMA-style LM (random weights, built from a config)
through transformers' export path (TorchExportableModuleForDecoderOnlyLM, static KV cache),
in float32, bfloat16 and with int4 weights (torchao IntxWeightOnlyConfig, group 32), against
eager transformers, the peers (float32: OpenVINO and ExecuTorch with XNNPACK from the strict
export, as non-strict export's program fails torch's own run_decompositions, which both
call; ONNX Runtime on the step exported with the cache as explicit inputs and outputs; int4:
each peer's own 4-bit weights of that float32 model, group 32, see int4_peers) and the
machine's memory bandwidth.

    python benchmarks/decode.py [--threads 1,2] [--rounds 3] [--variants fp32,bf16,int4]

Every runtime runs alone in its own process (this script again, with --worker): it loads
the model, times the prefill of a 128-token prompt into an empty cache (the time to the
first token, 5 times, the state reset before each), then prefills 16 tokens (its logits
checked, see _check) and times `--steps` decode steps (one token each, the cache
position advancing), reporting medians.
Rounds rotate the order of the runs. The bandwidth limit is the bytes one step reads (every
weight but the embedding table, of which it reads one row, and the whole static cache, which
the attention reads at every step) over the STREAM-triad bandwidth (a = b + s*c, 3 x 256
MB, torch at the same thread count) measured in the same run, in its own process too.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = 256
PROMPT = 16  # the prompt before the timed decode steps
LONG_PROMPT = 128  # the prompt whose prefill is the time to the first token
CONFIG = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
              num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=512)


def build(variant: str):
    """The eager LM of this variant, wrapped with its static cache (same weights each time)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleForDecoderOnlyLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    if variant == "bf16":
        model = model.to(torch.bfloat16)
    elif variant == "int4":
        from torchao.quantization import IntxWeightOnlyConfig, quantize_
        from torchao.quantization.granularity import PerGroup

        quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)))
    model.generation_config = GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=CACHE,
        cache_config={"batch_size": 1, "max_cache_len": CACHE})
    return model, TorchExportableModuleForDecoderOnlyLM(model, batch_size=1, max_cache_len=CACHE)


def step_bytes(variant: str) -> int:
    """Bytes one decode step reads: the weights but the embedding table (one row of it), and
    the whole K and V cache of every layer."""
    h, f, v, n = (CONFIG[k] for k in ("hidden_size", "intermediate_size", "vocab_size",
                                      "num_hidden_layers"))
    kv = h // CONFIG["num_attention_heads"] * CONFIG["num_key_value_heads"]
    linear = n * (2 * h * h + 2 * h * kv + 3 * h * f) + h * v  # layers' projections, the head
    norms = (2 * n + 1) * h
    # int4: two values a byte, with a float scale and an int8 zero point per 32 values
    per_value = {"fp32": 4.0, "bf16": 2.0, "int4": 0.5 + (4.0 + 1.0) / 32}[variant]
    act = 2 if variant == "bf16" else 4
    cache = n * 2 * CACHE * kv * act
    return int(linear * per_value + norms * act + h * act + cache)


def export(variant: str, strict: bool, wrapped=None):
    """The wrapped LM of this variant (or `wrapped`, built by the caller) exported with a
    dynamic sequence length."""
    import torch

    wrapped = wrapped if wrapped is not None else build(variant)[1]
    seq = torch.export.Dim("seq", min=1, max=CACHE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return wrapped.export(input_ids=torch.tensor([[1, 2, 3, 4]]),
                              cache_position=torch.arange(4),
                              dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}},
                              strict=strict)


def prefill_inputs():
    import numpy as np

    return np.arange(1, PROMPT + 1, dtype=np.int64)[None], np.arange(PROMPT, dtype=np.int64)


def explicit_cache_step(model):
    """The LM as one step whose KV cache is explicit inputs and outputs, as ONNX Runtime
    takes it (ONNX has no in-place state): (input_ids, cache_position, [k0, v0, k1, ...])
    -> (logits, k0', v0', ...), transformers' own StaticCache filled from the inputs."""
    import torch
    from transformers import StaticCache

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, cache_position, kv):
            cache = StaticCache(config=self.model.config, max_cache_len=CACHE)
            for i, layer in enumerate(cache.layers):
                layer.keys, layer.values = kv[2 * i].clone(), kv[2 * i + 1].clone()
                layer.cumulative_length = cache_position[:1].clone()
                layer.max_batch_size, layer.num_heads = 1, kv[0].shape[1]
                layer.device, layer.dtype, layer.is_initialized = kv[0].device, kv[0].dtype, True
            out = [self.model(input_ids=input_ids, cache_position=cache_position, cache=cache,
                              use_cache=True).logits]
            for layer in cache.layers:
                out += [layer.keys, layer.values]
            return tuple(out)
    return Step().eval()


def eager_prefill(model):
    """Eager transformers' logits of the prefill on a static cache, as a numpy array."""
    import torch
    from transformers import StaticCache

    ids, pos = prefill_inputs()
    with torch.inference_mode():
        return model(input_ids=torch.from_numpy(ids), cache_position=torch.from_numpy(pos),
                     cache=StaticCache(config=model.config, max_cache_len=CACHE),
                     use_cache=True).logits.float().numpy()


def empty_cache(dtype="float32") -> list:
    import numpy as np

    heads = CONFIG["num_key_value_heads"]
    dim = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    return [np.zeros((1, heads, CACHE, dim), dtype) for _ in range(2 * CONFIG["num_hidden_layers"])]


def compile_all(variant: str, folder: Path) -> dict[str, dict]:
    """runtime -> {artifact, compile_s}: aotc's package (non-strict export); for float32
    OpenVINO's IR and ExecuTorch's XNNPACK program (strict export) and ONNX Runtime's model,
    for int4 each peer's own 4-bit weights of the float32 model (int4_peers); eager's prefill
    logits for the workers' check."""
    import numpy as np
    import torch

    import aotc

    ep = export(variant, strict=False)
    ids, pos = prefill_inputs()
    with torch.no_grad():
        np.save(folder / f"expected_{variant}.npy", ep.module()(
            input_ids=torch.from_numpy(ids), cache_position=torch.from_numpy(pos)).float().numpy())
    t0 = time.perf_counter()
    out = {"aotc": {"artifact": str(aotc.compile_and_package(
        ep, package_path=folder / f"decode_{variant}.pt2")), "compile_s": time.perf_counter() - t0}}
    if variant == "int4":  # with the float32 model's logits, to check the peers' own int4
        np.save(folder / "expected_int4_fp32.npy", eager_prefill(build("fp32")[0]))
        return out | int4_peers(folder)
    if variant != "fp32":
        return out
    strict = export(variant, strict=True)
    return out | _peers(openvino=lambda: openvino_ir(strict, folder / "decode_fp32.xml"),
                        executorch=lambda: _executorch(folder, "decode_fp32", strict),
                        ort=lambda: onnx_step(folder / "decode_fp32.onnx"))


def _peers(**makers) -> dict[str, dict]:
    """runtime -> {artifact, compile_s} of the peers whose maker returned their artifact (a
    peer that cannot take the model is printed, not fatal)."""
    out = {}
    for name, make in makers.items():
        t0 = time.perf_counter()
        try:
            out[name] = {"artifact": str(make()), "compile_s": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
    return out


def _executorch(folder: Path, name: str, ep) -> str:
    import peers

    return peers.compile_executorch(folder, name, ep)["artifact"]


def openvino_ir(ep, path: Path, compress=None) -> Path:
    """OpenVINO's IR of the strict export, its weights compressed by `compress` (an NNCF
    call on the converted model) where given."""
    import openvino as ov

    model = ov.convert_model(ep)
    ov.save_model(compress(model) if compress else model, path)
    return path


def onnx_step(path: Path) -> Path:
    """The float32 step with the cache as explicit inputs and outputs, as ONNX."""
    import torch

    ids, pos = prefill_inputs()
    step = explicit_cache_step(build("fp32")[0])
    seq = torch.export.Dim("seq", min=1, max=CACHE)
    kv = [torch.from_numpy(k) for k in empty_cache()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(step, (torch.from_numpy(ids), torch.from_numpy(pos), kv),
                          dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq},
                                          "kv": [None] * len(kv)},
                          dynamo=True, verbose=False).save(path)
    return path


# Each peer's own 4-bit weights of the float32 model, group 32 as torchao's int4 config:
# ONNX Runtime MatMulNBits (symmetric, its int8 compute: accuracy_level 4), OpenVINO through
# NNCF (INT4_SYM, every layer: the head, as torchao's config quantizes it, and the embedding
# table, of which a step reads one row), ExecuTorch
# with XNNPACK through torchao's 8da4w (int8 activations per token at run time, 4-bit weights).
ORT_INT4 = {"block_size": 32, "is_symmetric": True, "accuracy_level": 4}
OV_INT4 = {"group_size": 32, "ratio": 1.0, "all_layers": True}


def int4_peers(folder: Path) -> dict[str, dict]:
    return _peers(ort=lambda: _ort_int4(folder), openvino=lambda: _openvino_int4(folder),
                  executorch=lambda: _executorch_int4(folder))


def _ort_int4(folder: Path) -> Path:
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    fp32 = onnx_step(folder / "decode_int4_fp32.onnx")
    quantizer = MatMulNBitsQuantizer(onnx.load(str(fp32)), **ORT_INT4)
    quantizer.process()
    path = folder / "decode_int4.onnx"
    quantizer.model.save_model_to_file(str(path), use_external_data_format=False)
    return path


def _openvino_int4(folder: Path) -> Path:
    import nncf

    def compress(model):
        return nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT4_SYM, **OV_INT4)
    return openvino_ir(export("fp32", strict=True), folder / "decode_int4.xml", compress)


def _executorch_int4(folder: Path) -> str:
    import torch
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    model, wrapped = build("fp32")
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4,
                                                           weight_granularity=PerGroup(32)))
    return _executorch(folder, "decode_int4", export("int4", strict=True, wrapped=wrapped))


# ----------------------------------------------------------------------------- workers

# The check of a runtime's prefill logits. aotc and the float32 peers differ from eager's
# same variant by their rounding only: within TOLERANCE of the largest |logit|.
# A peer's own 4-bit weights (int4_peers) are another rounding of the float32 weights: with
# these random weights any int4 rounding moves the logits by about a third of the largest
# |logit| (torchao's too), each in its own direction, so they are far from torchao's int4 too.
# Those are checked against the float32 model they quantize instead: no further from it than
# OWN_INT4_SLACK times torchao's int4 is (a broken quantization lands much further).
TOLERANCE, OWN_INT4_SLACK = 0.02, 1.5


def _check(logits, expected, fp32=None) -> None:
    """Prefill logits against eager's `expected`, or for a peer's own int4 against the float32
    model's `fp32` (see OWN_INT4_SLACK)."""
    import numpy as np

    def err(a, b):
        return float(np.abs(a.reshape(b.shape) - b).max())
    if fp32 is None:
        bound, what = TOLERANCE * float(np.abs(expected).max()), "eager's"
    else:
        bound, what, expected = OWN_INT4_SLACK * err(expected, fp32), "float32's", fp32
    if not err(logits, expected) <= bound:
        raise AssertionError(f"prefill logits differ from {what} by {err(logits, expected)} "
                             f"(bound {bound})")


def _median_step(step, steps: int, check) -> float:
    """Median ms of `steps` decode steps after a prefill of PROMPT tokens (its logits passed to
    `check`) and 3 warm-ups."""
    import numpy as np

    logits = np.asarray(step(*prefill_inputs()))
    if logits.dtype == np.uint16:  # aotc's numpy outputs hold bfloat16 as its bits
        logits = (logits.astype(np.uint32) << 16).view(np.float32)
    check(logits.astype(np.float32))
    times = []
    for k in range(steps + 3):
        ids = np.array([[7 + k % 100]], dtype=np.int64)
        pos = np.array([PROMPT + k], dtype=np.int64)
        t0 = time.perf_counter()
        step(ids, pos)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[3:]) * 1e3


def _prefill_ms(step, reset, reps: int = 5) -> float:
    """Median ms of the prefill of a LONG_PROMPT-token prompt into an empty cache (the time
    to the first token), the state reset before each (outside the timing)."""
    import numpy as np

    ids = (np.arange(LONG_PROMPT, dtype=np.int64) % 1000 + 1)[None]
    pos = np.arange(LONG_PROMPT, dtype=np.int64)
    times = []
    for _ in range(reps + 1):
        reset()
        t0 = time.perf_counter()
        step(ids, pos)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]) * 1e3


def _runtime(spec: dict):
    """(step(ids, pos) -> logits, reset()) of the spec's runtime at its thread count."""
    runtime, variant, threads = spec["runtime"], spec["variant"], spec["threads"]
    if runtime == "aotc":
        import aotc

        model = aotc.load_package(spec["artifact"], num_threads=threads)
        return lambda i, p: model(input_ids=i, cache_position=p), model.reset_buffers
    if runtime == "ort":
        import peer_runtimes

        sess = peer_runtimes.ort_session(spec["artifact"], threads)
        names = [i.name for i in sess.get_inputs()]
        kv = [empty_cache()]

        def ort_step(i, p):  # the cache goes in and comes back out each step
            out = sess.run(None, dict(zip(names, [i, p, *kv[0]])))
            kv[0] = out[1:]
            return out[0]
        return ort_step, lambda: kv.__setitem__(0, empty_cache())
    if runtime == "openvino":
        import openvino as ov
        import peer_runtimes

        core = ov.Core()
        request = core.compile_model(core.read_model(spec["artifact"]), "CPU",
                                     peer_runtimes.ov_config(threads)).create_infer_request()

        def ov_step(i, p):  # the request keeps the cache as its state
            request.infer([i, p])
            return request.get_output_tensor(0).data
        return ov_step, request.reset_state
    import torch

    if runtime == "executorch":
        import peer_runtimes
        from executorch.runtime import Runtime

        peer_runtimes.executorch_threads(threads)
        method = [None]

        def et_reset():  # the program's buffers start afresh with the method
            method[0] = Runtime.get().load_program(spec["artifact"]).load_method("forward")

        def et_step(i, p):
            return method[0].execute([torch.from_numpy(i), torch.from_numpy(p)])[0]
        return et_step, et_reset
    torch.set_num_threads(threads)
    from transformers import StaticCache

    model, _ = build(variant)  # eager transformers, on a static cache of the same length
    cache = [None]

    def eager_reset():
        cache[0] = StaticCache(config=model.config, max_cache_len=CACHE)

    def eager_step(ids, pos):
        with torch.inference_mode():
            return model(input_ids=torch.from_numpy(ids), cache_position=torch.from_numpy(pos),
                         cache=cache[0], use_cache=True).logits.float()
    return eager_step, eager_reset


def worker(spec: dict) -> dict:
    import numpy as np

    if spec["runtime"] == "triad":
        import torch

        torch.set_num_threads(spec["threads"])
        n = 64 * 1024 * 1024  # 3 arrays of 256 MB
        a, b, c = torch.empty(n), torch.rand(n), torch.rand(n)
        best = float("inf")
        for _ in range(8):
            t0 = time.perf_counter()
            torch.add(b, c, alpha=3.0, out=a)
            best = min(best, time.perf_counter() - t0)
        return {"gbs": 3 * n * 4 / best / 1e9}
    step, reset = _runtime(spec)
    ttft = _prefill_ms(step, reset)
    reset()
    expected = np.load(spec["expected"])
    own_int4 = spec["variant"] == "int4" and spec["runtime"] not in ("aotc", "eager")
    fp32 = np.load(spec["expected"].replace(".npy", "_fp32.npy")) if own_int4 else None
    return {"ttft_ms": ttft,
            "ms": _median_step(step, spec["steps"], lambda x: _check(x, expected, fp32))}


def run_worker(spec: dict) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    proc = subprocess.run([sys.executable, __file__, "--worker", f.name], capture_output=True,
                          text=True)
    Path(f.name).unlink()
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- the run

def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--variants", default="fp32,bf16,int4")
    p.add_argument("--out", default=str(HERE.parent / "build" / "bench" / "decode"))
    p.add_argument("--worker")
    args = p.parse_args()
    if args.worker:
        sys.path.insert(0, str(HERE))
        print(json.dumps(worker(json.loads(Path(args.worker).read_text()))))
        return
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",")
    artifacts = {}
    for v in variants:
        for runtime, info in compile_all(v, folder).items():
            artifacts[runtime, v] = info["artifact"]
            print(f"compiled {v} for {runtime} in {info['compile_s']:.1f} s", flush=True)
    threads = [int(t) for t in args.threads.split(",")]
    jobs = [("triad", "fp32")] + [(r, v) for v in variants for r in ("aotc", "eager")]
    jobs += [key for key in artifacts if key[0] not in ("aotc", "eager")]
    results: dict = {}
    for rnd in range(args.rounds):
        order = jobs[rnd % len(jobs):] + jobs[:rnd % len(jobs)]
        for n in threads:
            for runtime, v in order:
                spec = {"runtime": runtime, "variant": v, "threads": n, "steps": args.steps,
                        "artifact": artifacts.get((runtime, v)),
                        "expected": str(folder / f"expected_{v}.npy")}
                out = run_worker(spec)
                results.setdefault((runtime, v, n), []).append(out)
                print(rnd, n, runtime, v, out, flush=True)
    report(results, variants, threads)


def _med(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if key in r]
    return statistics.median(vals) if vals else None


def report(results: dict, variants: list[str], threads: list[int]) -> None:
    def f(x, fmt="{:.2f}"):
        return "n/a" if x is None else fmt.format(x)

    print("\n| threads | variant | aotc ms | eager ms | aotc/eager | ONNX Runtime ms | OpenVINO ms "
          "| ExecuTorch ms | aotc/fastest peer | step MB | limit ms (triad) | aotc/limit "
          "| tokens/s vs fp32 |")
    print("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for n in threads:
        gbs = _med(results.get(("triad", "fp32", n), []), "gbs")
        fp32 = _med(results.get(("aotc", "fp32", n), []), "ms")
        for v in variants:
            a, e, ox, ov, et = (_med(results.get((r, v, n), []), "ms")
                                for r in ("aotc", "eager", "ort", "openvino", "executorch"))
            fastest = min((x for x in (ox, ov, et) if x is not None), default=None)
            mb = step_bytes(v) / 1e6
            limit = mb / gbs if gbs else None  # MB / (GB/s) = ms
            print(f"| {n} | {v} | {f(a)} | {f(e)} | {f(a and e and a / e)} | {f(ox)} | {f(ov)} | "
                  f"{f(et)} | "
                  f"{f(a and fastest and a / fastest)} | {mb:.0f} | {f(limit)} "
                  f"({f(gbs, '{:.1f}')} GB/s) | {f(a and limit and a / limit)} | "
                  f"{f(a and fp32 and fp32 / a)} |")
    print(f"\nTime to the first token: the prefill of a {LONG_PROMPT}-token prompt, ms\n")
    print("| threads | variant | aotc | eager | ONNX Runtime | OpenVINO | ExecuTorch "
          "| aotc/fastest other |")
    print("|--:|---|--:|--:|--:|--:|--:|--:|")
    for n in threads:
        for v in variants:
            a, e, ox, ov, et = (_med(results.get((r, v, n), []), "ttft_ms")
                                for r in ("aotc", "eager", "ort", "openvino", "executorch"))
            fastest = min((x for x in (e, ox, ov, et) if x is not None), default=None)
            print(f"| {n} | {v} | {f(a)} | {f(e)} | {f(ox)} | {f(ov)} | {f(et)} | "
                  f"{f(a and fastest and a / fastest)} |")
    errors = {f"{k[0]} {k[1]} {k[2]}": r["error"] for k, rows in results.items() for r in rows
              if "error" in r}
    for what, err in sorted(errors.items()):
        print(f"not timed: {what}: {err}")


if __name__ == "__main__":
    main()
