"""Batching without a server: which dim is a batch dim, which requests may be stacked and
how many rows at most, and stacked runs giving each request the direct run's answer."""
from __future__ import annotations

import numpy as np
import pytest

import aotc
from aotc.serve.batching import batch_limit, run_batch, stackable
from aotc.serve.model import BatchDim, ServedModel, find_batch_dim


def _meta(inputs, outputs, symbols, **extra) -> dict:
    return {"inputs": [{"name": f"in{k}", "kind": "tensor", "dtype": "float32", "sizes": s}
                       for k, s in enumerate(inputs)],
            "outputs": [{"name": f"out{k}", "dtype": "float32", "sizes": s}
                        for k, s in enumerate(outputs)],
            "output_leaves": [{"kind": "tensor", "index": k} for k in range(len(outputs))],
            "symbols": symbols, **extra}


def test_batch_dim_found():
    meta = _meta([["s0", 10], ["s0"]], [["s0", 1], ["s0", 3, 3]], {"s0": [1, 1024], "s1": [2, 9]})
    assert find_batch_dim(meta) == BatchDim("s0", 1, 1024)
    assert find_batch_dim(_meta([["s0", 4]], [["s0"]], {"s0": [2, None]})) == BatchDim("s0", 2, None)


@pytest.mark.parametrize("inputs, outputs, extra", [
    ([[8, 10]], [[8, 1]], {}),  # no dynamic dim
    ([["s0", 10]], [[1, 10]], {}),  # a reduction over dim 0
    ([["s0", "s0"]], [["s0", 1]], {}),  # the symbol sizes another dim too
    ([["s0", 10]], [["s0", "2*s0"]], {}),  # ... even inside an expression
    ([["s0", 10], ["s1", 10]], [["s0", 1]], {}),  # inputs disagree on dim 0
    ([["s0", 10]], [["s0", 1]], {"sizes_follow_data": True}),
])
def test_no_batch_dim(inputs, outputs, extra):
    symbols = {"s0": [1, 64], "s1": [1, 64]}
    assert find_batch_dim(_meta(inputs, outputs, symbols, **extra)) is None


def test_no_batch_dim_for_state_int_inputs_or_scalar_outputs():
    symbols = {"s0": [1, 64]}
    assert find_batch_dim(_meta([["s0", 4]], [["s0"]], symbols), stateful=True) is None
    meta = _meta([["s0", 4]], [["s0"]], symbols)
    meta["inputs"].append({"name": "n", "kind": "tensor", "dtype": "int64", "sizes": [],
                           "scalar": "int"})
    assert find_batch_dim(meta) is None
    meta = _meta([["s0", 4]], [["s0"]], symbols)
    meta["output_leaves"][0]["scalar"] = "int"
    assert find_batch_dim(meta) is None


def test_limits_and_stackable_requests():
    dim = BatchDim("s0", 2, 16)
    assert batch_limit(dim, 64) == 16 and batch_limit(dim, 8) == 8
    assert batch_limit(dim, 1) == 0 and batch_limit(None, 64) == 0
    assert batch_limit(BatchDim("s0", 1, None), 32) == 32
    x = np.zeros((4, 3), np.float32)
    assert stackable([x, np.zeros((4,), np.int64)], dim, 8)
    assert not stackable([np.zeros((9, 3), np.float32)], dim, 8)  # past the batch limit
    assert not stackable([np.zeros((1, 3), np.float32)], dim, 8)  # under the dim's min
    assert not stackable([x, np.zeros((5,), np.int64)], dim, 8)  # inputs disagree on dim 0
    assert not stackable([np.zeros((), np.float32)], dim, 8)


def test_stacked_runs_answer_each_request(readme_package):
    """(readme_package's direct run matches eager PyTorch: conftest checks it.)"""
    served = ServedModel(readme_package, "model", num_threads=1)
    assert served.batch is not None and (served.batch.low, served.batch.high) == (0, 1024)
    rng = np.random.default_rng(0)
    requests = [[rng.standard_normal((n, 10)).astype(np.float32)] for n in (1, 3, 2, 1, 4)]
    requests.insert(2, [np.zeros((2, 11), np.float32)])  # a bad one: runs alone, fails alone
    executions = []
    outcomes = run_batch(requests, served.run, lambda r, n, s: executions.append((r, n)))
    assert executions == [(5, 11)]  # the five good requests in one run of 11 rows
    with pytest.raises(aotc.InputError, match="dim 1 is 11, expected 10"):
        outcomes[2].get()
    for k, (req, outcome) in enumerate(zip(requests, outcomes)):
        if k == 2:
            continue
        (y,) = outcome.get()
        np.testing.assert_array_equal(y, served.run(req)[0])  # the direct run's bits


def test_served_model_checks_names_and_dtypes(readme_package):
    from aotc.serve.protocol import ProtocolError

    served = ServedModel(readme_package, "model")
    assert served.metadata()["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 10]}]
    with pytest.raises(ProtocolError, match=r"takes inputs \['x'\]; the request gives \['y'\]"):
        served.arrays({"y": np.zeros((1, 10), np.float32)})
    with pytest.raises(ProtocolError, match="datatype INT64, but model 'model' takes FP32"):
        served.arrays({"x": np.zeros((1, 10), np.int64)})
