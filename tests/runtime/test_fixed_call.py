"""The short call path of a model with static input shapes: exactly the compiled tensors
(torch or numpy) take it; anything else takes the general path, with the same results
and the same errors. Every test runs with the path's C caller (the runtime's _fastcall
module) and with its Python form, which runs where that module was not built."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import aotc
from aotc.runtime import fixed_call


@pytest.fixture(autouse=True, params=["c", "python"])
def short_path(request, monkeypatch):
    """Models loaded in the test take the short path in C, or in Python."""
    assert fixed_call.native is not None, "the runtime's C module (_fastcall) was not built"
    if request.param == "python":
        monkeypatch.setattr(fixed_call, "native", None)
    return request.param


class TwoInTwoOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 6)

    def forward(self, x, y):
        h = self.fc(x)
        return torch.relu(h) + y, h > 0, h.sum()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    torch.manual_seed(0)
    m = TwoInTwoOut().eval()
    args = (torch.randn(5, 10), torch.randn(5, 6))
    ep = torch.export.export(m, args)
    return ep, aotc.compile_and_package(ep, tmp_path_factory.mktemp("fixed") / "m.pt2")


def _expect(ep, x, y):
    return ep.module()(torch.as_tensor(np.asarray(x)), torch.as_tensor(np.asarray(y)))


def _no_general_path(model, monkeypatch):
    def general(*args):
        raise AssertionError("took the general call path")
    monkeypatch.setattr(model, "_run", general)


def test_exact_torch_tensors_take_the_short_path(compiled, monkeypatch):
    ep, path = compiled
    model = aotc.load_package(path)
    _no_general_path(model, monkeypatch)
    x, y = torch.randn(5, 10), torch.randn(5, 6)
    out = model(x, y)
    assert isinstance(out, tuple) and all(isinstance(o, torch.Tensor) for o in out)
    assert out[1].dtype == torch.bool and out[2].shape == ()
    torch.testing.assert_close(out, _expect(ep, x, y))
    # a view at an offset into a larger tensor, still contiguous
    big = torch.randn(7, 10)
    torch.testing.assert_close(model(big[2:], y), _expect(ep, big[2:], y))


def test_exact_numpy_arrays_take_the_short_path(compiled, monkeypatch):
    ep, path = compiled
    model = aotc.load_package(path)
    _no_general_path(model, monkeypatch)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 10), dtype=np.float32)
    y = rng.standard_normal((5, 6), dtype=np.float32)
    out = model(x, y)
    assert all(isinstance(o, np.ndarray) for o in out)
    torch.testing.assert_close(tuple(torch.from_numpy(o) for o in out), _expect(ep, x, y))
    x.setflags(write=False)  # read-only inputs (no writable buffer to take the address of)
    assert np.array_equal(model(x, y)[0], out[0])


@pytest.mark.parametrize("case", ["transposed", "mixed", "parameter", "float64", "scalar"])
def test_other_inputs_take_the_general_path(compiled, case):
    ep, path = compiled
    model = aotc.load_package(path)
    x, y = torch.randn(5, 10), torch.randn(5, 6)
    if case == "transposed":
        x = torch.randn(10, 5).t()
    elif case == "mixed":
        y = y.numpy()
    elif case == "parameter":
        x = torch.nn.Parameter(x, requires_grad=False)
    if case == "float64":
        with pytest.raises(aotc.InputError, match="input 'x': expected dtype float32, got float64"):
            model(x.double(), y)
    elif case == "scalar":
        with pytest.raises(aotc.InputError, match="input 'y'"):
            model(x, 1.0)
    else:
        with torch.no_grad():
            torch.testing.assert_close(model(x, y), _expect(ep, x, y))


def test_wrong_shapes_and_counts_raise_as_before(compiled):
    _, path = compiled
    model = aotc.load_package(path)
    with pytest.raises(aotc.InputError, match="input 'x': dim 0 is 4, expected 5"):
        model(torch.randn(4, 10), torch.randn(5, 6))
    with pytest.raises(aotc.InputError, match="expected 2 positional inputs, got 1"):
        model(torch.randn(5, 10))
    with pytest.raises(aotc.InputError, match="expected 2 positional inputs, got 1"):
        model(np.zeros((5, 10), np.float32))
    # and the short path still works after the general one filled the frame differently
    x, y = torch.randn(5, 10), torch.randn(5, 6)
    torch.testing.assert_close(model(x, y), model(x.clone(), y.clone()), rtol=0, atol=0)


def _call_concurrently(ep, model, inputs: list, callers: int, reps: int) -> None:
    """Each of `callers` threads calls the model `reps` times on its own inputs (one of
    `inputs`, round robin); every result must equal that input's result from a call made
    alone (itself checked against eager)."""
    expected = [model(x, y) for x, y in inputs]  # one call at a time first
    with torch.no_grad():
        for (x, y), out in zip(inputs, expected):
            torch.testing.assert_close(out, _expect(ep, x, y))
    errors: list = []

    def caller(k: int) -> None:
        try:
            for _ in range(reps):
                torch.testing.assert_close(model(*inputs[k]), expected[k], rtol=0, atol=0)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(k % len(inputs),)) for k in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]


def _dynamic(tmp_path, seed: int, **load):
    """TwoInTwoOut exported with a dynamic batch (1..40), compiled and loaded."""
    torch.manual_seed(seed)
    batch = torch.export.Dim("batch", min=1, max=40)
    ep = torch.export.export(TwoInTwoOut().eval(), (torch.randn(5, 10), torch.randn(5, 6)),
                             dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    return ep, aotc.load_package(aotc.compile_and_package(ep, tmp_path / "d.pt2"), **load)


@pytest.mark.parametrize("single", [False, True])
def test_concurrent_callers_get_their_own_results(compiled, single):
    """Threads calling at once (each its own inputs) with 2 runners, or one caller at a time
    in the single-threaded mode: every result belongs to its own inputs."""
    ep, path = compiled
    model = aotc.load_package(path, num_runners=2, run_single_threaded=single)
    inputs = [(torch.randn(5, 10), torch.randn(5, 6)) for _ in range(8)]
    _call_concurrently(ep, model, inputs, callers=1 if single else 8, reps=200)
    assert len(model._pool) <= 2


def test_stateful_models_do_not_take_it(tmp_path):
    class Count(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x):
            self.n.add_(1)
            return x * self.n

    x = torch.randn(3, 4)
    stateful = aotc.load_package(aotc.compile_and_package(torch.export.export(Count(), (x,)),
                                                          tmp_path / "s.pt2"))
    assert stateful._fixed is None
    torch.testing.assert_close(stateful(x), x)
    torch.testing.assert_close(stateful(x), 2 * x)


def test_dynamic_shapes_take_it_once_run(tmp_path, monkeypatch):
    """A dynamic model learns each input shape from the general path that ran it; later
    calls with that shape take the short path, other shapes the general one (which checks
    the range), up to fixed_call.MAX_SHAPES shapes."""
    ep, model = _dynamic(tmp_path, 3)
    assert model._fixed is not None
    run = model._run
    calls = []

    def general(*args):
        calls.append(tuple(args[2][0][2]))  # the shape of the first input
        return run(*args)

    monkeypatch.setattr(model, "_run", general)
    for rows in (5, 5, 7, 5, 7, 1, 1):
        x, y = torch.randn(rows, 10), torch.randn(rows, 6)
        torch.testing.assert_close(model(x, y), _expect(ep, x, y))
        a, b = x.numpy(), y.numpy()
        out = model(a, b)
        assert all(type(o) is np.ndarray for o in out)
        torch.testing.assert_close(tuple(torch.from_numpy(o) for o in out), _expect(ep, x, y))
    assert calls == [(5, 10), (7, 10), (1, 10)]
    with pytest.raises(aotc.InputError, match=r"\[0, 40\]"):  # min 1: unchecked
        model(torch.randn(41, 10), torch.randn(41, 6))
    with pytest.raises(aotc.InputError, match="input 'y': dim 0 is 4, expected .*5"):
        model(torch.randn(5, 10), torch.randn(4, 6))
    for rows in range(2, 40):
        model(torch.randn(rows, 10), torch.randn(rows, 6))
    assert len(model._fixed._known) == fixed_call.MAX_SHAPES
    # a shape past the first MAX_SHAPES still runs, on the general path
    x, y = torch.randn(39, 10), torch.randn(39, 6)
    torch.testing.assert_close(model(x, y), _expect(ep, x, y))


def test_input_checks_keep_the_short_path_for_contiguous_exports(compiled, monkeypatch):
    """With AOTI_RUNTIME_CHECK_INPUTS=1 a contiguous input of a contiguous export passes the
    layout check anyway, so it takes the short path; another layout still raises."""
    ep, path = compiled
    monkeypatch.setenv("AOTI_RUNTIME_CHECK_INPUTS", "1")
    model = aotc.load_package(path)
    run = model._run
    _no_general_path(model, monkeypatch)
    x, y = torch.randn(5, 10), torch.randn(5, 6)
    torch.testing.assert_close(model(x, y), _expect(ep, x, y))
    monkeypatch.setattr(model, "_run", run)
    with pytest.raises(aotc.InputError, match=r"input 'x': stride 1 in dim 0 differs"):
        model(torch.randn(10, 5).t(), y)


def test_concurrent_callers_of_several_shapes(tmp_path):
    """Threads calling a dynamic model at once with different batch sizes (2 runners, so a
    short-path frame is refilled whenever the next call on it has other shapes): every
    result belongs to its own inputs."""
    ep, model = _dynamic(tmp_path, 4, num_runners=2)
    inputs = [(torch.randn(rows, 10), torch.randn(rows, 6)) for rows in (1, 3, 8, 13, 3, 21)]
    _call_concurrently(ep, model, inputs, callers=len(inputs), reps=300)
