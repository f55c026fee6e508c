"""Random small tensor programs with one dynamic dim `n` whose range starts at 0, written as
Python source, for the fuzz test of tests/e2e: pointwise ops with broadcasting and type
promotion, reductions, scans, softmax, cat/stack, views, GEMMs and symbolic sizes.

Everything comes from one random.Random (the fuzz test's comes from Hypothesis, whose
`randoms()` records every call, so a failing package shrinks and replays):
`generate(rng, count)` makes `count` independent programs, each with its own inputs and its
own dim, and `render` writes one module that computes them all (one compile for all of
them; each program's outputs under its own key). The generator tracks every value's shape so
that what it writes is valid for every n in [0, max]: a dim is an int (static) or a pair
(a, b) meaning a*n + b with a >= 1."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

FLOAT = ("float32",)
INT = ("int64", "int32")
MAXES = (5, 8, 16, 33, 64)
EXAMPLE_N = 5  # not a static size the generator uses (those are 1..4), so export links none


@dataclass
class Value:
    name: str
    shape: tuple  # ints and (a, b) pairs
    dtype: str


@dataclass
class Program:
    key: str
    n_max: int
    inputs: list  # Values
    lines: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    container: str = "tuple"
    # the program may raise in eager at n = 0 (a max of no elements): it gets 0 in calls of
    # its own, so that it cannot hide what the other programs do at 0
    may_raise_at_zero: bool = False


def _is_dyn(d) -> bool:
    return isinstance(d, tuple)


def _can_be_zero(d) -> bool:
    return _is_dyn(d) and d[1] == 0


def size_at(d, n: int) -> int:
    return d[0] * n + d[1] if _is_dyn(d) else d


def _broadcast(s, t):
    """The broadcast shape of s and t, or None."""
    out = []
    for k in range(1, max(len(s), len(t)) + 1):
        a = s[-k] if k <= len(s) else 1
        b = t[-k] if k <= len(t) else 1
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(reversed(out))


def _promote(a: str, b: str) -> str:
    order = ["bool", "int32", "int64", "float32", "float64"]
    return max(a, b, key=order.index)


def _is_float(dtype: str) -> bool:
    return dtype.startswith("float")


UNARY_FLOAT = ["-{x}", "{x}.abs()", "{x}.sin()", "{x}.cos()", "{x}.tanh()", "{x}.sigmoid()",
               "{x}.relu()", "{x} * {x}", "{x}.abs().sqrt()", "{x}.abs().log1p()",
               "(-{x}.abs()).exp()", "{x}.clamp(-0.5, 0.5)", "{x}.floor()", "{x}.sign()",
               "{x}.erf()", "({x}.abs() + 1).rsqrt()", "{x} * 2.5 - 1", "{x}.square().mean() + {x}"]
UNARY_INT = ["-{x}", "{x}.abs()", "{x} * {x}", "{x}.clamp(-1, 1)", "{x} % 3", "{x} // 2",
             "{x} + 3", "{x}.sign()"]
CASTS = {"float": ["{x}.to(torch.int64)", "{x} > 0", "{x}.to(torch.float64)"],
         "int": ["{x}.float()", "{x} != 0", "{x}.to(torch.int32)", "{x}.to(torch.int64)"],
         "bool": ["{x}.float()", "{x}.to(torch.int64)", "~{x}"]}
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "torch.maximum({a}, {b})",
          "torch.minimum({a}, {b})", "torch.where({a} > {b}, {a}, {b})", "{a} < {b}"]
BINARY_FLOAT = ["{a} / ({b}.abs() + 1)", "torch.atan2({a}, {b})"]
BINARY_BOOL = ["{a} & {b}", "{a} | {b}", "{a} ^ {b}"]


class _Builder:
    def __init__(self, rng: random.Random, key: str):
        self.rng = rng
        self.key = key
        self.count = 0
        self.n_max = rng.choice(MAXES)
        self.prog = Program(key, self.n_max, [])
        self.pool: list[Value] = []

    def fresh(self, shape, dtype, text: str) -> Value:
        v = Value(f"{self.key}_v{self.count}", tuple(shape), dtype)
        self.count += 1
        self.prog.lines.append(f"{v.name} = {text}")
        self.pool.append(v)
        return v

    def make_inputs(self):
        rng = self.rng
        rank = rng.randint(1, 3)
        shape = [rng.randint(1, 4) for _ in range(rank)]
        shape[rng.randrange(rank)] = (1, 0)
        if rank > 1 and rng.random() < 0.15:  # the dim twice, (n, n)
            shape[rng.randrange(rank)] = (1, 0)
        first_dtype = rng.choices(["float32", "int64", "int32", "bool"], [8, 2, 1, 1])[0]
        shapes = [(tuple(shape), first_dtype)]
        for _ in range(rng.choices([0, 1, 2], [2, 5, 2])[0]):
            s = list(shape)
            for k in range(len(s)):  # broadcast partners: some dims 1, fewer leading dims
                if rng.random() < 0.3:
                    s[k] = 1
            if rng.random() < 0.3:
                s = s[rng.randint(1, len(s)):] or [1]
            if rng.random() < 0.2 and len(s) < 3:
                s = [1] + s
            dtype = rng.choices(["float32", "int64", "int32", "bool"], [8, 2, 1, 1])[0]
            shapes.append((tuple(s), dtype))
        for k, (s, dtype) in enumerate(shapes):
            v = Value(f"{self.key}_x{k}", s, dtype)
            self.prog.inputs.append(v)
            self.pool.append(v)

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        # later values more often: chains, not only ops on the inputs
        return cands[min(len(cands) - 1, int(len(cands) * self.rng.random() ** 0.5))]

    # ---- ops: each returns False when it does not apply to what the pool holds
    def unary(self):
        x = self.pick()
        if x.dtype == "bool":
            return self.cast(x)
        forms = UNARY_FLOAT if _is_float(x.dtype) else UNARY_INT
        self.fresh(x.shape, x.dtype, self.rng.choice(forms).format(x=x.name))
        return True

    def cast(self, x=None):
        x = x or self.pick()
        kind = "float" if _is_float(x.dtype) else "bool" if x.dtype == "bool" else "int"
        form = self.rng.choice(CASTS[kind])
        dtype = ("bool" if ("> 0" in form or "!=" in form or "~" in form) else
                 "float64" if "float64" in form else "float32" if "float()" in form else
                 "int32" if "int32" in form else "int64")
        self.fresh(x.shape, dtype, form.format(x=x.name))
        return True

    def binary(self):
        a = self.pick()
        partners = [v for v in self.pool if _broadcast(a.shape, v.shape) is not None
                    and (v.dtype == "bool") == (a.dtype == "bool")]
        b = self.rng.choice(partners)
        shape = _broadcast(a.shape, b.shape)
        if a.dtype == "bool":
            self.fresh(shape, "bool", self.rng.choice(BINARY_BOOL).format(a=a.name, b=b.name))
            return True
        dtype = _promote(a.dtype, b.dtype)
        forms = BINARY + (BINARY_FLOAT if _is_float(dtype) else [])
        form = self.rng.choice(forms)
        out = "bool" if form == "{a} < {b}" else dtype
        self.fresh(shape, out, form.format(a=a.name, b=b.name))
        return True

    def scalar_of_size(self):
        """A size as a value: x * n, arange(n), full(n, n)."""
        x = self.pick(lambda v: any(_is_dyn(d) for d in v.shape) and v.dtype != "bool")
        if x is None:
            return False
        d = self.rng.choice([k for k, s in enumerate(x.shape) if _is_dyn(s)])
        form = self.rng.randrange(4)
        if form == 0:
            self.fresh(x.shape, x.dtype, f"{x.name} * {x.name}.shape[{d}]")
        elif form == 1:
            self.fresh((x.shape[d],), "int64", f"torch.arange({x.name}.shape[{d}])")
        elif form == 2:
            self.fresh((x.shape[d], 2), "int64",
                       f"torch.full(({x.name}.shape[{d}], 2), {x.name}.shape[{d}])")
        else:
            self.fresh(x.shape, "float32", f"torch.zeros_like({x.name}, dtype=torch.float32) + "
                       f"{x.name}.shape[{d}] / 2")
        return True

    def reduce(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        rng = self.rng
        ops = ["sum", "amax", "amin", "argmax", "argmin"] if x.dtype != "bool" else ["sum"]
        if _is_float(x.dtype):
            ops += ["mean", "prod", "mean"]
        op = rng.choice(ops)
        keep = rng.random() < 0.4
        if rng.random() < 0.15:  # everything
            dims = list(range(len(x.shape)))
            text = f"{x.name}.{op}()"
            shape = ()
        else:
            k = 1 if op in ("argmax", "argmin", "prod") or len(x.shape) == 1 else rng.randint(1, 2)
            dims = sorted(rng.sample(range(len(x.shape)), k))
            arg = dims[0] if op in ("argmax", "argmin", "prod") else tuple(dims)
            neg = rng.random() < 0.3 and len(dims) == 1
            spelled = (dims[0] - len(x.shape)) if neg else arg
            text = f"{x.name}.{op}({spelled}{', keepdim=True' if keep else ''})"
            shape = tuple(1 if k in dims else s for k, s in enumerate(x.shape)) if keep else \
                tuple(s for k, s in enumerate(x.shape) if k not in dims)
        if op in ("amax", "amin", "argmax", "argmin") and any(
                _can_be_zero(x.shape[k]) for k in dims):
            self.prog.may_raise_at_zero = True
        dtype = ("int64" if op.startswith("arg") or (op in ("sum", "prod") and not _is_float(x.dtype))
                 else x.dtype)
        if op in ("amax", "amin") and x.dtype == "bool":
            dtype = "bool"
        self.fresh(shape, dtype, text)
        return True

    def scan(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and v.dtype != "bool")
        if x is None:
            return False
        d = self.rng.randrange(len(x.shape))
        if _is_float(x.dtype):
            form = self.rng.choice(["torch.softmax({x}, {d})", "torch.log_softmax({x}, {d})",
                                    "{x}.cumsum({d})", "torch.logcumsumexp({x}, {d})"])
            self.fresh(x.shape, x.dtype, form.format(x=x.name, d=d))
        else:
            self.fresh(x.shape, "int64", f"{x.name}.cumsum({d})")
        return True

    def join(self):
        a = self.pick(lambda v: len(v.shape) >= 1)
        d = self.rng.randrange(len(a.shape))
        if self.rng.random() < 0.5:  # cat along d: partners equal elsewhere
            partners = [v for v in self.pool if len(v.shape) == len(a.shape) and all(
                s == t for k, (s, t) in enumerate(zip(v.shape, a.shape)) if k != d)
                and (v.dtype == "bool") == (a.dtype == "bool")]
            b = self.rng.choice(partners)
            s, t = a.shape[d], b.shape[d]
            joined = (s[0] + t[0], s[1] + t[1]) if _is_dyn(s) and _is_dyn(t) else \
                (s[0], s[1] + t) if _is_dyn(s) else (t[0], t[1] + s) if _is_dyn(t) else s + t
            shape = a.shape[:d] + (joined,) + a.shape[d + 1:]
            self.fresh(shape, _promote(a.dtype, b.dtype), f"torch.cat([{a.name}, {b.name}], {d})")
        else:
            partners = [v for v in self.pool if v.shape == a.shape
                        and (v.dtype == "bool") == (a.dtype == "bool")]
            b = self.rng.choice(partners)
            d = self.rng.randint(0, len(a.shape))
            shape = a.shape[:d] + (2,) + a.shape[d:]
            self.fresh(shape, _promote(a.dtype, b.dtype),
                       f"torch.stack([{a.name}, {b.name}], {d})")
        return True

    def view(self):
        x = self.pick()
        rng = self.rng
        r = len(x.shape)
        form = rng.randrange(9)
        if form == 0 and r >= 2:
            perm = list(range(r))
            rng.shuffle(perm)
            self.fresh(tuple(x.shape[p] for p in perm), x.dtype,
                       f"{x.name}.permute({', '.join(map(str, perm))})")
        elif form == 1 and r >= 2:
            i, j = rng.sample(range(r), 2)
            s = list(x.shape)
            s[i], s[j] = s[j], s[i]
            self.fresh(s, x.dtype, f"{x.name}.transpose({i}, {j})")
        elif form == 2 and r < 4:
            d = rng.randint(0, r)
            self.fresh(x.shape[:d] + (1,) + x.shape[d:], x.dtype, f"{x.name}.unsqueeze({d})")
        elif form == 3 and 1 in x.shape:
            d = x.shape.index(1)
            self.fresh(x.shape[:d] + x.shape[d + 1:], x.dtype, f"{x.name}.squeeze({d})")
        elif form == 4 and r >= 2:  # flatten adjacent dims, at most one of them dynamic
            i = rng.randrange(r - 1)
            a, b = x.shape[i], x.shape[i + 1]
            if _is_dyn(a) and _is_dyn(b):
                return False
            if _is_dyn(a) or _is_dyn(b):
                dyn, c = (a, b) if _is_dyn(a) else (b, a)
                merged = (dyn[0] * c, dyn[1] * c)
            else:
                merged = a * b
            self.fresh(x.shape[:i] + (merged,) + x.shape[i + 2:], x.dtype,
                       f"{x.name}.flatten({i}, {i + 1})")
        elif form == 5 and any(not _is_dyn(s) and s in (4, 6) for s in x.shape):
            d = next(k for k, s in enumerate(x.shape) if not _is_dyn(s) and s in (4, 6))
            p = 2
            self.fresh(x.shape[:d] + (p, x.shape[d] // p) + x.shape[d + 1:], x.dtype,
                       f"{x.name}.unflatten({d}, ({p}, {x.shape[d] // p}))")
        elif form == 6 and any(not _is_dyn(s) and s >= 2 for s in x.shape):
            d = rng.choice([k for k, s in enumerate(x.shape) if not _is_dyn(s) and s >= 2])
            start = rng.randrange(x.shape[d] - 1)
            length = rng.randint(1, x.shape[d] - start)
            self.fresh(x.shape[:d] + (length,) + x.shape[d + 1:], x.dtype,
                       f"{x.name}.narrow({d}, {start}, {length})")
        elif form == 7 and r >= 1:
            d = rng.randrange(r)
            self.fresh(x.shape, x.dtype, f"{x.name}.flip({d})")
        elif form == 8 and 1 in x.shape:  # expand to a value it broadcasts to
            targets = [v for v in self.pool if v.shape != x.shape and len(v.shape) >= r
                       and _broadcast(x.shape, v.shape) == v.shape]
            if not targets:
                return False
            t = rng.choice(targets)
            self.fresh(t.shape, x.dtype, f"{x.name}.expand_as({t.name})")
        else:
            return False
        return True

    def matmul(self):
        x = self.pick(lambda v: len(v.shape) in (2, 3) and _is_float(v.dtype))
        if x is None:
            return False
        s = x.shape
        if self.rng.random() < 0.5:  # x^T x: a sum over the rows (none when they are 0)
            self.fresh(s[:-2] + (s[-1], s[-1]), x.dtype,
                       f"{x.name}.transpose(-2, -1) @ {x.name}")
        else:
            self.fresh(s[:-2] + (s[-2], s[-2]), x.dtype,
                       f"{x.name} @ {x.name}.transpose(-2, -1)")
        return True

    def build(self) -> Program:
        rng = self.rng
        self.make_inputs()
        ops = [self.unary, self.cast, self.binary, self.scalar_of_size, self.reduce, self.scan,
               self.join, self.view, self.matmul]
        weights = [5, 1, 5, 1, 3, 2, 2, 4, 1]
        for _ in range(rng.randint(2, 7)):
            for _attempt in range(10):
                if rng.choices(ops, weights)[0]():
                    break
        made = [v for v in self.pool if v not in self.prog.inputs]
        text = "\n".join(self.prog.lines)
        # the values nothing else reads (so that every op counts), at most four
        sinks = [v.name for v in made if len(re.findall(rf"\b{v.name}\b", text)) == 1]
        outs = set(sinks[-4:]) | {made[-1].name}
        if rng.random() < 0.05:  # an input as an output
            outs.add(rng.choice(self.prog.inputs).name)
        self.prog.outputs = [v.name for v in self.pool if v.name in outs]
        self.prog.container = rng.choice(["tuple", "tuple", "list", "single"])
        return self.prog


def program(rng: random.Random, key: str) -> Program:
    return _Builder(rng, key).build()


def generate(rng: random.Random, count: int) -> list[Program]:
    """`count` programs drawn from `rng`."""
    return [program(rng, f"p{k}") for k in range(count)]


def render(progs: list[Program], title: str) -> str:
    """The source of module class Programs that computes `progs`."""
    args = ", ".join(v.name for p in progs for v in p.inputs)
    body = []
    for p in progs:
        body.append(f"        # {p.key}: n in [0, {p.n_max}]")
        body += [f"        {line}" for line in p.lines]
    returns = []
    for p in progs:
        if p.container == "single" and len(p.outputs) == 1:
            returns.append(f'"{p.key}": {p.outputs[0]}')
        else:
            items = ", ".join(p.outputs)
            returns.append(f'"{p.key}": ({items},)' if p.container != "list" else
                           f'"{p.key}": [{items}]')
    return (f"# {title}\nimport torch\n\n\nclass Programs(torch.nn.Module):\n"
            f"    def forward(self, {args}):\n" + "\n".join(body) +
            "\n        return {" + ", ".join(returns) + "}\n")
