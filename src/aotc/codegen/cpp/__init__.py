"""C++ code generation for the CPU backend."""
from .model import emit_model

__all__ = ["emit_model"]
