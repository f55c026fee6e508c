"""The build steps pyproject.toml cannot state:

- the shipped C++ kernels compiled for every ISA level of this machine's architecture into
  the package's prebuilt/ folder (see src/aotc/cxx/prebuilt.py), so a model's first compile
  after `pip install` links them. Without a C++ compiler, where the build fails, or with
  AOTC_PREBUILT=0, the install goes on without them and each kernel compiles on a model's
  first use instead;
- the runtime's short call path in C (src/aotc/runtime/_fastcall.c, the CPython API only).
  It is optional: where it does not build, the runtime runs the same path in Python.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

SRC = Path(__file__).resolve().parent / "src"

# aotc.cxx.prebuilt imported without aotc/__init__.py (which needs numpy): the build
# environment has only the standard library and setuptools
LAUNCH = ("import sys, types; pkg = types.ModuleType('aotc'); pkg.__path__ = [sys.argv[1]]; "
          "sys.modules['aotc'] = pkg; from aotc.cxx.prebuilt import main; "
          "sys.exit(main(sys.argv[2:]))")


def prebuild_command(dest, *extra):
    """The command that builds the kernel objects into `dest`."""
    return [sys.executable, "-c", LAUNCH, str(SRC / "aotc"), str(dest), *extra]


class BuildWithKernels(build_py):
    def run(self):
        super().run()
        if os.environ.get("AOTC_PREBUILT", "1") == "0":
            return
        if shutil.which(os.environ.get("CXX", "g++")) is None:
            print("aotc: no C++ compiler found; the kernels will compile on first use",
                  file=sys.stderr)
            return
        # an editable install runs from src/, a wheel from what build_py copied
        root = SRC if getattr(self, "editable_mode", False) else Path(self.build_lib)
        # a kernel that does not build here will not build on first use either, and says
        # why then; the runtime, which needs no compiler, installs regardless
        if subprocess.run(prebuild_command(root / "aotc" / "prebuilt")).returncode != 0:
            print("aotc: building the kernels failed; they will compile on first use",
                  file=sys.stderr)


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildWithKernels},
          ext_modules=[Extension("aotc.runtime._fastcall", ["src/aotc/runtime/_fastcall.c"],
                                 include_dirs=["src/aotc/include"], optional=True,
                                 extra_compile_args=["-O2"])])
