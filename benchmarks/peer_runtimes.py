"""Loading the peers' artifacts with a fixed thread count, without importing torch where the
runtime does not need it (ONNX Runtime and OpenVINO take and return numpy arrays), so that a
process timing one of them alone holds nothing but that runtime.

Every loader returns a callable taking the model's inputs positionally and returning the list
of its outputs: numpy arrays for ONNX Runtime and OpenVINO, torch tensors for ExecuTorch.
"""
from __future__ import annotations


def ort_session(path: str, threads: int):
    """ONNX Runtime's CPU provider, all graph optimisations, `threads` intra-op threads, one
    inter-op thread, sequential execution."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ov_config(threads: int) -> dict:
    """OpenVINO on CPU in float32 (it would pick bf16 on CPUs with AMX or AVX512-BF16), one
    stream, the latency hint, `threads` inference threads."""
    return {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}


def load_ort(path: str, threads: int):
    sess = ort_session(path, threads)
    names = [i.name for i in sess.get_inputs()]

    def run(*inputs):
        return sess.run(None, dict(zip(names, inputs)))
    return run


def load_openvino(path: str, threads: int):
    """An OpenVINO IR (.xml) or an ONNX file, read by OpenVINO's own reader."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", ov_config(threads))
    request = compiled.create_infer_request()
    outputs = compiled.outputs

    def run(*inputs):
        request.infer(list(inputs))
        return [request.get_tensor(o).data for o in outputs]
    return run


def executorch_threads(threads: int) -> None:
    """ExecuTorch's XNNPACK delegate runs on the runtime's one thread pool."""
    from executorch.extension.pybindings import portable_lib

    portable_lib._unsafe_reset_threadpool(threads)


def load_executorch(path: str, threads: int):
    """A .pte program lowered to XNNPACK, run with executorch.runtime."""
    from executorch.runtime import Runtime

    executorch_threads(threads)
    method = Runtime.get().load_program(path).load_method("forward")

    def run(*inputs):
        return list(method.execute(list(inputs)))
    return run
