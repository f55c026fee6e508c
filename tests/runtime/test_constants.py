"""Weights by name: constant_names() is the state_dict, load_constants swaps weights without
recompiling (double-buffered), and calls on two threads overlap."""
from __future__ import annotations

import copy
import threading
import time

import numpy as np
import pytest
import torch

import aotc
from aotc.errors import InputError
from models import ScaledLinear


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def _compile(module, x, path, **options):
    with torch.no_grad():
        ep = torch.export.export(module.eval(), (x,))
    return aotc.compile_and_package(ep, path, options=options)


def _perturbed(module):
    other = copy.deepcopy(module)
    with torch.no_grad():
        for t in other.state_dict().values():
            if t.is_floating_point():
                t.mul_(0.5 + torch.rand_like(t))  # keeps running_var positive
    return other


def test_constant_names_are_the_state_dict(tmp_path):
    m = Net().eval()
    model = aotc.load_package(_compile(m, torch.randn(4, 10), tmp_path / "n.pt2"))
    names = model.constant_names()
    assert len(names) == len(set(names)) and set(names) == set(m.state_dict())
    assert "fc1.bias" in names and "bn.num_batches_tracked" in names
    assert model.get_constant_fqns() == model.constant_names()


@pytest.mark.parametrize("user_managed", [False, True])
def test_swap_equals_a_fresh_compile(tmp_path, user_managed):
    torch.manual_seed(0)
    m, x = Net().eval(), torch.randn(4, 10)
    model = aotc.load_package(_compile(m, x, tmp_path / "a.pt2"), num_runners=2)
    new = _perturbed(m)
    fresh = aotc.load_package(_compile(new, x, tmp_path / "b.pt2"))
    before = model(x)
    model.load_constants({k: v.clone() for k, v in new.state_dict().items()},
                         user_managed=user_managed)
    with torch.no_grad():
        torch.testing.assert_close(model(x), fresh(x), rtol=0, atol=0)
        torch.testing.assert_close(model(x), new(x))
    assert not torch.allclose(before, model(x))
    # a partial update: only fc2.bias goes back to the old value
    model.load_constants({"fc2.bias": m.fc2.bias.detach().numpy()}, check_full_update=False)
    with torch.no_grad():
        torch.testing.assert_close(model(x), new(x) - new.fc2.bias + m.fc2.bias)


def test_a_call_in_flight_finishes_on_the_old_weights(tmp_path):
    torch.manual_seed(1)
    m, x = Net().eval(), torch.randn(4, 10)
    model = aotc.load_package(_compile(m, x, tmp_path / "a.pt2"), num_runners=2)
    new = _perturbed(m)
    holding, swapped = threading.Event(), threading.Event()
    acquire = model._pool.acquire

    def held_acquire(*args):  # the call has its runner (old weights); let the swap happen now
        runner = acquire(*args)
        holding.set()
        assert swapped.wait(30)
        return runner

    model._pool.acquire = held_acquire
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("out", model(x)))
    t.start()
    assert holding.wait(30)
    del model._pool.acquire  # later calls run normally
    model.load_constants({k: v.clone() for k, v in new.state_dict().items()})
    after = model(x)
    swapped.set()
    t.join(30)
    with torch.no_grad():
        torch.testing.assert_close(result["out"], m(x))
        torch.testing.assert_close(after, new(x))
        torch.testing.assert_close(model(x), new(x))
    assert len(model._pool) <= 2


def test_swaps_under_concurrent_calls(tmp_path):
    """4 threads call while the weights flip between two sets 30 times: every result is one
    set's result, never a mix, and no model object outlives its generation."""
    torch.manual_seed(2)
    m, x = Net().eval(), torch.randn(4, 10)
    model = aotc.load_package(_compile(m, x, tmp_path / "a.pt2"), num_runners=3)
    new = _perturbed(m)
    with torch.no_grad():
        results = (m(x), new(x))
    sets = ({k: v.clone() for k, v in m.state_dict().items()},
            {k: v.clone() for k, v in new.state_dict().items()})
    stop, seen, errors = threading.Event(), [], []

    def call():
        while not stop.is_set():
            out = model(x)
            if not any(torch.allclose(out, r) for r in results):
                errors.append(out)
            seen.append(1)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for k in range(30):
        model.load_constants(sets[(k + 1) % 2])
        time.sleep(0.002)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors and len(seen) > 30
    assert len(model._pool) <= 3
    with torch.no_grad():
        torch.testing.assert_close(model(x), results[0])


def test_single_threaded_models_swap_too(tmp_path):
    m, x = Net().eval(), torch.randn(4, 10)
    model = aotc.load_package(_compile(m, x, tmp_path / "a.pt2"), run_single_threaded=True)
    new = _perturbed(m)
    model.load_constants(new.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(model(x), new(x))


def test_bad_updates_name_the_constant(tmp_path):
    m, x = Net().eval(), torch.randn(4, 10)
    model = aotc.load_package(_compile(m, x, tmp_path / "a.pt2"))
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(aotc.InputError, match=r"constant 'fc1.weight': dtype float64, expected "
                                              r"float32"):
        model.load_constants({**sd, "fc1.weight": sd["fc1.weight"].double()})
    with pytest.raises(aotc.InputError, match=r"constant 'fc2.bias': shape \[4\], expected \[3\]"):
        model.load_constants({**sd, "fc2.bias": torch.zeros(4)})
    with pytest.raises(aotc.InputError, match=r"no constant\(s\) \['fc3.weight'\]"):
        model.load_constants({**sd, "fc3.weight": torch.zeros(3)})
    with pytest.raises(aotc.InputError, match=r"\['fc2.weight', 'fc2.bias'\] are missing"):
        model.load_constants({k: v for k, v in sd.items() if not k.startswith("fc2")})
    with pytest.raises(aotc.InputError, match="user_managed=True needs a contiguous"):
        model.load_constants({"fc1.weight": torch.randn(10, 16).t()}, check_full_update=False,
                             user_managed=True)
    with torch.no_grad():  # nothing was swapped by the failed updates
        torch.testing.assert_close(model(x), m(x))


def test_weights_folded_by_freezing_refuse_a_swap(tmp_path):
    m, x = ScaledLinear().eval(), torch.randn(4, 8)
    frozen = aotc.load_package(_compile(m, x, tmp_path / "f.pt2"))
    with pytest.raises(aotc.InputError, match=r"\['scale', 'w'\] were folded.*'freezing': False"):
        frozen.load_constants(m.state_dict())
    swappable = aotc.load_package(_compile(m, x, tmp_path / "s.pt2", freezing=False))
    new = _perturbed(m)
    swappable.load_constants(new.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(swappable(x), new(x))


def test_calls_release_the_gil(tmp_path):
    """While one thread is inside a long call, another runs Python code: its longest pause
    is far shorter than the call (were the GIL held, it would pause for the whole call)."""
    m = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.Linear(1024, 1024)).eval()
    x = np.random.default_rng(0).standard_normal((2048, 1024), dtype=np.float32)
    path = _compile(m, torch.from_numpy(x), tmp_path / "long.pt2", num_threads=1)
    model = aotc.load_package(path)
    model(x)
    for _ in range(3):
        stop, stamps = threading.Event(), []

        def tick(stop=stop, stamps=stamps):
            while not stop.is_set():
                stamps.append(time.perf_counter())

        ticker = threading.Thread(target=tick)
        ticker.start()
        time.sleep(0.01)
        t0 = time.perf_counter()
        model(x)
        t1 = time.perf_counter()
        stop.set()
        ticker.join()
        inside = [t for t in stamps if t0 <= t <= t1]
        gaps = np.diff([t0, *inside, t1])
        if gaps.max() < 0.5 * (t1 - t0):
            return
    raise AssertionError(f"Python paused {gaps.max() * 1e3:.1f} ms of a {(t1 - t0) * 1e3:.1f} ms "
                         "call: the call held the GIL")


def test_batch_norm_folded_into_a_convolution_refuses_its_swap(tmp_path):
    """Lowering folds an inference batch norm into the convolution before it: the folded
    weights name their sources, so swapping the convolution's weight is refused (it could
    not reach the results), and the folded constants are not listed as the user's."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)).eval()
    x = torch.randn(1, 3, 10, 10)
    ep = torch.export.export(model, (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "bn.pt2",
                                    options={"freezing": False})
    compiled = aotc.load_package(path)
    assert not [n for n in compiled.constant_names() if "folded" in n]
    with pytest.raises(InputError, match="folded"):
        compiled.load_constants({"0.weight": torch.zeros(8, 3, 3, 3)}, check_full_update=False)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
