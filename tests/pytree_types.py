"""Output and input types registered with torch's pytree, in a module of their own so that
a child process can import it (or, without it on its path, cannot)."""
from __future__ import annotations

import collections
import dataclasses

import torch
import torch.utils._pytree as pytree


@dataclasses.dataclass
class Output:
    """As a Hugging Face model output: tensors by field, some of them None."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None = None
    attentions: torch.Tensor | None = None


torch.export.register_dataclass(Output)


class MappingOutput(collections.OrderedDict):
    """As transformers' ModelOutput: an OrderedDict subclass registered by its keys."""


pytree.register_pytree_node(
    MappingOutput, lambda o: (list(o.values()), list(o.keys())),
    lambda values, keys: MappingOutput(zip(keys, values)),
    serialized_type_name=f"{__name__}.MappingOutput")


class Scaled:
    """A class of its own: two tensors and a number that travels in the pytree context."""

    def __init__(self, x, y, scale: float):
        self.x, self.y, self.scale = x, y, scale


pytree.register_pytree_node(
    Scaled, lambda s: ([s.x, s.y], s.scale), lambda values, scale: Scaled(*values, scale),
    serialized_type_name=f"{__name__}.Scaled")


class Tagged:
    """Its pytree context (a frozenset) has no JSON form and no to_dumpable_context."""

    def __init__(self, x, tags: frozenset):
        self.x, self.tags = x, tags


pytree.register_pytree_node(
    Tagged, lambda t: ([t.x], t.tags), lambda values, tags: Tagged(values[0], tags),
    serialized_type_name=f"{__name__}.Tagged")
