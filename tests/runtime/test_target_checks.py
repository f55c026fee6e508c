"""The Python loader's target check: a package for another processor family is refused by
name (either way round, host.machine monkeypatched), a CPU below the package's level is told
the levels of its family it runs, the CPU features checked are those the package records
(target.cpu_features; its arch's for a package written before), and an unknown architecture is
a damaged package."""
from __future__ import annotations

import json
import re
import zipfile

import pytest
import torch

import aotc
from aotc.package.format import PackageReader
from aotc.target import host, target_of_arch
from models import ReadmeModel

A53 = frozenset({"fp", "asimd", "crc32"})
AVX2 = frozenset({"sse2", "avx", "avx2", "fma", "bmi2"})


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    return aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("t") / "m.pt2")


def with_target(path, out, **target):
    """The package at `path` with the target of its metadata replaced by `target`."""
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("metadata.json"):
                meta = json.loads(data)
                meta["target"] = {"device": "cpu", **target}
                data = json.dumps(meta).encode()
            zout.writestr(info, data)
    return out


def on(monkeypatch, machine: str, flags: frozenset[str]) -> None:
    monkeypatch.setattr(host, "machine", lambda: machine)
    monkeypatch.setattr(host, "cpu_flags", lambda: flags)


@pytest.mark.parametrize("target", [
    {"arch": "armv8-a", "isa": "neon", "architecture": "aarch64"},
    {"arch": "armv8.2-a+fp16+dotprod", "isa": "neon-dotprod"},  # before architecture was recorded
    {"arch": "native", "isa": "native", "architecture": "aarch64"},
], ids=["baseline", "arch-alone", "native"])
def test_an_aarch64_package_on_x86_names_aarch64(package, tmp_path, monkeypatch, target):
    other = with_target(package, tmp_path / "a64.pt2", **target)
    on(monkeypatch, "x86_64", AVX2)
    with pytest.raises(aotc.PackageError, match=r"was compiled for aarch64 \(.*\): it runs on an "
                                                r"aarch64 machine, and this is x86_64"):
        aotc.load_package(other)


def test_an_x86_package_on_aarch64_names_x86_64(package, monkeypatch):
    on(monkeypatch, "aarch64", A53)
    with pytest.raises(aotc.PackageError, match=r"was compiled for x86_64 \(x86-64.*\): it runs "
                                                r"on an x86_64 machine, and this is aarch64"):
        aotc.load_package(package)


@pytest.mark.parametrize("machine, flags, target, advice", [
    ("aarch64", A53, {"arch": "armv8.2-a+fp16+dotprod", "isa": "neon-dotprod",
                      "architecture": "aarch64"}, "options={'isa': 'neon'} for"),
    ("x86_64", AVX2, {"arch": "x86-64-v4", "isa": "avx512"}, "options={'isa': 'avx2'} (or 'sse2')"),
    ("x86_64", frozenset({"sse2"}), {"arch": "x86-64-v3", "isa": "avx2"}, "options={'isa': 'sse2'} "),
], ids=["neon", "avx2", "sse2"])
def test_a_cpu_below_the_level_is_told_the_levels_it_runs(package, tmp_path, monkeypatch, machine,
                                                          flags, target, advice):
    other = with_target(package, tmp_path / "high.pt2", **target)
    on(monkeypatch, machine, flags)
    with pytest.raises(aotc.PackageError, match=rf"this CPU lacks \[.*\]\. Recompile with "
                                                rf"{re.escape(advice)}"):
        aotc.load_package(other)


def test_a_package_records_every_feature_its_code_needs(package):
    reader = PackageReader(package)
    target = reader.metadata("model")["target"]
    reader.close()
    level = target_of_arch(target["arch"])
    assert level is not None
    assert target["cpu_features"] == " ".join(sorted(level.features))


@pytest.mark.parametrize("target, lacks", [
    # the recorded list, not the arch's features, is what counts
    ({"arch": "x86-64-v4", "isa": "avx512", "cpu_features": "avx2 avx512f made_up"},
     "['avx512f', 'made_up']. Recompile with options={'isa': 'avx2'}"),
    ({"arch": "x86-64-v3", "isa": "avx2", "precision": "bf16", "features": "avx512_bf16",
      "cpu_features": "avx2 avx512_bf16 bmi2 fma"},
     "['avx512_bf16']. Recompile with options={'precision': 'fp32'}"),
    # written before cpu_features: the arch's features and the extra ones
    ({"arch": "x86-64-v4", "isa": "avx512"},
     "['avx512bw', 'avx512dq', 'avx512f', 'avx512vl']. Recompile with options={'isa': 'avx2'}"),
    ({"arch": "x86-64-v3", "isa": "avx2", "precision": "bf16", "features": "avx512_bf16"},
     "['avx512_bf16']. Recompile with options={'precision': 'fp32'}"),
], ids=["recorded", "recorded-bf16", "old-package", "old-package-bf16"])
def test_the_recorded_cpu_features_are_checked(package, tmp_path, monkeypatch, target, lacks):
    other = with_target(package, tmp_path / "needs.pt2", architecture="x86_64", **target)
    on(monkeypatch, "x86_64", AVX2)
    with pytest.raises(aotc.PackageError, match=rf"this CPU lacks {re.escape(lacks)}"):
        aotc.load_package(other)


def test_a_package_whose_recorded_features_the_cpu_has_loads(package, tmp_path, monkeypatch):
    other = with_target(package, tmp_path / "v4.pt2", arch="x86-64-v4", isa="avx512",
                        architecture="x86_64", cpu_features="avx2")
    on(monkeypatch, "x86_64", AVX2 | host.cpu_flags())
    aotc.load_package(other)


def test_an_unknown_architecture_is_a_damaged_package(package, tmp_path):
    other = with_target(package, tmp_path / "rv.pt2", arch="x86-64", isa="sse2",
                        architecture="riscv64")
    with pytest.raises(aotc.PackageError, match=r"'target.architecture' is 'riscv64'; expected one "
                                                r"of x86_64, aarch64"):
        aotc.load_package(other)
