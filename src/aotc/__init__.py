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
    UnsupportedOperatorError,
)
from .runtime import CompiledModel, aoti_load_package, load_package  # noqa: E402


def _configure_logging() -> None:
    """AOTC_LOG=info|debug prints the compiler's log (stage timings, cache hits) to stderr."""
    import logging
    import os

    level = os.environ.get("AOTC_LOG", "").upper()
    if level in ("DEBUG", "INFO", "WARNING"):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[aotc %(levelname)s] %(message)s"))
        logger = logging.getLogger("aotc")
        logger.addHandler(handler)
        logger.setLevel(level)


_configure_logging()


def compile_and_package(ep, package_path=None, options=None) -> str:
    """Compile an ExportedProgram into a .pt2 package and return its path."""
    from .api import compile_and_package as impl

    return impl(ep, package_path=package_path, options=options)


def aoti_compile_and_package(ep, package_path=None, inductor_configs=None) -> str:
    """torch._inductor.aoti_compile_and_package's spelling of compile_and_package."""
    from .api import aoti_compile_and_package as impl

    return impl(ep, package_path=package_path, inductor_configs=inductor_configs)


__all__ = [
    "AotcError", "BuildError", "CompileError", "InputError", "PackageError", "RuntimeFailure",
    "UnsupportedOperatorError", "CompiledModel", "aoti_compile_and_package", "aoti_load_package",
    "compile_and_package", "load_package", "cmake_prefix_path", "__version__",
]
