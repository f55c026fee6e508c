"""weights.bin and its table: every constant's bytes, laid out as the model library
describes it (codegen/cpp/describe.py). Compile side: needs torch."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ..codegen.cpp.describe import constant_layout
from ..errors import CompileError
from ..ir.complex import abi_dtype, abi_sizes
from ..ir.nodes import Program
from ..scheduler.prepack import packed_bytes


@dataclass(frozen=True)
class Weights:
    blob: bytes  # weights.bin (a bytearray: no second copy of a large model's weights)
    table: list[dict]  # metadata.json's "constants": name, dtype, sizes, offset, nbytes


def pack_weights(program: Program) -> Weights:
    """weights.bin and its table, laid out as the model library describes it: constants
    sharing memory at compile time share bytes (the layout gives them one range), written
    once; a constant the run never reads (folded into others) is not stored: 0 bytes at
    offset 0, "stored": false in its entry."""
    layout = constant_layout(program)
    blob = bytearray(max((o + n for o, n in layout), default=0))
    table, written = [], []  # written: (first byte, end) of each range already filled
    for c, (offset, nbytes) in zip(program.constants, layout):
        t = c.data
        dropped = nbytes == 0 and t.numel() > 0
        if dropped:
            raw = b""
        elif c.packing is not None:  # in its kernel's layout (for the target)
            # a half constant packs from its values widened (exactly) to float32
            flat = t.reshape(-1)
            raw = packed_bytes((flat.float() if flat.is_floating_point() else flat).numpy(),
                               c.packing)
        else:
            raw = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
        if len(raw) != nbytes:
            raise CompileError(f"constant {c.fqn} holds {len(raw)} bytes; its buffer needs {nbytes}")
        if any(lo <= offset and offset + nbytes <= hi for lo, hi in written):
            if memoryview(blob)[offset:offset + nbytes] != memoryview(raw).cast("B"):
                raise CompileError(f"constant {c.fqn} shares bytes of weights.bin with another "
                                   "whose values differ; the weights layout is wrong")
        elif nbytes:
            # through a memoryview: a bytearray slice assigned from another object copies
            # that object whole first (a second copy of a large model's weights)
            memoryview(blob)[offset:offset + nbytes] = memoryview(raw).cast("B")
            written.append((offset, offset + nbytes))
        entry = {"name": c.fqn, "dtype": abi_dtype(program, c.buffer).name,
                 "sizes": [int(s) for s in abi_sizes(program, c.buffer)],
                 "offset": offset, "nbytes": nbytes}
        if c.folded_from:
            entry["folded_from"] = list(c.folded_from)
        if dropped:
            entry["stored"] = False
        if c.packing is not None:  # what the bytes hold; a loader packs a swapped value alike
            entry["packing"] = {"layout": c.packing.LAYOUT, **asdict(c.packing)}
        table.append(entry)
    return Weights(blob, table)


def format_weights(weights: Weights) -> str:
    """The table as text, one constant a line (the bytes themselves are not dumped)."""
    lines = [f"weights.bin: {len(weights.blob)} bytes, {len(weights.table)} constants"]
    for e in weights.table:
        sizes = "x".join(map(str, e["sizes"])) or "scalar"
        extra = "".join([_packed(e["packing"]) if "packing" in e else "",
                         ", not stored (the run never reads it)" if e.get("stored") is False
                         else "",
                         f", folded from {', '.join(e['folded_from'])}" if "folded_from" in e
                         else ""])
        lines.append(f"{e['offset']:>10} +{e['nbytes']:<10} {e['name']}: {e['dtype']}[{sizes}]"
                     f"{extra}")
    return "\n".join(lines) + "\n"


def _packed(packing: dict) -> str:
    if packing["layout"] == "gemm_b_panels":
        return f", packed {packing['dtype']} panels"
    return f", packed as {packing['layout']}"
