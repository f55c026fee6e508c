"""Running PyTorch's OpInfo samples through aotc: samples batched into one exportable
module, compiled, run and compared with the exported program. Shared by the OpInfo tests
and the coverage tool (tools/opcov.py); needs torch's test extras (expecttest)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.testing import make_tensor
from torch.testing._internal.opinfo.core import SampleInput
from torch.utils import _pytree as pytree

import aotc

F32 = torch.float32
MAX_SAMPLES = 8


def opinfo_name(info) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


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


def pick_samples(info, dtype, max_samples: int = MAX_SAMPLES) -> list[Sample]:
    """At most `max_samples` samples, evenly spread over OpInfo's list (seeded, so stable).

    The generator behind opinfo.sample_inputs() is called directly: sample_inputs() only
    wraps it in a tracker that runs inspect.stack() (~70 ms under pytest) per call.
    """
    torch.manual_seed(0)
    random.seed(0)  # some generators draw scalars (a loss's margin) from Python's random
    samples = list(info.sample_inputs_func(info, "cpu", dtype, False))
    n = len(samples)
    keep = sorted({round(k * (n - 1) / (max_samples - 1)) for k in range(max_samples)}) \
        if n > max_samples else range(n)
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
    """The exported program of the samples, once it has run them: a program whose own
    run-time asserts fail on the very inputs it was traced with (masked_select with a
    broadcast mask bounds its output by the input's size) is export's defect."""
    with torch.no_grad():
        ep = torch.export.export(Batch(info.op, samples), inputs_of(samples))
        ep.module()(*inputs_of(samples))
    return ep


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


def draws_random(ep) -> bool:
    """Whether the program draws random numbers, so no run can match eager's: an op tagged
    nondeterministic_seeded whose probability argument (`p`, `dropout_p`) is not 0 and that
    is not told it is out of training (`train`/`training` False)."""
    if ep is None:
        return False
    for node in ep.graph.nodes:
        op = node.target
        if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload) \
                or torch.Tag.nondeterministic_seeded not in op.tags:
            continue
        args = {a.name: (node.args[i] if i < len(node.args) else node.kwargs.get(a.name, a.default_value))
                for i, a in enumerate(op._schema.arguments)}
        if args.get("train", args.get("training", True)) is False:
            continue
        if args.get("p", args.get("dropout_p", 1.0)) != 0:
            return True
    return False


def compile_and_run(ep, samples: list[Sample], path: Path):
    """(expected, actual): per-sample results of ep.module() and of the aotc package."""
    args = inputs_of(samples)
    with torch.no_grad():
        expected = ep.module()(*args)
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=path))
    # with no tensor input (full, arange, ...) the numpy-only runtime answers numpy arrays;
    # Python numbers (an .item(), a SymInt output) stay numbers, as ep.module() returns them
    actual = pytree.tree_map(lambda v: v if isinstance(v, (bool, int, float)) else torch.as_tensor(v),
                             model(*args))
    return expected, actual


def mismatches(info, samples: list[Sample], expected, actual) -> list[str]:
    """One line per sample whose aotc result differs from the exported program's.

    equal_nan: NaN where torch has NaN is the right answer (log of a negative, 0/0).
    A float16/bfloat16 result may also differ from torch's by the rounding of its
    intermediate steps: eager's scalar and vectorized paths round differently (`sub` with
    `alpha` matches float32 math in vectors of 16 and rounds `alpha * y` to half in the
    tail), so there a result as accurate as torch's against float64 is right too; so is a
    complex64 one (eager's complex pow is off by twice assert_close's rtol on OpInfo's own
    samples, aotc's computed in double is not).
    """
    bad = []
    gauge = GAUGES.get(opinfo_name(info))
    for s, e, a in zip(samples, expected, actual):
        if gauge is not None:
            a = gauge(e, a, s)
        try:
            torch.testing.assert_close(a, e, equal_nan=True)
        except AssertionError as err:
            tolerant = (opinfo_name(info) in REORDERS | IN_DOUBLE or _has_half(e)
                        or _has_complex(e))
            if not (tolerant and as_accurate(info, s, e, a)):
                bad.append(f"sample {s.index}: {str(err).splitlines()[0]}")
    return bad


HALF = (torch.float16, torch.bfloat16)


def _align_columns(expected: torch.Tensor, actual: torch.Tensor) -> torch.Tensor:
    """`actual`'s columns (vectors defined up to their sign) flipped to point as `expected`'s;
    complex ones (defined up to a unit phase) each times the phase of <expected, actual>^*
    (= <actual, expected>), which best aligns it with expected's."""
    if expected.shape != actual.shape:
        return actual
    if actual.is_complex() and expected.is_complex():
        inner = (actual.conj() * expected).sum(-2, keepdim=True)  # <actual_j, expected_j>
        phase = torch.where(inner.abs() > 0, inner / inner.abs(), torch.ones_like(inner))
        return actual * phase
    if not actual.is_floating_point():
        return actual
    sign = torch.where((expected * actual).sum(-2, keepdim=True) < 0, -1.0, 1.0)
    return actual * sign.to(actual.dtype)


def _eigh_gauge(expected, actual, sample=None):
    """eigh's (values, vectors): each eigenvector is defined up to its sign (a unit phase when
    complex), which OpInfo's own tests leave out of the comparison too."""
    values, vectors = actual
    return type(actual)((values, _align_columns(expected[1], vectors)))


def _singular_vectors(expected_u, u, expected_v, v, k: int):
    """u and v (singular vectors as columns) with each pair's common sign as expected's (a
    complex pair's common unit phase: that of <u_j, expected u_j>, which best aligns u_j), and
    the columns beyond the k singular values (full_matrices: any orthonormal completion) as
    expected's where they span the same space."""
    if expected_u.shape != u.shape or expected_v.shape != v.shape:
        return u, v
    if u.is_complex() and expected_u.is_complex():
        inner = (u[..., :k].conj() * expected_u[..., :k]).sum(-2, keepdim=True)
        sign = torch.where(inner.abs() > 0, inner / inner.abs(), torch.ones_like(inner))
    elif u.is_floating_point():
        sign = torch.where((expected_u[..., :k] * u[..., :k]).sum(-2, keepdim=True) < 0,
                           -1.0, 1.0).to(u.dtype)
    else:
        return u, v
    u = torch.cat([u[..., :k] * sign, _same_span(expected_u[..., k:], u[..., k:])], -1)
    v = torch.cat([v[..., :k] * sign, _same_span(expected_v[..., k:], v[..., k:])], -1)
    return u, v


def _same_span(expected: torch.Tensor, actual: torch.Tensor) -> torch.Tensor:
    """expected's orthonormal columns where actual's span the same space, else actual."""
    if actual.shape[-1] == 0:
        return actual
    same = torch.allclose(actual @ actual.mH, expected @ expected.mH,
                          atol=1e3 * torch.finfo(actual.dtype).eps, rtol=0)
    return expected if same else actual


def _svd_gauge(expected, actual, sample=None):
    """linalg.svd's (U, S, Vh), as OpInfo compares them: singular vectors up to sign (a unit
    phase when complex; V = Vh^H)."""
    (eu, _, evh), (u, s, vh) = expected, actual
    if u.numel() == 0:  # compute_uv=False
        return actual
    u, v = _singular_vectors(eu, u, evh.mH, vh.mH, s.shape[-1])
    return type(actual)((u, s, v.mH))


def _old_svd_gauge(expected, actual, sample=None):
    """torch.svd's (U, S, V)."""
    (eu, _, ev), (u, s, v) = expected, actual
    u, v = _singular_vectors(eu, u, ev, v, s.shape[-1])
    return type(actual)((u, s, v))


def _nearest_order(expected: torch.Tensor, actual: torch.Tensor) -> list[int]:
    """For each of expected's values (1-dim), the index of the actual value matched to it:
    the closest pair of all first, then the closest of the rest, ..."""
    n = expected.shape[-1]
    dist = (expected.unsqueeze(-1) - actual.unsqueeze(-2)).abs().to(torch.float64)
    dist = dist.nan_to_num(nan=float("inf"))
    order, used_e, used_a = [-1] * n, set(), set()
    for flat in torch.argsort(dist.flatten(), stable=True).tolist():
        i, j = divmod(flat, n)
        if i not in used_e and j not in used_a:
            order[i] = j
            used_e.add(i)
            used_a.add(j)
    return order


def _eig_gauge(expected, actual, sample=None):
    """linalg.eig's (values, vectors) or linalg.eigvals' values, as OpInfo compares them:
    the eigenvalues of a general matrix come in no defined order (eager's as LAPACK's
    algorithm finds them) and each eigenvector is defined up to a complex phase. aotc's
    values (and vector columns) reordered to match eager's nearest, then each vector times
    the unit phase that best aligns it with eager's: that of <actual, expected>."""
    values_only = isinstance(actual, torch.Tensor)
    values, vectors = (actual, None) if values_only else actual
    e_values = expected if values_only else expected[0]
    if values.shape != e_values.shape or values.numel() == 0 or not values.is_complex():
        return actual
    n = values.shape[-1]
    values, e_flat = values.reshape(-1, n).clone(), e_values.reshape(-1, n)
    vecs = None if vectors is None else vectors.reshape(-1, n, n).clone()
    e_vecs = None if vectors is None else expected[1].reshape(-1, n, n)
    for b in range(values.shape[0]):
        order = _nearest_order(e_flat[b], values[b])
        values[b] = values[b, order]
        if vecs is None:
            continue
        v = vecs[b][:, order]
        inner = (v.conj() * e_vecs[b]).sum(-2)  # <actual_j, expected_j>
        phase = torch.where(inner.abs() > 0, inner / inner.abs(), torch.ones_like(inner))
        vecs[b] = v * phase
    values = values.reshape(e_values.shape)
    if vecs is None:
        return values
    return type(actual)((values, vecs.reshape(expected[1].shape)))


def _kthvalue_gauge(expected, actual, sample):
    """kthvalue's (values, indices): among equal values eager's quickselect returns the index
    of its choosing; aotc's index is right where the input holds the k-th value there."""
    (e_values, e_index), (values, index) = expected, actual
    x = sample.tensors()[0]
    dim, keepdim = sample.call(lambda x, k, dim=-1, keepdim=False: (dim, keepdim), [x])
    if x.ndim == 0 or not torch.equal(values, e_values):
        return actual
    picked = x.gather(dim, index if keepdim else index.unsqueeze(dim))
    if not torch.equal(picked if keepdim else picked.squeeze(dim), e_values):
        return actual
    return type(actual)((values, e_index))


# op -> (expected, actual, the sample) -> actual with the choices the op leaves open made
# as expected's
GAUGES = {"linalg.eigh": _eigh_gauge, "linalg.svd": _svd_gauge, "svd": _old_svd_gauge,
          "linalg.eig": _eig_gauge, "linalg.eigvals": _eig_gauge, "kthvalue": _kthvalue_gauge}


def _has_half(tree) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dtype in HALF for t in pytree.tree_leaves(tree))


def _has_complex(tree) -> bool:
    """Eager's complex64 math (libm's cpowf, cexpf) is not correctly rounded either."""
    return any(isinstance(t, torch.Tensor) and t.dtype == torch.complex64
               for t in pytree.tree_leaves(tree))


def max_abs(t: torch.Tensor) -> float:
    return t.abs().max().item() if t.numel() else 0.0


# Ops that sum many float32 terms in an order each implementation chooses (GEMM blocking,
# reduction trees, convolution taps): torch's result is one rounding of the exact sum, not
# the exact sum.
REORDERS = {"mm", "addmm", "addbmm", "bmm", "nn.functional.linear", "matmul", "sum", "mean", "var",
            "var.unbiased", "softmax", "softmax.with_dtype", "log_softmax",
            "log_softmax.with_dtype", "nn.functional.conv1d", "nn.functional.conv2d",
            "nn.functional.conv3d", "nn.functional.conv_transpose1d",
            "nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d", "cdist",
            "nn.functional.scaled_dot_product_attention",
            # Fourier transforms: sums of n terms in the order of each one's factorization
            "fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft", "fft.fft2",
            "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft2", "fft.irfft2", "fft.rfftn",
            "fft.irfftn", "fft.hfft2", "fft.ihfft2", "fft.hfftn", "fft.ihfftn", "stft"}

# computed in double by the kernel where eager's float32 LAPACK or Taylor steps lose digits:
# the exponential's squarings, a ratio of singular values
IN_DOUBLE = {"matrix_exp", "linalg.matrix_exp", "linalg.cond"}


_WIDER = {F32: torch.float64, torch.float16: torch.float64, torch.bfloat16: torch.float64,
          torch.complex64: torch.complex128}


def as_accurate(info, s: Sample, expected, actual) -> bool:
    """aotc's error against a float64 evaluation is at most twice torch's own (+ the default
    atol of the dtype), on every output: a different order of the same sum, or a different
    rounding of half-precision steps, not a wrong result."""
    # float64 throughout (complex128 for complex64): tensors and a float dtype argument
    # (linspace(..., dtype=float16))
    wide = Sample(s.index, [_WIDER.get(v, v) if isinstance(v, torch.dtype) else v
                            for v in s.leaves], s.spec, s.tensor_pos)
    # a Fourier transform's integer signal in float64 too: eager converts it to its float32
    # default first (other ops' integer inputs are indices, lengths, exponents: kept)
    signal = opinfo_name(info).startswith("fft.")
    ref = wide.call(info.op, [t.to(_WIDER.get(t.dtype, torch.float64 if signal and not (
        t.is_floating_point() or t.is_complex()) else t.dtype)) for t in s.tensors()])
    trees = [pytree.tree_leaves(x) for x in (expected, actual, ref)]
    for e, a, r in zip(*trees):
        if not (e.dtype == a.dtype and e.dtype in _WIDER and a.shape == e.shape):
            return False
        e, a = e.resolve_conj(), a.resolve_conj()
        finite = e.isfinite()
        if not (_same_specials(e, a, r, ~finite) and a[finite].isfinite().all()):
            return False
        torch_err, aotc_err = (max_abs((x.to(r.dtype) - r)[finite]) for x in (e, a))
        if aotc_err > 2 * torch_err + 1e-5:
            return False
    return True


def _same_specials(e, a, r, where) -> bool:
    """aotc's values where eager's are NaN or infinite: the same, or the float64 evaluation
    rounded to the dtype (eager's float16 matrix_exp overflows to NaN in its steps where
    the result is finite or overflows to an infinity)."""
    got, want = a[where], e[where]
    if torch.equal(got.nan_to_num(), want.nan_to_num()):
        return True
    try:
        torch.testing.assert_close(got, r[where].to(a.dtype), equal_nan=True)
    except AssertionError:
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
