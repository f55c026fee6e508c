"""The loops of generated kernels vectorize at every ISA level aotc ships (x86-64,
x86-64-v3, x86-64-v4), with the flags aotc compiles models with.

g++ reports each loop it vectorizes (-fopt-info-vec-optimized); every innermost loop over
tensor elements of a kernel must be among them. Only compiled, never run, so the AVX-512
build is checked on any x86-64 machine.
"""
from __future__ import annotations

import re
import subprocess

import pytest
import torch
import torch.nn.functional as F

from aotc.cxx.compiler import include_flags
from aotc.cxx.toolchain import compiler, cxx_flags
from aotc.passes.pipeline import compile_program
from aotc.target import host_target, target_of_arch

ARCHS = ["x86-64", "x86-64-v3", "x86-64-v4"]


class Pointwise(torch.nn.Module):
    def forward(self, x):
        return (torch.relu(x * 2 + 1), torch.exp(x), F.gelu(x), F.gelu(x, approximate="tanh"),
                torch.sigmoid(x), torch.tanh(x) * torch.erf(x))


class Rows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(256)

    def forward(self, x):
        return torch.softmax(x, -1), self.norm(x), torch.log_softmax(x, -1)


class Columns(torch.nn.Module):
    def forward(self, x):  # reductions over a non-last axis: the loops run along the columns
        return x.sum(0), x.amax(0), x.var(0), (x * x).mean(0, keepdim=True)


MODELS = {"pointwise": (Pointwise(), (64, 256)), "rows": (Rows(), (64, 256)),
          "columns": (Columns(), (64, 200))}


def must_vectorize(source: str) -> dict[int, str]:
    """{line: kernel} of every innermost element loop of the kernels: a multi-line `for`
    over int64_t elements with no loop inside it (lane set-up/fold loops and scalar tails
    excluded)."""
    lines = source.splitlines()
    found, kernel = {}, None
    for k, line in enumerate(lines):
        if line[:1].isalpha():  # a top-level declaration: a kernel, or code that is not one
            m = re.match(r"static void (k\d+_\w+)\(", line)
            kernel = m.group(1) if m else None
        if kernel is None or not re.match(r"\s*for \(int64_t \w+ = ", line) or not line.endswith("{"):
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        for inner in lines[k + 1:]:
            if inner.strip() == "}" and len(inner) - len(inner.lstrip()) == indent:
                break
            body.append(inner)
        if not any(re.match(r"\s*for \(", b) for b in body):
            found[k + 1] = kernel
    return found


def vectorized_lines(source: str, arch: str, tmp_path) -> set[int]:
    cpp = tmp_path / f"model-{arch}.cpp"
    # the report names a loop only where it stays in its own function: a small kernel
    # inlined into run(), or one folded into an identical one, would hide its lines
    # (both are one-to-one line substitutions, so line numbers still match the source)
    cpp.write_text(re.sub(r"^static void (k\d+_)", r"__attribute__((noinline)) static void \1",
                          source, flags=re.M))
    report = tmp_path / f"vec-{arch}.txt"
    target = target_of_arch(arch)
    flags = cxx_flags(target)
    subprocess.run([compiler(target), *flags, *include_flags(), "-c", str(cpp), "-o", str(tmp_path / "m.o"),
                    f"-fopt-info-vec-optimized={report}", "-fno-ipa-icf"],
                   check=True, capture_output=True, timeout=300)
    name = re.escape(cpp.name)
    return {int(m.group(1)) for m in re.finditer(rf"{name}:(\d+):\d+: optimized: loop vectorized",
                                               report.read_text())}


def is_vectorized(line: int, done: set[int]) -> bool:
    # g++ names a loop by its `for` line, an `omp simd` loop by the first line of its body
    return line in done or line + 1 in done


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_element_loops_vectorize(model, arch, tmp_path):
    module, shape = MODELS[model]
    ep = torch.export.export(module, (torch.randn(*shape),))
    source = compile_program(ep, host_target(), build=False).source
    wanted = must_vectorize(source)
    assert wanted, "no element loop found: the test's loop finder is out of date"
    done = vectorized_lines(source, arch, tmp_path)
    missed = {line: kernel for line, kernel in wanted.items() if not is_vectorized(line, done)}
    assert not missed, (f"{arch}: loops left scalar (line: kernel) {missed}; "
                        f"vectorized: {sorted(done)}")
