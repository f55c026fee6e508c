"""The command line compiles a saved program and describes packages."""
from __future__ import annotations

import torch

from aotc.cli import main
from models import ReadmeModel


def test_compile_info_and_ops(tmp_path, capsys):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    torch.export.save(ep, tmp_path / "prog.pt2")
    out = tmp_path / "model.pt2"
    assert main(["compile", str(tmp_path / "prog.pt2"), "-o", str(out),
                 "--option", "num_threads=1"]) == 0
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "input  x: float32[2, 10]" in text and "4 constants" in text
    assert main(["ops"]) == 0
    assert "aten.linear.default" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "missing.pt2")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_ops_table_in_docs_is_current():
    from pathlib import Path

    from aotc.cli import ops_markdown

    table = Path(__file__).resolve().parent.parent / "docs" / "OPS.md"
    assert table.read_text() == ops_markdown(), "regenerate: aotc ops --markdown > docs/OPS.md"


def test_prepare_builds_the_kernels(capsys):
    assert main(["prepare"]) == 0
    assert "aotc kernels for" in capsys.readouterr().out
