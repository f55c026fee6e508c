"""Conditions export records beyond the symbol ranges, checked at run time: the graph's
`_assert_scalar` nodes (`torch._check(n != 1)` on a `.item()` value) and the guards on the
inputs that `ep.module()` checks (`ep._guards_code`: `torch._check(x.shape[0] % 4 == 0)`),
each a sympy condition in `Program.assertions`, a failed one an input error."""
from __future__ import annotations

import ast
import re

import sympy

from ..errors import CompileError
from ..ir.nodes import Program
from ..ir.symbols import FloorDiv, ModIndex


def add_assertion(program: Program, condition, what: str) -> None:
    """Record `condition` (a sympy condition over shape symbols) unless always true."""
    condition = sympy.sympify(condition)
    if condition is sympy.true or condition == sympy.true:
        return
    if condition is sympy.false:
        raise CompileError(f"{what} can never hold")
    program.assertions.append((condition, what))


def import_input_guards(program: Program, guards: list[str],
                        user_inputs: tuple[str, ...] = ()) -> None:
    """Each guard of `ep._guards_code` (Python over L['x'].size()[d] and int inputs);
    `user_inputs`: the user inputs' placeholder names in order, which strict export's
    guards name as L['flat_args'][i]."""
    for code in guards:
        text = code.replace("L['", "").replace("']", "")
        try:
            condition = _Guard(program, code, user_inputs).value(
                ast.parse(code, mode="eval").body)
        except (SyntaxError, _Unsupported) as e:
            raise CompileError(f"export recorded the input guard {text!r}, which aotc cannot "
                               f"check at run time ({e})") from None
        add_assertion(program, condition, f"the input guard {text}")


class _Unsupported(Exception):
    pass


_COMPARE = {ast.Eq: sympy.Eq, ast.NotEq: sympy.Ne, ast.Lt: sympy.Lt, ast.LtE: sympy.Le,
            ast.Gt: sympy.Gt, ast.GtE: sympy.Ge}
_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
          ast.Mult: lambda a, b: a * b, ast.FloorDiv: FloorDiv, ast.Mod: ModIndex}


class _Guard:
    """A guard's Python expression as a sympy condition over the program's symbols."""

    def __init__(self, program: Program, code: str, user_inputs: tuple[str, ...] = ()):
        self.program, self.code, self.user_inputs = program, code, user_inputs

    def value(self, node: ast.expr):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, bool)):
            return sympy.sympify(node.value)
        if isinstance(node, ast.BoolOp):
            parts = [self.value(v) for v in node.values]
            return sympy.And(*parts) if isinstance(node.op, ast.And) else sympy.Or(*parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return sympy.Not(self.value(node.operand))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return _ARITH[type(node.op)](self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Compare):
            left, parts = self.value(node.left), []
            for op, right in zip(node.ops, node.comparators):
                if type(op) not in _COMPARE:
                    raise _Unsupported(f"the comparison {type(op).__name__}")
                r = self.value(right)
                parts.append(_COMPARE[type(op)](left, r))
                left = r
            return sympy.And(*parts)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords
                and node.func.id in ("max", "min") and node.args):
            fn = sympy.Max if node.func.id == "max" else sympy.Min
            return fn(*(self.value(a) for a in node.args))
        if isinstance(node, ast.Subscript) and _is_size_call(node.value):
            dim = node.slice
            if not (isinstance(dim, ast.Constant) and isinstance(dim.value, int)):
                raise _Unsupported("a size index that is not a number")
            buf = self.program.buffers[self._input(node.value.func.value)]  # type: ignore[attr-defined]
            return buf.sizes[dim.value]
        if isinstance(node, ast.Subscript):  # an int input: its symbol
            buffer = self._input(node)
            if buffer not in self.program.scalar_inputs:
                raise _Unsupported(f"input {ast.unparse(node)} used as a number")
            return self.program.scalar_inputs[buffer]
        raise _Unsupported(ast.unparse(node))

    def _input(self, node: ast.expr) -> str:
        """The input buffer that L['x'] (or L['y'][0], a nested input) names."""
        path: list[str] = []
        while isinstance(node, ast.Subscript):
            key = node.slice
            if not isinstance(key, ast.Constant):
                raise _Unsupported(ast.unparse(node))
            path.insert(0, str(key.value))
            node = node.value
        if not (isinstance(node, ast.Name) and node.id == "L" and path):
            raise _Unsupported(ast.unparse(node))
        for name in self._names(path):
            spec = next((s for s in self.program.inputs if s.name == name), None)
            if spec is not None:
                return spec.buffer
        raise _Unsupported(f"no input named {'_'.join(path)}")

    def _names(self, path: list[str]) -> list[str]:
        """The placeholder names L[path] may be: strict export's flattened arguments
        (L['flat_args'][i], the i-th user input), the path's parts joined by '_' (a nested
        input), and that with the characters a placeholder name cannot hold as '_' (an
        input named `x_torch.float32`)."""
        if len(path) == 2 and path[0] == "flat_args" and path[1].isdigit() \
                and int(path[1]) < len(self.user_inputs):
            return [self.user_inputs[int(path[1])]]
        joined = "_".join(path)
        return [joined, re.sub(r"[^0-9A-Za-z_]", "_", joined)]


def _is_size_call(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute)
            and node.func.attr == "size")
