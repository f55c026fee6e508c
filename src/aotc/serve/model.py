"""One model of a package as the v2 protocol sees it: named, typed tensor inputs and outputs
(dynamic dims as -1), the dim that requests may be batched along, and a call from request
arrays to output arrays. Uses the numpy-only runtime; no Ray here."""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np

from ..dtypes import DType
from ..runtime import load_package, pytree
from .protocol import ProtocolError, datatype

_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class BatchDim:
    """A symbol that is dim 0 of every input and output and nowhere else: rows along it are
    requests' own rows. `high` is None when export gave it no upper bound."""
    symbol: str
    low: int
    high: int | None


def _symbols_in(size) -> set[str]:
    return set(_NAME.findall(size)) if isinstance(size, str) else set()


def find_batch_dim(meta: dict, stateful: bool = False) -> BatchDim | None:
    """The batch dim of a package model, or None when requests cannot be stacked: no such
    dim, model state, an int input, an input updated in place, or outputs sized by data."""
    tensors = [i for i in meta["inputs"] if i["kind"] == "tensor"]
    if (not tensors or stateful or meta.get("sizes_follow_data")
            or any(i.get("scalar") or i.get("mutated") for i in tensors)
            or any(leaf.get("kind") != "tensor" or leaf.get("scalar")
                   for leaf in meta["output_leaves"])):
        return None
    every = tensors + meta["outputs"]
    first = {e["sizes"][0] if e["sizes"] else None for e in every}
    if len(first) != 1:
        return None
    symbol = first.pop()
    if not isinstance(symbol, str) or symbol not in meta["symbols"]:
        return None
    if any(symbol in _symbols_in(s) for e in every for s in e["sizes"][1:]):
        return None
    low, high = meta["symbols"][symbol]
    return BatchDim(symbol, int(low), None if high is None else int(high))


class ServedModel:
    """A loaded model with its v2 signature. `source` is a package path or its bytes."""

    def __init__(self, source: str | bytes, model_name: str, version: str = "1",
                 num_threads: int | None = None, max_sequences: int = 0):
        package = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
        # a runner and a state for each sequence a generating model decodes at once
        self.model = load_package(package, model_name, num_threads=num_threads,
                                  num_runners=max(1, max_sequences), max_states=max_sequences)
        self.name, self.version = model_name, version
        meta = self.model.package_metadata
        self._meta = meta
        self.inputs = [i for i in meta["inputs"] if i["kind"] == "tensor"]
        self.outputs = meta["outputs"]
        self.batch = find_batch_dim(meta, bool(self.model.buffer_names()))
        self._dtypes = {i["name"]: np.dtype(DType.from_name(i["dtype"]).numpy_name)
                        for i in self.inputs}

    def metadata(self) -> dict:
        """The v2 model metadata document (-1 for each dynamic dim)."""
        def tensor(t: dict) -> dict:
            return {"name": t["name"], "datatype": datatype(t["dtype"]),
                    "shape": [s if isinstance(s, int) else -1 for s in t["sizes"]]}

        return {"name": self.name, "versions": [self.version], "platform": "aotc",
                "inputs": [tensor(i) for i in self.inputs],
                "outputs": [tensor(o) for o in self.outputs]}

    def arrays(self, given: dict[str, np.ndarray]) -> list[np.ndarray]:
        """A request's tensors in the model's input order; names, count and dtypes checked
        (shapes are checked by the run itself)."""
        names = [i["name"] for i in self.inputs]
        if set(given) != set(names):
            raise ProtocolError(f"model '{self.name}' takes inputs {names}; the request gives "
                                f"{sorted(given)}")
        out = []
        for i in self.inputs:
            a = given[i["name"]]
            if a.dtype != self._dtypes[i["name"]]:
                got = datatype(_dtype_name(a.dtype))
                raise ProtocolError(f"input '{i['name']}': datatype {got}, but model "
                                    f"'{self.name}' takes {datatype(i['dtype'])}")
            out.append(a)
        return out

    def run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Arrays in input order -> one array per output of the package's outputs table."""
        values, it = [], iter(arrays)
        for i in self._meta["inputs"]:
            if i["kind"] != "tensor":  # a non-tensor argument export specialized
                values.append(i["value"])
                continue
            a = next(it)
            values.append(int(a.reshape(-1)[0]) if i.get("scalar") == "int" and a.size == 1 else a)
        args, kwargs = pytree.unflatten(self._meta["in_spec"], values)
        result = self.model(*args, **kwargs)
        leaves = pytree.flatten(self._meta["out_spec"], result, "output")
        outs: list = [None] * len(self.outputs)
        for leaf, entry in zip(leaves, self._meta["output_leaves"]):
            if entry["kind"] == "tensor":
                j = entry["index"]
                dtype = DType.from_name(self.outputs[j]["dtype"]).numpy_name
                outs[j] = np.asarray(leaf, dtype=dtype)
        return outs


def _dtype_name(dtype: np.dtype) -> str:
    for d in DType:
        if d is not DType.bfloat16 and np.dtype(d.numpy_name) == dtype:
            return d.name
    return str(dtype)
