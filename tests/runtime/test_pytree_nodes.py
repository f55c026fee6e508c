"""Inputs and outputs of types registered with torch's pytree (a dataclass given to
torch.export.register_dataclass, as Hugging Face models return, a ModelOutput-like mapping,
a register_pytree_node class): the same type comes back where its class can be found, and
a dict keyed by field (a tuple for a type without field names) where it cannot."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree
from numpy_only import BLOCK_TORCH
from pytree_plain_types import PlainOutput
from pytree_types import MappingOutput, Output, Scaled, Tagged

import aotc
from aotc.errors import CompileError, InputError

TESTS = Path(__file__).resolve().parents[1]


class Encoder(torch.nn.Module):
    def forward(self, x):
        h = torch.tanh(x) * 2
        return Output(last_hidden_state=h, pooler_output=h.sum(-1))


class Three(torch.nn.Module):
    def forward(self, x):
        return (Output(x + 1), MappingOutput(first=x * 2, second=x - 3), Scaled(x, -x, 2.5))


class TakesOutput(torch.nn.Module):
    def forward(self, x, out: Output):
        return out.last_hidden_state * x + out.pooler_output


def _same(got, want):
    """assert_close of the leaves, and the same pytree (types, fields, contexts) around them."""
    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(want)
    assert got_spec == want_spec
    torch.testing.assert_close(got_leaves, want_leaves)


def _export(module, args, tmp_path):
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args)
    return ep, aotc.compile_and_package(ep, package_path=tmp_path / "m.pt2")


def test_dataclass_output_comes_back_as_itself(tmp_path):
    x = torch.randn(2, 5)
    ep, path = _export(Encoder(), (x,), tmp_path)
    out = aotc.load_package(path)(x)
    assert type(out) is Output and out.attentions is None
    _same(out, ep.module()(x))
    spec = json.loads(json.dumps(aotc.load_package(path).package_metadata["out_spec"]))
    assert spec["kind"] == "node" and spec["qualname"] == "Output"
    assert spec["fields"] == ["last_hidden_state", "pooler_output"]
    assert spec["none_fields"] == ["attentions"]


def test_mapping_and_custom_types_come_back_as_themselves(tmp_path):
    x = torch.randn(3)
    ep, path = _export(Three(), (x,), tmp_path)
    out, ref = aotc.load_package(path)(x), ep.module()(x)
    assert [type(o) for o in out] == [Output, MappingOutput, Scaled]
    assert list(out[1]) == ["first", "second"] and out[2].scale == 2.5
    _same(out, ref)


def test_dataclass_input_as_itself_or_a_dict(tmp_path):
    x, h, p = torch.randn(4), torch.randn(4), torch.randn(4)
    ep, path = _export(TakesOutput(), (x, Output(h, p)), tmp_path)
    model = aotc.load_package(path)
    want = ep.module()(x, Output(h, p))
    torch.testing.assert_close(model(x, Output(h, p)), want)
    torch.testing.assert_close(model(x, {"last_hidden_state": h, "pooler_output": p}), want)
    with pytest.raises(InputError, match="attentions"):  # exported with attentions None
        model(x, Output(h, p, attentions=h))
    with pytest.raises(InputError, match="Output or a dict with keys"):
        model(x, (h, p))


class ReturnsTagged(torch.nn.Module):
    def forward(self, x):
        return Tagged(x * 2, frozenset({"a"}))


def test_context_without_a_json_form_is_refused_at_compile(tmp_path):
    with pytest.raises(CompileError, match="to_dumpable_context"):
        _export(ReturnsTagged(), (torch.randn(2),), tmp_path)


CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from aotc.runtime import load_package
    out = load_package(sys.argv[1])(np.arange(3, dtype=np.float32))
    def plain(o):
        if isinstance(o, dict):
            return {"type": type(o).__name__, "items": {k: plain(v) for k, v in o.items()}}
        if isinstance(o, (tuple, list)):
            return {"type": type(o).__name__, "items": [plain(v) for v in o]}
        if o is None:
            return None
        if hasattr(o, "shape"):
            return np.asarray(o).tolist()
        return {"type": type(o).__name__}
    print(json.dumps({"torch": "torch" in sys.modules, "out": plain(out)}))
""")


def _child(path, *, importable: bool, block_torch: bool, preamble: str = "") -> dict:
    """The outputs of a fresh process loading the package, as JSON."""
    env = dict(os.environ)
    src = str(Path(aotc.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src] + ([str(TESTS)] if importable else []))
    script = (BLOCK_TORCH if block_torch else "import torch\n") + preamble + CHILD
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=Path(path).parent)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


PLAIN = [{"type": "dict", "items": {"last_hidden_state": [1.0, 2.0, 3.0], "attentions": None,
                                    "pooler_output": None}},
         {"type": "dict", "items": {"first": [0.0, 2.0, 4.0], "second": [-3.0, -2.0, -1.0]}},
         {"type": "tuple", "items": [[0.0, 1.0, 2.0], [-0.0, -1.0, -2.0]]}]


def test_types_the_loading_process_cannot_import_come_back_plain(tmp_path):
    _, path = _export(Three(), (torch.randn(3),), tmp_path)
    # torch loaded, the types' module not on the path: a dict by field, a tuple for Scaled
    report = _child(path, importable=False, block_torch=False)
    assert report["torch"] and report["out"] == {"type": "tuple", "items": PLAIN}
    # torch loaded and the module importable: imported, the types themselves
    report = _child(path, importable=True, block_torch=False)
    assert [o["type"] for o in report["out"]["items"]] == ["Output", "MappingOutput", "Scaled"]


def test_numpy_only_runtime_imports_no_module_for_a_type(tmp_path):
    _, path = _export(Three(), (torch.randn(3),), tmp_path)
    # the module is importable, but importing it would import torch: the plain forms
    report = _child(path, importable=True, block_torch=True)
    assert not report["torch"] and report["out"] == {"type": "tuple", "items": PLAIN}


class ReturnsPlain(torch.nn.Module):
    def forward(self, x):
        return PlainOutput(logits=x * 3)


def test_numpy_only_runtime_builds_a_dataclass_already_imported(tmp_path):
    _, path = _export(ReturnsPlain(), (torch.randn(3),), tmp_path)
    report = _child(path, importable=True, block_torch=True,
                    preamble="import pytree_plain_types\n")
    assert not report["torch"] and report["out"] == {"type": "PlainOutput"}
    report = _child(path, importable=True, block_torch=True)  # not imported: a dict
    assert report["out"] == {"type": "dict", "items": {"logits": [0.0, 3.0, 6.0],
                                                        "hidden": None}}
