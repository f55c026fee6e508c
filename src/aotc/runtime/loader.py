"""Load a .pt2 package and run it: numpy and ctypes only (torch is used only if the caller
passes torch tensors, in which case it is already imported).

No compiler runs here: the package's model.so is extracted (by digest) and loaded.
"""
from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ..dtypes import DType
from ..errors import InputError, PackageError, RuntimeFailure, StateLimitError
from ..package.filelike import is_filelike, spilled
from ..package.format import PackageReader
from ..package.schema import check_against_library, check_constants_fit
from ..target import host, levels_of, machines_of, target_of_arch
from . import abi, pytree
from .checks import LayoutCheck, checks_enabled
from .constants import ALIGN as WEIGHTS_ALIGN
from .constants import WeightSet, prepare_update, swappable_names
from .describe import describe_library
from .fixed_call import FixedFrame, FixedSignature, known_shapes
from .mutation import check_writable, write_back
from .pool import RunnerPool
from .profile import Profiler
from .scalars import as_number, int_input
from .state import ModelState, SharedState, as_state_value, state_table
from .tensors import Frame, as_input, empty, is_torch_tensor


def _materialize_library(data: bytes, digest: str) -> str:
    """The package's model.so as a file dlopen can load, written once per digest (in the
    cache, or the temp directory where the cache is not writable). A file already there is
    used only if it holds exactly these (verified) bytes."""
    for folder in (host.cache_dir() / "libraries",
                   Path(tempfile.gettempdir()) / f"aotc-{os.getuid()}" / "libraries"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{digest}.so"
            if not _holds(path, data):
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".so")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            return str(path)
        except OSError as e:
            error = e
    raise PackageError(f"cannot write the model library anywhere to load it: {error}")


def _holds(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def _weights_array(data: memoryview, offset: int) -> np.ndarray:
    """weights.bin as an array over the package's mapping (no copy); one aligned copy when
    the archive leaves it unaligned (aotc aligns it; another zip writer may not)."""
    if not len(data):
        return np.zeros(0, np.uint8)
    mapped = np.frombuffer(data, np.uint8)
    if offset % WEIGHTS_ALIGN == 0:
        return mapped
    raw = np.empty(len(data) + WEIGHTS_ALIGN, np.uint8)
    start = (-raw.ctypes.data) % WEIGHTS_ALIGN
    aligned = raw[start:start + len(data)]
    aligned[:] = mapped
    aligned.flags.writeable = False
    return aligned


class _StageClock:
    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def stage(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = now - self._last
        self._last = now


class CompiledModel:
    """A callable compiled model: model(*args, **kwargs) -> outputs in the exported structure."""

    def __init__(self, path: str, model_name: str | None = None, run_single_threaded: bool = False,
                 num_threads: int | None = None, num_runners: int = 1, max_states: int = 8):
        if not isinstance(num_runners, int) or isinstance(num_runners, bool) or num_runners < 1:
            raise ValueError(f"num_runners must be a positive integer, got {num_runners!r}")
        if not isinstance(max_states, int) or isinstance(max_states, bool) or max_states < 0:
            raise ValueError(f"max_states must be a non-negative integer, got {max_states!r}")
        clock = _StageClock()
        reader = PackageReader(path)
        try:
            self.name = reader.resolve(model_name)
            clock.stage("archive")
            self.package_metadata = reader.metadata(self.name)
            _check_target(path, self.package_metadata)
            clock.stage("metadata")
            library = reader.library(self.name, self.package_metadata)
            clock.stage("library_check")
            self._lib = abi.open_library(
                _materialize_library(library, self.package_metadata["sha256"]["model.so"]))
            clock.stage("dlopen")
            # the weights are checked by the (verified) library's CRC-32, several times zlib's
            weights_bytes, weights_offset = reader.weights(self.name, self.package_metadata,
                                                           abi.crc32_of(self._lib))
            clock.stage("weights_check")
        finally:
            reader.close()
        self.path = path
        self.description = describe_library(self._lib)  # the library's own tables
        d = self.description
        try:
            check_against_library(self.package_metadata, d.inputs, d.outputs, d.symbols,
                                  d.constants)
            check_constants_fit(self.package_metadata, len(weights_bytes))
        except PackageError as e:
            raise PackageError(f"{path}: model {self.name!r}: {e}") from None
        self._state = state_table(self._lib, d.constants)
        clock.stage("describe")
        self._weights = _weights_array(weights_bytes, weights_offset)
        # the state belongs to this loaded model: one copy, shared by its model objects
        self._shared = SharedState(self._lib, self._state, self._weights)
        # the states new_state() made, beyond that default one; which state each runner
        # (model object) reads now
        self.max_states = max_states
        self._open_states = 0
        self._states_lock = threading.Lock()
        self._bound: dict[int, int] = {}
        weights = WeightSet.from_package(self._weights, self.package_metadata["constants"])
        self._outputs = [(DType.from_name(o["dtype"]), len(o["sizes"]))
                         for o in self.description.outputs]
        self._inputs = [i for i in self.package_metadata["inputs"] if i["kind"] == "tensor"]
        meta = self.package_metadata
        self._plain_args = _plain_positional(meta["in_spec"], len(meta["inputs"]))
        self._frames: dict[int, Frame] = {}
        # per input: (what an error calls it, None, its dtype) for a tensor; (None, (name,
        # value), None) for a constant that export specialized
        self._input_plan = [(f"input '{i['name']}'", None, DType.from_name(i["dtype"]))
                            if i["kind"] == "tensor" else (None, (i["name"], i["value"]), None)
                            for i in self.package_metadata["inputs"]]
        self._sizes_follow_data = bool(self.package_metadata.get("sizes_follow_data"))
        self._int_inputs = [j for j, i in enumerate(self.package_metadata["inputs"])
                            if i.get("scalar") == "int"]
        # their positions among the tensors passed: their values size outputs too
        self._int_slots = [k for k, i in enumerate(self._inputs) if i.get("scalar") == "int"]
        # positions (among all inputs, among tensor inputs) of inputs updated in place
        self._mutated = [(j, k) for k, (j, i) in enumerate(
            (j, i) for j, i in enumerate(self.package_metadata["inputs"]) if i["kind"] == "tensor")
            if i.get("mutated")]
        self._structure = self._output_structure()
        # with no dynamic dims the output sizes are known now (the run still checks inputs)
        self._static_shapes = None if self.package_metadata["symbols"] else [
            tuple(o["sizes"]) for o in self.package_metadata["outputs"]]
        threads = self.package_metadata.get("num_threads", 0) if num_threads is None else num_threads
        self._num_threads = int(threads or 0)
        self._single = run_single_threaded
        self._swap_lock = threading.Lock()
        # AOTI_RUNTIME_CHECK_INPUTS=1: strides must match the export's too (checks.py)
        self._layout = LayoutCheck(self._inputs) if checks_enabled() else None
        self._fixed = self._fixed_signature()
        self._run_by_address = abi.run_by_address(self._lib)
        self._run_address = ctypes.cast(self._lib.aotc_run, ctypes.c_void_p).value
        self._fixed_frames: dict[int, FixedFrame] = {}
        self._profiler: Profiler | None = None
        try:
            first = self._new_handle(weights)
        except RuntimeFailure as e:  # the library refused what the metadata describes
            raise PackageError(f"{path}: model {self.name!r} does not match its own library: "
                               f"{e}") from None
        self._pool = RunnerPool(num_runners, first, weights)
        clock.stage("create")
        self.load_seconds = clock.seconds  # per stage, for benchmarks/load.py

    def profiler(self) -> Profiler:
        """The per-kernel counters of this model's library (off until enabled): its steps in
        run order and what each call added to them (aotc bench --profile)."""
        if self._profiler is None:
            self._profiler = Profiler(self._lib)
        return self._profiler

    @property
    def num_runners(self) -> int:
        """How many calls may run at once (each on its own model object); more wait."""
        return self._pool.size

    @property
    def _constants(self):
        """The constant pointer table of the current weights generation."""
        return self._pool.generation.pointers

    def buffer_names(self) -> list[str]:
        """The registered buffers the model updates in place (its state), by name."""
        return list(self._state)

    def get_buffer(self, name: str):
        """A copy of state buffer `name` as the model holds it now (a torch tensor when
        torch is loaded, else a numpy array)."""
        return self._get_buffer(self._shared, name)

    def set_buffer(self, name: str, value) -> None:
        """Overwrite state buffer `name` (same dtype and shape) before the next call."""
        self._set_buffer(self._shared, name, value)

    def _get_buffer(self, shared: SharedState, name: str):
        self._state_entry(name)
        with shared.lock:
            array = shared.arrays[name].copy()
        if "torch" in sys.modules:
            import torch
            return torch.from_numpy(array)
        return array

    def _set_buffer(self, shared: SharedState, name: str, value) -> None:
        new = as_state_value(value, self._state_entry(name)[1], name)
        with shared.lock:
            np.copyto(shared.arrays[name], new)

    def new_state(self) -> ModelState:
        """A state of its own (every state buffer at the package's value, the weights shared)
        for one sequence: call it as the model. At most `max_states` at once (load_package's
        argument): a StateLimitError beyond, until one is freed."""
        if not self._state:
            raise InputError(f"model {self.name!r} updates no buffer: it has no state to make "
                             "another of")
        with self._states_lock:
            if self._open_states >= self.max_states:
                raise StateLimitError(f"model {self.name!r} holds {self.max_states} states "
                                      "already (max_states); free one (state.free()) or load "
                                      "the package with a larger max_states")
            self._open_states += 1
        try:
            shared = SharedState(self._lib, self._state, self._weights)
        except BaseException:
            self._state_freed()
            raise
        return ModelState(self, shared, self._state_freed)

    def _state_freed(self) -> None:
        with self._states_lock:
            self._open_states -= 1

    @property
    def states_in_use(self) -> int:
        """How many states new_state() made are not freed yet."""
        return self._open_states

    def reset_buffers(self) -> None:
        """Every state buffer back to the value the package holds."""
        with self._shared.lock:
            self._shared.reset()

    def _state_entry(self, name: str):
        if name not in self._state:
            raise KeyError(f"{name!r} is not a buffer the model updates; its state buffers: "
                           f"{list(self._state)}")
        return self._state[name]

    def metadata(self) -> dict[str, str]:
        """The user's key/values (option 'aot_inductor.metadata') and aotc's own entries."""
        meta = self.package_metadata
        return {"AOTI_DEVICE_KEY": meta["target"]["device"], "aotc_version": meta["aotc_version"],
                "torch_version": meta.get("torch_version", ""), "target_arch": meta["target"]["arch"],
                **meta.get("user_metadata", {})}

    get_metadata = metadata

    def constant_names(self) -> list[str]:
        """Fully-qualified names of every parameter, buffer and lifted constant (the exported
        module's state_dict keys, plus non-persistent buffers and lifted constants)."""
        return swappable_names(self.package_metadata["constants"])

    get_constant_fqns = constant_names

    def load_constants(self, constants: dict, check_full_update: bool = True,
                       user_managed: bool = False) -> None:
        """Swap weights without recompiling: {fully-qualified name: tensor or array}.

        Calls already running finish on the old weights; later calls use the new ones.
        `user_managed=True` reads the caller's (contiguous) memory in place instead of
        copying it; the caller must not change it while calls run. A weight that the
        package stores prepacked for the GEMM is always packed into a copy."""
        update = prepare_update(self.package_metadata["constants"], constants,
                                check_full_update, user_managed, self._pack_constant)
        with self._swap_lock:
            weights = self._pool.generation.updated(update)
            if self._single:
                self._destroy(self._pool.replace_first(self._new_handle(weights), weights))
            else:
                self._pool.advance(weights, self._destroy)

    def _pack_constant(self, k: int, src: int, dst: int) -> None:
        abi.check(self._lib, self._lib.aotc_pack_constant(k, src, dst))

    def _destroy(self, h: int) -> None:
        self._bound.pop(h, None)
        self._frames.pop(h, None)
        self._fixed_frames.pop(h, None)
        self._lib.aotc_destroy(h)

    def _new_handle(self, weights: WeightSet) -> int:
        h = ctypes.c_void_p()
        abi.check(self._lib, self._lib.aotc_create(weights.pointers, weights.count,
                                                   ctypes.byref(h)))
        if self._num_threads:
            rc = self._lib.aotc_set_num_threads(h, self._num_threads)
            if rc:
                self._lib.aotc_destroy(h)
                abi.check(self._lib, rc)
        if self._state:
            try:
                self._shared.share_with(h.value)
            except BaseException:
                self._lib.aotc_destroy(h)
                raise
            self._bound[h.value] = self._shared.ident
        self._frames[h.value] = Frame([len(i["sizes"]) for i in self._inputs],
                                      [rank for _, rank in self._outputs])
        if self._fixed is not None:
            self._fixed_frames[h.value] = FixedFrame(self._fixed, self._run_address, h.value)
        return h.value

    def _fixed_signature(self) -> FixedSignature | None:
        """The signature of the short call path, for a model that can take it."""
        meta = self.package_metadata
        if (not self._plain_args or self._sizes_follow_data
                or self._int_inputs or self._mutated or self._state
                or (self._layout is not None and not self._layout.contiguous_only)
                or not self._inputs or len(self._inputs) != len(meta["inputs"])):
            return None
        static = None if self._static_shapes is None else known_shapes(
            [i["sizes"] for i in self._inputs], self._static_shapes)
        return FixedSignature([DType.from_name(i["dtype"]) for i in self._inputs],
                              [dtype for dtype, _ in self._outputs], static)

    def _fixed_call(self, args: tuple):
        """The outputs of a short-path call, or None where args do not take it."""
        if self._single:  # the caller promised one thread at a time: no lock
            h = self._pool.first()
            outs = self._fixed_frames[h].call(self._lib, self._run_by_address, h, args)
        else:
            h = self._pool.acquire(self._new_handle, self._destroy)
            try:
                outs = self._fixed_frames[h].call(self._lib, self._run_by_address, h, args)
            finally:
                self._pool.release(h, self._destroy)
        return outs

    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs, self._shared)

    def _call(self, args: tuple, kwargs: dict, shared: SharedState):
        """A call on state `shared` (the default one, or a ModelState's)."""
        if self._fixed is not None and not kwargs:
            outs = self._fixed_call(args)
            if outs is not None:
                return self._structure(outs)
        if self._plain_args and not kwargs and len(args) == len(self._input_plan):
            leaves = args  # the common case: positional tensors, nothing nested
        else:
            leaves = pytree.flatten_call(self.package_metadata["in_spec"], args, kwargs)
        if len(leaves) != len(self._input_plan):
            raise InputError(f"expected {len(self._input_plan)} inputs, got {len(leaves)}")
        if self._layout is not None:
            self._layout.check([x for x, (what, _, _) in zip(leaves, self._input_plan) if what])
        if self._int_inputs:
            leaves = list(leaves)
            for j in self._int_inputs:
                leaves[j] = int_input(leaves[j], self._input_plan[j][0])
        inputs, any_torch = [], False
        for leaf, (what, constant, dtype) in zip(leaves, self._input_plan):
            if what is None:  # a non-tensor input that export specialized
                name, value = constant
                if leaf != value:
                    raise InputError(f"input '{name}': the model was compiled for the constant "
                                     f"{value!r}, got {leaf!r}")
                continue
            any_torch = any_torch or is_torch_tensor(leaf)
            inputs.append(as_input(leaf, what, dtype))
        # with no tensor input, outputs follow the caller's library: torch if it is loaded
        like_torch = any_torch or (not inputs and "torch" in sys.modules)
        for j, _ in self._mutated:
            check_writable(leaves[j], self._input_plan[j][0])
        if self._single:  # the caller promised one thread at a time: no lock
            h = self._pool.first()
            self._bind(h, shared)
            outs = self._run(h, self._frames[h], inputs, like_torch)
        elif self._state:  # calls that update one state run one at a time, in some order
            with shared.lock:
                outs = self._pooled_run(inputs, like_torch, shared)
        else:
            outs = self._pooled_run(inputs, like_torch)
        for j, k in self._mutated:
            write_back(leaves[j], inputs[k][0])
        return self._structure(outs)

    def _pooled_run(self, inputs: list, like_torch: bool, shared: SharedState | None = None) -> list:
        h = self._pool.acquire(self._new_handle, self._destroy)
        try:
            if shared is not None:
                self._bind(h, shared)
            return self._run(h, self._frames[h], inputs, like_torch)
        finally:
            self._pool.release(h, self._destroy)

    def _bind(self, h: int, shared: SharedState) -> None:
        """Runner `h` (held by this call alone) reads and updates `shared` from now on."""
        if self._bound.get(h) != shared.ident:
            shared.share_with(h)
            self._bound[h] = shared.ident

    def _output_structure(self):
        """outs -> the exported output structure (fast paths for the usual shapes)."""
        spec, leaves = self.package_metadata["out_spec"], self.package_metadata["output_leaves"]
        in_order = [leaf.get("index") for leaf in leaves] == list(range(len(leaves))) and not any(
            "scalar" in leaf for leaf in leaves)
        if spec["kind"] == "leaf" and in_order:
            return lambda outs: outs[0]
        if (spec["kind"] == "tuple" and in_order and "fields" not in spec
                and all(c["kind"] == "leaf" for c in spec["children"])):
            return tuple

        def general(outs):
            values = [as_number(outs[leaf["index"]], leaf.get("scalar")) if leaf["kind"] == "tensor"
                      else leaf["value"] for leaf in leaves]
            return pytree.unflatten(spec, values)

        return general

    def _run(self, h: int, frame: Frame, inputs: list, like_torch: bool) -> list:
        lib = self._lib
        for k, (_, ptr, shape, strides, dtype) in enumerate(inputs):
            frame.set_input(k, ptr, shape, strides, dtype)
        n_in, n_out = len(inputs), len(self._outputs)
        shapes = self._static_shapes
        if shapes is None:  # sizes follow the inputs' dynamic dims
            key = tuple(tuple(i[2]) for i in inputs) + tuple(
                int(inputs[k][0]) for k in self._int_slots)
            if key != frame.input_shapes or self._sizes_follow_data:
                abi.check(lib, lib.aotc_output_shapes(h, frame.ins, n_in, frame.out_sizes))
                frame.output_shapes = [frame.output_shape(j, rank)
                                       for j, (_, rank) in enumerate(self._outputs)]
                frame.input_shapes = key
                if self._fixed is not None:  # later calls with these shapes take the short path
                    self._fixed.learn(known_shapes(key, frame.output_shapes))
            shapes = frame.output_shapes
        outs = []
        for j, (dtype, _) in enumerate(self._outputs):
            shape = shapes[j]
            obj, ptr = empty(shape, dtype, like_torch)
            outs.append(obj)
            frame.set_output(j, ptr, shape, dtype)
        abi.check(lib, lib.aotc_run(h, frame.ins, n_in, frame.outs, n_out))
        return outs

    def __del__(self):
        pool, lib = getattr(self, "_pool", None), getattr(self, "_lib", None)
        if pool is not None and lib is not None:
            pool.close(lib.aotc_destroy)

    def __repr__(self) -> str:
        return f"CompiledModel({self.path!r}, model={self.name!r})"


def _check_target(path: str, meta: dict) -> None:
    target = meta.get("target", {})
    if target.get("device") != "cpu":
        raise PackageError(f"{path} was compiled for device {target.get('device')!r}; this "
                           "runtime runs cpu packages")
    level = target_of_arch(target["arch"])
    assert level is not None  # package/schema.py admits only the arches of target/
    # recorded since aarch64 came; an older package's arch names its family (or is native)
    family = target.get("architecture", level.architecture)
    built = f"{path} was compiled for {family} ({target['arch']}, isa {target.get('isa')!r})"
    if host.machine() not in machines_of(family):
        raise PackageError(f"{built}: it runs on an {family} machine, and this is "
                           f"{host.machine()}. Compile it again without a target option to run "
                           "it here")
    extra = set(str(target.get("features", "")).split())  # beyond the arch's (a bf16 GEMM)
    # what the code needs, as the package records it (native: only the extra ones); a package
    # written before cpu_features (same format: the field restates its arch) needs the arch's
    needed = set(target["cpu_features"].split()) if "cpu_features" in target else (
        set(level.features) | extra)
    missing = needed - host.cpu_flags()
    if missing & extra:
        raise PackageError(f"{path} was compiled for {target.get('arch')} ({target.get('isa')}) "
                           f"with precision {target.get('precision', 'fp32')!r}; this CPU lacks "
                           f"{sorted(missing)}. Recompile with options={{'precision': 'fp32'}}")
    if missing:
        raise PackageError(f"{path} was compiled for {target.get('arch')} ({target.get('isa')}); "
                           f"this CPU lacks {sorted(missing)}. {_lower_levels(family)}")


def _lower_levels(family: str) -> str:
    """The advice for a CPU below a package's level: the levels of its family it runs."""
    runs = [t.isa for t in reversed(levels_of(family).values()) if not host.missing_features(t)]
    if not runs:
        return "Compile it again without a target or isa option to run it here"
    others = f" (or {', '.join(repr(isa) for isa in runs[1:])})" if runs[1:] else ""
    return f"Recompile with options={{'isa': {runs[0]!r}}}{others} for older machines"


def _plain_positional(in_spec: dict, n: int) -> bool:
    """Whether the inputs are just n positional leaves (no nesting, no keywords)."""
    args, kwargs = in_spec["children"] if len(in_spec.get("children", [])) == 2 else (None, None)
    return (args is not None and args["kind"] == "tuple" and len(args["children"]) == n
            and all(c["kind"] == "leaf" for c in args["children"])
            and not kwargs.get("children"))


def load_package(path, model_name: str | None = None, run_single_threaded: bool = False,
                 num_threads: int | None = None, num_runners: int = 1,
                 max_states: int = 8) -> CompiledModel:
    """Load model `model_name` (default: the only one, or "model") of a .pt2 package.

    `num_runners` model objects serve calls from several threads at once (each with its own
    arena and `num_threads` OpenMP threads); further callers wait for a free one. A model
    with state (registered buffers it updates) keeps one state for the loaded model, shared
    by its model objects; its calls run one at a time. `new_state()` makes up to
    `max_states` more, each independent (one per sequence of a decoder LM): calls on
    different states run at once, on different model objects."""
    if is_filelike(path):  # the weights are mapped from a file: copy the bytes into one
        with spilled(path) as tmp:
            return CompiledModel(tmp, model_name, run_single_threaded, num_threads, num_runners,
                                 max_states)
    return CompiledModel(os.fspath(path), model_name, run_single_threaded, num_threads, num_runners,
                         max_states)


def aoti_load_package(path, run_single_threaded: bool = False) -> CompiledModel:
    """torch._inductor.aoti_load_package's spelling."""
    return load_package(path, run_single_threaded=run_single_threaded)
