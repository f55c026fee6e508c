"""Registered buffers updated in place are model state: each loaded model keeps its own
copy across calls (shared by its runners, whose calls take turns), readable and settable
from Python; a KV cache held as state is updated in its own memory, step by step as eager
updates it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from numpy_only import BLOCK_TORCH

import aotc


class CountCalls(torch.nn.Module):
    """A call counter and a running sum through a view, both returned."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        self.total[1:] += x[1:]
        return x * self.count, self.total.clone()


def _package(module, args, tmp_path, functional=False):
    with torch.no_grad():
        ep = torch.export.export(module, args)
    if functional:  # export's functional form: BUFFER_MUTATION outputs instead of add_
        ep = ep.run_decompositions()
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2",
                                    options={"debug_dir": str(tmp_path / "debug")})
    return ep, path


@pytest.mark.parametrize("functional", [False, True], ids=["in_place", "functionalized"])
def test_counter_after_five_calls(tmp_path, functional):
    ep, path = _package(CountCalls(), (torch.randn(3),), tmp_path, functional)
    model, eager = aotc.load_package(path), ep.module()
    assert model.buffer_names() == ["count", "total"]
    for _ in range(5):
        x = torch.randn(3)
        torch.testing.assert_close(model(x), eager(x))
    assert int(model.get_buffer("count")) == 5
    torch.testing.assert_close(model.get_buffer("total"), eager.total)
    other = aotc.load_package(path)  # another loaded model has its own state
    assert int(other.get_buffer("count")) == 0
    model.set_buffer("count", torch.tensor(10))
    torch.testing.assert_close(model(torch.ones(3))[0], torch.full((3,), 11.0))
    model.reset_buffers()
    assert int(model.get_buffer("count")) == 0 and not model.get_buffer("total").any()
    with pytest.raises(aotc.InputError, match="expected shape"):
        model.set_buffer("total", torch.zeros(4))
    with pytest.raises(KeyError, match="not a buffer the model updates"):
        model.get_buffer("missing")


def test_state_is_the_loaded_models_with_several_runners(tmp_path):
    """With num_runners > 1 the model objects share the loaded model's one state, and calls
    from several threads run one at a time: each sees every earlier call's update, so the
    counts the calls return are 1..n, each once, whichever runner served it."""
    import threading

    ep, path = _package(CountCalls(), (torch.randn(3),), tmp_path)
    model = aotc.load_package(path, num_runners=3)
    seen, failures = [], []

    def call():
        try:
            for _ in range(10):
                out, _ = model(torch.ones(3))
                seen.append(int(out[0]))
        except Exception as e:  # reported below: a thread's exception is otherwise lost
            failures.append(e)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert sorted(seen) == list(range(1, 41)) and int(model.get_buffer("count")) == 40
    torch.testing.assert_close(model.get_buffer("total"), torch.tensor([0.0, 40.0, 40.0]))
    eager = ep.module()  # the same calls in eager, in one thread
    for _ in range(40):
        eager(torch.ones(3))
    torch.testing.assert_close(model.get_buffer("total"), eager.total)
    model.set_buffer("count", torch.tensor(100))
    assert int(model(torch.ones(3))[0][0]) == 101
    params = {k: v for k, v in ep.state_dict.items() if k not in ("count", "total")}
    model.load_constants(params, check_full_update=False)  # new model objects, same state
    assert int(model(torch.ones(3))[0][0]) == 102
    model.reset_buffers()
    assert int(model(torch.ones(3))[0][0]) == 1


class CachedDecoder(torch.nn.Module):
    """One decoder step with its key and value caches as registered buffers."""

    def __init__(self, batch=2, dim=8, heads=2, length=16):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.heads, self.length = heads, length
        shape = (batch, heads, length, dim // heads)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def forward(self, x, pos):
        b, d = x.shape
        q, k, v = self.qkv(x).view(b, 3, self.heads, 1, d // self.heads).unbind(1)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache[:, :, pos] = v
        scores = (q @ self.k_cache.transpose(-1, -2)) / (d // self.heads) ** 0.5
        filled = torch.arange(self.length) <= pos
        scores = scores.masked_fill(~filled, float("-inf"))
        return (scores.softmax(-1) @ self.v_cache).reshape(b, d)


def test_kv_cache_state_decode_loop(tmp_path):
    torch.manual_seed(0)
    ep, path = _package(CachedDecoder().eval(), (torch.randn(2, 8), torch.tensor([0])), tmp_path)
    source = (tmp_path / "debug" / "model" / "07_codegen.cpp").read_text()
    assert re.search(r"memcpy\(m->state\[\d", source) is None  # rows go in place, no copy
    model, eager = aotc.load_package(path), ep.module()
    from aotc.runtime.state import state_array
    h = model._pool.first()
    where = [state_array(model._lib, h, k, e).ctypes.data for k, e in model._state.values()]
    for step in range(16):
        x, pos = torch.randn(2, 8), torch.tensor([step])
        with torch.no_grad():
            want = eager(x, pos)
        torch.testing.assert_close(model(x, pos), want)
        torch.testing.assert_close(model.get_buffer("k_cache"), eager.k_cache)
        torch.testing.assert_close(model.get_buffer("v_cache"), eager.v_cache)
    assert [state_array(model._lib, h, k, e).ctypes.data
            for k, e in model._state.values()] == where  # the same memory every step
    assert model.get_buffer("k_cache")[:, :, 15].abs().sum() > 0


SCRIPT = BLOCK_TORCH + textwrap.dedent("""
    import numpy as np
    from aotc.runtime import load_package
    model = load_package(sys.argv[1], num_runners=int(sys.argv[4]))
    folder = sys.argv[2]
    for step in range(int(sys.argv[3])):
        out = model(np.load(f"{folder}/x_{step}.npy"), np.array([step], dtype=np.int64))
        np.save(f"{folder}/y_{step}.npy", out)
    for name in model.buffer_names():
        np.save(f"{folder}/{name}.npy", model.get_buffer(name))
    print(json.dumps({"torch_loaded": "torch" in sys.modules}))
""")


@pytest.mark.parametrize("runners", [1, 3])
def test_state_from_a_numpy_only_process(tmp_path, runners):
    torch.manual_seed(0)
    ep, path = _package(CachedDecoder().eval(), (torch.randn(2, 8), torch.tensor([0])), tmp_path)
    eager, steps = ep.module(), 6
    xs = [torch.randn(2, 8) for _ in range(steps)]
    for k, x in enumerate(xs):
        np.save(tmp_path / f"x_{k}.npy", x.numpy())
    proc = subprocess.run([sys.executable, "-c", SCRIPT, path, str(tmp_path), str(steps),
                           str(runners)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"torch_loaded": False}
    for k, x in enumerate(xs):
        with torch.no_grad():
            want = eager(x, torch.tensor([k]))
        torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / f"y_{k}.npy")), want)
    for name in ("k_cache", "v_cache"):
        torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / f"{name}.npy")),
                                   getattr(eager, name))


class CacheAtIntPosition(torch.nn.Module):
    """The cache row is given as an int (a SymInt in the program), not a tensor."""

    def __init__(self):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, 2, 16, 4))

    def forward(self, k, pos: int):
        torch._check(pos >= 0)
        torch._check(pos < 16)
        self.k_cache.narrow(2, pos, 1).copy_(k.unsqueeze(2))
        return self.k_cache[:, :, : pos + 1].sum(2)


def test_cache_row_at_an_int_position(tmp_path):
    ep = torch.export.export(CacheAtIntPosition(), (torch.randn(1, 2, 4), 3),
                             dynamic_shapes={"k": None, "pos": torch.export.Dim.DYNAMIC})
    path = aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2",
                                    options={"debug_dir": str(tmp_path / "debug")})
    source = (tmp_path / "debug" / "model" / "07_codegen.cpp").read_text()
    assert re.search(r"memcpy\(m->state\[\d", source) is None  # the row goes in place
    model, eager = aotc.load_package(path), ep.module()
    for step in range(2, 15):  # export's guards leave out 0, 1 and 15
        k = torch.randn(1, 2, 4)
        torch.testing.assert_close(model(k, step), eager(k, step))
    torch.testing.assert_close(model.get_buffer("k_cache"), eager.k_cache)


def test_freezing_never_folds_state(tmp_path):
    """count + 1 reads only a buffer: a constant to fold, were the buffer not updated."""
    ep, path = _package(CountCalls(), (torch.randn(3),), tmp_path, functional=True)
    meta = aotc.load_package(path).package_metadata
    assert not any(c.get("folded_from") for c in meta["constants"])


class CacheLength(torch.nn.Module):
    """transformers' static cache keeps counters as plain tensor attributes (not registered
    buffers), which non-strict export lifts as constants and updates in place."""

    def __init__(self):
        super().__init__()
        self.length = torch.zeros((), dtype=torch.long)
        self.scale = torch.tensor(2.0)  # a lifted constant nothing updates

    def forward(self, x, pos):
        self.length.copy_(self.length + pos.shape[0])
        return x * self.scale + self.length


def test_lifted_constant_updated_in_place_is_state(tmp_path):
    ep = torch.export.export(CacheLength(), (torch.randn(4), torch.arange(3)), strict=False)
    assert {s.kind.name for s in ep.graph_signature.input_specs} >= {"CONSTANT_TENSOR"}
    path = aotc.compile_and_package(ep, package_path=tmp_path / "lifted.pt2")
    model, eager = aotc.load_package(path), ep.module()
    assert model.buffer_names() == ["length"]
    for _ in range(3):
        x, pos = torch.randn(4), torch.arange(3)
        torch.testing.assert_close(model(x, pos), eager(x, pos))
    assert int(model.get_buffer("length")) == 9
    model.reset_buffers()
    assert int(model.get_buffer("length")) == 0


def test_states_of_their_own(tmp_path):
    """new_state(): each state starts at the package's values and keeps its own updates,
    interleaved calls on several states and on the model's own state never mix; reset,
    get and set act on one state; a bound on how many, and a freed state refuses calls."""
    x = torch.tensor([1.0, 2.0, -1.0])
    model = aotc.load_package(_package(CountCalls(), (x,), tmp_path)[1], max_states=2)
    a, b = model.new_state(), model.new_state()
    with pytest.raises(aotc.StateLimitError, match="holds 2 states"):
        model.new_state()
    eager = {k: CountCalls() for k in ("a", "b", "model")}
    calls = {"a": a, "b": b, "model": model}
    for key in ("a", "b", "a", "model", "b", "model", "b", "a"):
        for got, want in zip(calls[key](x), eager[key](x)):
            torch.testing.assert_close(got, want)
    assert int(a.get_buffer("count")) == 3 and int(b.get_buffer("count")) == 3
    assert int(model.get_buffer("count")) == 2
    a.reset()
    torch.testing.assert_close(a(x)[0], x)  # a first call again
    b.set_buffer("count", torch.tensor(10))
    torch.testing.assert_close(b(x)[0], x * 11)
    assert int(model.get_buffer("count")) == 2  # neither touched the model's own
    a.free()
    with pytest.raises(aotc.InputError, match="freed"):
        a(x)
    with model.new_state() as c:  # a's place is free again
        torch.testing.assert_close(c(x)[0], x)
    assert model.states_in_use == 1  # b


def test_a_model_without_state_has_none_to_make(tmp_path):
    model = aotc.load_package(_package(torch.nn.Linear(3, 2).eval(), (torch.randn(1, 3),),
                                       tmp_path)[1])
    with pytest.raises(aotc.InputError, match="no state"):
        model.new_state()
