"""Damaged packages, generated: every load succeeds or raises PackageError, every call on
a package that loaded succeeds or raises an aotc error, and nothing crashes the process.

Each package is loaded in a separate numpy-only worker process, so a crash is a failure
of the case that caused it. `make test` runs 200 cases; `make fuzz` 5,000
(AOTC_FUZZ_CASES). Cases are derandomized: the same every run.
"""
from __future__ import annotations

import json
import os
import zipfile

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aotc
from damage import DELETE, Worker, apply, json_values, metadata_paths
from models import ReadmeModel

CASES = int(os.environ.get("AOTC_FUZZ_CASES", "200"))
ENTRIES = ["archive_format", "aotc/version", "aotc/model/metadata.json", "aotc/model/model.so",
           "aotc/model/model.cpp", "aotc/model/weights.bin"]


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(3, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    path = tmp_path_factory.mktemp("fuzz") / "valid.pt2"
    aotc.compile_and_package(ep, package_path=path)
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("aotc/model/metadata.json"))
    return path, metadata_paths(meta), path.stat().st_size


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("worker"), dict(os.environ))
    yield w
    w.close()


def edits(paths: list[tuple], size: int):
    field = st.tuples(st.just("field"), st.sampled_from(paths),
                      st.one_of(json_values(st), st.just(DELETE)))
    entry = st.sampled_from(ENTRIES)
    structural = st.one_of(
        field, field,
        st.tuples(st.just("metadata_bytes"), st.binary(max_size=64)),
        st.tuples(st.just("drop"), entry),
        st.tuples(st.just("duplicate"), entry, st.binary(max_size=64)))
    byte_level = st.one_of(st.tuples(st.just("truncate"), st.integers(0, size - 1)),
                           st.tuples(st.just("flip"), st.integers(0, size - 1), st.integers(1, 255)))
    return st.tuples(st.lists(structural, max_size=3),
                     st.lists(byte_level, max_size=2)).map(lambda t: t[0] + t[1]).filter(bool)


def test_the_worker_loads_a_valid_package(valid, worker):
    assert worker.load(valid[0]) == "ok"


def test_damaged_packages_load_or_raise_package_error(valid, worker, tmp_path):
    path, paths, size = valid
    outcomes: dict[str, int] = {}

    @settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(edits(paths, size))
    def case(damage):
        bad = tmp_path / "bad.pt2"
        apply(path, bad, damage)
        result = worker.load(bad)
        kind = result.split(" ", 1)[0]
        outcomes[kind] = outcomes.get(kind, 0) + 1
        assert kind in ("ok", "ok-call-error", "PackageError"), f"{damage!r}: {result}"

    case()
    assert sum(outcomes.values()) >= CASES // 2, outcomes  # the sweep really ran
    assert outcomes.get("PackageError", 0) > 0, outcomes
