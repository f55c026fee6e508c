"""aotc: an ahead-of-time compiler for PyTorch exported programs.

`compile_and_package` (needs torch) turns a torch.export program into a .pt2 package of
native code; `load_package` (numpy only) runs it.
"""
__version__ = "0.1.0"

import os as _os  # noqa: E402

# for CMake's find_package(aotc): the C/C++ runtime's headers, sources and package config
cmake_prefix_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "share", "cmake")

from .errors import (  # noqa: E402
    AotcError,
    BuildError,
    CompileError,
    InputError,
    PackageError,
    RuntimeFailure,
    StateLimitError,
    UnsupportedOperatorError,
)
from .logs import configure_logging  # noqa: E402
from .runtime import CompiledModel, aoti_load_package, load_package  # noqa: E402

configure_logging()


def compile_and_package(ep, package_path=None, options=None):
    """Compile an ExportedProgram into a .pt2 package and return its path."""
    from .api import compile_and_package as impl

    return impl(ep, package_path=package_path, options=options)


def aot_compile(program, args=(), kwargs=None, *, options=None):
    """torch._inductor.aot_compile's spelling: one compiled model for aotc.package.package_aoti."""
    from .api import aot_compile as impl

    return impl(program, args, kwargs, options=options)


def aoti_compile_and_package(ep, package_path=None, inductor_configs=None):
    """torch._inductor.aoti_compile_and_package's spelling of compile_and_package."""
    from .api import aoti_compile_and_package as impl

    return impl(ep, package_path=package_path, inductor_configs=inductor_configs)


def __getattr__(name: str):
    """`aotc.debug` (needs torch) is imported on first use, so `import aotc` stays numpy-only."""
    if name == "debug":
        import importlib

        return importlib.import_module(".debug", __name__)
    raise AttributeError(f"module 'aotc' has no attribute {name!r}")


__all__ = [
    "AotcError", "BuildError", "CompileError", "InputError", "PackageError", "RuntimeFailure",
    "StateLimitError",
    "UnsupportedOperatorError", "CompiledModel", "aot_compile", "aoti_compile_and_package",
    "aoti_load_package", "compile_and_package", "load_package", "cmake_prefix_path", "__version__",
]
