"""The KServe / Triton v2 inference protocol over HTTP: request bodies (JSON tensors, and the
binary tensor data extension) to numpy arrays, outputs back to response bodies, and the
model metadata document. Pure numpy and json: no Ray, no HTTP server here."""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..dtypes import DType
from ..errors import InputError

HEADER_LENGTH = "Inference-Header-Content-Length"

# v2 datatype <-> aotc dtype (BF16 travels as raw bits: numpy holds bfloat16 as uint16)
DATATYPES = {"BOOL": DType.bool, "UINT8": DType.uint8, "INT8": DType.int8, "INT16": DType.int16,
             "INT32": DType.int32, "INT64": DType.int64, "UINT64": DType.uint64, "FP16": DType.float16,
             "FP32": DType.float32, "FP64": DType.float64, "BF16": DType.bfloat16}
DATATYPE_OF = {d: name for name, d in DATATYPES.items()}


class ProtocolError(InputError):
    """A request the v2 protocol (or the model) cannot accept: answered with status 400."""


@dataclass
class InferRequest:
    id: str | None
    inputs: dict[str, np.ndarray]
    outputs: list[str] | None  # the outputs asked for, None for all
    binary_outputs: set[str]  # outputs to return as binary data


def datatype(dtype_name: str) -> str:
    d = DType.from_name(dtype_name)
    if d not in DATATYPE_OF:  # complex64, complex128
        raise ProtocolError(f"the v2 protocol has no datatype for {d.name}; serve a model that "
                            "takes and returns torch.view_as_real of it (float pairs) instead")
    return DATATYPE_OF[d]


def _shape(value, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(s, int) and not isinstance(s, bool)
                                              and s >= 0 for s in value):
        raise ProtocolError(f"{where}: 'shape' must be a list of non-negative integers, got "
                            f"{value!r}")
    return tuple(value)


def _parameters(holder: dict, where: str) -> dict:
    params = holder.get("parameters")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ProtocolError(f"{where}: 'parameters' must be a JSON object")
    return params


def _flatten_json(data) -> list:
    """Nested lists (the v2 protocol allows both nested and flat row-major data) -> flat."""
    if not isinstance(data, list):
        return [data]
    if all(not isinstance(x, list) for x in data):
        return data
    return [y for x in data for y in _flatten_json(x)]


def _tensor_from_json(spec: dict, where: str) -> np.ndarray:
    name = spec["datatype"]
    shape = _shape(spec.get("shape"), where)
    dtype = DATATYPES[name]
    if dtype is DType.bfloat16:
        raise ProtocolError(f"{where}: BF16 tensors are sent as binary data "
                            "(the binary tensor data extension), not as JSON numbers")
    if "data" not in spec:
        raise ProtocolError(f"{where}: no 'data' and no binary_data_size parameter")
    flat = _flatten_json(spec["data"])
    n = int(np.prod(shape, dtype=np.int64))
    if len(flat) != n:
        raise ProtocolError(f"{where}: shape {list(shape)} holds {n} elements, 'data' has "
                            f"{len(flat)}")
    numeric = (bool,) if dtype is DType.bool else (int, float) if dtype.is_floating else (int,)
    if not all(isinstance(x, numeric) and (dtype is DType.bool or not isinstance(x, bool))
               for x in flat):
        raise ProtocolError(f"{where}: 'data' must hold {name} values "
                            f"({'true/false' if dtype is DType.bool else 'numbers'})")
    try:
        return np.array(flat, dtype=dtype.numpy_name).reshape(shape)
    except OverflowError:
        raise ProtocolError(f"{where}: a value does not fit {name}") from None


def _tensor_from_bytes(spec: dict, blob: bytes, where: str) -> np.ndarray:
    shape = _shape(spec.get("shape"), where)
    dtype = np.dtype(DATATYPES[spec["datatype"]].numpy_name)
    n = int(np.prod(shape, dtype=np.int64))
    if len(blob) != n * dtype.itemsize:
        raise ProtocolError(f"{where}: shape {list(shape)} of {spec['datatype']} needs "
                            f"{n * dtype.itemsize} bytes, binary_data_size is {len(blob)}")
    return np.frombuffer(blob, dtype=dtype).reshape(shape).copy()


def parse_infer(body: bytes, header_length: str | None) -> InferRequest:
    """An inference request body -> its tensors. Raises ProtocolError on anything malformed."""
    if header_length is not None:
        try:
            n = int(header_length)
        except ValueError:
            raise ProtocolError(f"{HEADER_LENGTH} must be an integer, got {header_length!r}") from None
        if not 0 <= n <= len(body):
            raise ProtocolError(f"{HEADER_LENGTH} is {n} but the body has {len(body)} bytes")
        header, blobs = body[:n], body[n:]
    else:
        header, blobs = body, b""
    try:
        doc = json.loads(header)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProtocolError(f"the request is not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("inputs"), list):
        raise ProtocolError("the request must be a JSON object with an 'inputs' list")
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for k, spec in enumerate(doc["inputs"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise ProtocolError(f"inputs[{k}] must be an object with a 'name'")
        where = f"input '{spec['name']}'"
        if spec.get("datatype") not in DATATYPES:
            raise ProtocolError(f"{where}: datatype {spec.get('datatype')!r} is not one of "
                                f"{sorted(DATATYPES)}")
        if spec["name"] in inputs:
            raise ProtocolError(f"{where} is given twice")
        size = _parameters(spec, where).get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or size < 0 or offset + size > len(blobs):
                raise ProtocolError(f"{where}: binary_data_size {size!r} runs past the "
                                    f"{len(blobs)} bytes of binary data")
            inputs[spec["name"]] = _tensor_from_bytes(spec, blobs[offset:offset + size], where)
            offset += size
        else:
            inputs[spec["name"]] = _tensor_from_json(spec, where)
    if offset != len(blobs):
        raise ProtocolError(f"the request carries {len(blobs) - offset} bytes of binary data "
                            "that no input claims")
    all_binary = bool(_parameters(doc, "the request").get("binary_data_output", False))
    asked = doc.get("outputs")
    if asked is None:
        return InferRequest(doc.get("id"), inputs, None, {"*"} if all_binary else set())
    if not isinstance(asked, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                              for o in asked):
        raise ProtocolError("'outputs' must be a list of objects with a 'name'")
    binary = {o["name"] for o in asked
              if _parameters(o, f"output '{o['name']}'").get("binary_data", all_binary)}
    return InferRequest(doc.get("id"), inputs, [o["name"] for o in asked], binary)


def _json_values(array: np.ndarray, dtype: DType) -> list:
    if dtype is DType.bfloat16:  # raw bits -> the float32 values they stand for
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array.reshape(-1).tolist()


def encode_infer(model: str, version: str, request_id: str | None,
                 outputs: list[tuple[str, str, np.ndarray]], binary: set[str]
                 ) -> tuple[bytes, int | None]:
    """(name, aotc dtype name, array) per output -> (body, JSON header length or None)."""
    entries, blobs = [], []
    for name, dtype_name, array in outputs:
        dtype = DType.from_name(dtype_name)
        entry: dict = {"name": name, "datatype": DATATYPE_OF[dtype], "shape": list(array.shape)}
        if name in binary or "*" in binary:
            blob = np.ascontiguousarray(array).tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = _json_values(array, dtype)
        entries.append(entry)
    doc: dict = {"model_name": model, "model_version": version, "outputs": entries}
    if request_id is not None:
        doc["id"] = request_id
    header = json.dumps(doc).encode()
    if not blobs:
        return header, None
    return header + b"".join(blobs), len(header)


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()
