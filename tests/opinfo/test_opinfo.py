"""OpInfo sweep: PyTorch's own samples of each milestone op, compiled by aotc and compared
with the exported program. Known failures live in expected_failures.txt (strict xfails)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from torch.testing import make_tensor
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest
from torch.testing._internal.opinfo.core import SampleInput
from torch.utils import _pytree as pytree

import aotc

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
    # beyond the first milestone: more math, arg reductions, indexing, nn ops
    "erf": (F32,), "sin": (F32,), "cos": (F32,), "floor": (F32, I64), "ceil": (F32, I64),
    "round": (F32,), "trunc": (F32,), "reciprocal": (F32,), "sign": (F32, I64),
    "log1p": (F32,), "expm1": (F32,), "remainder": (F32, I64), "fmod": (F32, I64),
    "atan2": (F32,), "logical_and": ALL, "logical_or": ALL, "logical_not": ALL,
    "bitwise_and": (I64, BOOL), "bitwise_not": (I64, BOOL), "isnan": (F32,),
    "nn.functional.hardtanh": (F32,), "nn.functional.leaky_relu": (F32,),
    "nn.functional.relu6": (F32, I64), "nn.functional.prelu": (F32,),
    "nn.functional.logsigmoid": (F32,), "var_mean": (F32,), "std_mean": (F32,),
    "tan": (F32, I64), "asin": (F32,), "acos": (F32,), "atan": (F32, I64), "sinh": (F32,),
    "cosh": (F32,), "asinh": (F32,), "acosh": (F32,), "atanh": (F32,), "exp2": (F32, I64),
    "log2": (F32,), "log10": (F32,),
    "nn.functional.hardswish": (F32,), "nn.functional.hardsigmoid": (F32,),
    "prod": (F32, I64), "any": ALL, "all": ALL, "std": (F32,),
    "argmax": (F32, I64), "argmin": (F32, I64), "max.reduction_with_dim": (F32, I64),
    "min.reduction_with_dim": (F32, I64),
    "gather": (F32, I64), "index_select": (F32, I64), "nn.functional.embedding": (F32,),
    "stack": ALL, "split": (F32,), "chunk": (F32,), "masked_fill": (F32, I64),
    "nn.functional.layer_norm": (F32,), "native_layer_norm": (F32,),
    "nn.functional.group_norm": (F32,),
    "nn.functional.instance_norm": (F32,), "t": ALL, "flatten": ALL, "unflatten": (F32,),
    # convolution, padding
    "nn.functional.conv1d": (F32,), "nn.functional.conv2d": (F32,),
    "nn.functional.conv3d": (F32,), "nn.functional.conv_transpose1d": (F32,),
    "nn.functional.conv_transpose2d": (F32,), "nn.functional.conv_transpose3d": (F32,),
    "constant_pad_nd": ALL, "nn.functional.pad.constant": ALL,
    "nn.functional.pad.reflect": (F32, I64), "nn.functional.pad.replicate": (F32, I64),
    "nn.functional.pad.replicate_negative": (F32,), "nn.functional.pad.circular": (F32, I64),
    # reversed and rotated indices
    "flip": ALL, "fliplr": ALL, "flipud": ALL, "roll": ALL,
    # resampling
    "nn.functional.interpolate.nearest": (F32,), "nn.functional.interpolate.linear": (F32,),
    "nn.functional.interpolate.bilinear": (F32,), "nn.functional.interpolate.trilinear": (F32,),
    "nn.functional.upsample_nearest": (F32,), "nn.functional.upsample_bilinear": (F32,),
    # scans
    "cumsum": ALL, "cumprod": (F32, I64), "logcumsumexp": (F32,), "cummax": ALL,
    "cummin": ALL,
    # pooling
    "nn.functional.max_pool1d": (F32,), "nn.functional.max_pool2d": (F32,),
    "nn.functional.max_pool3d": (F32,), "nn.functional.avg_pool1d": (F32,),
    "nn.functional.avg_pool2d": (F32,), "nn.functional.avg_pool3d": (F32,),
    "nn.functional.adaptive_avg_pool1d": (F32,), "nn.functional.adaptive_avg_pool2d": (F32,),
    "nn.functional.adaptive_avg_pool3d": (F32,), "nn.functional.adaptive_max_pool1d": (F32,),
    "nn.functional.adaptive_max_pool2d": (F32,), "nn.functional.adaptive_max_pool3d": (F32,),
}


# ---- the expected-failure table ------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    op: str
    dtype: str
    sample: int | None  # None: every sample of (op, dtype)
    reason: str


def read_expected(path: Path = HERE / "expected_failures.txt") -> list[Expected]:
    """Rows `op  dtype  samples  reason...`: samples is `*` (the whole case) or a comma list
    of OpInfo sample indices (one strict xfail each); '#' starts a comment line."""
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, dtype, samples, reason = line.split(maxsplit=3)
        picks = [None] if samples == "*" else [int(k) for k in samples.split(",")]
        rows.extend(Expected(op, dtype, k, reason) for k in picks)
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
    def of(cls, index: int, s) -> Sample:
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
    """At most MAX_SAMPLES samples, evenly spread over OpInfo's list (seeded, so stable).

    The generator behind opinfo.sample_inputs() is called directly: sample_inputs() only
    wraps it in a tracker that runs inspect.stack() (~70 ms under pytest) per call.
    """
    torch.manual_seed(0)
    samples = list(info.sample_inputs_func(info, "cpu", dtype, False))
    n = len(samples)
    keep = sorted({round(k * (n - 1) / (MAX_SAMPLES - 1)) for k in range(MAX_SAMPLES)}) \
        if n > MAX_SAMPLES else range(n)
    extra = EXTRA.get(opinfo_name(info), lambda d: [])(dtype)
    return [Sample.of(k, samples[k]) for k in keep] + \
        [Sample.of(EXTRA_BASE + k, x) for k, x in enumerate(extra)]


# ---- samples OpInfo's small random ones miss (numbered from EXTRA_BASE) --------------------

EXTRA_BASE = 100
INF = float("inf")


def _floor_edges(dtype) -> list[SampleInput]:
    """Quotients whose float32 rounding is a whole number while the exact one is not."""
    if dtype is not F32:
        return []
    a = torch.tensor([1.0, -1.0, 7.0, 5.0, INF, 0.3, -0.0])
    b = torch.tensor([0.1, 0.1, 0.7, -0.0, 2.0, 0.1, 3.0])
    return [SampleInput(a, args=(b,), kwargs={"rounding_mode": "floor"}),
            SampleInput(a, args=(0.1,), kwargs={"rounding_mode": "floor"})]


def _zero_dim_reduction(dtype) -> list[SampleInput]:
    """A 0-dim tensor reduced over dim 0 / -1 (torch accepts both; there is no axis)."""
    x = make_tensor((), dtype=dtype, device="cpu")
    return [SampleInput(x, kwargs={"dim": 0, "keepdim": True}),
            SampleInput(x.clone(), kwargs={"dim": -1})]


def _large_reduction(dtype) -> list[SampleInput]:
    """Over 16384 elements, where the generated loops switch to OpenMP."""
    x = make_tensor((64, 600), dtype=dtype, device="cpu")
    return _zero_dim_reduction(dtype) + [SampleInput(x), SampleInput(x.clone(), kwargs={"dim": 1})]


def _large_softmax(dtype) -> list[SampleInput]:
    x = make_tensor((64, 600), dtype=dtype, device="cpu")
    return [SampleInput(x, kwargs={"dim": 0}), SampleInput(x.clone(), kwargs={"dim": 1})]


def _large_broadcast(dtype) -> list[SampleInput]:
    x, y = (make_tensor(s, dtype=dtype, device="cpu") for s in ((64, 600), (600,)))
    return [SampleInput(x, args=(y,))]


EXTRA = {"div.floor_rounding": _floor_edges, "sum": _large_reduction,
         "mean": _large_reduction, "amax": _large_reduction, "amin": _large_reduction,
         "softmax": _large_softmax, "add": _large_broadcast}


def inputs_of(samples: list[Sample]) -> tuple:
    # clones: the same tensor object may appear in two samples (or twice in one)
    return tuple(t.clone() for s in samples for t in s.tensors())


def export(info, samples: list[Sample]):
    with torch.no_grad():
        return torch.export.export(Batch(info.op, samples), inputs_of(samples))


def exportable(info, samples: list[Sample]):
    """(the samples torch.export can trace, their exported program).

    Skipped: a sample torch.export rejects says nothing about aotc. Today that is narrow
    with a tensor `start`, whose value becomes an unbacked symbol export cannot return.
    Not skipped: 0-dim tensor inputs, which export takes as ordinary inputs. The batch is
    tried first, so the common case costs one export.
    """
    try:
        return samples, export(info, samples)
    except Exception:  # noqa: BLE001 - any export failure is torch's, not aotc's
        pass
    ok = []
    for s in samples:
        try:
            export(info, [s])
            ok.append(s)
        except Exception:  # noqa: BLE001
            continue
    return ok, (export(info, ok) if ok else None)


def compile_and_run(ep, samples: list[Sample], path: Path):
    """(expected, actual): per-sample results of ep.module() and of the aotc package."""
    args = inputs_of(samples)
    with torch.no_grad():
        expected = ep.module()(*args)
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=path))
    # with no tensor input (full, arange, ...) the numpy-only runtime answers numpy arrays
    actual = pytree.tree_map(torch.as_tensor, model(*args))
    return expected, actual


def mismatches(info, samples: list[Sample], expected, actual) -> list[str]:
    """One line per sample whose aotc result differs from the exported program's.

    equal_nan: NaN where torch has NaN is the right answer (log of a negative, 0/0).
    """
    bad = []
    for s, e, a in zip(samples, expected, actual):
        try:
            torch.testing.assert_close(a, e, equal_nan=True)
        except AssertionError as err:
            if not (opinfo_name(info) in REORDERS and as_accurate(info, s, e, a)):
                bad.append(f"sample {s.index}: {str(err).splitlines()[0]}")
    return bad


def max_abs(t: torch.Tensor) -> float:
    return t.abs().max().item() if t.numel() else 0.0


# Ops that sum many float32 terms in an order each implementation chooses (GEMM blocking,
# reduction trees, convolution taps): torch's result is one rounding of the exact sum, not
# the exact sum.
REORDERS = {"mm", "addmm", "bmm", "nn.functional.linear", "matmul", "sum", "mean", "var",
            "var.unbiased", "softmax", "softmax.with_dtype", "log_softmax",
            "log_softmax.with_dtype", "nn.functional.conv1d", "nn.functional.conv2d",
            "nn.functional.conv3d", "nn.functional.conv_transpose1d",
            "nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d"}


def as_accurate(info, s: Sample, expected, actual) -> bool:
    """aotc's error against a float64 evaluation is at most twice torch's own (+ the default
    float32 atol), on every output: a different order of the same sum, not a wrong sum."""
    ref = s.call(info.op, [t.double() if t.is_floating_point() else t for t in s.tensors()])
    trees = [pytree.tree_leaves(x) for x in (expected, actual, ref)]
    for e, a, r in zip(*trees):
        if not (e.dtype == a.dtype == F32 and a.shape == e.shape):
            return False
        finite = e.isfinite()
        same_specials = torch.equal(a[~finite].nan_to_num(), e[~finite].nan_to_num())
        if not same_specials or not a[finite].isfinite().all():
            return False
        torch_err, aotc_err = (max_abs((x.double() - r)[finite]) for x in (e, a))
        if aotc_err > 2 * torch_err + 1e-5:
            return False
    return True


def check(info, samples: list[Sample], ep, tmp_path: Path, name: str = "batch") -> None:
    """Compile all samples as one program; when that fails, name the failing samples."""
    try:
        expected, actual = compile_and_run(ep, samples, tmp_path / f"{name}.pt2")
    except Exception as err:  # noqa: BLE001 - attributed per sample below
        if len(samples) == 1:
            raise
        failures = []
        for s in samples:
            try:
                check(info, [s], export(info, [s]), tmp_path, f"s{s.index}")
            except Exception as e:  # noqa: BLE001
                failures.append(f"sample {s.index}: {type(e).__name__}: {str(e).splitlines()[0]}")
        raise AssertionError("\n".join(failures or [f"batch only: {err}"])) from err
    bad = mismatches(info, samples, expected, actual)
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
            marks = [xfail(row)] if row else []
            out.append(pytest.param(name, dtype, None, tuple(per_sample), marks=marks,
                                    id=f"{name}-{d}"))
            for k, r in sorted(per_sample.items()):
                out.append(pytest.param(name, dtype, k, (), id=f"{name}-{d}-s{k}",
                                        marks=xfail(r)))
    return out


class StaleRow(BaseException):
    """A row naming a sample the sweep cannot run: not an Exception, so no xfail absorbs it."""


def xfail(row: Expected):
    # strict: an expected failure that passes fails the sweep, so the table stays true
    return pytest.mark.xfail(strict=True, raises=Exception, reason=row.reason)


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
    samples, ep = exportable(info, samples)
    if only is not None and not samples:
        raise StaleRow(f"expected_failures.txt: sample {only} of {name} is not swept or "
                       "cannot be exported")
    if not samples:
        pytest.skip("torch.export cannot export any sample")
    check(info, samples, ep, tmp_path)
