"""The models of int8_peers.py and how each runtime quantizes and compiles them.

Models (batch 1, weights and inputs from fixed seeds, so the compiling parent and the timing
workers build identical tensors): `resnet50` (cnn_models.ResNet50, 224 x 224) and
`bert_layer` (transformer_models.BertLayer, seq 128) quantized statically, calibrated on
three random batches (seed 1); `bert_layer_dynamic`, the same encoder layer with dynamic int8
(activations quantized at run time; the calibration batches go through the observers, which
record nothing for dynamic activations).

Each adapter returns the artifact a worker loads (alone_worker.py), and the reference its
output is checked against with a tolerance:
- `aotc_fp32`: `aotc.compile_and_package` of the float program; checked against eager fp32
  (rtol = atol = 1e-4).
- `aotc_int8`: torchao PT2E with `X86InductorQuantizer` and
  `get_default_x86_inductor_quantization_config()` (uint8 activations per tensor from a
  histogram observer, int8 weights per output channel, symmetric) or
  `(is_dynamic=True)` for the dynamic layer; prepare_pt2e, calibration, convert_pt2e,
  torch.export; aotc with `int8_kernels="on"`. Checked against that quantized module run
  eagerly.
- `aoti_int8`: the same quantized program, `aoti_compile_and_package` with
  `freezing = True` under torch.no_grad (inductor's oneDNN qconv / qlinear lowerings, which
  need freezing, and inductor freezes only with grad off); checked like aotc_int8.
- `ort_int8`: the float module exported to ONNX (`torch.onnx.export`, dynamo exporter, as
  peers.py), ONNX Runtime's `quant_pre_process` (shape inference and graph optimisation),
  then `quantize_static` in QDQ format, uint8 activations per tensor (MinMax calibration on
  the same three batches through a CalibrationDataReader), int8 weights per channel
  (U8S8), every op type ORT quantizes by default; checked against the same QDQ model run by
  ONNX Runtime with graph optimisations disabled (the QDQ ops executed one by one, float
  arithmetic between them). Dynamic: `quantize_dynamic` (int8 weights per channel, QOperator
  format: DynamicQuantizeLinear + MatMulInteger, fused by ORT at load), checked against eager
  fp32 loosely (there is no unfused reference of it).
- `openvino_int8`: `openvino.convert_model` of the float module, `nncf.quantize` with an
  `nncf.Dataset` of the same three batches (subset_size 3, default preset: symmetric
  activations and weights, weights per channel; `model_type=TRANSFORMER` for the encoder,
  as NNCF recommends), saved as IR and run with the f32 inference precision hint (int8 where
  NNCF put FakeQuantize, float32 elsewhere). Dynamic: NNCF has no run-time activation
  quantization, but OpenVINO's CPU plugin has one for weight-compressed models:
  `nncf.compress_weights(mode=INT8_SYM)` (int8 weights per output channel) and the IR's
  runtime option `DYNAMIC_QUANTIZATION_GROUP_SIZE = 32` (activations quantized to int8 at run
  time in groups of 32 along the reduction; OpenVINO's default), which is what optimum-intel's
  OVDynamicQuantizationConfig does. Checked against eager fp32 loosely (no eager form of the
  quantized IR exists).
- `executorch_int8`: ExecuTorch's `XNNPACKQuantizer` with
  `get_symmetric_quantization_config(is_per_channel=True)` (int8 activations per tensor,
  int8 weights per channel; `is_dynamic=True` for the dynamic layer), prepare_pt2e,
  calibration, convert_pt2e, `to_edge_transform_and_lower(..., partitioner=
  [XnnpackPartitioner()]).to_executorch()`; checked against the converted module run eagerly.
- `eager_fp32`: the float module under torch.inference_mode (built in the worker by `build`).

Tolerances (absolute, rtol 0): "own" references (a quantized module run eagerly, or the QDQ
graph unoptimised) allow OWN = 5% of the reference's largest magnitude: a value on a rounding
boundary lands one quantum off when float sums differ in order, and in a deep network or
after a quantized attention product that step moves everything after it (measured: up to
0.6% on resnet50, 2.7% for ONNX Runtime's fused kernels against its own QDQ graph on the
encoder layer, where tests/quantized_models.py's 1% would fail); "loose" checks against
eager fp32 allow LOOSE = 15% of its largest magnitude (measured: 0.2-1.3%; the
XNNPACKQuantizer's own module is 10% from fp32 on the static encoder layer). A broken graph
(a wrong layout, a lost bias or scale) is off by the order of the output itself.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

MODELS = {"resnet50": "static", "bert_layer": "static", "bert_layer_dynamic": "dynamic"}
SHAPES = {"resnet50": (1, 3, 224, 224), "bert_layer": (1, 128, 768),
          "bert_layer_dynamic": (1, 128, 768)}
SEED, CALIBRATION_SEED, CALIBRATION_BATCHES = 0, 1, 3
TIGHT = {"rtol": 1e-4, "atol": 1e-4}
OWN, LOOSE = 0.05, 0.15
OV_DYNAMIC_GROUP = 32

# what each runtime's output is checked against: "fp32" (eager float32), "x86" (the
# X86InductorQuantizer module run eagerly), "xnnpack" (the XNNPACKQuantizer module run
# eagerly), "qdq" (the QDQ ONNX model with ORT's graph optimisations disabled)
CHECK = {"eager_fp32": "fp32", "aotc_fp32": "fp32", "aotc_int8": "x86", "aoti_int8": "x86",
         "ort_int8": "qdq", "openvino_int8": "fp32", "executorch_int8": "xnnpack"}
CHECK_LABEL = {"fp32": "eager fp32", "x86": "X86InductorQuantizer module, eager",
               "xnnpack": "XNNPACKQuantizer module, eager",
               "qdq": "QDQ model, ORT unoptimised"}


def build(name: str):
    """(float module, (input,)) of a model: weights from seed 0, the input from its own
    generator."""
    import torch

    torch.manual_seed(SEED)
    model: torch.nn.Module
    if name == "resnet50":
        from cnn_models import ResNet50

        model = ResNet50()
    else:
        from transformer_models import BertLayer

        model = BertLayer()
    x = torch.randn(*SHAPES[name], generator=torch.Generator().manual_seed(SEED))
    return model.eval(), (x,)


def calibration(name: str) -> list:
    import torch

    g = torch.Generator().manual_seed(CALIBRATION_SEED)
    return [torch.randn(*SHAPES[name], generator=g) for _ in range(CALIBRATION_BATCHES)]


def dynamic(name: str) -> bool:
    return MODELS[name] == "dynamic"


def flat_numpy(out) -> list[np.ndarray]:
    import alone_worker

    return [np.asarray(o.detach().numpy() if hasattr(o, "detach") else o)
            for o in alone_worker.flatten(out)]


# ----------------------------------------------------------------------------- PT2E

def x86_quantizer(is_dynamic: bool):
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(is_dynamic=is_dynamic))
    return quantizer


def xnnpack_quantizer(is_dynamic: bool):
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True,
                                                           is_dynamic=is_dynamic))
    return quantizer


def pt2e(model, inputs, batches, quantizer):
    """prepare_pt2e, the calibration batches, convert_pt2e; the quantized program exported
    again, and the converted module (the eager reference)."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
        for batch in batches:
            prepared(batch)
        converted = convert_pt2e(prepared)
        return torch.export.export(converted, inputs), converted


# ----------------------------------------------------------------------------- compiling

def compile_aotc(ep, path: Path, int8: bool) -> None:
    import aotc

    aotc.compile_and_package(ep, package_path=str(path),
                             options={"int8_kernels": "on"} if int8 else None)


def compile_aoti(ep, path: Path) -> None:
    """peers.aoti_compile: freezing (which it compiles with grad off for, since without
    freezing the oneDNN int8 lowerings do not match: the int8 weights are dequantized on
    every call and the products run in float), threads = cores."""
    import peers

    peers.aoti_compile(ep, str(path))


def export_onnx(model, inputs, path: Path) -> None:
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, str(path), dynamo=True, optimize=True, verbose=False,
                          external_data=False)


class Batches:
    """onnxruntime.quantization's CalibrationDataReader over the calibration batches (a
    subclass is made on first use so this module imports without onnxruntime)."""

    @staticmethod
    def reader(input_name: str, batches: list):
        from onnxruntime.quantization import CalibrationDataReader

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.items = iter([{input_name: b.numpy()} for b in batches])

            def get_next(self):
                return next(self.items, None)

        return Reader()


def compile_ort(model, inputs, batches, is_dynamic: bool, path: Path) -> list[np.ndarray] | None:
    """The quantized ONNX file at `path`; the reference outputs (the QDQ graph run with ORT's
    optimisations off) for the static model, None for the dynamic one."""
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    float_path = path.with_name(path.stem + ".float.onnx")
    pre_path = path.with_name(path.stem + ".pre.onnx")
    export_onnx(model, inputs, float_path)
    quant_pre_process(str(float_path), str(pre_path))
    if is_dynamic:
        quantize_dynamic(str(pre_path), str(path), per_channel=True, weight_type=QuantType.QInt8)
        return None
    name = ort.InferenceSession(str(pre_path), providers=["CPUExecutionProvider"]) \
        .get_inputs()[0].name
    quantize_static(str(pre_path), str(path), Batches.reader(name, batches),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {name: inputs[0].numpy()})


def compile_openvino(model, inputs, batches, is_dynamic: bool, transformer: bool,
                     path: Path) -> None:
    import nncf
    import openvino as ov
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(model, example_input=inputs)
    if is_dynamic:
        quantized = nncf.compress_weights(converted, mode=nncf.CompressWeightsMode.INT8_SYM)
        quantized.set_rt_info(str(OV_DYNAMIC_GROUP),
                              ["runtime_options", "DYNAMIC_QUANTIZATION_GROUP_SIZE"])
    else:
        dataset = nncf.Dataset([b.numpy() for b in batches])
        quantized = nncf.quantize(converted, dataset, subset_size=len(batches),
                                  model_type=nncf.ModelType.TRANSFORMER if transformer else None)
    ov.save_model(quantized, str(path), compress_to_fp16=False)


def compile_executorch(ep, path: Path) -> None:
    import peers

    info = peers.compile_executorch(path.parent, path.stem, ep)
    assert info["artifact"] == str(path)


def source_files() -> list[Path]:
    """The files whose content decides the peers' artifacts (models and adapters)."""
    here = Path(__file__).resolve().parent
    return [here / n for n in ("quant_peers.py", "cnn_models.py", "transformer_models.py",
                               "peers.py")]


def quiet() -> None:
    import logging

    warnings.filterwarnings("ignore")
    os.environ.setdefault("TQDM_DISABLE", "1")
    for name in ("torch.onnx", "torch._dynamo", "torch.export", "onnxscript", "nncf",
                 "torch._inductor"):
        logging.getLogger(name).setLevel(logging.ERROR)
