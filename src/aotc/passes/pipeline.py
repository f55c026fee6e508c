"""The compiler, stage by stage, from ExportedProgram to the files of a .pt2: read this page to
know what aotc does to a program.

    import      ExportedProgram -> loop-level IR (frontend/importer.py, lowering/); attention
                written out as matmul -> softmax -> matmul, and quantized linears and
                convolutions, become one template each (passes/chains.py finds the chains
                in the exported graph first)
    dce         drop buffers no output needs (passes/dce.py)
    fuse        inline pointwise producers into their consumers (scheduler/fusion.py), after
                the activations between quantized convolutions are laid out channels last
                (scheduler/layout.py)
    prepack     weights only GEMMs read are stored in the kernel's panel layout for the
                target ISA (scheduler/prepack.py), after the order of channels-first int8
                convolutions' patches is chosen for it (scheduler/layout.py: row_groups)
    group       the kernel sequence: row groups of reductions + their reader (scheduler/grouping.py)
    loops       each generated kernel's loop nest for the target: splits, tiles, vector lanes,
                parallel loops, reduction strategy (scheduler/loops.py)
    plan        arena slots for intermediates (scheduler/memory.py)
    codegen     one C++ translation unit, printing the loop plan (codegen/cpp/)
    build       g++ with cached kernel objects (cxx/compiler.py)
    weights     weights.bin: every constant's bytes (packed as prepack chose) and their
                table (package/weights.py)
    metadata    metadata.json: inputs, outputs, symbols, pytree specs, the weights table
                (package/metadata.py); package/format.py writes the three into the .pt2

Each stage can dump what it produced into a debug directory (`debug_dir` option or the
AOTC_DEBUG_DIR environment variable) and log it (AOTC_LOGS=graph,ir,fusion,schedule,code,perf).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen.cpp import emit_model
from ..cxx.compiler import build_model
from ..errors import located
from ..ir.nodes import Program
from ..ir.printer import format_program
from ..logs import STAGE_ARTIFACT, artifact_logger
from ..package.metadata import build_metadata
from ..package.weights import Weights, format_weights, pack_weights
from ..scheduler.fusion import fuse_pointwise
from ..scheduler.grouping import RowGroup, Scheduled, group_rows, kernel_members, local_buffers
from ..scheduler.inplace import in_place_updates
from ..scheduler.layout import channels_last, row_groups
from ..scheduler.loops import LoopPlan, format_loop_plan, plan_loops
from ..scheduler.memory import MemoryPlan, plan_memory
from ..scheduler.prepack import prepack_weights
from ..target import Target
from .chains import find_chains
from .dce import remove_dead_buffers

perf = artifact_logger("perf")


@dataclass
class Compiled:
    program: Program
    plan: MemoryPlan
    loops: LoopPlan
    source: str
    library: Path | None  # None when the build stage was skipped
    cached: bool
    weights: Weights | None  # None when build was not asked for
    metadata: dict | None  # metadata.json; None when build was not asked for
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable
    dump: Callable | None = None  # value -> text written to <debug_dir>/<nn>_<name>.<suffix>
    suffix: str = "txt"


def _schedule_dump(schedule: list[Scheduled]) -> str:
    lines = []
    for k, item in enumerate(schedule):
        if isinstance(item, RowGroup):
            members = ", ".join(m.name + (" (local)" if m.name in item.local else "")
                                for m in item.members)
            lines.append(f"kernel {k}: rows of [{', '.join(map(str, item.outer))}] x {item.row}: "
                         f"{members}")
        else:
            lines.append(f"kernel {k}: {item.name}")
    return "\n".join(lines) + "\n"


def _plan_dump(plan: MemoryPlan) -> str:
    lines = [f"slot{k}: {size} bytes" + (f" (stage {plan.stage[k]})" if plan.stage[k] else "")
             for k, size in enumerate(plan.slots)]
    lines += [f"{b} -> slot{s}" for b, s in plan.slot_of.items()]
    return "\n".join(lines) + "\n"


def compile_program(ep, target: Target, opt_level: str = "-O3",
                    debug_dir: Path | None = None, header: str = "",
                    build: bool = True, metadata: dict[str, str] | None = None,
                    freezing: bool = False, precision: str = "fp32", num_threads: int = 0,
                    user_metadata: dict[str, str] | None = None,
                    integer_products: bool = False) -> Compiled:
    """Run every stage in order (`build=False` stops after codegen: no compiler runs, no
    package files). `metadata` (string pairs) is compiled into the library, which reports it
    to loaders; `freezing` folds subgraphs that read only weights into constants at import;
    `precision` "bf16" packs GEMM weights as bfloat16 (scheduler/precision.py);
    `num_threads` (the model's default thread count) and `user_metadata` go to metadata.json;
    `integer_products` lowers PT2E's quantized linears and convolutions onto the int8 GEMM."""
    from ..frontend.importer import import_program

    timings: dict[str, float] = {}
    state: dict = {}
    graph_log = artifact_logger("graph")
    if graph_log.isEnabledFor(logging.INFO):
        graph_log.info("%s exported graph:\n%s", header or "program", ep.graph_module.code)
    stages = [
        Stage("import", lambda: import_program(ep, freezing,
                                                        find_chains(ep, integer_products)),
              format_program),
        Stage("dce", lambda: remove_dead_buffers(state["import"]), format_program),
        Stage("fuse", lambda: fuse_pointwise(channels_last(state["dce"], target)), format_program),
        Stage("prepack", lambda: prepack_weights(row_groups(state["fuse"], target.vector_bytes),
                                                 target, precision), format_program),
        Stage("group", lambda: group_rows(state["prepack"]), _schedule_dump),
        Stage("loops", lambda: plan_loops(state["prepack"], state["group"], target),
              format_loop_plan),
        Stage("plan", lambda: plan_memory(
            state["prepack"], kernel_members(state["group"]),
            local_buffers(state["group"]) | set(in_place_updates(state["prepack"], state["group"]))),
            _plan_dump),
        Stage("codegen", lambda: emit_model(state["prepack"], state["plan"], state["group"],
                                            state["loops"], header, metadata),
              str, "cpp"),
        Stage("build", lambda: build_model(state["codegen"], target, opt_level),
              lambda r: f"{r[0]} (cached: {r[1]})\n"),
        Stage("weights", lambda: pack_weights(state["prepack"]), format_weights),
        # stage_seconds in metadata.json: the stages before this one (its own is not known yet)
        Stage("metadata", lambda: build_metadata(
            ep, state["prepack"], state["weights"].table, timings, target=target,
            precision=precision, freezing=freezing, num_threads=num_threads,
            user_metadata=user_metadata or {}),
            lambda m: json.dumps(m, indent=1) + "\n", "json"),
    ]
    last = len(stages) if build else [s.name for s in stages].index("codegen") + 1
    for k, stage in enumerate(stages[:last]):
        t0 = time.perf_counter()
        with located("", "", f"running the {stage.name} stage"):  # what no per-op step caught
            state[stage.name] = stage.run()
        timings[stage.name] = time.perf_counter() - t0
        perf.info("%s stage %s took %.3f s", header or "program", stage.name, timings[stage.name])
        artifact = artifact_logger(STAGE_ARTIFACT.get(stage.name, "perf"))
        logged = stage.name in STAGE_ARTIFACT and artifact.isEnabledFor(logging.INFO)
        if stage.dump is None or (debug_dir is None and not logged):
            continue
        text = stage.dump(state[stage.name])
        if logged:
            artifact.info("%s after stage %s:\n%s", header or "program", stage.name, text)
        if debug_dir is not None:
            debug_dir.mkdir(parents=True, exist_ok=True)
            (debug_dir / f"{k:02d}_{stage.name}.{stage.suffix}").write_text(text)
    library, cached = state.get("build", (None, False))
    return Compiled(state["prepack"], state["plan"], state["loops"], state["codegen"], library,
                    cached, state.get("weights"), state.get("metadata"), timings)
