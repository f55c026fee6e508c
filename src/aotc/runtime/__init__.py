"""The runtime: load and run .pt2 packages with numpy alone (no torch, no compiler)."""
from .loader import CompiledModel, aoti_load_package, load_package

__all__ = ["CompiledModel", "aoti_load_package", "load_package"]
