"""Which line of the user's code an FX node came from (for errors and kernel comments)."""
from __future__ import annotations

import os
import re

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _torch_dir() -> str:
    import torch

    return os.path.dirname(os.path.abspath(torch.__file__))


def user_source(stack_trace: str | None) -> str:
    """'file.py:12 (code)' for the innermost frame outside torch, or '' when unknown."""
    if not stack_trace:
        return ""
    torch_dir = _torch_dir()
    best = ""
    for path, line, _fn, code in _FRAME.findall(stack_trace):
        if os.path.abspath(path).startswith(torch_dir) or "site-packages/torch/" in path:
            continue
        best = f"{os.path.basename(path)}:{line} ({code.strip()})"
    return best
