"""The op coverage table: every in-scope entry of PyTorch's OpInfo database, compiled by
aotc sample by sample and compared with the exported program; writes docs/op_coverage.md.

    python -m aotc.tools.opcov [--out docs/op_coverage.md] [--only NAME ...] [--samples N]
                               [--results build/opcov.jsonl] [--resume] [--rerun-failed]

Every (op, dtype) result is appended to a JSON-lines file as soon as it is known, so a long
sweep can stop and go on (`--resume` skips recorded cases; `--rerun-revisions REV...` runs
again those recorded at older revisions of the project; `--rerun-failed` also re-runs the
recorded failures), and the table is rendered from everything recorded.

In scope: float32, int64, bool, float16 and bfloat16 where OpInfo lists them, and for
linear algebra, FFT and complex ops float64 and complex64 too. Ops whose results are random or
uninitialized cannot be compared with eager and are listed apart too, and so are the samples
of other ops that draw random numbers (dropout in training mode).
"""
from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

DTYPES = (torch.float32, torch.int64, torch.bool, torch.float16, torch.bfloat16)
# linear algebra, FFT and complex results run in float64 and complex64 too, where OpInfo has them
WIDE_DTYPES = DTYPES + (torch.float64, torch.complex64)
LINALG = {"cholesky", "cholesky_inverse", "cholesky_solve", "det", "geqrf", "inverse", "logdet",
          "lu", "lu_solve", "lu_unpack", "matrix_exp", "ormqr", "pinverse", "qr", "slogdet",
          "svd", "svd_lowrank", "pca_lowrank", "symeig", "triangular_solve", "eig", "eigvals",
          "householder_product", "tensorsolve", "tensorinv", "ldl_factor", "ldl_solve",
          "norm.nuc"}  # the nuclear norm: a sum of singular values
RANDOM = {"bernoulli", "normal", "rand_like", "randn_like", "randint_like", "randint", "randn",
          "rand", "uniform", "multinomial", "cauchy", "exponential", "geometric", "log_normal",
          "nn.functional.rrelu", "empty", "empty_like", "new_empty", "empty_strided",
          "empty_permuted", "new_empty_strided",
          # the pooling regions are drawn with torch.rand when no _random_samples are given
          "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d"}
COMPLEX = {"complex", "view_as_complex", "polar", "cfloat", "cdouble", "chalf"}
CASE_SECONDS = 180
CATEGORIES = ("in scope", "sparse", "random")


@dataclass
class Row:
    op: str
    dtype: str
    samples: int
    passed: int
    reason: str = ""
    seconds: float = 0.0
    revision: str = ""  # the project's git revision the case ran at ("" when unknown)

    @property
    def ok(self) -> bool:
        return self.samples > 0 and self.passed == self.samples


def category(name: str) -> str:
    """"in scope" (counted), or why an op is listed apart: sparse layouts, random results."""
    base = name.split(".")[0]
    if name.startswith("sparse.") or base == "to_sparse":
        return "sparse"
    if base in RANDOM or name in RANDOM or "dropout" in name or name.startswith("nn.functional.rrelu"):
        return "random"
    return "in scope"


def dtypes_of(name: str) -> tuple:
    """The dtypes an op's cases run in: linear algebra, FFT and complex ops also in float64
    and complex64."""
    base = name.split(".")[0] if not name.startswith(("linalg.", "fft.", "special.")) else name
    wide = (name.startswith(("linalg.", "fft.")) or base in LINALG or name in LINALG
            or base in ("stft", "istft") or base in COMPLEX)
    return WIDE_DTYPES if wide else DTYPES


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout(f"over {CASE_SECONDS} s")


def _first_line(e: BaseException) -> str:
    """The error's first line, without the source location (the harness's own line)."""
    text = str(e).strip().splitlines()
    line = re.sub(r" \(at .*?\)(?=: )", "", text[0] if text else "", count=1)
    return f"{type(e).__name__}: {line}"[:200]


def run_case(info, dtype, folder: Path, max_samples: int) -> Row:
    from .opsweep import compile_and_run, draws_random, exportable, mismatches, opinfo_name, pick_samples

    d = str(dtype).removeprefix("torch.")
    try:
        samples = pick_samples(info, dtype, max_samples)
    except Exception as e:  # noqa: BLE001 - OpInfo's own sample generator failed
        return Row(opinfo_name(info), d, 0, 0, f"no samples: {_first_line(e)}")
    samples, ep = exportable(info, samples)
    if ep is not None and draws_random(ep):  # keep the samples that draw no random number
        samples = [s for s in samples if not draws_random(exportable(info, [s])[1])]
        if not samples:
            return Row(opinfo_name(info), d, 0, 0, "every sample draws random numbers")
        samples, ep = exportable(info, samples)
    if ep is None:
        return Row(opinfo_name(info), d, 0, 0, "torch.export cannot export any sample")
    try:
        # the common case: every sample passes, compiled as one program
        if not mismatches(info, samples, *compile_and_run(ep, samples, folder / "batch.pt2")):
            return Row(opinfo_name(info), d, len(samples), len(samples))
    except Exception:  # noqa: BLE001 - counted sample by sample below
        pass
    passed, reasons = 0, []
    for s in samples:
        one, ep1 = exportable(info, [s])
        try:
            if ep1 is None:
                raise RuntimeError("torch.export cannot export this sample alone")
            bad = mismatches(info, one, *compile_and_run(ep1, one, folder / f"s{s.index}.pt2"))
            if bad:
                raise AssertionError(bad[0])
            passed += 1
        except Exception as e:  # noqa: BLE001
            reasons.append(_first_line(e))
    reason = max(set(reasons), key=reasons.count) if reasons else ""
    return Row(opinfo_name(info), d, len(samples), passed, reason)


def all_cases() -> list[tuple[str, str, str]]:
    """(op, dtype, category) of every case of the database this tool covers."""
    from torch.testing._internal.common_methods_invocations import op_db

    from .opsweep import opinfo_name

    return [(opinfo_name(i), str(d).removeprefix("torch."), category(opinfo_name(i)))
            for i in op_db for d in dtypes_of(opinfo_name(i)) if d in i.dtypes]


def load_results(path: Path) -> dict[tuple[str, str], tuple[str, Row]]:
    """(op, dtype) -> (category, row): the last line recorded for each case."""
    out: dict[tuple[str, str], tuple[str, Row]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                cat = rec.pop("category")
                out[(rec["op"], rec["dtype"])] = (cat, Row(**rec))
    return out


def sweep(only: set[str] | None, max_samples: int, results: Path, skip,
          reverse: bool = False) -> None:
    """Runs every in-scope case not `skip`ped and appends each result to `results`
    (`reverse`: from the end of the database, for a second process meeting the first)."""
    from torch.testing._internal.common_methods_invocations import op_db

    from .opsweep import opinfo_name

    signal.signal(signal.SIGALRM, _alarm)
    revision = _revision()
    results.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aotc-opcov-") as tmp, results.open("a") as log:
        for info in (reversed(op_db) if reverse else op_db):
            name = opinfo_name(info)
            if only and name not in only:
                continue
            cat = category(name)
            for dtype in dtypes_of(name):
                d = str(dtype).removeprefix("torch.")
                if dtype not in info.dtypes or skip(name, d):
                    continue
                if cat != "in scope":
                    row = Row(name, d, 0, 0, cat)
                else:
                    t0 = time.time()
                    signal.alarm(CASE_SECONDS)
                    try:
                        row = run_case(info, dtype, Path(tmp), max_samples)
                    except _Timeout as e:
                        row = Row(name, d, 0, 0, f"timeout: {e}")
                    finally:
                        signal.alarm(0)
                    row.seconds = round(time.time() - t0, 2)
                    row.revision = revision
                    print(f"{'ok  ' if row.ok else 'FAIL'} {row.op} {row.dtype} {row.passed}/"
                          f"{row.samples} {row.reason}", flush=True)
                log.write(json.dumps({"category": cat, **asdict(row)}) + "\n")
                log.flush()


def _revision() -> str:
    """The checkout's short git revision, with '+' when it has uncommitted changes."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, text=True,
                             capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, text=True, capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return rev + ("+" if rev and dirty else "")


def render(rows: dict[str, list[Row]], command: str, not_run: list[tuple[str, str]]) -> str:
    counted = [r for r in rows["in scope"] if r.samples > 0]
    seconds = sum(r.seconds for r in rows["in scope"])
    ops: dict[str, bool] = {}
    for r in counted:
        ops[r.op] = ops.get(r.op, True) and r.ok
    n_samples = sum(r.samples for r in counted)
    n_passed = sum(r.passed for r in counted)
    lines = [
        "# aotc op coverage (PyTorch OpInfo)", "",
        f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({seconds / 60:.0f} min of cases), "
        f"torch {torch.__version__}. Each (op, dtype) case compiles up to 8 of OpInfo's samples "
        "as one program and compares every output with the exported program "
        "(`torch.testing.assert_close`); failing cases are rerun sample by sample. Samples "
        "whose program draws random numbers (dropout in training mode) cannot match eager and "
        "are not counted.", "",
        f"- ops passing every sample of every dtype: **{sum(ops.values())} / {len(ops)}** "
        f"({100 * sum(ops.values()) / max(len(ops), 1):.1f}%)",
        f"- samples passing: **{n_passed} / {n_samples}** ({100 * n_passed / max(n_samples, 1):.1f}%)",
        f"- cases torch.export or OpInfo could not produce a sample for (not counted): "
        f"{sum(1 for r in rows['in scope'] if r.samples == 0)}",
        f"- listed apart, not counted: sparse layouts {len({r.op for r in rows['sparse']})} "
        f"ops, random/uninitialized results {len({r.op for r in rows['random']})} ops",
        f"- in-scope cases of the database not run yet: **{len(not_run)}** "
        f"({len({op for op, _ in not_run})} ops, listed at the end)",
        "- the revision each in-scope case last ran at: " + ", ".join(
            f"{rev or 'unrecorded'} {n} cases" for rev, n in
            sorted(Counter(r.revision for r in rows["in scope"]).items(), key=lambda x: -x[1])),
        "",
        "| op | dtype | samples passed | result | reason (most common failure) |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rows["in scope"], key=lambda r: (r.op, r.dtype)):
        result = "pass" if r.ok else ("n/a" if r.samples == 0 else "FAIL")
        reason = r.reason.replace("|", "\\|")
        lines.append(f"| {r.op} | {r.dtype} | {r.passed}/{r.samples} | {result} | {reason} |")
    for cat in CATEGORIES[1:]:
        names = sorted({r.op for r in rows[cat]})
        lines += ["", f"## Listed apart: {cat}", "", ", ".join(f"`{n}`" for n in names) or "none"]
    if not_run:
        lines += ["", "## Not run yet", "", ", ".join(f"`{op}` {d}" for op, d in not_run)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m aotc.tools.opcov", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="docs/op_coverage.md")
    p.add_argument("--only", nargs="*", help="OpInfo names (name.variant) to run")
    p.add_argument("--samples", type=int, default=8, help="samples per (op, dtype)")
    p.add_argument("--results", default="build/opcov.jsonl", help="JSON-lines record of every case")
    p.add_argument("--resume", action="store_true", help="skip the cases already recorded")
    p.add_argument("--rerun-revisions", nargs="*", default=[],
                   help="with --resume: run again the cases recorded at these revisions")
    p.add_argument("--rerun-failed", action="store_true",
                   help="with --resume: run the recorded failures again")
    p.add_argument("--reverse", action="store_true", help="walk the database from its end")
    p.add_argument("--render-only", action="store_true",
                   help="run nothing: write the table from the record alone")
    p.add_argument("--skip-recorded", nargs="*", default=[],
                   help="other JSON-lines records whose cases are skipped too")
    args = p.parse_args(argv)
    results = Path(args.results)
    if not (args.resume or args.render_only) and results.exists():
        results.unlink()  # a fresh sweep
    before = load_results(results)
    for other in args.skip_recorded:
        before.update(load_results(Path(other)))

    def skip(op: str, dtype: str) -> bool:
        got = before.get((op, dtype))
        if got is None:
            return False
        cat, row = got
        if cat == "in scope" and row.revision in args.rerun_revisions:
            return False
        return not (args.rerun_failed and cat == "in scope" and not row.ok)

    if not args.render_only:
        sweep(set(args.only) if args.only else None, args.samples, results, skip, args.reverse)
    rows: dict[str, list[Row]] = {c: [] for c in CATEGORIES}
    recorded = load_results(results)
    for (op, _), (_, row) in recorded.items():
        rows[category(op)].append(row)  # categories as this version draws them
    command = "python -m aotc.tools.opcov" + (
        " (several runs, each case's latest result)" if args.render_only or args.resume else
        f" --only {' '.join(args.only)}" if args.only else "")
    not_run = [(op, d) for op, d, cat in all_cases() if cat == "in scope" and (op, d) not in recorded]
    Path(args.out).write_text(render(rows, command, not_run))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
