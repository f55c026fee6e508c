"""The v2 protocol without a server: request bodies (JSON and binary tensors) to arrays,
outputs to response bodies, malformed requests to ProtocolError (a 400)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.http as httpclient

from aotc.serve.protocol import ProtocolError, datatype, encode_infer, parse_infer


def _client_body(tensors: dict[str, np.ndarray], binary: bool, outputs=None) -> tuple[bytes, str | None]:
    """The exact body tritonclient sends for these tensors."""
    from tritonclient.http._utils import _get_inference_request
    from tritonclient.utils import np_to_triton_dtype

    inputs = []
    for name, a in tensors.items():
        t = httpclient.InferInput(name, list(a.shape), np_to_triton_dtype(a.dtype))
        t.set_data_from_numpy(a, binary_data=binary)
        inputs.append(t)
    body, size = _get_inference_request(inputs, "", outputs, 0, False, False, 0, None, None)
    return body, None if size is None else str(size)


@pytest.mark.parametrize("binary", [False, True])
def test_tritonclient_requests_round_trip(binary):
    rng = np.random.default_rng(0)
    tensors = {"x": rng.standard_normal((3, 4)).astype(np.float32),
               "ids": rng.integers(-5, 5, (3,)).astype(np.int64),
               "mask": rng.integers(0, 2, (2, 2)).astype(bool),
               "h": rng.standard_normal((5,)).astype(np.float16)}
    req = parse_infer(*_client_body(tensors, binary))
    assert list(req.inputs) == list(tensors)
    for name, a in tensors.items():
        assert req.inputs[name].dtype == a.dtype
        np.testing.assert_array_equal(req.inputs[name], a)
    assert req.outputs is None and req.binary_outputs == {"*"}  # tritonclient's default


@pytest.mark.parametrize("binary", [False, True])
def test_responses_read_back_by_tritonclient(binary):
    y = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    k = np.array([[1, -2]], dtype=np.int32)
    body, size = encode_infer("m", "1", "req-7", [("y", "float64", y), ("k", "int32", k)],
                              {"*"} if binary else set())
    result = httpclient.InferResult.from_response_body(body, header_length=size)
    np.testing.assert_array_equal(result.as_numpy("y"), y)
    np.testing.assert_array_equal(result.as_numpy("k"), k)
    assert result.get_response()["id"] == "req-7"
    assert (size is not None) == binary


def test_bfloat16_outputs_as_json_are_their_float_values():
    bits = np.array([0x3F80, 0xC040, 0x0000], dtype=np.uint16)  # 1.0, -3.0, 0.0 in bfloat16
    body, size = encode_infer("m", "1", None, [("y", "bfloat16", bits)], set())
    assert size is None
    assert json.loads(body)["outputs"][0] == {"name": "y", "datatype": "BF16", "shape": [3],
                                              "data": [1.0, -3.0, 0.0]}


def test_nested_json_data_and_requested_outputs():
    doc = {"id": "a", "inputs": [{"name": "x", "datatype": "INT32", "shape": [2, 2],
                                  "data": [[1, 2], [3, 4]]}],
           "outputs": [{"name": "y", "parameters": {"binary_data": True}}, {"name": "z"}]}
    req = parse_infer(json.dumps(doc).encode(), None)
    np.testing.assert_array_equal(req.inputs["x"], np.array([[1, 2], [3, 4]], np.int32))
    assert req.outputs == ["y", "z"] and req.binary_outputs == {"y"} and req.id == "a"


@pytest.mark.parametrize("body, header, message", [
    (b"{nope", None, "not valid JSON"),
    (b"[]", None, "a JSON object with an 'inputs' list"),
    (b'{"inputs": [{"name": "x", "datatype": "FP8", "shape": [1], "data": [1]}]}', None,
     "datatype 'FP8' is not one of"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1]}]}', None,
     "shape [2] holds 2 elements, 'data' has 1"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1], "data": []}]}', None,
     "'shape' must be a list of non-negative integers"),
    (b'{"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": ["a"]}]}', None,
     "'data' must hold INT8 values"),
    (b'{"inputs": [{"name": "x", "datatype": "INT8", "shape": [1], "data": [1000]}]}', None,
     "a value does not fit INT8"),
    (b'{"inputs": [{"name": "x", "datatype": "BF16", "shape": [1], "data": [1.0]}]}', None,
     "BF16 tensors are sent as binary data"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]},'
     b' {"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]}', None, "given twice"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],'
     b' "parameters": {"binary_data_size": 8}}]}' + b"\0" * 4, "100", "runs past"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2],'
     b' "parameters": {"binary_data_size": 4}}]}' + b"\0" * 4, "100", "needs 8 bytes"),
    (b'{"inputs": []}xxxx', "14", "4 bytes of binary data that no input claims"),
    (b'{"inputs": []}', "99", "Inference-Header-Content-Length is 99"),
    (b'{"inputs": []}', "ten", "must be an integer"),
    (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1],'
     b' "parameters": 3}]}', None, "input 'x': 'parameters' must be a JSON object"),
    (b'{"inputs": [], "outputs": [{"name": "y", "parameters": []}]}', None,
     "output 'y': 'parameters' must be a JSON object"),
])
def test_malformed_requests(body, header, message):
    with pytest.raises(ProtocolError) as e:
        parse_infer(body, header)
    assert message in str(e.value)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_has_no_v2_datatype(name):
    assert datatype("float32") == "FP32"
    with pytest.raises(ProtocolError, match=f"no datatype for {name}.*view_as_real"):
        datatype(name)
