"""Targets: the x86-64 levels as packages record them, host detection, and an import that
needs neither torch nor numpy."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aotc import target
from aotc.target import host, target_for, x86_64

SRC = Path(__file__).resolve().parents[2] / "src"
V3 = frozenset({"sse2", "avx", "avx2", "fma", "bmi2"})
V4 = V3 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}


def test_levels_record_what_packages_always_recorded():
    assert {isa: t.metadata() for isa, t in x86_64.LEVELS.items()} == {
        "sse2": {"device": "cpu", "arch": "x86-64", "isa": "sse2"},
        "avx2": {"device": "cpu", "arch": "x86-64-v3", "isa": "avx2"},
        "avx512": {"device": "cpu", "arch": "x86-64-v4", "isa": "avx512"},
    }
    assert target.known_arches()[:3] == ("x86-64", "x86-64-v3", "x86-64-v4")
    assert target.target_of_arch("x86-64-v3") is target_for("avx2")
    assert target.target_of_arch("armv9-a") is None


def test_the_isa_option_names_a_level():
    assert target_for("avx512").arch_flags == ("-march=x86-64-v4",)
    assert target_for("host") is target.host_target()
    with pytest.raises(ValueError, match=r"unknown isa 'avx1024'; expected one of \['avx2', "
                                         r"'avx512', 'native', 'neon', 'neon-dotprod', 'sse2'\] "
                                         r"or 'host'"):
        target_for("avx1024")


def test_the_host_level_is_the_highest_the_flags_allow():
    assert x86_64.host_level(V4).isa == "avx512"
    assert x86_64.host_level(V3).isa == "avx2"
    assert x86_64.host_level(V4 - {"avx512dq"}).isa == "avx2"
    assert x86_64.host_level(frozenset({"sse2"})).isa == "sse2"


def test_native_takes_its_panel_width_from_the_cpu():
    assert x86_64.native(V4).gemm_nr == 32
    assert x86_64.native(V3).gemm_nr == 16
    assert x86_64.native(V3).arch_flags == ("-march=native",)


def test_missing_features_name_what_the_machine_lacks(monkeypatch):
    monkeypatch.setattr(host, "machine", lambda: "x86_64")
    monkeypatch.setattr(host, "cpu_flags", lambda: V3)
    assert host.missing_features(target_for("avx2")) == set()
    assert host.missing_features(target_for("avx512")) == {"avx512f", "avx512bw", "avx512vl",
                                                           "avx512dq"}
    monkeypatch.setattr(host, "machine", lambda: "aarch64")
    assert host.missing_features(target_for("sse2")) == {"an x86_64 processor (this is aarch64)"}
    assert host.missing_features(x86_64.native(frozenset())) == set()


def test_the_package_imports_without_torch_or_numpy():
    # loaded as a top-level package: aotc/__init__.py imports the (numpy) runtime
    code = (f"import sys; sys.path.insert(0, {str(SRC / 'aotc')!r}); import target; "
            "target.target_for('avx2'); target.host_target(); "
            "assert not {'torch', 'numpy', 'sympy'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
