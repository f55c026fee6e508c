"""Real models end to end: compiled package vs the exported program in eager mode."""
from __future__ import annotations

import pytest
import torch

import aotc
from models import EncoderBlock, GeluMLP, ReadmeModel


def check(ep, model, *args):
    with torch.no_grad():
        expected = ep.module()(*args)
    torch.testing.assert_close(model(*args), expected)


@pytest.fixture
def readme(compile_model):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=1024)
    return compile_model(ReadmeModel(), (torch.randn(8, 10),), {"x": {0: batch}})


@pytest.mark.parametrize("b", [0, 1, 8, 1024])  # 0: ep.module() checks no minimum <= 2
def test_readme_model_batches(readme, b):
    ep, model = readme
    x = torch.randn(b, 10)
    check(ep, model, x)
    assert model(x).shape == (b, 1)


@pytest.mark.parametrize("b", [1025])
def test_readme_model_batch_out_of_range(readme, b):
    _, model = readme
    with pytest.raises(ValueError, match=rf"input 'x': dim 0 is {b}, outside the allowed range "
                                         r"\[0, 1024\]"):
        model(torch.randn(b, 10))


def test_readme_model_bad_inputs(readme):
    _, model = readme
    with pytest.raises(ValueError, match="dim 1 is 11, expected 10"):
        model(torch.randn(4, 11))
    with pytest.raises(ValueError, match="expected rank 2, got 3"):
        model(torch.randn(4, 10, 1))
    with pytest.raises(ValueError, match="expected dtype float32, got float64"):
        model(torch.randn(4, 10, dtype=torch.float64))
    with pytest.raises(ValueError, match="expected 1 positional input, got 2"):
        model(torch.randn(4, 10), torch.randn(4, 10))
    with pytest.raises(aotc.InputError, match="expected a tensor or numpy array"):
        model([1.0] * 10)


def test_readme_model_numpy_in_numpy_out(readme):
    import numpy as np

    ep, model = readme
    x = np.random.default_rng(0).standard_normal((5, 10), dtype=np.float32)
    out = model(x)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    torch.testing.assert_close(torch.from_numpy(out), ep.module()(torch.from_numpy(x)))


def test_non_contiguous_input_is_accepted(readme):
    ep, model = readme
    x = torch.randn(10, 6).t()  # (6, 10), column-major
    check(ep, model, x)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_mlp(compile_model, approximate):
    torch.manual_seed(1)
    batch = torch.export.Dim("batch", min=1, max=512)
    ep, model = compile_model(GeluMLP(approximate=approximate), (torch.randn(4, 32),),
                              {"x": {0: batch}})
    for b in (1, 3, 64):
        check(ep, model, torch.randn(b, 32))


def test_transformer_encoder_block_dynamic_sequence(compile_model):
    torch.manual_seed(2)
    seq = torch.export.Dim("seq", min=2, max=256)
    ep, model = compile_model(EncoderBlock(), (torch.randn(2, 16, 32),), {"x": {1: seq}})
    for s in (7, 65):
        check(ep, model, torch.randn(2, s, 32))


class Structured(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, extra):
        y = self.lin(x)
        return {"y": y, "pair": [y.sum(-1), extra["scale"] * x.mean()], "none": None}


def test_pytree_inputs_and_outputs(compile_model):
    torch.manual_seed(3)
    x, scale = torch.randn(2, 4), torch.tensor(3.0)
    ep, model = compile_model(Structured(), (x, {"scale": scale}))
    out = model(x, {"scale": scale})
    expected = ep.module()(x, {"scale": scale})
    assert set(out) == {"y", "pair", "none"} and out["none"] is None
    assert isinstance(out["pair"], list) and len(out["pair"]) == 2
    torch.testing.assert_close(out, expected)


class Buffers(torch.nn.Module):
    """In-place ops on intermediates, buffers, a lifted constant, an output that is an input."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offset", torch.arange(6, dtype=torch.float32))

    def forward(self, x):
        y = x * 2
        y.add_(self.offset)
        y.relu_()
        z = y.clone()
        z.mul_(torch.tensor(0.5))
        return y, z, x


def test_inplace_ops_buffers_and_aliasing_outputs(compile_model):
    x = torch.randn(3, 6)
    ep, model = compile_model(Buffers(), (x,))
    out = model(x)
    check(ep, model, x)
    assert out[2] is not x and out[2].data_ptr() != x.data_ptr()


def test_inplace_update_of_input_reaches_the_caller(tmp_path):
    class Mutates(torch.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2

    ep = torch.export.export(Mutates(), (torch.randn(3),))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    x = torch.randn(3)
    expected = x.clone()
    torch.testing.assert_close(model(x), ep.module()(expected))
    torch.testing.assert_close(x, expected)


def test_multi_model_package_and_model_name(tmp_path):
    torch.manual_seed(4)
    a, b = ReadmeModel().eval(), GeluMLP().eval()
    with torch.no_grad():
        ep_a = torch.export.export(a, (torch.randn(2, 10),))
        ep_b = torch.export.export(b, (torch.randn(2, 32),))
    path = aotc.compile_and_package({"readme": ep_a, "mlp": ep_b}, package_path=tmp_path / "two.pt2")
    ma = aotc.load_package(path, model_name="readme")
    mb = aotc.load_package(path, model_name="mlp")
    check(ep_a, ma, torch.randn(2, 10))
    check(ep_b, mb, torch.randn(2, 32))
    with pytest.raises(aotc.PackageError, match="no model named 'other'"):
        aotc.load_package(path, model_name="other")


def test_torch_spellings_and_saved_program(tmp_path):
    torch.manual_seed(5)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(3, 10),))
    saved = tmp_path / "prog.pt2"
    torch.export.save(ep, saved)
    path = aotc.aoti_compile_and_package(str(saved), package_path=str(tmp_path / "m.pt2"),
                                         inductor_configs={"num_threads": 1})
    model = aotc.aoti_load_package(path, run_single_threaded=True)
    check(ep, model, torch.randn(3, 10))


def test_threads_option_gives_same_results(compile_model):
    torch.manual_seed(6)
    x = torch.randn(64, 32)
    mlp = GeluMLP()
    ep, one = compile_model(mlp, (x,), options={"num_threads": 1}, name="one.pt2")
    _, two = compile_model(mlp, (x,), options={"num_threads": 2}, name="two.pt2")
    check(ep, one, x)
    check(ep, two, x)


def test_concurrent_calls_from_threads(readme):
    from concurrent.futures import ThreadPoolExecutor

    ep, model = readme
    xs = [torch.randn(b, 10) for b in (1, 5, 9, 300, 17, 2, 64, 8)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(model, xs))
    for x, out in zip(xs, outs):
        torch.testing.assert_close(out, ep.module()(x))


class Scaled(torch.nn.Module):
    def forward(self, x, factor: int):
        return x * factor


def test_specialized_scalar_input_is_checked(compile_model):
    x = torch.randn(2, 3)
    ep, model = compile_model(Scaled(), (x, 3))
    torch.testing.assert_close(model(x, 3), x * 3)
    with pytest.raises(ValueError, match="input 'factor': the model was compiled for the constant 3"):
        model(x, 4)
