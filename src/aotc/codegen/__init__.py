"""Code generators, one sub-package per backend."""
