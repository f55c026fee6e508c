"""Weights stored once: constants whose values share memory at compile time (a head tied to
the embedding, views of one buffer) share the bytes of weights.bin, and load_constants
swaps tied names together."""
from __future__ import annotations

import json
import zipfile

import pytest
import torch

import aotc
from models import ConvBN, ScaledLinear, TiedLM


class Views(torch.nn.Module):
    """Two buffers that are views of one tensor: rows 0..8 (the first 8 x 16 floats, a
    64-byte multiple) and the whole of it."""

    def __init__(self):
        super().__init__()
        table = torch.randn(12, 16)
        self.register_buffer("table", table)
        self.register_buffer("top", table[:8])

    def forward(self, x):
        return x * self.table, x[:8] + self.top


def _unique_bytes(module) -> int:
    seen = {}
    for t in module.state_dict().values():
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def _table(path):
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("aotc/model/metadata.json"))
        return meta["constants"], zf.getinfo("aotc/model/weights.bin").file_size


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    torch.manual_seed(0)
    m, x = TiedLM().eval(), torch.randint(0, 300, (2, 7))
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    path = tmp_path_factory.mktemp("tied") / "tied.pt2"
    return m, x, aotc.compile_and_package(ep, package_path=path, options={"freezing": False})


def test_a_tied_head_is_stored_once(tied):
    m, x, path = tied
    table, size = _table(path)
    by_name = {c["name"]: c for c in table}
    assert by_name["embed.weight"]["offset"] == by_name["head.weight"]["offset"]
    assert size <= 1.05 * _unique_bytes(m)
    model = aotc.load_package(path)
    assert sorted(model.constant_names()) == sorted(m.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))


def test_views_of_one_buffer_are_stored_once(tmp_path):
    torch.manual_seed(1)
    m, x = Views().eval(), torch.randn(12, 16)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "v.pt2",
                                    options={"freezing": False})
    table, size = _table(path)
    by_name = {c["name"]: c for c in table}
    assert by_name["top"]["offset"] == by_name["table"]["offset"]
    assert size <= 1.05 * _unique_bytes(m)
    with torch.no_grad():
        for got, want in zip(aotc.load_package(path)(x), m(x)):
            torch.testing.assert_close(got, want)


def test_one_name_of_a_tie_swaps_the_tie(tied):
    """Tied names are one weight, as in eager: a full update gives each name (a state_dict
    does), and an update naming one of them swaps them all."""
    m, x, path = tied
    model = aotc.load_package(path)
    new = TiedLM().eval()
    model.load_constants({k: v.clone() for k, v in new.state_dict().items()})
    with torch.no_grad():
        torch.testing.assert_close(model(x), new(x))
    for name in ("embed.weight", "head.weight"):
        value = torch.randn_like(m.embed.weight)
        model.load_constants({name: value.numpy()}, check_full_update=False)
        with torch.no_grad():
            new.embed.weight.copy_(value)  # the head is the same parameter
            torch.testing.assert_close(model(x), new(x))
    # a full update may name one of the tie: the other follows it
    model.load_constants({k: v for k, v in m.state_dict().items() if k != "head.weight"})
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))
    fresh = aotc.load_package(path)  # the package's bytes are untouched by the swaps
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), m(x))


@pytest.mark.parametrize("freezing", [False, True])
def test_weights_folded_into_others_are_not_stored(tmp_path, freezing):
    """A convolution's weights and its batch norm's, folded into one weight at compile
    time, are not read by the run: they keep their names and take no bytes."""
    torch.manual_seed(2)
    m, x = ConvBN().eval(), torch.randn(2, 3, 9, 9)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "cb.pt2",
                                    options={"freezing": freezing})
    table, size = _table(path)
    state = sum(t.numel() * t.element_size() for t in m.state_dict().values())
    assert size <= 1.05 * state
    by_name = {c["name"]: c for c in table}
    for name in m.state_dict():
        assert by_name[name]["stored"] is False and by_name[name]["nbytes"] == 0
    model = aotc.load_package(path)
    assert set(m.state_dict()) <= set(model.constant_names())
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))


def test_a_weight_folded_by_freezing_is_not_stored_and_still_refused(tmp_path):
    torch.manual_seed(3)
    m, x = ScaledLinear().eval(), torch.randn(4, 8)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
    path = aotc.compile_and_package(ep, package_path=tmp_path / "s.pt2",
                                    options={"freezing": True})
    by_name = {c["name"]: c for c in _table(path)[0]}
    assert by_name["w"].get("stored") is False and by_name["scale"].get("stored") is False
    model = aotc.load_package(path)
    with torch.no_grad():
        torch.testing.assert_close(model(x), m(x))
    with pytest.raises(aotc.InputError, match="folded into constants at compile time"):
        model.load_constants({"w": m.w.detach().clone()}, check_full_update=False)
