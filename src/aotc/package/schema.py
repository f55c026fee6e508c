"""The schema of a model's metadata.json (format version 4), checked before the loader
uses any field: types, ranges and the references between fields. A bad field raises
PackageError naming its path (`inputs[0].sizes[1]`), what it holds and what was expected.

Fields the loader does not read (timings, versions of the tools) are still type-checked
when present; unknown keys are allowed so that later writers can add information.
"""
from __future__ import annotations

import re
from typing import Any

from ..dtypes import DType
from ..errors import PackageError
from ..target import architectures, known_arches

# 2: chunked CRC-32s (field crc32) are what loading checks; 3: a constant's packing may be
# the int8 kernel's layout (int8_dot_groups); 4: constants may share bytes of weights.bin
# (one range: a tie, which load_constants swaps together), a constant the run never reads
# (folded into others) is not stored (stored: false, nbytes 0), and the archive may be zip64.
# The int8 layout's groups are padded to whole AMX tiles since int8_dot_groups16 (packages
# of int8_dot_groups, before that, keep loading: their library packs and reads their own).
# int4_nibbles (an int4 weight two values a byte) and conv_winograd_f2x3 (a 3x3 convolution's
# Winograd transform) are layouts added within version 4: older packages are unchanged, and
# an older aotc refuses a package using one by its layout name.
FORMAT_VERSION = 4
ARCHES = known_arches()
_SYMBOL = re.compile(r"[A-Za-z_]\w*")
# what sympy prints for a size expression: integer arithmetic, and the float literals of a
# size computed through floats (arange(0.5, n, 1.5): CeilToInt(FloatTrueDiv(...)))
_SIZE_EXPR = re.compile(r"[\w\s*+\-()/,.]+")
_NAME_IN_EXPR = re.compile(r"[A-Za-z_]\w*(?!\w|\s*\()")  # an identifier that is not a call
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CRCS = re.compile(r"(?:[0-9a-f]{8})+")  # one CRC-32 per chunk, 8 hex digits each
_MAX_DIM = 1 << 62
_MAX_RANK = 64
_SPEC_DEPTH = 64


class _Bad(Exception):
    def __init__(self, path: str, expected: str, value: Any):
        shown = repr(value)
        super().__init__(f"metadata field '{path}' is {shown[:80]}; expected {expected}")


def _get(obj: dict, key: str, path: str) -> Any:
    if key not in obj:
        raise _Bad(f"{path}.{key}" if path else key, "it to be present", "missing")
    return obj[key]


def _int(value: Any, path: str, lo: int = 0, hi: int = _MAX_DIM) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _Bad(path, f"an integer in [{lo}, {hi}]", value)
    return value


def _str(value: Any, path: str, pattern: re.Pattern | None = None, what: str = "a string") -> str:
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        raise _Bad(path, what, value)
    return value


def _list(value: Any, path: str, limit: int = 1 << 20) -> list:
    if not isinstance(value, list) or len(value) > limit:
        raise _Bad(path, f"a list (of at most {limit} items)", value)
    return value


def _dict(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise _Bad(path, "an object", value)
    return value


def _dtype(value: Any, path: str) -> DType:
    names = [d.name for d in DType]
    if not isinstance(value, str) or value not in names:
        raise _Bad(path, f"a dtype name ({', '.join(names)})", value)
    return DType[value]


def _scalar(value: Any, path: str) -> None:
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise _Bad(path, "a number, a string, true/false or null", value)


def _sizes(value: Any, path: str, symbols: dict) -> list:
    sizes = _list(value, path, _MAX_RANK)
    for d, s in enumerate(sizes):
        where = f"{path}[{d}]"
        if isinstance(s, str):
            _str(s, where, _SIZE_EXPR, "a size expression over the package's symbols")
            unknown = set(_NAME_IN_EXPR.findall(s)) - set(symbols)
            if unknown:
                raise _Bad(where, f"an expression over the symbols {sorted(symbols)} "
                                  f"(it names {sorted(unknown)})", s)
        else:
            _int(s, where)
    return sizes


def _spec(value: Any, path: str, depth: int = 0) -> int:
    """A pytree spec; returns its number of leaves."""
    if depth > _SPEC_DEPTH:
        raise _Bad(path, f"a structure at most {_SPEC_DEPTH} levels deep", "deeper")
    spec = _dict(value, path)
    kind = _get(spec, "kind", path)
    if kind == "leaf":
        return 1
    if kind == "none":
        return 0
    if kind not in ("tuple", "list", "dict", "node"):
        raise _Bad(f"{path}.kind", "leaf, none, tuple, list, dict or node", kind)
    kids = _list(_get(spec, "children", path), f"{path}.children")
    if kind == "node":  # a type registered with torch's pytree
        _str(_get(spec, "module", path), f"{path}.module")
        _str(_get(spec, "qualname", path), f"{path}.qualname")
        _get(spec, "context", path)
        for key, n in (("fields", len(kids)), ("none_fields", None)):
            if key in spec:
                names = _list(spec[key], f"{path}.{key}")
                if (n is not None and len(names) != n) or not all(isinstance(f, str) for f in names):
                    raise _Bad(f"{path}.{key}", "field names, one per child" if n is not None
                               else "field names", names)
    if kind == "tuple" and ("fields" in spec or "name" in spec):  # a named tuple
        _str(_get(spec, "name", path), f"{path}.name")
        fields = _list(_get(spec, "fields", path), f"{path}.fields")
        if len(fields) != len(kids) or not all(isinstance(f, str) for f in fields):
            raise _Bad(f"{path}.fields", f"{len(kids)} field names, one per child", fields)
    if kind == "dict":
        keys = _list(_get(spec, "keys", path), f"{path}.keys")
        if len(keys) != len(kids) or not all(isinstance(k, (str, int)) for k in keys):
            raise _Bad(f"{path}.keys", f"{len(kids)} string or integer keys, one per child", keys)
    return sum(_spec(k, f"{path}.children[{i}]", depth + 1) for i, k in enumerate(kids))


def _symbols(value: Any) -> dict:
    symbols = _dict(value, "symbols")
    for name, bounds in symbols.items():
        where = f"symbols.{name}"
        _str(name, where, _SYMBOL, "a symbol name")
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise _Bad(where, "[min, max] (max null when unbounded)", bounds)
        lo = _int(bounds[0], f"{where}[0]", -_MAX_DIM)  # a value symbol may be negative
        if bounds[1] is not None:
            _int(bounds[1], f"{where}[1]", lo)
    return symbols


def _tensor(entry: Any, path: str, symbols: dict) -> None:
    t = _dict(entry, path)
    _str(_get(t, "name", path), f"{path}.name")
    _dtype(_get(t, "dtype", path), f"{path}.dtype")
    _sizes(_get(t, "sizes", path), f"{path}.sizes", symbols)


def _inputs(value: Any, symbols: dict) -> None:
    for k, entry in enumerate(_list(value, "inputs")):
        path = f"inputs[{k}]"
        kind = _get(_dict(entry, path), "kind", path)
        if kind == "tensor":
            _tensor(entry, path, symbols)
            if "strides" in entry:
                strides = _sizes(entry["strides"], f"{path}.strides", symbols)
                if len(strides) != len(entry["sizes"]):
                    raise _Bad(f"{path}.strides", f"{len(entry['sizes'])} strides, one per dim",
                               strides)
        elif kind == "scalar":
            _str(_get(entry, "name", path), f"{path}.name")
            _scalar(_get(entry, "value", path), f"{path}.value")
        else:
            raise _Bad(f"{path}.kind", "tensor or scalar", kind)


def _constants(value: Any) -> None:
    for k, entry in enumerate(_list(value, "constants")):
        path = f"constants[{k}]"
        c = _dict(entry, path)
        _str(_get(c, "name", path), f"{path}.name")
        dtype = _dtype(_get(c, "dtype", path), f"{path}.dtype")
        sizes = _sizes(_get(c, "sizes", path), f"{path}.sizes", {})
        offset = _int(_get(c, "offset", path), f"{path}.offset")
        if offset % 64:
            raise _Bad(f"{path}.offset", "a multiple of 64 (constants are 64-byte aligned)", offset)
        numel = 1
        for s in sizes:
            numel = min(numel * s, _MAX_DIM)
        for j, src in enumerate(_list(c.get("folded_from", []), f"{path}.folded_from")):
            _str(src, f"{path}.folded_from[{j}]")
        nbytes = _int(_get(c, "nbytes", path), f"{path}.nbytes")
        stored = numel * dtype.itemsize
        if "packing" in c:
            stored = _packing(c["packing"], f"{path}.packing", numel, dtype)
        if "stored" in c and not isinstance(c["stored"], bool):
            raise _Bad(f"{path}.stored", "true or false", c["stored"])
        if c.get("stored") is False:  # the run never reads it: no bytes in weights.bin
            stored = 0
        if nbytes != stored:
            what = ("nothing: it is not stored" if c.get("stored") is False
                    else "its packed layout" if "packing" in c else f"{numel} {dtype.name} values")
            raise _Bad(f"{path}.nbytes", f"{stored} ({what})", nbytes)


_INT8_FIELDS = ("k", "n", "offset", "sb_k", "sb_n")
_PACKING_FIELDS = {"gemm_b_panels": ("k", "n", "offset", "sb_k", "sb_n", "nr", "kc"),
                   "int8_dot_groups": _INT8_FIELDS, "int8_dot_groups16": _INT8_FIELDS,
                   "int4_nibbles": ("k", "n"), "conv_winograd_f2x3": ("cout", "cin", "nr", "kc")}
# the groups of 4 rows each int8 layout stores for k rows
_INT8_GROUPS = {"int8_dot_groups": lambda k: -(-k // 4), "int8_dot_groups16": lambda k: -(-k // 64) * 16}
# the dtypes of the constants each layout packs (GEMM panels: float32, or a half model's
# weights, packed from their values widened to float32)
_PACKED_DTYPE = {"gemm_b_panels": ("float32", "bfloat16", "float16"), "int8_dot_groups": ("int8",),
                 "int8_dot_groups16": ("int8",), "int4_nibbles": ("int8",),
                 "conv_winograd_f2x3": ("float32",)}


def _packing(value: Any, path: str, numel: int, dtype) -> int:
    """Bytes of a constant stored in its kernel's layout (scheduler/prepack.py): the GEMM's
    panels, the int8 kernel's dot-product groups, or an int4 weight two values a byte;
    after checking that the layout reads only inside the constant's own values."""
    p = _dict(value, path)
    layout = p.get("layout")
    if layout not in _PACKING_FIELDS:
        raise _Bad(f"{path}.layout", " or ".join(map(repr, _PACKING_FIELDS)), layout)
    if dtype.name not in _PACKED_DTYPE[layout]:
        raise _Bad(f"{path}", f"a constant of dtype {' or '.join(_PACKED_DTYPE[layout])} (the "
                   f"{layout} layout holds no other)", dtype.name)
    stored = p.get("dtype", "float32")
    if layout == "gemm_b_panels" and stored not in ("float32", "bfloat16"):
        raise _Bad(f"{path}.dtype", "'float32' or 'bfloat16'", stored)
    f = {name: _int(_get(p, name, path), f"{path}.{name}", -_MAX_DIM, _MAX_DIM)
         for name in _PACKING_FIELDS[layout]}
    for name in ("k", "n", "nr", "kc", "cout", "cin"):
        if name in f and f[name] < 1:
            raise _Bad(f"{path}.{name}", "a positive number", f[name])
    if layout == "conv_winograd_f2x3":  # a [cout, cin, 3, 3] weight, 16 floats a 3x3
        if f["cout"] * f["cin"] * 9 != numel:
            raise _Bad(path, f"cout * cin * 9 the constant's {numel} values",
                       [f["cout"], f["cin"]])
        # each u_p's panels rounded up to 16 floats
        return 16 * -(-(f["cin"] * -(-f["cout"] // f["nr"]) * f["nr"]) // 16) * 16 * 4
    if layout == "int4_nibbles":  # the whole [n, k] weight, two values a byte
        if f["k"] % 32 or f["k"] * f["n"] != numel:
            raise _Bad(path, f"k a multiple of 32 and k * n the constant's {numel} values",
                       [f["k"], f["n"]])
        return f["k"] * f["n"] // 2
    corners = [f["offset"] + i * (f["k"] - 1) * f["sb_k"] + j * (f["n"] - 1) * f["sb_n"]
               for i in (0, 1) for j in (0, 1)]
    if min(corners) < 0 or max(corners) >= numel:
        raise _Bad(path, f"a layout reading inside the constant's {numel} values", corners)
    if layout in _INT8_GROUPS:  # aotc_qgemm_packed_bytes: groups of 4 rows, 16-column
        rows = f["k"]
        if layout == "int8_dot_groups16":  # rows reordered over a convolution's taps
            taps = _int(p.get("taps", 1), f"{path}.taps", 1, f["k"])
            if f["k"] % taps:
                raise _Bad(f"{path}.taps", f"a divisor of k ({f['k']})", taps)
            if taps > 1:  # its channels padded to a multiple of 4
                rows = taps * -(-(f["k"] // taps) // 4) * 4
            row_taps = _int(p.get("row_taps", 0), f"{path}.row_taps", 0, f["k"])
            if row_taps:  # each kernel row of row_taps padded to a multiple of 4
                if f["k"] % row_taps or taps > 1:
                    raise _Bad(f"{path}.row_taps", f"a divisor of k ({f['k']}), without taps",
                               row_taps)
                rows = f["k"] // row_taps * -(-row_taps // 4) * 4
        panels = -(-f["n"] // 16)  # panels, then their int32 column sums
        return panels * _INT8_GROUPS[layout](rows) * 64 + panels * 64
    if stored == "bfloat16":  # whole pairs of rows, 2 bytes a value
        return (f["k"] + f["k"] % 2) * -(-f["n"] // f["nr"]) * f["nr"] * 2
    return f["k"] * -(-f["n"] // f["nr"]) * f["nr"] * 4


def validate(meta: Any) -> dict:
    """`meta` if it is a valid metadata object of this format version; PackageError naming the bad field."""
    try:
        _validate(meta)
    except _Bad as e:
        raise PackageError(str(e)) from None
    return meta


def _validate(meta: Any) -> None:
    _dict(meta, "metadata")
    version = _get(meta, "format_version", "")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise _Bad("format_version", f"{FORMAT_VERSION} (the version this aotc reads)", version)
    _int(_get(meta, "abi_version", ""), "abi_version", 1, 1 << 30)
    for key in ("aotc_version", "torch_version"):
        if key in meta:
            _str(meta[key], key)
    target = _dict(_get(meta, "target", ""), "target")
    _str(_get(target, "device", "target"), "target.device")
    _str(_get(target, "arch", "target"), "target.arch")
    if target["arch"] not in ARCHES:
        raise _Bad("target.arch", f"one of {', '.join(ARCHES)}", target["arch"])
    _str(_get(target, "isa", "target"), "target.isa")
    if "architecture" in target and target["architecture"] not in architectures():
        raise _Bad("target.architecture", f"one of {', '.join(architectures())}",
                   target["architecture"])
    if "features" in target:  # CPU features beyond the arch's, space separated
        _str(target["features"], "target.features")
    if "cpu_features" in target:  # every CPU feature the code needs, space separated
        _str(target["cpu_features"], "target.cpu_features")
    if target.get("precision", "fp32") not in ("fp32", "bf16"):
        raise _Bad("target.precision", "'fp32' or 'bf16'", target["precision"])
    symbols = _symbols(_get(meta, "symbols", ""))
    _inputs(_get(meta, "inputs", ""), symbols)
    outputs = _list(_get(meta, "outputs", ""), "outputs")
    for k, entry in enumerate(outputs):
        _tensor(entry, f"outputs[{k}]", symbols)
    leaves = _list(_get(meta, "output_leaves", ""), "output_leaves")
    for k, entry in enumerate(leaves):
        path = f"output_leaves[{k}]"
        kind = _get(_dict(entry, path), "kind", path)
        if kind == "tensor":
            _int(_get(entry, "index", path), f"{path}.index", 0, len(outputs) - 1)
        elif kind == "constant":
            _scalar(_get(entry, "value", path), f"{path}.value")
        else:
            raise _Bad(f"{path}.kind", "tensor or constant", kind)
    n_in = _spec(_get(meta, "in_spec", ""), "in_spec")
    if n_in != len(meta["inputs"]):
        raise _Bad("in_spec", f"a structure of {len(meta['inputs'])} leaves, one per input",
                   f"{n_in} leaves")
    n_out = _spec(_get(meta, "out_spec", ""), "out_spec")
    if n_out != len(leaves):
        raise _Bad("out_spec", f"a structure of {len(leaves)} leaves, one per output leaf",
                   f"{n_out} leaves")
    _constants(_get(meta, "constants", ""))
    _int(_get(meta, "num_threads", ""), "num_threads", 0, 1 << 16)
    digests = _dict(_get(meta, "sha256", ""), "sha256")
    for key in ("model.so", "weights.bin"):
        _str(_get(digests, key, "sha256"), f"sha256.{key}", _HEX64, "a sha256 hex digest")
    crcs = _dict(_get(meta, "crc32", ""), "crc32")
    _int(_get(crcs, "chunk_bytes", "crc32"), "crc32.chunk_bytes", 64, 1 << 40)
    for key in ("model.so", "weights.bin"):
        _str(_get(crcs, key, "crc32"), f"crc32.{key}", _CRCS,
             "CRC-32s as hex, 8 digits for each chunk")
    if "autotune" in meta:
        for k, r in enumerate(_list(_get(_dict(meta["autotune"], "autotune"), "measured",
                                         "autotune"), "autotune.measured")):
            _int(_get(_dict(r, f"autotune.measured[{k}]"), "num_threads",
                      f"autotune.measured[{k}]"), f"autotune.measured[{k}].num_threads", 1, 1 << 16)
    if "freezing" in meta and not isinstance(meta["freezing"], bool):
        raise _Bad("freezing", "true or false", meta["freezing"])
    for key, value in _dict(meta.get("user_metadata", {}), "user_metadata").items():
        _str(value, f"user_metadata.{key}")
    if "compile_seconds" in meta and not isinstance(meta["compile_seconds"], (int, float)):
        raise _Bad("compile_seconds", "a number", meta["compile_seconds"])
    if "stage_seconds" in meta:
        for name, t in _dict(meta["stage_seconds"], "stage_seconds").items():
            if not isinstance(t, (int, float)):
                raise _Bad(f"stage_seconds.{name}", "a number", t)


def check_constants_fit(meta: dict, weights_size: int) -> None:
    """Every constant lies inside weights.bin (its size is known only once the archive is read)."""
    for k, c in enumerate(meta["constants"]):
        if c["offset"] + c["nbytes"] > weights_size:
            raise PackageError(f"metadata field 'constants[{k}]' ({c['name']}) spans bytes "
                               f"{c['offset']}..{c['offset'] + c['nbytes']}; expected it inside "
                               f"weights.bin ({weights_size} bytes)")


def check_against_library(meta: dict, inputs: list[dict], outputs: list[dict], symbols: dict,
                          constants: list[dict]) -> None:
    """metadata.json says what the model library says of itself (the library is the truth:
    a field edited after the package was written is named here, before any call)."""
    tensor_inputs = [{k: i[k] for k in ("name", "dtype", "sizes")}
                     for i in meta["inputs"] if i["kind"] == "tensor"]
    pairs = [("inputs", tensor_inputs, inputs), ("outputs", meta["outputs"], outputs),
             ("constants", meta["constants"], constants)]
    for field, ours, theirs in pairs:
        if len(ours) != len(theirs):
            raise PackageError(f"metadata field '{field}' lists {len(ours)} entries; the model "
                               f"library has {len(theirs)}")
        for k, (a, b) in enumerate(zip(ours, theirs)):
            for key, value in b.items():
                if a.get(key) != value:
                    raise PackageError(f"metadata field '{field}[{k}].{key}' is {a.get(key)!r}; "
                                       f"the model library says {value!r}")
    if {k: list(v) for k, v in meta["symbols"].items()} != symbols:
        raise PackageError(f"metadata field 'symbols' is {meta['symbols']!r}; the model library "
                           f"says {symbols!r}")
