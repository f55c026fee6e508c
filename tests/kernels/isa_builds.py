"""What the kernel tests share besides compiled objects: the ISA builds this CPU can run, and
the convolutions a compiled program ends with."""
from __future__ import annotations

from aotc.ir.nodes import Conv
from aotc.passes.pipeline import compile_program
from aotc.target import host_target, target_for
from aotc.target.host import missing_features


def runnable_isas() -> list[str]:
    """The x86 ISA levels, of avx512, avx2 and sse2, whose builds this CPU can run."""
    return [isa for isa in ("avx512", "avx2", "sse2") if not missing_features(target_for(isa))]


def compiled_convs(ep) -> list[Conv]:
    """The convolutions of `ep` compiled for this machine (not built), in run order."""
    program = compile_program(ep, host_target(), build=False).program
    return [b.op for b in program.computed() if isinstance(b.op, Conv)]
