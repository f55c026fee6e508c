"""Data-dependent indexing: embedding, index, index_select, gather; bad indices are errors."""
from __future__ import annotations

import pytest
import torch

import aotc
from aotc.frontend.importer import import_program
from aotc.ir.printer import format_program


class Indexing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)

    def forward(self, ids, x, g):
        return (self.emb(ids),                              # embedding
                x[ids[0], :],                               # index on dim 0
                x[:, torch.tensor([0, 2, -1])],             # negative index, dim 1
                x[ids[0][:2], torch.tensor([1, 3])],        # two adjacent index tensors
                x[torch.tensor([[1], [2]]), :, None][:, :, 0],  # broadcast index shape
                x.permute(1, 0)[torch.tensor([5, 0, 3])],    # index into a view
                torch.gather(x, 1, g),
                x.index_select(0, ids[1]))


IDS = torch.tensor([[1, 2, 3, 4, 6], [0, 0, 5, 6, 2]])
G = torch.tensor([[0, 5]] * 7)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    torch.manual_seed(0)
    x = torch.randn(7, 6)
    with torch.no_grad():
        ep = torch.export.export(Indexing().eval(), (IDS, x, G))
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("i") / "m.pt2")
    return ep, aotc.load_package(path)


def test_indexing_matches_eager(compiled):
    ep, model = compiled
    x = torch.randn(7, 6)
    torch.testing.assert_close(model(IDS, x, G), ep.module()(IDS, x, G))


def test_negative_indices_follow_each_op(compiled):
    _, model = compiled
    x = torch.randn(7, 6)
    # x[:, [0, 2, -1]] counts -1 from the end (checked against eager above); gather, like
    # torch.gather, rejects a negative index
    torch.testing.assert_close(model(IDS, x, G)[2][:, 2], x[:, 5])
    with pytest.raises(ValueError, match="index out of range in gather"):
        model(IDS, x, G - 6)


def test_out_of_range_index_is_an_input_error(compiled):
    _, model = compiled
    bad = IDS.clone()
    bad[0, 4] = 60
    with pytest.raises(ValueError, match=r"index out of range in embedding.*aten.embedding"):
        model(bad, torch.randn(7, 6), G)
    bad_g = G.clone()
    bad_g[3, 1] = 6
    with pytest.raises(ValueError, match=r"index out of range in gather"):
        model(IDS, torch.randn(7, 6), bad_g)


def test_indirect_load_in_printed_ir():
    class Emb(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)

        def forward(self, ids):
            return self.emb(ids)

    p = import_program(torch.export.export(Emb(), (IDS,)))
    assert "embedding: float32[2, 5, 4] = pointwise c_p_emb_weight[ind0, i2 | ind0=in_ids[i0, i1] " \
           "in [0, 10)]" in format_program(p)


def test_boolean_mask_indexing_returns_the_selected_elements(tmp_path):
    class Mask(torch.nn.Module):
        def forward(self, x):
            return x[x > 0]

    ep = torch.export.export(Mask(), (torch.randn(4),))
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2"))
    for x in (torch.randn(4), -torch.rand(4), torch.rand(4)):  # some, none, all selected
        torch.testing.assert_close(model(x), ep.module()(x))
