"""The .pt2 package format (torch-free)."""
