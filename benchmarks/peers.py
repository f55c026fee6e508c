"""The runtimes aotc is compared with: AOTInductor, ONNX Runtime, OpenVINO and ExecuTorch.

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
- OpenVINO (ONNX): the same configuration reading ONNX Runtime's ONNX file (on depthwise CNNs
  it is faster that way than through convert_model). Compile time: read + compile.
- ExecuTorch: `to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
  .to_executorch()`, run with executorch.runtime; threads set with
  portable_lib._unsafe_reset_threadpool(n). Compile time: lowering + serialisation.
The session settings and loaders live in peer_runtimes.py (no torch needed there). The
optional packages come with the `bench` extra (pip install -e '.[bench]'), ExecuTorch with
`quant`.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import peer_runtimes
import torch
from peer_runtimes import ort_session, ov_config

PEERS = ("aoti", "ort", "openvino", "openvino_onnx", "executorch")
LABEL = {"eager": "eager", "aotc": "aotc", "aoti": "AOTI", "ort": "ORT", "openvino": "OpenVINO",
         "openvino_onnx": "OpenVINO (ONNX)", "executorch": "ExecuTorch"}


def available(peer: str) -> str | None:
    """None if the peer's packages import, else why not."""
    modules = {"aoti": [], "ort": ["onnxruntime", "onnx", "onnxscript"], "openvino": ["openvino"],
               "openvino_onnx": ["openvino", "onnx", "onnxscript"], "executorch": ["executorch"]}
    for module in modules[peer]:
        try:
            __import__(module)
        except ImportError as e:
            extra = "quant" if module == "executorch" else "bench"
            return f"{module} is not installed ({e}); pip install -e '.[{extra}]'"
    return None


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


# ----------------------------------------------------------------------------- compiling

# what a cached AOTInductor package was built with; a package of another recipe is rebuilt
# (2: compiled with grad off, which freezing needs: Inductor skips it with grad on)
AOTI_RECIPE = 2


def aoti_compile(ep, package_path):
    # compile with as many threads as cores: inductor then emits `#pragma omp parallel`
    # without a fixed thread count, so the package follows OMP_NUM_THREADS at run time
    torch.set_num_threads(os.cpu_count() or 1)
    with torch.no_grad():  # else inductor quietly leaves freezing out
        return torch._inductor.aoti_compile_and_package(ep, package_path=package_path,
                                                        inductor_configs={"freezing": True})


def compile_aoti(folder: Path, name: str, ep) -> dict:
    """{artifact, compile_s, cached}: reuses an earlier run's package of this torch version."""
    path, stamp = folder / f"{name}.pt2", folder / f"{name}.json"
    if aoti_is_cached(folder, name):
        info = json.loads(stamp.read_text())
        return {"artifact": str(path), "compile_s": info["compile_s"], "cached": True}
    folder.mkdir(parents=True, exist_ok=True)
    _, seconds = timed(aoti_compile, ep, str(path))
    stamp.write_text(json.dumps({"torch": torch.__version__, "recipe": AOTI_RECIPE,
                                 "compile_s": seconds}))
    return {"artifact": str(path), "compile_s": seconds, "cached": False}


def aoti_is_cached(folder: Path, name: str) -> bool:
    stamp = folder / f"{name}.json"
    if not (folder / f"{name}.pt2").exists() or not stamp.exists():
        return False
    info = json.loads(stamp.read_text())
    return info.get("torch") == torch.__version__ and info.get("recipe") == AOTI_RECIPE


def compile_ort(folder: Path, name: str, model, inputs) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.onnx"
    t0 = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(path), dynamo=True, optimize=True, verbose=False,
                          external_data=False)
    ort_session(str(path), os.cpu_count() or 1)
    return {"artifact": str(path), "compile_s": time.perf_counter() - t0}


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


def compile_openvino_onnx(folder: Path, name: str, model, inputs) -> dict:
    """OpenVINO reading the ONNX file that ONNX Runtime runs (exported here if it is not
    there yet). Compile time: OpenVINO's read + compile of that file."""
    import openvino as ov

    onnx = folder / "onnx" / f"{name}.onnx"
    if not onnx.exists():
        compile_ort(folder / "onnx", name, model, inputs)
    t0 = time.perf_counter()
    core = ov.Core()
    core.compile_model(core.read_model(str(onnx)), "CPU", ov_config(os.cpu_count() or 1))
    return {"artifact": str(onnx), "compile_s": time.perf_counter() - t0}


def compile_executorch(folder: Path, name: str, ep) -> dict:
    """ExecuTorch's XNNPACK flow: to_edge_transform_and_lower with the XNNPACK partitioner,
    then to_executorch(); the program is written as a .pte file."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.pte"
    t0 = time.perf_counter()
    program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()
    path.write_bytes(program.buffer)
    return {"artifact": str(path), "compile_s": time.perf_counter() - t0}


def compile_peer(peer: str, folder: Path, name: str, model, inputs, ep) -> dict:
    if peer == "aoti":
        return compile_aoti(folder / "aoti", name, ep)
    if peer == "ort":
        return compile_ort(folder / "onnx", name, model, inputs)
    if peer == "openvino_onnx":
        return compile_openvino_onnx(folder, name, model, inputs)
    if peer == "executorch":
        return compile_executorch(folder / "executorch", name, ep)
    return compile_openvino(folder / "openvino", name, model, inputs)


# ----------------------------------------------------------------------------- loading

def as_numpy(inputs) -> list:
    return [x.numpy() for x in inputs]


def one_or_tuple(outs: list):
    """A peer's output list as the module's result: one tensor, or a tuple."""
    return outs[0] if len(outs) == 1 else tuple(outs)


def load_peer(peer: str, artifact: str, threads: int):
    """A callable taking and returning torch tensors, like the module."""
    if peer == "aoti":
        return torch._inductor.aoti_load_package(artifact)
    if peer == "executorch":
        run = peer_runtimes.load_executorch(artifact, threads)
        return lambda *inputs: one_or_tuple(run(*inputs))
    loader = peer_runtimes.load_ort if peer == "ort" else peer_runtimes.load_openvino
    run = loader(artifact, threads)
    return lambda *inputs: one_or_tuple([torch.from_numpy(o) for o in run(*as_numpy(inputs))])
