"""Chains: parts of the exported graph that import lowers as one template at their output
node, found on the ATen graph before lowering, where the pattern is still plain to read.

A chain is any object with
    output         the fx node whose value the chain computes
    inner          the nodes it computes itself: import skips them (nothing else reads them)
    keeps_weights  whether the inner nodes stay out of freezing, because the template reads
                   the weights they read as they are (an int8 weight into an integer
                   product); otherwise a chain with a folded inner node is dropped and its
                   nodes lowered one by one
    lower(imp)     its value, lowered with the importer (frontend/importer.py)
Kinds: attention written out by hand (attention.py), quantized products (quantized.py).
"""
from __future__ import annotations

import torch

from .attention import find_attention
from .quantized import find_quantized
from .weight_only import find_weight_only


def find_chains(ep: torch.export.ExportedProgram, integer_products: bool = False) -> dict:
    """Every chain of the program, by output node: attention in any graph; with
    `integer_products`, the quantized products of the top-level one (whose weights are known
    here)."""
    chains = dict(find_attention(ep.graph))
    for node, chain in (find_quantized(ep) if integer_products else {}).items():
        chains.setdefault(node, chain)
    chains.update({n: c for n, c in find_weight_only(ep).items() if n not in chains})
    return chains
