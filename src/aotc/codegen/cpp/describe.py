"""The model library's description of itself (ABI version 2): inputs, outputs, shape symbols,
the constants table and metadata as immutable C tables, so loaders need no JSON parser.
Also the one layout rule of weights.bin that the packager follows."""
from __future__ import annotations

import math

from ...ir.complex import abi_dtype, abi_sizes
from ...ir.compress import Count
from ...ir.control import loop_buffers, predicate_buffers
from ...ir.expr import loads
from ...ir.nodes import Program
from ...ir.queries import reads_of
from .code import CodeBuffer
from .kernels import symbol_order

WEIGHT_ALIGN = 64


def constant_layout(program: Program) -> list[tuple[int, int]]:
    """(offset, nbytes) of each constant in weights.bin, each 64-byte aligned; a prepacked
    constant takes the size of its packed layout. Constants whose values share memory at
    compile time (tied weights, views of one buffer) share bytes: one lying inside another
    at a 64-byte multiple takes that range of it, so each storage is written once. A
    constant the run never reads (a weight folded at compile time into another, such as a
    convolution's and its batch norm's) is not stored: 0 bytes at offset 0, and its pointer
    may be null."""
    sizes, spans = [], []
    for c in program.constants:
        buf = program.buffers[c.buffer]
        sizes.append(c.packing.nbytes() if c.packing is not None
                     else math.prod(int(s) for s in buf.sizes) * buf.dtype.itemsize)
        spans.append(_memory_span(c, sizes[-1]))
    # the largest first, so that each constant finds the widest one holding it
    host: dict[int, tuple[int, int]] = {}  # constant -> (constant holding it, byte delta)
    holders: list[int] = []
    for k in sorted(range(len(sizes)), key=lambda k: -sizes[k]):
        span = spans[k]
        found = None if span is None else next(
            (h for h in holders if span[0] == spans[h][0] and spans[h][1] <= span[1]
             and span[1] + sizes[k] <= spans[h][1] + sizes[h]
             and (span[1] - spans[h][1]) % WEIGHT_ALIGN == 0), None)
        if found is None and span is not None:
            holders.append(k)
        elif found is not None:
            host[k] = (found, span[1] - spans[found][1])
    # a range no read constant lies in is not stored
    read = read_buffers(program)
    kept = {host.get(k, (k, 0))[0] for k, c in enumerate(program.constants) if c.buffer in read}
    offsets: dict[int, int] = {}
    end = 0
    for k in range(len(sizes)):
        if k not in host and k in kept:
            offsets[k] = -(-end // WEIGHT_ALIGN) * WEIGHT_ALIGN
            end = offsets[k] + sizes[k]
    layout = []
    for k in range(len(sizes)):
        holder, delta = host.get(k, (k, 0))
        layout.append((offsets[holder] + delta, sizes[k]) if holder in kept else (0, 0))
    return layout


def read_buffers(program: Program) -> set[str]:
    """The buffers the run reads: by an op, as an output, an update, a guard's predicate, a
    loop, or a data-dependent size."""
    read = set(program.outputs) | set(program.updates) | set(program.updates.values())
    read |= predicate_buffers(program.guards) | loop_buffers(program.loops)
    for value in program.item_symbols.values():  # a Node, or a Count over a mask Node
        node = value.mask if isinstance(value, Count) else value
        read |= {ld.buffer for ld in loads(node)}
    for buf in program.computed():
        read |= reads_of(buf)
    return read


def _memory_span(c, nbytes: int) -> tuple[int, int] | None:
    """(storage, first byte address) of a constant stored as its own bytes, for sharing."""
    t = c.data
    if c.packing is not None or not nbytes or not hasattr(t, "untyped_storage") \
            or not t.is_contiguous() or t.numel() * t.element_size() != nbytes:
        return None
    return t.untyped_storage().data_ptr(), t.data_ptr()


def c_string(text: str) -> str:
    """A C string literal holding `text` (UTF-8, escaped)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":  # '?' could start a trigraph
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _dims(sizes) -> tuple[list[str], list[str]]:
    text = [c_string(str(int(s)) if s.is_Integer else str(s)) for s in sizes]
    static = [str(int(s)) if s.is_Integer else "-1" for s in sizes]
    return text, static


def _array(code: CodeBuffer, ctype: str, name: str, values: list[str]) -> str:
    """Emit a static array (none when empty) and return the expression that points at it."""
    if not values:
        return "nullptr"
    if ctype.startswith("aotc_") and len(values) > 1:  # one struct per line
        code.line(f"const {ctype} {name}[] = {{")
        code.lines_of([f"    {v}," for v in values])
        code.line("};")
    else:
        code.line(f"const {ctype} {name}[] = {{{', '.join(values)}}};")
    return name


def _tensor_table(code: CodeBuffer, program: Program, kind: str,
                  items: list[tuple[str, str]]) -> str:
    rows = []
    for k, (name, buffer) in enumerate(items):
        shape = abi_sizes(program, buffer)
        text, static = _dims(shape)
        dims = _array(code, "char *const", f"k{kind}Dims{k}", text)
        sizes = _array(code, "int64_t", f"k{kind}Sizes{k}", static)
        rows.append(f"{{{c_string(name)}, {dims}, {sizes}, {len(shape)}, "
                    f"AOTC_{abi_dtype(program, buffer).name.upper()}}}")
    return _array(code, "aotc_tensor_info", f"k{kind}Info", rows)


def emit_description(code: CodeBuffer, program: Program, metadata: dict[str, str]) -> None:
    """Tables inside the model's anonymous namespace; aotc_describe_* (kernels/aotc_model_abi.h)
    return them."""
    code.line("// The library's description of itself (aotc_describe_*).")
    inputs = _tensor_table(code, program, "Input", [(s.name, s.buffer) for s in program.inputs])
    outputs = _tensor_table(code, program, "Output", [(o, o) for o in program.outputs])
    symbols = []
    for s in symbol_order(program):
        lo, hi = program.symbols[s]
        symbols.append(f"{{{c_string(s.name)}, {int(lo)}, {int(hi) if hi is not None else -1}}}")
    sym_table = _array(code, "aotc_symbol_info", "kSymbolInfo", symbols)
    constants = []
    for k, (c, (offset, nbytes)) in enumerate(zip(program.constants, constant_layout(program))):
        shape = abi_sizes(program, c.buffer)
        sizes = _array(code, "int64_t", f"kConstantSizes{k}", _dims(shape)[1])
        constants.append(f"{{{c_string(c.fqn)}, {sizes}, {len(shape)}, "
                         f"AOTC_{abi_dtype(program, c.buffer).name.upper()}, {offset}, {nbytes}}}")
    const_table = _array(code, "aotc_constant_info", "kConstantInfo", constants)
    keys = _array(code, "char *const", "kMetadataKeys", [c_string(k) for k in metadata])
    values = _array(code, "char *const", "kMetadataValues", [c_string(v) for v in metadata.values()])
    code.lines_of([
        f"const aotc_tensor_info *const kInputs = {inputs};",
        f"const aotc_tensor_info *const kOutputs = {outputs};",
        f"const aotc_symbol_info *const kSymbols = {sym_table};",
        f"const aotc_constant_info *const kConstants = {const_table};",
        f"const char *const *const kKeys = {keys};",
        f"const char *const *const kValues = {values};",
        f"constexpr int64_t kNumMetadata = {len(metadata)};",
        "",
    ])
