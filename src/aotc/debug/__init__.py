"""Debugging tools: `compare` (the first node whose compiled value diverges from eager) and
`minify` (the smallest subgraph that still fails, as a standalone repro script). Need torch."""
from .compare import Comparison, NodeDiff, compare
from .minify import MinifyResult, minify

__all__ = ["Comparison", "MinifyResult", "NodeDiff", "compare", "minify"]
