"""Serving packages on Ray Serve with the KServe / Triton v2 inference protocol (the `serve`
extra). `deploy(path, ServeOptions(...))` serves every model of a package on the connected
Ray cluster; `aotc serve` does the same from the command line. The protocol and model
modules need numpy only; the deployment modules import Ray."""
from __future__ import annotations

__all__ = ["ServeOptions", "deploy", "undeploy"]


def __getattr__(name: str):
    if name in __all__:  # Ray is imported on first use, so the protocol code stands alone
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module 'aotc.serve' has no attribute {name!r}")
