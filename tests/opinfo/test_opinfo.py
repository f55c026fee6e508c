"""OpInfo sweep: PyTorch's own samples of each milestone op, compiled by aotc and compared
with the exported program. Known failures live in expected_failures.txt (strict xfails).

An op's samples in all its swept dtypes compile as one program (one build per op); when that
fails, each dtype is checked on its own so the failure names it. An op with expected
failures runs one case per dtype, and one per expected-failing sample."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db  # needs expecttest

from aotc.tools.opsweep import F32, check, exportable, opinfo_name, pick_samples

I64, BOOL, F16, BF16 = torch.int64, torch.bool, torch.float16, torch.bfloat16
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
    "__getitem__": ALL, "select": ALL, "cat": ALL, "as_strided": ALL, "_chunk_cat": (F32, I64),
    # copies, conversions, creation
    "clone": ALL, "to": ALL, "float": ALL, "long": ALL, "bool": ALL,
    "full": ALL, "zeros": ALL, "ones": ALL, "arange": ALL, "repeat": ALL, "tile": ALL,
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
    "gather": (F32, I64), "index_select": (F32, I64), "nn.functional.embedding": (F32, F16),
    "stack": ALL, "split": (F32,), "chunk": (F32,), "masked_fill": (F32, I64),
    "nn.functional.layer_norm": (F32,), "native_layer_norm": (F32,),
    "nn.functional.group_norm": (F32,),
    "nn.functional.instance_norm": (F32,), "t": ALL, "flatten": ALL, "unflatten": (F32,),
    # convolution, padding
    "nn.functional.conv1d": (F32, I64), "nn.functional.conv2d": (F32, I64),
    "nn.functional.conv3d": (F32, I64), "nn.functional.conv_transpose1d": (F32, I64),
    "nn.functional.conv_transpose2d": (F32, I64), "nn.functional.conv_transpose3d": (F32, I64),
    "constant_pad_nd": ALL, "nn.functional.pad.constant": ALL,
    "nn.functional.pad.reflect": (F32, I64), "nn.functional.pad.replicate": (F32, I64),
    "nn.functional.pad.replicate_negative": (F32,), "nn.functional.pad.circular": (F32, I64),
    # reversed and rotated indices
    "flip": ALL, "fliplr": ALL, "flipud": ALL, "roll": ALL,
    # resampling
    "nn.functional.interpolate.nearest": (F32,), "nn.functional.interpolate.linear": (F32,),
    "nn.functional.interpolate.bilinear": (F32,), "nn.functional.interpolate.trilinear": (F32,),
    "nn.functional.upsample_nearest": (F32,), "nn.functional.upsample_bilinear": (F32,),
    "nn.functional.interpolate.bicubic": (F32,), "nn.functional.grid_sample": (F32,),
    # scans
    "cumsum": ALL, "cumprod": (F32, I64), "logcumsumexp": (F32,), "cummax": ALL,
    "cummin": ALL,
    # pooling
    "nn.functional.max_pool1d": (F32,), "nn.functional.max_pool2d": (F32,),
    "nn.functional.max_pool3d": (F32,), "nn.functional.avg_pool1d": (F32, I64),
    "nn.functional.avg_pool2d": (F32, I64), "nn.functional.avg_pool3d": (F32, I64),
    "nn.functional.local_response_norm": (F32, I64),
    "nn.functional.adaptive_avg_pool1d": (F32,), "nn.functional.adaptive_avg_pool2d": (F32,),
    "nn.functional.adaptive_avg_pool3d": (F32,), "nn.functional.adaptive_max_pool1d": (F32,),
    "nn.functional.adaptive_max_pool2d": (F32,), "nn.functional.adaptive_max_pool3d": (F32,),
    # sorting and searching
    "sort": ALL, "argsort": ALL, "msort": (F32, I64), "topk": (F32, I64),
    "kthvalue": (F32, I64), "searchsorted": (F32, I64), "median": (F32, I64),
    "nanmedian": (F32,), "mode": (F32, I64),
    # special functions
    "erfc": (F32,), "lgamma": (F32,), "digamma": (F32, I64), "polygamma.polygamma_n_1": (F32,),
    "i0": (F32,), "special.i1e": (F32,), "special.ndtri": (F32,), "special.log_ndtr": (F32,),
    "special.zeta": (F32,), "special.bessel_j0": (F32,), "special.bessel_y1": (F32,),
    "special.modified_bessel_k0": (F32,), "special.airy_ai": (F32,),
    "special.chebyshev_polynomial_t": (F32,), "special.hermite_polynomial_h": (F32,),
    "special.chebyshev_polynomial_w": (F32,), "special.shifted_chebyshev_polynomial_v": (F32,),
    "igamma": (F32, F16), "igammac": (F32, BF16),
    "erfinv": (F32, F16), "frexp": (F32, BF16), "angle": (F32, I64), "round.decimals_3": (F32,),
    "round.decimals_neg_3": (BF16,),
    "nn.functional.margin_ranking_loss": (F32, I64), "nn.functional.hinge_embedding_loss": (F32,),
    "nn.functional.soft_margin_loss": (F16,),
    "renorm": (F32, F16, BF16), "nn.functional.pdist": (F32,), "triu_indices": (I64,),
    "tril_indices": (I64,),
    # sign bits, NaN-ignoring extrema, diagonals, batch-summed products, .item()
    "signbit": (F32, I64), "copysign": (F32, I64), "fmax": (F32, I64), "fmin": (F32,),
    "diagonal": (F32, BOOL), "diag": (F32, I64), "diagonal_scatter": (F32,), "addbmm": (F32,),
    "cdist": (F32,), "aminmax": (F32, I64), "native_batch_norm": (F32,), "item": (F32, I64, BOOL),
    "linspace": (F32, I64, F16), "logspace": (F32, I64), "gcd": (I64,), "lcm": (I64,),
    "meshgrid.variadic_tensors": (F32,), "quantile": (F32,), "scatter_reduce.sum": (F32, I64),
    "scatter_reduce.prod": (F32,), "scatter_reduce.mean": (F32, I64), "scatter_reduce.amax": (F32,),
    "scatter_reduce.amin": (I64,), "nextafter": (F32, BF16), "nn.functional.bilinear": (F32,),
    "eye": (F32, BOOL), "hypot": (F32,),
    # reductions into indexed slices
    "index_reduce.prod": (F32, I64), "index_reduce.mean": (F32,), "index_reduce.amax": (F32,),
    "index_reduce.amin": (I64,), "put": (F32, I64, BOOL),
    "nonzero_static": (F32, I64, BOOL), "as_strided_scatter": (F32, I64, F16),
    "hash_tensor": (F32, I64, BOOL, F16), "take": (F32, I64, BOOL),
    "unravel_index": (I64,), "nn.functional.one_hot": (I64,), "histc": (F32, F16),
    "histogram": (F32,), "bincount": (I64,), "histogramdd": (F32,),
    # a decomposed op whose result length export names with an unbacked symbol
    "combinations": (F32, I64),
    # training-mode batch norm (running statistics updated in place)
    "nn.functional.batch_norm": (F32, BF16), "_native_batch_norm_legit": (F32, F16),
    "_batch_norm_with_update": (F32, BF16),
    "_segment_reduce.lengths": (F32, F16), "_segment_reduce.offsets": (F32, BF16),
    "nn.functional.embedding_bag": (F32, F16), "repeat_interleave": (F32, I64, BOOL),
    "resize_": (F32, BF16), "resize_as_": (I64, F16), "_upsample_bilinear2d_aa": (F32,),
    "tensor_split": (F32, I64),
}

# half precision (stored as half, computed in float32 and rounded once per op) on a subset
HALF_SWEPT = ("add", "mul", "exp", "sigmoid", "tanh", "nn.functional.gelu", "softmax", "sum",
              "mean", "amax", "mm", "nn.functional.layer_norm", "cat", "where", "clone",
              "nn.functional.conv2d")
for _name in HALF_SWEPT:
    MILESTONE[_name] = MILESTONE[_name] + (F16, BF16)

# complex64 (computed as (real, imag) pairs, frontend/complex_ops.py) on the ops it has rules for
COMPLEX_SWEPT = ("add", "sub", "mul", "div.no_rounding_mode", "neg", "reciprocal", "pow", "exp",
                 "log", "sqrt", "rsqrt", "abs", "sin", "cos", "eq", "ne", "isnan", "where",
                 "sum", "mean", "mm", "bmm", "matmul", "view", "reshape", "permute",
                 "transpose", "expand", "squeeze", "unsqueeze", "narrow", "__getitem__",
                 "select", "cat", "clone", "to", "full", "zeros", "ones", "repeat", "gather",
                 "index_select")
# ... and on ops swept in complex64 only: the complex views, parts, copies and scatters, and
# ops whose decompositions reach the rules
COMPLEX_ONLY = ("real", "imag", "conj", "conj_physical", "resolve_conj", "angle", "isfinite",
                "isinf", "flip", "roll", "stack", "unbind", "split", "chunk", "flatten",
                "unflatten", "t", "masked_fill", "index_put", "index_copy",
                "nn.functional.pad.constant", "zeros_like", "ones_like", "full_like",
                "new_zeros", "new_ones", "new_full", "sgn", "square", "dot", "vdot", "einsum",
                "view_as_real", "true_divide", "rsub", "addcmul", "lerp", "positive",
                "linalg.vector_norm", "sinh", "cosh", "tanh", "log10", "log2", "sigmoid",
                "cumsum", "diagonal", "tril", "triu", "trace")
# the Fourier transforms (lowering/fft.py on kernels/fft.cpp), real and complex inputs
FFT_SWEPT = ("fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft", "fft.fft2",
             "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft2", "fft.irfft2", "fft.rfftn",
             "fft.irfftn", "fft.hfft2", "fft.ihfft2", "fft.hfftn", "fft.ihfftn", "fft.fftshift",
             "fft.ifftshift", "stft")
for _name in FFT_SWEPT:
    MILESTONE[_name] = (F32, torch.complex64)
for _name in COMPLEX_SWEPT:
    MILESTONE[_name] = MILESTONE[_name] + (torch.complex64,)
for _name in COMPLEX_ONLY:
    MILESTONE[_name] = MILESTONE.get(_name, ()) + (torch.complex64,)


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


OPINFOS = {opinfo_name(o): o for o in op_db if opinfo_name(o) in MILESTONE}


# ---- the tests -----------------------------------------------------------------------------

def cases():
    """One case per op (all its dtypes), or, for an op with expected failures, one per
    (op, dtype) plus one per expected-failing sample."""
    sample_rows = {(r.op, r.dtype): {} for r in EXPECTED}
    for r in EXPECTED:
        if r.sample is not None:
            sample_rows[(r.op, r.dtype)][r.sample] = r
    whole = {(r.op, r.dtype): r for r in EXPECTED if r.sample is None}
    listed = {r.op for r in EXPECTED}
    out = []
    for name, dtypes in MILESTONE.items():
        info = OPINFOS[name]
        swept = tuple(d for d in dtypes if d in info.dtypes)
        if not swept:
            continue
        if name not in listed:
            out.append(pytest.param(name, swept, None, (), id=name))
            continue
        for dtype in swept:
            d = str(dtype).removeprefix("torch.")
            per_sample = sample_rows.get((name, d), {})
            row = whole.get((name, d))
            marks = [xfail(row)] if row else []
            out.append(pytest.param(name, (dtype,), None, tuple(per_sample), marks=marks,
                                    id=f"{name}-{d}"))
            for k, r in sorted(per_sample.items()):
                out.append(pytest.param(name, (dtype,), k, (), id=f"{name}-{d}-s{k}",
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


@pytest.mark.parametrize("name,dtypes,only,excluded", cases())
def test_opinfo(name, dtypes, only, excluded, tmp_path):
    info = OPINFOS[name]
    if len(dtypes) > 1:  # every dtype in one program, samples numbered across them
        samples = [replace(s, index=k) for k, s in enumerate(
            s for dtype in dtypes for s in pick_samples(info, dtype))]
        samples, ep = exportable(info, samples)
        if not samples:
            pytest.skip("torch.export cannot export any sample")
        try:
            check(info, samples, ep, tmp_path)
        except Exception:
            for dtype in dtypes:  # the failing dtype and samples, as their own cases say
                check_dtype(info, dtype, None, (), tmp_path / str(dtype).removeprefix("torch."))
            raise
        return
    if not check_dtype(info, dtypes[0], only, excluded, tmp_path):
        pytest.skip("torch.export cannot export any sample")


def check_dtype(info, dtype, only, excluded, tmp_path: Path) -> bool:
    """Checks the op's samples in one dtype; False when none can be exported."""
    samples = [s for s in pick_samples(info, dtype)
               if (s.index == only if only is not None else s.index not in excluded)]
    samples, ep = exportable(info, samples)
    if only is not None and not samples:
        raise StaleRow(f"expected_failures.txt: sample {only} of {opinfo_name(info)} is not "
                       "swept or cannot be exported")
    if not samples:
        return False
    tmp_path.mkdir(parents=True, exist_ok=True)
    check(info, samples, ep, tmp_path)
    return True
