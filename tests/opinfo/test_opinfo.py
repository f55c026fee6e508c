"""OpInfo sweep: PyTorch's own samples of each milestone op, compiled by aotc and compared
with the exported program. Known failures live in expected_failures.txt (strict xfails)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from torch.utils import _pytree as pytree

import aotc

pytest.importorskip("expecttest", reason="torch's OpInfo database imports expecttest")
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

F32, I64, BOOL = torch.float32, torch.int64, torch.bool
MAX_SAMPLES = 8
HERE = Path(__file__).resolve().parent

# OpInfo name[.variant] -> dtypes swept (float32 always; int64/bool where the op takes them
# in this milestone). A dtype the OpInfo entry does not list is dropped at collection.
ALL = (F32, I64, BOOL)
MILESTONE: dict[str, tuple] = {
    # matrix products
    "mm": (F32, I64), "addmm": (F32, I64), "bmm": (F32, I64),
    "nn.functional.linear": (F32, I64), "matmul": (F32, I64),
    # arithmetic and math
    "add": ALL, "sub": ALL, "mul": ALL, "div.no_rounding_mode": ALL,
    "div.trunc_rounding": ALL, "div.floor_rounding": ALL, "neg": ALL, "pow": ALL,
    "exp": ALL, "log": ALL, "sqrt": ALL, "rsqrt": ALL, "abs": ALL,
    "maximum": ALL, "minimum": ALL, "clamp": ALL, "where": ALL,
    "eq": ALL, "ne": ALL, "lt": ALL, "le": ALL, "gt": ALL, "ge": ALL,
    # activations
    "nn.functional.relu": ALL, "sigmoid": ALL, "tanh": ALL, "nn.functional.gelu": ALL,
    "nn.functional.silu": ALL,
    # reductions and the softmax family
    "softmax": (F32,), "softmax.with_dtype": ALL, "log_softmax": (F32,),
    "log_softmax.with_dtype": ALL, "sum": ALL, "mean": ALL, "amax": ALL, "amin": ALL,
    "var": ALL, "var.unbiased": ALL,
    # views, slicing, cat
    "view": ALL, "reshape": ALL, "permute": ALL, "transpose": ALL, "expand": ALL,
    "squeeze": ALL, "squeeze.multiple": ALL, "unsqueeze": ALL, "narrow": ALL,
    "__getitem__": ALL, "select": ALL, "cat": ALL,
    # copies, conversions, creation
    "clone": ALL, "to": ALL, "float": ALL, "long": ALL, "bool": ALL,
    "full": ALL, "zeros": ALL, "ones": ALL, "arange": ALL,
}


# ---- the expected-failure table ------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    op: str
    dtype: str
    sample: int | None  # None: every sample of (op, dtype)
    reason: str


def read_expected(path: Path = HERE / "expected_failures.txt") -> list[Expected]:
    """Rows `op  dtype  sample|*  reason...`; '#' starts a comment line."""
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, dtype, sample, reason = line.split(maxsplit=3)
        rows.append(Expected(op, dtype, None if sample == "*" else int(sample), reason))
    return rows


EXPECTED = read_expected()


def opinfo_name(info) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


OPINFOS = {opinfo_name(o): o for o in op_db if opinfo_name(o) in MILESTONE}


# ---- samples as one exportable module ------------------------------------------------------

@dataclass
class Sample:
    """One OpInfo sample: its index in the OpInfo list and its call with tensor holes."""

    index: int
    leaves: list
    spec: object
    tensor_pos: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, index: int, s) -> "Sample":
        leaves, spec = pytree.tree_flatten((s.input, tuple(s.args), dict(s.kwargs)))
        pos = [k for k, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
        return cls(index, leaves, spec, pos)

    def tensors(self) -> list[torch.Tensor]:
        return [self.leaves[k] for k in self.tensor_pos]

    def call(self, op, tensors):
        leaves = list(self.leaves)
        for k, t in zip(self.tensor_pos, tensors):
            leaves[k] = t
        x, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return op(x, *args, **kwargs)


class Batch(torch.nn.Module):
    """forward(*all tensors of all samples) -> (result of sample 0, result of sample 1, ...).

    Non-tensor arguments (dims, scalars, dtypes) are baked in as constants of the graph.
    """

    def __init__(self, op, samples: list[Sample]):
        super().__init__()
        self.op, self.samples = op, samples

    def forward(self, *tensors):
        out, k = [], 0
        for s in self.samples:
            n = len(s.tensor_pos)
            out.append(s.call(self.op, tensors[k:k + n]))
            k += n
        return tuple(out)


def pick_samples(info, dtype) -> list[Sample]:
    """At most MAX_SAMPLES samples, evenly spread over OpInfo's list (seeded, so stable)."""
    torch.manual_seed(0)
    samples = list(info.sample_inputs("cpu", dtype))
    n = len(samples)
    keep = sorted({round(k * (n - 1) / (MAX_SAMPLES - 1)) for k in range(MAX_SAMPLES)}) \
        if n > MAX_SAMPLES else range(n)
    return [Sample.of(k, samples[k]) for k in keep]


def inputs_of(samples: list[Sample]) -> tuple:
    # clones: the same tensor object may appear in two samples (or twice in one)
    return tuple(t.clone() for s in samples for t in s.tensors())


def export(info, samples: list[Sample]):
    with torch.no_grad():
        return torch.export.export(Batch(info.op, samples), inputs_of(samples))


def exportable(info, samples: list[Sample]) -> list[Sample]:
    """The samples torch.export can trace. A sample it rejects (data-dependent control flow,
    a tensor used as a Python number, ...) says nothing about aotc, so it is skipped; the
    batch is tried first so that the common case costs one export."""
    try:
        export(info, samples)
        return samples
    except Exception:  # noqa: BLE001 - any export failure is torch's, not aotc's
        pass
    ok = []
    for s in samples:
        try:
            export(info, [s])
            ok.append(s)
        except Exception:  # noqa: BLE001
            continue
    return ok


def compile_and_run(info, samples: list[Sample], path: Path):
    """(expected, actual): per-sample results of ep.module() and of the aotc package."""
    ep = export(info, samples)
    args = inputs_of(samples)
    with torch.no_grad():
        expected = ep.module()(*args)
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=path))
    return expected, model(*args)


def mismatches(samples: list[Sample], expected, actual) -> list[str]:
    """One line per sample whose aotc result differs from the exported program's.

    equal_nan: NaN where torch has NaN is the right answer (log of a negative, 0/0).
    """
    bad = []
    for s, e, a in zip(samples, expected, actual):
        try:
            torch.testing.assert_close(a, e, equal_nan=True)
        except AssertionError as err:
            bad.append(f"sample {s.index}: {str(err).splitlines()[0]}")
    return bad


def check(info, samples: list[Sample], tmp_path: Path) -> None:
    """Compile all samples as one program; when that fails, name the failing samples."""
    try:
        expected, actual = compile_and_run(info, samples, tmp_path / "batch.pt2")
    except Exception as err:  # noqa: BLE001 - attributed per sample below
        if len(samples) == 1:
            raise
        failures = []
        for s in samples:
            try:
                check(info, [s], tmp_path / f"s{s.index}")
            except Exception as e:  # noqa: BLE001
                failures.append(f"sample {s.index}: {type(e).__name__}: {str(e).splitlines()[0]}")
        raise AssertionError("\n".join(failures or [f"batch only: {err}"])) from err
    bad = mismatches(samples, expected, actual)
    assert not bad, "\n".join(bad)


# ---- the tests -----------------------------------------------------------------------------

def cases():
    """One case per (op, dtype) plus one per expected-failing sample."""
    sample_rows = {(r.op, r.dtype): {} for r in EXPECTED}
    for r in EXPECTED:
        if r.sample is not None:
            sample_rows[(r.op, r.dtype)][r.sample] = r
    whole = {(r.op, r.dtype): r for r in EXPECTED if r.sample is None}
    out = []
    for name, dtypes in MILESTONE.items():
        info = OPINFOS[name]
        for dtype in dtypes:
            if dtype not in info.dtypes:
                continue
            d = str(dtype).removeprefix("torch.")
            per_sample = sample_rows.get((name, d), {})
            row = whole.get((name, d))
            marks = [pytest.mark.xfail(strict=True, reason=row.reason)] if row else []
            out.append(pytest.param(name, dtype, None, tuple(per_sample), marks=marks,
                                    id=f"{name}-{d}"))
            for k, r in sorted(per_sample.items()):
                out.append(pytest.param(name, dtype, k, (), id=f"{name}-{d}-s{k}",
                                        marks=pytest.mark.xfail(strict=True, reason=r.reason)))
    return out


def test_expected_failures_name_real_cases():
    names = {c.id for c in cases()}
    for r in EXPECTED:
        case = f"{r.op}-{r.dtype}" + ("" if r.sample is None else f"-s{r.sample}")
        assert case in names, f"expected_failures.txt names {case}, which the sweep does not run"


@pytest.mark.parametrize("name,dtype,only,excluded", cases())
def test_opinfo(name, dtype, only, excluded, tmp_path):
    info = OPINFOS[name]
    samples = [s for s in pick_samples(info, dtype)
               if (s.index == only if only is not None else s.index not in excluded)]
    if only is not None and not samples:
        pytest.fail(f"sample {only} is not among the swept samples")
    samples = exportable(info, samples)
    if not samples:
        pytest.skip("torch.export cannot export any sample")
    check(info, samples, tmp_path)
