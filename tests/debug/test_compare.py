"""aotc.debug.compare names the first node whose compiled value diverges from eager."""
from __future__ import annotations

import torch

import aotc
from aotc.lowering.registry import LOWERINGS
from deep_model import make


def test_compare_agrees_on_a_correct_compile():
    m, args = make()
    ep = torch.export.export(m, args)
    report = aotc.debug.compare(ep, args)
    assert report.first_divergence is None
    assert len(report.nodes) >= 30 and all(d.ok for d in report.nodes)
    assert "match eager" in str(report)


def test_compare_names_the_node_of_a_wrong_lowering(monkeypatch):
    m, args = make()
    ep = torch.export.export(m, args)
    monkeypatch.setitem(LOWERINGS, torch.ops.aten.relu.default,
                        LOWERINGS[torch.ops.aten.abs.default])
    report = aotc.debug.compare(ep, args)
    bad = report.first_divergence
    assert bad is not None and bad.node == "relu" and bad.target == "aten.relu.default"
    assert "deep_model.py" in bad.source and "torch.relu(x - 1.2)" in bad.source
    assert bad.max_abs > 1e-3
    # every node before it matched eager
    assert all(d.ok for d in report.nodes[:report.nodes.index(bad)])
    assert "first divergence" in str(report) and "relu" in str(report)
