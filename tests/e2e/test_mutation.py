"""Programs that update their inputs in place: the caller's tensors and arrays receive the
new values (in their own storage where possible), as eager's do; a KV-cache decode loop."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from numpy_only import run_without_torch

import aotc
from aotc.errors import CompileError, InputError


class Accumulate(torch.nn.Module):
    """x.add_ on a whole input, a write through a view of another, both read afterwards."""

    def forward(self, x, y):
        x.add_(1)
        y[:, 1] = x.sum()
        y[0].mul_(2)
        return x * 2, y.sum()


def _compile(module, args, tmp_path, dynamic_shapes=None, name="m.pt2"):
    ep = torch.export.export(module, tuple(a.clone() for a in args), dynamic_shapes=dynamic_shapes)
    path = aotc.compile_and_package(ep, package_path=tmp_path / name,
                                    options={"debug_dir": str(tmp_path / "debug")})
    return ep, path


def test_user_inputs_updated_in_place(tmp_path):
    ep, path = _compile(Accumulate(), (torch.randn(3), torch.zeros(2, 3)), tmp_path)
    model = aotc.load_package(path)
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        args = (torch.randn(3, generator=g), torch.randn(2, 3, generator=g))
        ours, theirs = [a.clone() for a in args], [a.clone() for a in args]
        torch.testing.assert_close(model(*ours), ep.module()(*theirs))
        torch.testing.assert_close(ours, theirs)  # the inputs changed as eager's did
        arrays = [a.numpy().copy() for a in args]  # numpy arrays are updated too
        model(*arrays)
        torch.testing.assert_close([torch.from_numpy(a) for a in arrays], theirs)


def test_functionalized_input_mutation(tmp_path):
    """export's functional form: USER_INPUT_MUTATION outputs instead of in-place ops."""
    ep = torch.export.export(Accumulate(), (torch.randn(3), torch.zeros(2, 3)))
    ep = ep.run_decompositions()
    path = aotc.compile_and_package(ep, package_path=tmp_path / "f.pt2")
    model = aotc.load_package(path)
    args = (torch.randn(3), torch.randn(2, 3))
    ours, theirs = [a.clone() for a in args], [a.clone() for a in args]
    torch.testing.assert_close(model(*ours), ep.module()(*theirs))
    torch.testing.assert_close(ours, theirs)


def test_non_contiguous_and_read_only_inputs(tmp_path):
    ep, path = _compile(Accumulate(), (torch.randn(3), torch.zeros(2, 3)), tmp_path)
    model = aotc.load_package(path)
    x, y = torch.randn(3), torch.randn(3, 2).t()  # y is a transposed view: run on a copy
    ex, ey = x.clone(), y.clone()
    model(x, y)
    ep.module()(ex, ey)
    torch.testing.assert_close((x, y), (ex, ey))
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(InputError, match="input 'x'.*read-only"):
        model(frozen, np.zeros((2, 3), np.float32))


class DecodeStep(torch.nn.Module):
    """One decoder step: project the token, write its key and value at `pos` into the
    caches (index_copy_ and an index_put through a view), attend over the filled prefix."""

    def __init__(self, dim=8, heads=2, length=16):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.heads, self.length = heads, length

    def forward(self, x, k_cache, v_cache, pos):
        b, d = x.shape
        q, k, v = self.qkv(x).view(b, 3, self.heads, 1, d // self.heads).unbind(1)
        k_cache.index_copy_(2, pos, k)
        v_cache[:, :, pos] = v
        scores = (q @ k_cache.transpose(-1, -2)) / (d // self.heads) ** 0.5
        filled = torch.arange(self.length) <= pos
        scores = scores.masked_fill(~filled, float("-inf"))
        return (scores.softmax(-1) @ v_cache).reshape(b, d)


def _decode_args(batch=2, dim=8, heads=2, length=16):
    cache = torch.zeros(batch, heads, length, dim // heads)
    return torch.randn(batch, dim), cache, cache.clone(), torch.tensor([0])


def test_kv_cache_decode_loop_updates_the_cache_in_place(tmp_path):
    torch.manual_seed(0)
    module = DecodeStep().eval()
    with torch.no_grad():
        ep, path = _compile(module, _decode_args(), tmp_path)
    source = (tmp_path / "debug" / "model" / "07_codegen.cpp").read_text()
    assert "memcpy(in[" not in source  # no copy of either cache per step
    model = aotc.load_package(path)
    _, k_ours, v_ours, _ = _decode_args()
    k_eager, v_eager = k_ours.clone(), v_ours.clone()
    pointers = (k_ours.data_ptr(), v_ours.data_ptr())
    for step in range(16):
        x, pos = torch.randn(2, 8), torch.tensor([step])
        with torch.no_grad():
            want = ep.module()(x, k_eager, v_eager, pos)
        torch.testing.assert_close(model(x, k_ours, v_ours, pos), want)
        torch.testing.assert_close((k_ours, v_ours), (k_eager, v_eager))
    assert (k_ours.data_ptr(), v_ours.data_ptr()) == pointers
    assert k_ours[:, :, 15].abs().sum() > 0  # every row was written


def test_updates_from_a_numpy_only_process(tmp_path):
    torch.manual_seed(0)
    with torch.no_grad():
        ep, path = _compile(DecodeStep().eval(), _decode_args(), tmp_path)
    _, k_cache, v_cache, _ = _decode_args()
    xs = [torch.randn(2, 8) for _ in range(3)]
    calls, k_eager, v_eager = [], k_cache.clone(), v_cache.clone()
    wants = []
    for step, x in enumerate(xs):
        pos = torch.tensor([step])
        # each call in the child gets the caches as the previous call left them
        calls.append([x.numpy(), k_eager.numpy().copy(), v_eager.numpy().copy(), pos.numpy()])
        with torch.no_grad():
            wants.append((ep.module()(x, k_eager, v_eager, pos), k_eager.clone(), v_eager.clone()))
    for (outs, after), (want, k_want, v_want) in zip(
            run_without_torch(path, calls, tmp_path / "io", with_inputs=True), wants):
        torch.testing.assert_close(torch.from_numpy(outs[0]), want)
        torch.testing.assert_close(torch.from_numpy(after[1]), k_want)
        torch.testing.assert_close(torch.from_numpy(after[2]), v_want)


class ScaleWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        self.weight.mul_(2)
        return x * self.weight


def test_parameter_update_is_refused_with_its_source_line():
    from aotc.frontend.importer import import_program

    with torch.no_grad():
        ep = torch.export.export(ScaleWeight(), (torch.randn(2),))
    with pytest.raises(CompileError, match=r"test_mutation.py.*p_weight.*read-only"):
        import_program(ep)


class ReshapeInPlace(torch.nn.Module):
    """In-place ops that change a local's shape, not its data: later readers see the view."""

    def forward(self, x):
        y = x * 2
        view = y[0]  # a view taken before: its data is y's, whatever y's shape becomes
        y.unsqueeze_(0)
        y.transpose_(1, 2)
        z = y.sum((0, 1)).t_()
        z.add_(1)
        return y + 1, z, view


def test_shape_changing_in_place_ops_on_locals(compile_model):
    x = torch.randn(3, 4, 5)
    ep, model = compile_model(ReshapeInPlace(), (x,))
    for _ in range(2):
        x = torch.randn(3, 4, 5)
        for got, want in zip(model(x), ep.module()(x)):
            torch.testing.assert_close(got, want)


class SqueezeInput(torch.nn.Module):
    def forward(self, x):
        x.squeeze_(0)
        return x + 1


def test_shape_changing_in_place_op_on_an_input_is_refused(tmp_path):
    ep = torch.export.export(SqueezeInput(), (torch.randn(1, 4),))
    with pytest.raises(CompileError, match="squeeze_.*changes the shape of its target 'x'"):
        aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


class RenormedLookup(torch.nn.Module):
    """embedding(max_norm=...) scales the rows it reads in the caller's weight, in place."""

    def __init__(self, norm_type):
        super().__init__()
        self.norm_type = norm_type

    def forward(self, idx, weight):
        return torch.nn.functional.embedding(idx, weight, max_norm=1.5, norm_type=self.norm_type)


@pytest.mark.parametrize("dtype", (torch.float32, torch.float16, torch.bfloat16), ids=str)
@pytest.mark.parametrize("norm_type", (1.0, 2.0, 3.0, float("inf")))
def test_embedding_max_norm_renormalizes_the_rows_it_reads(tmp_path, norm_type, dtype):
    g = torch.Generator().manual_seed(0)
    weight = (torch.randn(8, 5, generator=g) * 2).to(dtype)
    weight[3] = 0.01  # a row read but under the max norm: left as it is
    idx = torch.tensor([[1, 3, 1], [6, 0, 3]])  # repeats; rows 2, 4, 5, 7 are not read
    ep, path = _compile(RenormedLookup(norm_type), (idx, weight), tmp_path)
    model = aotc.load_package(path)
    ours, theirs = weight.clone(), weight.clone()
    torch.testing.assert_close(model(idx, ours), ep.module()(idx, theirs))
    torch.testing.assert_close(ours, theirs)  # the weight's read rows changed as eager's did
    assert not torch.equal(ours, weight)


def test_embedding_max_norm_on_a_parameter_is_refused():
    from aotc.frontend.importer import import_program

    with torch.no_grad():
        ep = torch.export.export(torch.nn.Embedding(6, 3, max_norm=1.0), (torch.tensor([1, 2]),))
    with pytest.raises(CompileError, match=r"embedding_renorm_.*read-only"):
        import_program(ep)
