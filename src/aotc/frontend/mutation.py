"""In-place updates of locals made functional: `y[:, 0] = v`, `x[idx] += 1`, `y.add_(1)`.

The updated buffer becomes a new buffer (a RegionWrite when only a view of it changes),
and every value that aliases the old one (the buffer itself and each view of it) is
rebound to read the new one, as later readers in PyTorch would see the update. A user
input or a registered buffer updated in place is recorded in `Program.updates`: the run
writes its final value back into the caller's tensor or the model's state (in place, with
no copy, when it can).
"""
from __future__ import annotations

from ..errors import UnsupportedOperatorError
from ..ir.expr import IndirectLoad, Load, cast, transform
from ..ir.nodes import BufferKind
from ..ir.regions import RegionWrite, Write
from ..ir.symbols import index_vars
from ..lowering import LoweringContext, TensorValue


def base_buffer(ctx: LoweringContext, target: TensorValue) -> str:
    """The buffer that `target` (a buffer or a view of one) aliases."""
    if not isinstance(target.body, Load):
        raise UnsupportedOperatorError(ctx.target, ctx.source, "the updated tensor is not a "
                                       "view aotc can write through")
    return target.body.buffer


def update_in_place(ctx: LoweringContext, env: dict, target: TensorValue, result: TensorValue,
                    fresh: set[str]) -> TensorValue:
    """Make `target` hold `result` (computed by this node: its new buffers are `fresh`);
    rebinds every aliasing value in `env` and returns the target's new value."""
    base = ctx.program.buffers[base_buffer(ctx, target)]
    updates = ctx.program.updates
    source = next((i for i, last in updates.items() if last == base.name), base.name)
    body = target.body
    assert isinstance(body, Load)
    whole = target.buffer_name() == base.name and tuple(target.sizes) == tuple(base.sizes)
    if whole:
        name = result.buffer_name()
        if name is None or name not in fresh or result.dtype != base.dtype:
            result = ctx.pointwise(cast(result.body, base.dtype), base.sizes)
        new = result.buffer_name()
    else:
        init = Load(base.name, index_vars(len(base.sizes)), base.dtype)
        write = Write(tuple(target.sizes), body.index, cast(result.body, base.dtype))
        new = ctx.emit(RegionWrite(init, (write,)), base.sizes, base.dtype).buffer_name()
    assert new is not None
    if ctx.program.buffers[source].kind is not BufferKind.COMPUTED:
        updates[source] = new  # the input or the state receives this value when the run ends
    for key, value in env.items():
        env[key] = rename_buffer(value, base.name, new)
    return rename_buffer(target, base.name, new)


def rename_buffer(value, old: str, new: str):
    """`value` (a tensor value, or a tuple/list of them) reading `new` where it read `old`."""
    if isinstance(value, (tuple, list)):
        return type(value)(rename_buffer(v, old, new) for v in value)
    if not isinstance(value, TensorValue):
        return value

    def leaf(x):
        if isinstance(x, Load) and x.buffer == old:
            return Load(new, x.index, x.dtype)
        if isinstance(x, IndirectLoad) and x.buffer == old:
            return IndirectLoad(new, x.index, x.indirect, x.bounds, x.dtype, x.wrap)
        return x

    return TensorValue(value.sizes, value.dtype, transform(value.body, leaf))
