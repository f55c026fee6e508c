"""What the kernel tests share: the shipped kernel sources compiled for a -march level, each
object once a session (per level and defines, two at a time), and linked into a library."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

KERNEL_DIR = Path(__file__).resolve().parents[2] / "src" / "aotc" / "kernels"
FLAGS = ["-O3", "-fopenmp", "-fPIC", "-std=c++17", "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="session")
def kernel_library(tmp_path_factory):
    """build(march, sources, defines=()) -> ctypes.CDLL of the kernel sources (file names in
    src/aotc/kernels) compiled for `march`, `defines` (-D flags) given to every source but
    gemm.cpp (the float32 GEMM the weight-only kernels call, built once a level)."""
    root = tmp_path_factory.mktemp("kernel_objects")
    objects: dict[tuple, Path] = {}

    def compile_all(keys: list[tuple]) -> None:
        procs = []
        for key in keys:
            source, march, defines = key
            out = root / f"{Path(source).stem}-{march}-{len(objects) + len(procs)}.o"
            cmd = ["g++", f"-march={march}", *FLAGS, *defines, "-I", str(KERNEL_DIR), "-c",
                   str(KERNEL_DIR / source), "-o", str(out)]
            procs.append((key, out, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
            if len(procs) == 2 or key == keys[-1]:  # two compilers at a time
                for k, o, p in procs:
                    _, err = p.communicate()
                    assert p.returncode == 0, err
                    objects[k] = o
                procs = []

    def build(march: str, sources: list[str], defines: tuple[str, ...] = ()) -> ctypes.CDLL:
        keys = [(s, march, () if s == "gemm.cpp" else tuple(defines)) for s in sources]
        compile_all([k for k in keys if k not in objects])
        path = root / f"lib-{march}-{'-'.join(Path(s).stem for s in sources)}{''.join(defines)}.so"
        res = subprocess.run(["g++", "-shared", "-fopenmp", *(str(objects[k]) for k in keys),
                              "-Wl,--no-undefined", "-o", str(path)], capture_output=True,
                             text=True)
        assert res.returncode == 0, res.stderr
        return ctypes.CDLL(str(path))

    return build
