"""The calls into the shipped sorts (kernels/sort.cpp): argsort of each line, and
searchsorted of values in sorted lines; one entry point per element type."""
from __future__ import annotations

from ....dtypes import DType
from ....errors import CompileError
from ....ir.nodes import ArgSort, Buffer, SearchSorted
from ..exprs import c_index
from . import emits

SORT_SUFFIX = {DType.float32: "f32", DType.float64: "f64", DType.int64: "i64",
               DType.int32: "i32", DType.int16: "i16", DType.int8: "i8", DType.uint8: "u8",
               DType.bool: "b8"}


def _sort_suffix(dtype: DType) -> str:
    if dtype not in SORT_SUFFIX:
        raise CompileError(f"no sort kernel for {dtype.name}")
    return SORT_SUFFIX[dtype]


@emits(ArgSort)
def argsort_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, ArgSort)
    args = ", ".join(c_index(e) for e in (op.outer, op.length, op.inner, op.first, op.count))
    return [f"aotc_argsort_{_sort_suffix(op.dtype)}(AOTC_SORT_{op.algorithm.name}, {args}, "
            f"{int(op.descending)}, {pointer_of(op.x)}, {pointer_of(buf.name)});"]


@emits(SearchSorted)
def searchsorted_call(buf: Buffer, pointer_of, workspace: str | None) -> list[str]:
    op = buf.op
    assert isinstance(op, SearchSorted)
    args = ", ".join(c_index(e) for e in (op.lines, op.n, op.rows, op.per_row))
    return [f"aotc_searchsorted_{_sort_suffix(op.dtype)}({args}, {int(op.right)}, "
            f"{pointer_of(op.sorted)}, {pointer_of(op.values)}, {pointer_of(buf.name)});"]
