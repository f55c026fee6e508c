"""Int8 against the peers: a ResNet-50-shaped CNN and a BERT-base encoder layer quantized
statically, and the encoder layer with dynamic int8, on aotc and on the int8 paths of ONNX
Runtime, OpenVINO (NNCF), ExecuTorch (XNNPACK) and AOTInductor, every runtime timed ALONE in
its own process (alone.py's method and its worker, alone_worker.py).

    python benchmarks/int8_peers.py --threads 1,2 --rounds 3 --out /tmp/int8_peers.md
    python benchmarks/int8_peers.py --models bert_layer --runtimes aotc_fp32,aotc_int8,ort_int8 \\
        --threads 1 --rounds 1

Models (batch 1; quant_peers.py): `resnet50` (cnn_models.ResNet50: bottleneck blocks
[3, 4, 6, 3], 224 x 224) and `bert_layer` (transformer_models.BertLayer, seq 128), static
int8 calibrated on three random batches (seed 1) that every runtime's quantizer sees;
`bert_layer_dynamic`, the same layer with activations quantized at run time.

Runtimes (their quantizer, format and calibration in full in quant_peers.py's docstring):
- `eager_fp32`: the float module under torch.inference_mode.
- `aotc_fp32`: aotc's float32 package (`aotc.compile_and_package`).
- `aotc_int8`: torchao PT2E, X86InductorQuantizer's default config (static: uint8
  activations per tensor, histogram observer; int8 weights per channel; dynamic:
  `is_dynamic=True`), compiled by aotc with `int8_kernels="on"`.
- `ort_int8`: ONNX export, `quant_pre_process`, `quantize_static` (QDQ, U8S8, per-channel
  weights, MinMax calibration through a CalibrationDataReader) / `quantize_dynamic`
  (per-channel int8 weights).
- `openvino_int8`: `openvino.convert_model`, `nncf.quantize` with an `nncf.Dataset` of the
  batches (default preset; model_type TRANSFORMER for the encoder); dynamic:
  `nncf.compress_weights(INT8_SYM)` with the CPU plugin's run-time activation quantization
  (DYNAMIC_QUANTIZATION_GROUP_SIZE 32). f32 inference precision hint for the rest.
- `executorch_int8`: XNNPACKQuantizer, `get_symmetric_quantization_config(is_per_channel=
  True[, is_dynamic=True])`, prepare_pt2e / convert_pt2e, `to_edge_transform_and_lower`
  with the XnnpackPartitioner, `.to_executorch()`, run by executorch.runtime.
- `aoti_int8`: the X86InductorQuantizer program through `aoti_compile_and_package` with
  freezing, under torch.no_grad (inductor freezes only with grad off), loaded with
  `aoti_load_package`.

Method: the parent quantizes and compiles every (model, runtime) once; artifacts, their
compile times and the reference outputs are cached under build/bench/int8_peers/, keyed by
the package versions, the model and adapter sources and (for aotc) src/aotc's content, so a
rerun recompiles only what changed (`--rebuild` forces it). Then, per thread count, R rounds:
a round starts one fresh process per runtime (alone_worker.py, OMP_NUM_THREADS and the
runtime's own thread setting at n), in an order rotated from round to round; each process
loads every model, checks its output and times it (batches of ~batch_ms after a warm-up,
median). Every runtime's output is checked against its own quantized module run eagerly
where one exists (aotc_int8, aoti_int8: the X86InductorQuantizer module; executorch_int8:
the XNNPACKQuantizer module; ort_int8 static: its QDQ graph with ORT's optimisations off)
within 5% of that reference's largest magnitude, else against eager fp32 within 15% of its
largest magnitude (openvino_int8, ort_int8 dynamic); fp32 runtimes against eager within
1e-4. A runtime that fails its check is not timed; its error and the reason are reported.
Latencies are medians over rounds; ratios are medians (min–max) of the per-round ratios.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import alone  # noqa: E402  (imports run first: the private compiler caches, set before torch)
import quant_peers as qp  # noqa: E402
import run  # noqa: E402

import report  # noqa: E402

RUNTIMES = ("eager_fp32", "aotc_fp32", "aotc_int8", "ort_int8", "openvino_int8",
            "executorch_int8", "aoti_int8")
KIND = {"eager_fp32": "eager", "aotc_fp32": "aotc", "aotc_int8": "aotc", "ort_int8": "ort",
        "openvino_int8": "openvino", "executorch_int8": "executorch", "aoti_int8": "aoti"}
LABEL = {"eager_fp32": "eager fp32", "aotc_fp32": "aotc fp32", "aotc_int8": "aotc int8",
         "ort_int8": "ORT int8", "openvino_int8": "OpenVINO int8",
         "executorch_int8": "ExecuTorch int8", "aoti_int8": "AOTI int8"}
PEERS_INT8 = ("ort_int8", "openvino_int8", "executorch_int8", "aoti_int8")
EXTENSION = {"aotc_fp32": ".pt2", "aotc_int8": ".pt2", "aoti_int8": ".pt2", "ort_int8": ".onnx",
             "openvino_int8": ".xml", "executorch_int8": ".pte"}
NEEDS = {"aotc_int8": ["torchao"], "aoti_int8": ["torchao"],
         "ort_int8": ["onnxruntime", "onnx", "onnxscript"], "openvino_int8": ["openvino", "nncf"],
         "executorch_int8": ["executorch", "torchao"]}
VERSIONED = ("torch", "torchao", "onnxruntime", "onnx", "onnxscript", "openvino", "nncf",
             "executorch")
INT8_FEATURES = ("amx_int8", "avx512_vnni", "avx_vnni")
CACHE = run.BUILD / "int8_peers"
BUILDER = "quant_peers:build"
BEGIN, END = "<!-- int8_peers.py: begin -->", "<!-- int8_peers.py: end -->"
MISMATCH = "mismatch"


# ----------------------------------------------------------------------------- machine

def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def cpu() -> dict:
    """The CPU's model name, cores and which int8 dot-product features it has."""
    facts = report.cpu_facts()
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":")[0].strip() == "flags":
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    facts["int8"] = {f: f in flags for f in INT8_FEATURES}
    return facts


def missing_packages(runtime: str) -> str | None:
    for module in NEEDS.get(runtime, []):
        try:
            __import__(module)
        except ImportError as e:
            extra = "quant" if module in ("torchao", "executorch") else "bench"
            return f"{module} is not installed ({e}); pip install -e '.[{extra}]'"
    return None


# ----------------------------------------------------------------------------- cache

def files_digest(paths) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def aotc_sources() -> list[Path]:
    return [p for p in (run.ROOT / "src" / "aotc").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts]


def cache_keys(runtimes: list[str]) -> dict:
    """Per runtime: what its artifact depends on (versions, the CPU, the model and adapter
    sources, and src/aotc for aotc's)."""
    base = json.dumps({"versions": versions(), "cpu": cpu()["model"],
                       "sources": files_digest(qp.source_files())}, sort_keys=True)
    aotc = files_digest(aotc_sources()) if any(r.startswith("aotc") for r in runtimes) else ""
    return {rt: hashlib.sha256((base + (aotc if rt.startswith("aotc") else "")).encode())
            .hexdigest()[:16] for rt in runtimes}


class Model:
    """One model's float module, inputs, calibration batches and (built on first use) its
    quantized programs and their eager outputs."""

    def __init__(self, name: str):
        self.name, self.is_dynamic = name, qp.dynamic(name)
        self._memo: dict = {}

    def memo(self, key, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def float(self):
        return self.memo("float", lambda: qp.build(self.name))

    @property
    def batches(self):
        return self.memo("batches", lambda: qp.calibration(self.name))

    @property
    def fp32(self) -> list[np.ndarray]:
        import torch

        def make():
            model, inputs = self.float
            with torch.inference_mode():
                return qp.flat_numpy(model(*inputs))
        return self.memo("fp32", make)

    def ep32(self):
        import torch

        def make():
            model, inputs = self.float
            with torch.no_grad():
                return torch.export.export(model, inputs)
        return self.memo("ep32", make)

    def quantized(self, which: str):
        """(program, eager outputs of the converted module) for "x86" or "xnnpack"."""
        import torch

        def make():
            model, inputs = self.float
            quantizer = (qp.x86_quantizer if which == "x86" else qp.xnnpack_quantizer)(
                self.is_dynamic)
            ep, converted = qp.pt2e(model, inputs, self.batches, quantizer)
            with torch.no_grad():
                return ep, qp.flat_numpy(converted(*inputs))
        return self.memo(which, make)


def integer_products(debug_dir: Path) -> int | None:
    code = debug_dir / "model" / "07_codegen.cpp"
    if not code.exists():
        return None
    text = code.read_text()
    return text.count("aotc_qgemm_s32(") + text.count("aotc_qconv_s32(")


def tolerance(runtime: str, check: str, reference: list[np.ndarray]) -> dict:
    if runtime in ("eager_fp32", "aotc_fp32"):
        return dict(qp.TIGHT)
    largest = max(float(np.max(np.abs(r))) for r in reference)
    share = qp.OWN if check != "fp32" else qp.LOOSE
    return {"rtol": 0.0, "atol": share * largest}


def build_runtime(m: Model, runtime: str, folder: Path) -> dict:
    """Quantize and compile one model for one runtime: {artifact, compile_s, check,
    reference (outputs), products (aotc int8)}. Raises on failure."""
    import shutil

    model, inputs = m.float
    path = folder / f"{runtime}{EXTENSION.get(runtime, '')}"
    info: dict = {"artifact": str(path) if runtime != "eager_fp32" else None,
                  "check": qp.CHECK[runtime]}
    reference = None
    t0 = time.perf_counter()
    if runtime == "aotc_fp32":
        qp.compile_aotc(m.ep32(), path, int8=False)
    elif runtime == "aotc_int8":
        ep, reference = m.quantized("x86")
        t0 = time.perf_counter()
        debug = folder / "aotc_int8.debug"
        shutil.rmtree(debug, ignore_errors=True)
        import aotc

        aotc.compile_and_package(ep, package_path=str(path),
                                 options={"int8_kernels": "on", "debug_dir": str(debug)})
        info["products"] = integer_products(debug)
        shutil.rmtree(debug, ignore_errors=True)
    elif runtime == "aoti_int8":
        ep, reference = m.quantized("x86")
        t0 = time.perf_counter()
        qp.compile_aoti(ep, path)
    elif runtime == "executorch_int8":
        ep, reference = m.quantized("xnnpack")
        t0 = time.perf_counter()
        qp.compile_executorch(ep, path)
    elif runtime == "ort_int8":
        reference = qp.compile_ort(model, inputs, m.batches, m.is_dynamic, path)
        if reference is None:
            info["check"] = "fp32"
        else:
            reference = [np.asarray(r) for r in reference]
    elif runtime == "openvino_int8":
        qp.compile_openvino(model, inputs, m.batches, m.is_dynamic,
                            transformer=not m.name.startswith("resnet"), path=path)
    info["compile_s"] = time.perf_counter() - t0
    info["reference"] = reference if reference is not None else m.fp32
    return info


def prepare(models: list[str], runtimes: list[str], rebuild: bool) -> list[dict]:
    """Every (model, runtime): compiled, or from the cache. Per model an entry
    {name, runtimes: {runtime: {artifact, data, tolerance, check, compile_s, cached, products}
    or {error}}}."""
    import torch

    qp.quiet()
    torch.set_num_threads(os.cpu_count() or 1)
    keys = cache_keys(runtimes)
    entries = []
    for name in models:
        m, folder = Model(name), CACHE / name
        folder.mkdir(parents=True, exist_ok=True)
        entry: dict = {"name": name, "scheme": qp.MODELS[name], "runtimes": {}}
        for rt in runtimes:
            stamp = folder / f"{rt}.json"
            cached = json.loads(stamp.read_text()) if stamp.exists() else None
            if not rebuild and cached and cached.get("key") == keys[rt] and (
                    "error" in cached or cached.get("artifact") is None
                    or Path(cached["artifact"]).exists()):
                entry["runtimes"][rt] = {**cached, "cached": True}
                continue
            run.log(f"[{name}] building {rt}")
            try:
                info = build_runtime(m, rt, folder)
            except Exception as e:  # report and go on: one failure must not hide the rest
                text = f"{type(e).__name__}: {e}"
                run.log(f"[{name}] {rt} FAILED: {text}\n"
                        + "".join(traceback.format_exception(e)[-6:]))
                result = {"key": keys[rt], "error": text}
            else:
                reference = info.pop("reference")
                data = folder / f"{rt}.npz"
                _, inputs = m.float
                arrays = {f"in{i}": x.numpy() for i, x in enumerate(inputs)}
                arrays.update({f"out{i}": r for i, r in enumerate(reference)})
                arrays.update({f"fp{i}": r for i, r in enumerate(m.fp32)})
                np.savez(data, **arrays)
                result = {"key": keys[rt], **info, "data": str(data),
                          "n_inputs": len(inputs), "n_outputs": len(reference),
                          "tolerance": tolerance(rt, info["check"], reference)}
            stamp.write_text(json.dumps(result, indent=1))
            entry["runtimes"][rt] = {**result, "cached": False}
        entries.append(entry)
        run.log(f"[{name}] ready: " + ", ".join(
            f"{rt} " + ("FAILED" if "error" in i else f"{i.get('compile_s', 0):.1f} s"
                        + (" (cached)" if i["cached"] else ""))
            for rt, i in entry["runtimes"].items()))
    return entries


# ----------------------------------------------------------------------------- timing

def time_runtime(runtime: str, threads: int, entries: list[dict], args) -> dict:
    """One fresh process (alone_worker.py through alone.time_alone) timing every model
    compiled for `runtime`: {model: result}."""
    kind = KIND[runtime]
    todo = []
    for e in entries:
        info = e["runtimes"].get(runtime, {})
        if "data" not in info:
            continue
        data = {k: info[k] for k in ("data", "n_inputs", "n_outputs", "tolerance")}
        data["builder"] = BUILDER
        shaped = {"name": e["name"], "peers": {}, "data": data}
        if kind == "aotc":
            shaped["aotc"] = info["artifact"]
        elif kind != "eager":
            shaped["peers"][kind] = {"artifact": info["artifact"]}
        todo.append(shaped)
    if not todo:
        return {}
    return alone.time_alone(kind, threads, todo, args)


def rounds_at(threads: int, runtimes: list[str], entries: list[dict], args) -> tuple[list, list]:
    rounds, seconds = [], []
    for k in range(args.rounds):
        order = alone.rotated(runtimes, k)
        run.log(f"[{threads} thread(s)] round {k + 1}/{args.rounds}: " + ", ".join(order))
        t0 = time.perf_counter()
        rounds.append({rt: time_runtime(rt, threads, entries, args) for rt in order})
        seconds.append(time.perf_counter() - t0)
        for rt in order:
            for name, res in rounds[-1][rt].items():
                run.log(f"  {rt:16s} {name:20s} " + (f"{res['ms']:.3f} ms" if "ms" in res
                                                      else res.get("error", "?")[:160]))
    return rounds, seconds


# ----------------------------------------------------------------------------- report

def fmt_ratio(r) -> str:
    return "–" if r is None else f"{r[0]:.2f} ({r[1]:.2f}–{r[2]:.2f})"


def model_row(entry: dict, rounds: list[dict], runtimes: list[str]) -> dict:
    name = entry["name"]
    ms = {rt: [r[rt][name]["ms"] for r in rounds if "ms" in r.get(rt, {}).get(name, {})]
          for rt in runtimes}
    row: dict = {"name": name, "scheme": entry["scheme"],
                 "ms": {rt: statistics.median(v) for rt, v in ms.items() if v}}
    speed, vs_peer, fastest = [], [], []
    for r in rounds:
        t = {rt: r[rt][name]["ms"] for rt in runtimes if "ms" in r.get(rt, {}).get(name, {})}
        if "aotc_int8" not in t:
            continue
        if "aotc_fp32" in t:
            speed.append(t["aotc_int8"] / t["aotc_fp32"])
        present = [p for p in PEERS_INT8 if p in t]
        if present:
            best = min(present, key=lambda p: t[p])
            fastest.append(best)
            vs_peer.append(t["aotc_int8"] / t[best])
    row["speed"] = alone.median_range(speed) if speed else None
    row["vs_peer"] = alone.median_range(vs_peer) if vs_peer else None
    row["fastest"] = max(set(fastest), key=fastest.count) if fastest else None
    return row


def thread_table(threads: int, rows: list[dict], runtimes: list[str], seconds: list[float]):
    cols = (["model", "scheme"] + [f"{LABEL[rt]} ms" for rt in runtimes]
            + ["aotc int8 / aotc fp32 (speedup)", "aotc int8 / fastest peer int8",
               "fastest peer int8"])
    lines = [f"#### {threads} thread(s)", "",
             f"One round (every runtime's process once): {statistics.median(seconds):.0f} s.", "",
             "| " + " | ".join(cols) + " |", "|---|---|" + "--:|" * (len(cols) - 2)]
    for row in rows:
        cells = [f"`{row['name']}`", row["scheme"]]
        cells += [report.ms(row["ms"][rt]) if rt in row["ms"] else "–" for rt in runtimes]
        speed = row["speed"]
        cells.append("–" if speed is None else f"{fmt_ratio(speed)}; {1 / speed[0]:.2f}×")
        cells += [fmt_ratio(row["vs_peer"]), LABEL.get(row["fastest"], "–")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def accuracy_table(entries: list[dict], rounds_by_threads: dict, runtimes: list[str]) -> list:
    """Largest absolute differences (the worst over every round and thread count) against
    each runtime's own reference and against eager fp32."""
    lines = ["Accuracy: largest absolute difference from the runtime's check reference "
             "(tolerance in brackets) / from eager fp32; ✗ failed its check, not timed.", "",
             "| model | " + " | ".join(LABEL[rt] for rt in runtimes) + " |",
             "|---|" + "--:|" * len(runtimes)]
    for e in entries:
        cells = [f"`{e['name']}`"]
        for rt in runtimes:
            info = e["runtimes"].get(rt, {})
            results = [r[rt][e["name"]] for rounds in rounds_by_threads.values() for r in rounds
                       if e["name"] in r.get(rt, {})]
            errs = [x["max_abs_err"] for x in results if "max_abs_err" in x]
            fp = [x["max_abs_err_fp32"] for x in results if "max_abs_err_fp32" in x]
            if "error" in info:
                cells.append("not compiled")
            elif not errs:
                cells.append("not run" if not results else "failed")
            else:
                bad = any("error" in x for x in results)
                cells.append(f"{'✗ ' if bad else ''}{max(errs):.2g} (≤{info['tolerance']['atol']:.2g})"
                             f" / {max(fp):.2g}")
        lines.append("| " + " | ".join(cells) + " |")
    described = []
    for rt in runtimes:
        checks: dict = {}
        for e in entries:
            if "check" in e["runtimes"].get(rt, {}):
                checks.setdefault(qp.CHECK_LABEL[e["runtimes"][rt]["check"]], []).append(e["name"])
        if len(checks) == 1:
            described.append(f"{LABEL[rt]}: {next(iter(checks))}")
        elif checks:
            described.append(f"{LABEL[rt]}: " + ", ".join(
                f"{label} ({', '.join(f'`{n}`' for n in names)})" for label, names in checks.items()))
    lines += ["", "Check references: " + "; ".join(described) + ".", ""]
    return lines


def failures(entries: list[dict], rounds_by_threads: dict, runtimes: list[str]) -> list:
    lines = []
    for e in entries:
        for rt in runtimes:
            info = e["runtimes"].get(rt, {})
            if "error" in info:
                lines.append(f"- `{e['name']}` {LABEL[rt]}: not compiled: {info['error']}")
                continue
            seen = dict.fromkeys(r[rt][e["name"]]["error"] for rounds in rounds_by_threads.values()
                                 for r in rounds if "error" in r.get(rt, {}).get(e["name"], {}))
            lines += [f"- `{e['name']}` {LABEL[rt]}: not timed: {why}" for why in seen]
    return (["Not timed:", ""] + lines + [""]) if lines else []


def render(meta: dict, entries: list[dict], rounds_by_threads: dict, seconds_by_threads: dict,
           runtimes: list[str], args) -> str:
    facts, v = cpu(), versions()
    int8 = ", ".join(f"{f} {'yes' if has else 'no'}" for f, has in facts["int8"].items())
    products = [f"`{e['name']}` {e['runtimes']['aotc_int8']['products']}" for e in entries
                if e["runtimes"].get("aotc_int8", {}).get("products") is not None]
    lines = [BEGIN, "",
             "### Int8 against the peers, each runtime alone in its process "
             "(`benchmarks/int8_peers.py`)", "",
             f"- command: `{meta['command']}`",
             f"- date: {meta['date']} (wall time {meta['wall_s']:.0f} s, compiles "
             f"{meta['compile_s']:.0f} s of it); machine: {facts['cores']} logical cores, "
             f"{facts['model']}; int8 features: {int8}; aotc at {meta['revision']}",
             "- " + ", ".join(f"{k} {v[k]}" for k in VERSIONED if v[k]),
             f"- method: {args.rounds} round(s) per thread count; a round runs one fresh process "
             "per runtime (alone_worker.py), back to back, the order rotated from round to round; "
             f"each process checks then times every model in {args.batches} batches of "
             f"~{args.batch_ms:.0f} ms after a warm-up and reports the median. Latencies are "
             "medians over rounds; ratios are medians (min–max) of the per-round ratios; "
             "speedup = aotc fp32 / aotc int8.",
             "- models (batch 1): `resnet50` (ResNet-50-shaped: bottleneck blocks [3, 4, 6, 3], "
             "224×224, random batch-norm statistics) and `bert_layer` (BERT-base encoder layer, "
             "seq 128), static int8 calibrated on 3 random batches (seed 1) given to every "
             "quantizer; `bert_layer_dynamic`: the same layer, activations quantized at run "
             "time.",
             "- aotc int8: torchao PT2E, X86InductorQuantizer default config (uint8 activations "
             "per tensor from a histogram observer, int8 symmetric weights per channel; "
             "`is_dynamic=True` for the dynamic layer), `int8_kernels=\"on\"`"
             + ("; integer products in the package (aotc_qgemm_s32 / aotc_qconv_s32 calls): "
                + ", ".join(products) if products else "") + ".",
             "- AOTI int8: the same quantized program, `aoti_compile_and_package` with freezing "
             "under torch.no_grad (inductor freezes only with grad off; its oneDNN qconv / "
             "qlinear lowerings need freezing), OMP_NUM_THREADS = n.",
             "- ORT int8: torch.onnx.export (dynamo), `quant_pre_process`, `quantize_static` "
             "(QDQ, uint8 activations per tensor with MinMax calibration on the same batches "
             "through a CalibrationDataReader, int8 weights per channel, ORT's default op types); "
             "dynamic: `quantize_dynamic` (int8 weights per channel, DynamicQuantizeLinear + "
             "MatMulInteger, fused at load). CPU provider, all graph optimisations, intra-op "
             "threads = n.",
             "- OpenVINO int8: `openvino.convert_model`, `nncf.quantize` (nncf.Dataset of the "
             "same batches, subset_size 3, default preset, model_type TRANSFORMER for the "
             "encoder); dynamic: NNCF has no run-time activation quantization, so "
             "`nncf.compress_weights(INT8_SYM)` (int8 weights per channel) with the CPU "
             f"plugin's dynamic quantization (DYNAMIC_QUANTIZATION_GROUP_SIZE "
             f"{qp.OV_DYNAMIC_GROUP}: activations to int8 at run time in groups of "
             f"{qp.OV_DYNAMIC_GROUP} along the reduction). f32 precision hint (float parts in "
             "float32), n inference threads, one stream, latency hint.",
             "- ExecuTorch int8: XNNPACKQuantizer, `get_symmetric_quantization_config("
             "is_per_channel=True)` (int8 activations per tensor, int8 weights per channel; "
             "`is_dynamic=True` for the dynamic layer), prepare_pt2e / convert_pt2e, "
             "`to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()]).to_executorch()`, "
             "executorch.runtime with the threadpool reset to n.",
             "- checks: each output against its own quantized module where one exists "
             f"(within {qp.OWN:.0%} of that reference's largest magnitude), else against eager "
             f"fp32 (within {qp.LOOSE:.0%} of its largest magnitude); fp32 runtimes against "
             "eager within 1e-4.", ""]
    for threads, rounds in rounds_by_threads.items():
        rows = [model_row(e, rounds, runtimes) for e in entries]
        lines += thread_table(threads, rows, runtimes, seconds_by_threads[threads])
    lines += accuracy_table(entries, rounds_by_threads, runtimes)
    lines += failures(entries, rounds_by_threads, runtimes)
    lines.append(END)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(qp.MODELS),
                   help=f"comma-separated, from {', '.join(qp.MODELS)}")
    p.add_argument("--runtimes", default=",".join(RUNTIMES),
                   help=f"comma-separated, from {', '.join(RUNTIMES)}")
    p.add_argument("--threads", default=f"1,{os.cpu_count() or 1}")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=11, help="timed batches per model and process")
    p.add_argument("--batch-ms", type=float, default=150.0)
    p.add_argument("--wait-idle", type=float, default=30.0,
                   help="seconds to wait for an idle machine before each process")
    p.add_argument("--rebuild", action="store_true", help="ignore the cached artifacts")
    p.add_argument("--out", default=None, help="markdown file for the section (default: print)")
    args = p.parse_args(argv)
    args.model_list = [m for m in args.models.split(",") if m]
    args.runtime_list = [r for r in args.runtimes.split(",") if r]
    bad = ([m for m in args.model_list if m not in qp.MODELS]
           + [r for r in args.runtime_list if r not in RUNTIMES])
    if bad:
        raise SystemExit(f"unknown model(s) or runtime(s) {bad}; models: {list(qp.MODELS)}, "
                         f"runtimes: {list(RUNTIMES)}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    command = " ".join(sys.argv[1:] if argv is None else argv)
    meta: dict = {"command": f"python benchmarks/int8_peers.py {command}".strip(),
                  "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  "revision": report.source_revision(run.ROOT)}
    runtimes = []
    for rt in args.runtime_list:
        why = missing_packages(rt)
        if why:
            run.log(f"skipping {rt}: {why}")
        else:
            runtimes.append(rt)
    run.BUILD.mkdir(parents=True, exist_ok=True)
    entries = prepare(args.model_list, runtimes, args.rebuild)
    meta["compile_s"] = time.perf_counter() - start
    rounds_by_threads, seconds_by_threads = {}, {}
    for threads in [int(t) for t in args.threads.split(",")]:
        rounds_by_threads[threads], seconds_by_threads[threads] = rounds_at(
            threads, runtimes, entries, args)
    meta["wall_s"] = time.perf_counter() - start
    section = render(meta, entries, rounds_by_threads, seconds_by_threads, runtimes, args)
    (CACHE / "last.json").write_text(json.dumps(
        {"meta": meta, "entries": entries, "rounds": rounds_by_threads,
         "round_s": seconds_by_threads}, indent=1))
    if args.out:
        report.write_section(Path(args.out), section, BEGIN, END)
        run.log(f"wrote {args.out}")
    else:
        print(section)


if __name__ == "__main__":
    main()
