"""Whole-program passes and the ordered pipeline (pipeline.py)."""
