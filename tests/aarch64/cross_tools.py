"""The aarch64 cross tools this folder's tests need (Debian's g++-aarch64-linux-gnu and
qemu-user), the two target levels, and how a test runs a program under qemu."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILDS = ROOT / "build" / "aarch64-tests"
CXX = "aarch64-linux-gnu-g++"
QEMU = "qemu-aarch64"
SYSROOT = Path("/usr/aarch64-linux-gnu")
# -march level -> the CPU qemu emulates for it: the baseline runs on a Cortex-A53 (Armv8.0,
# no LSE, fp16 or dotprod), so an instruction beyond the level stops the run
LEVELS = {"armv8-a": "cortex-a53", "armv8.2-a+fp16+dotprod": "neoverse-n1"}


def missing_tools() -> str | None:
    """Why the tests cannot run here, or None."""
    for tool, package in ((CXX, "g++-aarch64-linux-gnu"), (QEMU, "qemu-user")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    if not (SYSROOT / "lib").is_dir():
        return f"{SYSROOT}/lib, the aarch64 libraries of g++-aarch64-linux-gnu, is missing"
    return None


needs_tools = pytest.mark.skipif(missing_tools() is not None, reason=str(missing_tools()))


def run_under_qemu(program: Path, *args: str, cpu: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([QEMU, "-cpu", cpu, "-L", str(SYSROOT), str(program), *args],
                          capture_output=True, text=True, timeout=timeout)
