"""The aarch64 target: its levels as packages record them, the target option beside isa, host
detection with host.machine/host.cpu_flags monkeypatched, and what it refuses at compile time."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from aotc import target
from aotc.errors import CompileError
from aotc.options import Options
from aotc.target import aarch64, host, select_target, target_for, x86_64

KERNELS = Path(__file__).resolve().parents[2] / "src" / "aotc" / "kernels"
# /proc/cpuinfo's Features of a Cortex-A53 (Armv8.0) and a Neoverse N1 (Armv8.2)
A53 = frozenset("fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid".split())
N1 = A53 | set("atomics fphp asimdhp asimdrdm lrcpc dcpop asimddp ssbs".split())


def test_levels_record_their_march_and_name():
    assert {isa: t.metadata() for isa, t in aarch64.LEVELS.items()} == {
        "neon": {"device": "cpu", "arch": "armv8-a", "isa": "neon"},
        "neon-dotprod": {"device": "cpu", "arch": "armv8.2-a+fp16+dotprod", "isa": "neon-dotprod"},
    }
    assert target.known_arches() == ("x86-64", "x86-64-v3", "x86-64-v4", "armv8-a",
                                     "armv8.2-a+fp16+dotprod", "native")
    assert target.architectures() == ("x86_64", "aarch64")
    assert target.target_of_arch("armv8-a") is target_for("neon")


def test_the_cross_compiler_and_its_flags():
    for level in aarch64.LEVELS.values():
        assert level.compiler == "aarch64-linux-gnu-g++"
        assert level.compiler_env == "AOTC_CXX_AARCH64"
        assert level.arch_flags == (f"-march={level.arch}",)
        assert level.bf16_feature is None and level.vector_bytes == 16
        assert level.loops == x86_64.LOOPS
        assert level.machines == {"aarch64", "arm64"}


def test_panel_layout_is_the_neon_micro_kernels():
    text = (KERNELS / "gemm_panels.h").read_text()
    start = text.index("#elif AOTC_GEMM_NEON")
    neon = text[start:text.index("#else", start)]
    nr = int(re.search(r"NR = (\d+);", neon).group(1))
    kc = int(re.search(r"KC = (\d+);", neon).group(1))
    assert all((t.gemm_nr, t.gemm_kc) == (nr, kc) for t in aarch64.LEVELS.values())


def test_the_target_option_names_an_architecture_or_a_level(monkeypatch):
    monkeypatch.setattr(host, "machine", lambda: "x86_64")
    assert select_target("aarch64", "host") is target_for("neon")  # the baseline
    assert select_target("arm64", None) is target_for("neon")
    assert select_target("aarch64", "neon-dotprod") is target_for("neon-dotprod")
    assert select_target("neon-dotprod", "host") is target_for("neon-dotprod")
    assert select_target("x86_64", "avx2") is target_for("avx2")
    assert select_target("host", "neon") is target_for("neon")
    assert select_target("host", "avx2") is target_for("avx2")
    with pytest.raises(ValueError, match=r"isa 'avx2' is not a level of target 'aarch64'; its "
                                         r"levels are \['neon', 'neon-dotprod'\]"):
        select_target("aarch64", "avx2")
    with pytest.raises(ValueError, match="isa 'native' builds for this machine's CPU"):
        select_target("aarch64", "native")
    with pytest.raises(ValueError, match="name different levels"):
        select_target("neon", "neon-dotprod")
    with pytest.raises(ValueError, match=r"unknown target 'riscv64'; expected 'host', an "
                                         r"architecture \(aarch64, x86_64\)"):
        select_target("riscv64", None)


def test_options_parse_the_target():
    assert Options.parse({"target": "aarch64"}).compile_target() is target_for("neon")
    assert not Options.parse({"target": "aarch64"}).on_host()
    assert Options.parse({}).on_host()
    with pytest.raises(CompileError, match="unknown target 'sparc'"):
        Options.parse({"target": "sparc"})
    with pytest.raises(CompileError, match="target must be a string"):
        Options.parse({"target": 64})


def test_the_host_level_is_the_highest_the_features_allow(monkeypatch):
    assert aarch64.host_level(N1).isa == "neon-dotprod"
    assert aarch64.host_level(A53).isa == "neon"
    assert aarch64.host_level(N1 - {"asimddp"}).isa == "neon"
    monkeypatch.setattr(host, "machine", lambda: "aarch64")
    monkeypatch.setattr(host, "cpu_flags", lambda: A53)
    assert target.native_target().arch_flags == ("-march=native",)
    assert target.native_target().architecture == "aarch64"
    assert host.missing_features(target_for("neon")) == set()
    assert host.missing_features(target_for("neon-dotprod")) == {
        "atomics", "asimdrdm", "fphp", "asimdhp", "asimddp"}
    assert host.missing_features(target_for("avx2")) == {"an x86_64 processor (this is aarch64)"}
    monkeypatch.setattr(host, "machine", lambda: "x86_64")
    assert host.missing_features(target_for("neon")) == {"an aarch64 processor (this is x86_64)"}


def test_bf16_is_refused_at_compile_time():
    from aotc.scheduler.precision import check_precision

    for level in aarch64.LEVELS.values():
        with pytest.raises(CompileError, match=r"precision='bf16' has no aarch64 kernel \(bf16 "
                                               r"GEMMs run on x86_64's avx512_bf16 only\)"):
            check_precision("bf16", level, on_host=False)


@pytest.mark.parametrize("options, message", [
    ({"precision": "bf16"}, "precision='bf16' has no aarch64 kernel"),
    ({"max_autotune": True}, r"max_autotune measures the model on this machine, which cannot run "
                             r"code for aarch64 \(this is x86_64\); compile without max_autotune, "
                             r"or on an aarch64 machine"),
])
def test_what_the_target_lacks_is_refused_before_any_build(tmp_path, monkeypatch, options, message):
    import torch

    import aotc

    monkeypatch.setattr(host, "machine", lambda: "x86_64")
    ep = torch.export.export(torch.nn.Linear(4, 2), (torch.randn(1, 4),))
    with pytest.raises(CompileError, match=message):
        aotc.compile_and_package(ep, tmp_path / "m.pt2", options={"target": "aarch64", **options})
    assert not (tmp_path / "m.pt2").exists()
