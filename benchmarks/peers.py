"""The runtimes aotc is compared with: AOTInductor, ONNX Runtime and OpenVINO.

Each peer has a compile step (run once, in the parent, timed) that writes an artifact under
build/bench/, and a load step (run in the timing worker) that returns a callable taking and
returning torch tensors with the thread count fixed:
- AOTInductor: `aoti_compile_and_package(ep, inductor_configs={'freezing': True})`; the package
  follows OMP_NUM_THREADS at run time. Packages are cached across runs by model name and torch
  version (their compile is slow), with the compile time recorded when it was built.
- ONNX Runtime: `torch.onnx.export` (the dynamo exporter) then an InferenceSession on the CPU
  provider with all graph optimisations; intra_op_num_threads = n, inter_op_num_threads = 1,
  sequential execution. Compile time: export + session creation.
- OpenVINO: `openvino.convert_model` on the module, then `compile_model` on CPU with
  INFERENCE_PRECISION_HINT = f32 (it would pick bf16 on CPUs with AMX or AVX512-BF16),
  INFERENCE_NUM_THREADS = n, one stream, latency hint. Compile time: convert + compile.
The optional packages come with the `bench` extra (pip install -e '.[bench]').
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

PEERS = ("aoti", "ort", "openvino")
LABEL = {"eager": "eager", "aotc": "aotc", "aoti": "AOTI", "ort": "ORT", "openvino": "OpenVINO"}


def available(peer: str) -> str | None:
    """None if the peer's packages import, else why not."""
    modules = {"aoti": [], "ort": ["onnxruntime", "onnx", "onnxscript"], "openvino": ["openvino"]}
    for module in modules[peer]:
        try:
            __import__(module)
        except ImportError as e:
            return f"{module} is not installed ({e}); pip install -e '.[bench]'"
    return None


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


# ----------------------------------------------------------------------------- compiling

def aoti_compile(ep, package_path):
    # compile with as many threads as cores: inductor then emits `#pragma omp parallel`
    # without a fixed thread count, so the package follows OMP_NUM_THREADS at run time
    torch.set_num_threads(os.cpu_count() or 1)
    return torch._inductor.aoti_compile_and_package(ep, package_path=package_path,
                                                    inductor_configs={"freezing": True})


def compile_aoti(folder: Path, name: str, ep) -> dict:
    """{artifact, compile_s, cached}: reuses an earlier run's package of this torch version."""
    path, stamp = folder / f"{name}.pt2", folder / f"{name}.json"
    if path.exists() and stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("torch") == torch.__version__:
            return {"artifact": str(path), "compile_s": info["compile_s"], "cached": True}
    folder.mkdir(parents=True, exist_ok=True)
    _, seconds = timed(aoti_compile, ep, str(path))
    stamp.write_text(json.dumps({"torch": torch.__version__, "compile_s": seconds}))
    return {"artifact": str(path), "compile_s": seconds, "cached": False}


def aoti_is_cached(folder: Path, name: str) -> bool:
    stamp = folder / f"{name}.json"
    return ((folder / f"{name}.pt2").exists() and stamp.exists()
            and json.loads(stamp.read_text()).get("torch") == torch.__version__)


def ort_session(path: str, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def compile_ort(folder: Path, name: str, model, inputs) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.onnx"
    t0 = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(path), dynamo=True, optimize=True, verbose=False,
                          external_data=False)
    ort_session(str(path), os.cpu_count() or 1)
    return {"artifact": str(path), "compile_s": time.perf_counter() - t0}


def ov_config(threads: int) -> dict:
    return {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}


def compile_openvino(folder: Path, name: str, model, inputs) -> dict:
    import openvino as ov

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.xml"
    t0 = time.perf_counter()
    with torch.no_grad():
        converted = ov.convert_model(model, example_input=inputs)
    ov.Core().compile_model(converted, "CPU", ov_config(os.cpu_count() or 1))
    seconds = time.perf_counter() - t0
    ov.save_model(converted, str(path), compress_to_fp16=False)
    return {"artifact": str(path), "compile_s": seconds}


def compile_peer(peer: str, folder: Path, name: str, model, inputs, ep) -> dict:
    if peer == "aoti":
        return compile_aoti(folder / "aoti", name, ep)
    if peer == "ort":
        return compile_ort(folder / "onnx", name, model, inputs)
    return compile_openvino(folder / "openvino", name, model, inputs)


# ----------------------------------------------------------------------------- loading

def as_numpy(inputs) -> list:
    return [x.numpy() for x in inputs]


def load_ort(path: str, threads: int):
    sess = ort_session(path, threads)
    names = [i.name for i in sess.get_inputs()]

    def run(*inputs):
        outs = sess.run(None, dict(zip(names, as_numpy(inputs))))
        return torch.from_numpy(outs[0]) if len(outs) == 1 else tuple(map(torch.from_numpy, outs))
    return run


def load_openvino(path: str, threads: int):
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", ov_config(threads))
    request = compiled.create_infer_request()
    outputs = compiled.outputs

    def run(*inputs):
        request.infer(as_numpy(inputs))
        outs = [torch.from_numpy(request.get_tensor(o).data) for o in outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return run


def load_peer(peer: str, artifact: str, threads: int):
    if peer == "aoti":
        return torch._inductor.aoti_load_package(artifact)
    if peer == "ort":
        return load_ort(artifact, threads)
    return load_openvino(artifact, threads)
