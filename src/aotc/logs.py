"""aotc's logging switches, in the manner of TORCH_LOGS: `AOTC_LOGS=graph,ir,fusion,schedule,
code,package,perf` turns on one logger per artifact (`aotc.<artifact>`), `all` every one, and a
`+` prefix (`+perf`, `+all`) logs at DEBUG. `AOTC_LOG=info|debug` sets the general `aotc` logger.
"""
from __future__ import annotations

import logging
import os
import warnings

# artifact -> what its logger prints
ARTIFACTS = {
    "graph": "the exported FX graph as aotc receives it",
    "ir": "the loop-level IR after import and after dead-code removal",
    "fusion": "the IR after fusion",
    "schedule": "the kernel sequence (row groups) and the memory plan",
    "code": "the generated C++ translation unit",
    "package": "the weights table and metadata.json written into the .pt2",
    "perf": "compile time per stage, the built library and whether it came from the cache",
}
# pipeline stage -> the artifact that shows its result
STAGE_ARTIFACT = {"import": "ir", "dce": "ir", "fuse": "fusion", "prepack": "ir",
                  "loops": "schedule", "group": "schedule", "plan": "schedule", "codegen": "code",
                  "build": "perf", "weights": "package", "metadata": "package"}
_HANDLER_NAME = "aotc-stderr"


def artifact_logger(name: str) -> logging.Logger:
    if name not in ARTIFACTS:
        raise ValueError(f"unknown aotc log artifact {name!r}; known: {sorted(ARTIFACTS)}")
    return logging.getLogger(f"aotc.{name}")


def parse_logs(spec: str) -> dict[str, int]:
    """'graph,+perf' -> {artifact: level}; unknown names are reported, not fatal."""
    levels: dict[str, int] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        level = logging.DEBUG if item.startswith("+") else logging.INFO
        name = item.lstrip("+")
        names = list(ARTIFACTS) if name == "all" else [name]
        for n in names:
            if n not in ARTIFACTS:
                warnings.warn(f"AOTC_LOGS: unknown artifact {n!r}; known: all, "
                              f"{', '.join(ARTIFACTS)} (prefix + for debug level)", stacklevel=2)
                continue
            levels[n] = min(levels.get(n, logging.INFO), level)
    return levels


def configure_logging(environ=None) -> None:
    """Apply AOTC_LOG and AOTC_LOGS (read once, when aotc is imported)."""
    env = os.environ if environ is None else environ
    root = logging.getLogger("aotc")
    general = env.get("AOTC_LOG", "").upper()
    levels = parse_logs(env.get("AOTC_LOGS", ""))
    if general in ("DEBUG", "INFO", "WARNING"):
        root.setLevel(general)
    if "+all" in env.get("AOTC_LOGS", "").replace(" ", "").split(","):
        root.setLevel(logging.DEBUG)
    for name in ARTIFACTS:
        logger = logging.getLogger(f"aotc.{name}")
        if name in levels:
            logger.setLevel(levels[name])
        elif name != "perf":  # artifact dumps only when asked for; perf follows AOTC_LOG
            logger.setLevel(logging.WARNING)
    if (general or levels) and not any(h.get_name() == _HANDLER_NAME for h in root.handlers):
        handler = logging.StreamHandler()
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter("[%(name)s %(levelname)s] %(message)s"))
        root.addHandler(handler)
