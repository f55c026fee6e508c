"""The generated C++ of every benchmark and zoo model, for each x86 ISA build and the aarch64
baseline, written to a folder, so that a refactor of the compiler can show its code is
unchanged:

    python benchmarks/codegen_snapshot.py OUT                # write OUT/<isa>/<model>.cpp
    python benchmarks/codegen_snapshot.py NEW --compare OLD  # and diff against OLD

Only code generation runs (no C++ compiler), from fixed seeds; the files are what
`compile_program` would build. The golden tests (tests/codegen/golden) hold two of these for
every `make test`; this covers the rest.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

import torch  # noqa: E402
from zoo import zoo  # noqa: E402

from aotc.passes.pipeline import compile_program  # noqa: E402
from aotc.target import target_for  # noqa: E402
from models import BY_NAME  # noqa: E402

ISAS = ("avx512", "avx2", "sse2", "neon")


def programs():
    """(name, exported program) for every benchmark model and zoo model."""
    for name, bench in BY_NAME.items():
        model, args = bench.build()
        yield name, torch.export.export(model, args)
    for name, (make, args, dynamic, _) in zoo().items():
        torch.manual_seed(0)
        yield f"zoo_{name}", torch.export.export(make(), args, dynamic_shapes=dynamic())


def write(out: Path, only: set[str] | None) -> list[Path]:
    written = []
    for name, ep in programs():
        if only and name not in only:
            continue
        for isa in ISAS:
            path = out / isa / f"{name}.cpp"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(compile_program(ep, target_for(isa), header=name, build=False).source)
            written.append(path)
        print(name, flush=True)
    return written


def compare(written: list[Path], out: Path, old: Path) -> int:
    changed, new = 0, 0
    for path in written:
        before = old / path.relative_to(out)
        if not before.parent.exists():  # a level OLD has no folder of (a target added since)
            new += 1
            continue
        a = before.read_text().splitlines(keepends=True) if before.exists() else []
        b = path.read_text().splitlines(keepends=True)
        if a != b:
            changed += 1
            sys.stdout.writelines(difflib.unified_diff(a, b, str(before), str(path), n=2))
    print(f"{changed} of {len(written) - new} files differ"
          + (f"; {new} more are of levels {old} does not hold" if new else ""))
    return 1 if changed else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, help="a folder an earlier run wrote")
    ap.add_argument("--models", help="comma-separated names (default: all)")
    a = ap.parse_args()
    written = write(a.out, set(a.models.split(",")) if a.models else None)
    if a.compare:
        raise SystemExit(compare(written, a.out, a.compare))


if __name__ == "__main__":
    main()
