"""The .pt2 package: its format (torch-free), what the compiler puts in it (weights.py,
metadata.py: they need torch), and torch._inductor.package's spelling (`package_aoti`,
`load_package`)."""
from .api import CompiledArtifact, load_package, package_aoti

__all__ = ["CompiledArtifact", "load_package", "package_aoti"]
