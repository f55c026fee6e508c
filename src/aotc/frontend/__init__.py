"""Frontend: torch.export programs into the loop-level IR."""
