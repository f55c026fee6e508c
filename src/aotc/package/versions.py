"""The version rule of packages and model libraries (docs/ARCHITECTURE.md, "Versions"): a
loader takes exactly its own package format and ABI version, and a refusal of any other
says what to do: compile the model again with this aotc."""
from __future__ import annotations


def recompile_advice(found: str, current: int) -> str:
    """The end of the PackageError refusing a package (or its model library) of version
    `found` where this aotc reads `current`."""
    if found.isdigit() and int(found) < current:
        return " (the package was written by an older aotc: compile the model again with this one)"
    if found.isdigit():
        return (" (the package was written by a newer aotc: compile the model again with this "
                "one, or load it with the aotc that wrote it)")
    return " (compile the model again with this aotc)"
