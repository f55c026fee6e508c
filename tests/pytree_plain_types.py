"""A dataclass output whose module imports without torch (registered with torch's pytree
when torch is there), for the numpy-only runtime."""
from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class PlainOutput:
    logits: Any
    hidden: Any = None


try:
    import torch
except ImportError:  # the numpy-only runtime
    torch = None
if torch is not None:
    torch.export.register_dataclass(PlainOutput)
