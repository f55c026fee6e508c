"""The loaded model under stress: many threads, two processes, a thousand loads, odd
programs (no tensor input, empty constants), packages for a CPU this one is not, and
compiles that fail next to a package that must survive them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import aotc
from aotc.target import host
from models import ReadmeModel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(8, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    path = aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("rel") / "m.pt2")
    return ep, path


def test_eight_threads_two_hundred_calls_each(readme):
    ep, path = readme
    model = aotc.load_package(path, num_runners=3)
    xs = [torch.randn(b, 10) for b in (1, 7, 64, 300, 8, 1024, 2, 33)]
    with torch.no_grad():
        expected = [ep.module()(x) for x in xs]

    def worker(k: int) -> int:
        bad = 0
        for i in range(200):
            j = (k + i) % len(xs)
            bad += not torch.equal(model(xs[j]), model(xs[j])) or not torch.allclose(
                model(xs[j]), expected[j], rtol=1.3e-6, atol=1e-5)
        return bad

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(worker, range(8))) == [0] * 8
    # eight callers, at most three model objects (each with its own arena and threads)
    assert model.num_runners == 3 and len(model._pool) <= 3


def test_callers_beyond_the_pool_wait_for_a_runner(readme):
    _, path = readme
    model = aotc.load_package(path)  # one runner by default
    x = torch.randn(512, 10)
    barrier = threading.Barrier(4)

    def call(_):
        barrier.wait()
        return [model(x) for _ in range(20)]

    with ThreadPoolExecutor(4) as pool:
        results = [r for rs in pool.map(call, range(4)) for r in rs]
    assert len(model._pool) == 1
    assert all(torch.equal(r, results[0]) for r in results)
    with pytest.raises(ValueError, match="num_runners must be a positive integer"):
        aotc.load_package(path, num_runners=0)


RUN_ONE = r"""
import sys
import numpy as np
import aotc.runtime as rt
model = rt.load_package(sys.argv[1])
x = np.load(sys.argv[2])
out = [model(x) for _ in range(50)]
assert all(np.array_equal(o, out[0]) for o in out)
np.save(sys.argv[3], out[0])
"""


def test_two_processes_load_one_package_at_once(readme, tmp_path):
    ep, path = readme
    x = torch.randn(37, 10)
    np.save(tmp_path / "x.npy", x.numpy())
    env = {**os.environ, "AOTC_CACHE_DIR": str(tmp_path / "fresh-cache")}  # both extract anew
    procs = [subprocess.Popen([sys.executable, "-c", RUN_ONE, str(path), str(tmp_path / "x.npy"),
                               str(tmp_path / f"out{k}.npy")], env=env, stderr=subprocess.PIPE)
             for k in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    with torch.no_grad():
        expected = ep.module()(x)
    for k in range(2):
        torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / f"out{k}.npy")), expected)


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def test_a_thousand_loads_leave_no_files_and_no_growth(readme, tmp_path, monkeypatch):
    _, path = readme
    temp = tmp_path / "tmp"  # this process's temporary folder, watched for leftovers
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    # a cache of its own: another test process of the checkout may write the shared one
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path / "cache"))
    x = np.ones((4, 10), np.float32)
    for _ in range(100):  # warm up: the library is extracted once, allocators settle
        aotc.load_package(path)(x)
    cache = host.cache_dir()
    files_before, temp_before = _tree(cache), {p.name for p in temp.iterdir()}
    rss_before = _rss_kb()
    for _ in range(1000):
        model = aotc.load_package(path)
        model(x)
        del model
    grown = _rss_kb() - rss_before
    assert _tree(cache) == files_before
    assert {p.name for p in temp.iterdir()} - temp_before == set()
    assert grown < 20_000, f"resident memory grew by {grown} kB over 1,000 loads"


class NoInputs(torch.nn.Module):
    def forward(self):
        return torch.arange(6, dtype=torch.float32).reshape(2, 3) * 2


def test_program_without_tensor_inputs_returns_torch_when_torch_is_used(tmp_path):
    ep = torch.export.export(NoInputs(), ())
    model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "n.pt2"))
    out = model()
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, ep.module()())


class EmptyParts(torch.nn.Module):
    """A squeeze-excite-like block whose bottleneck Linear has 0 features, and a (0, 0)
    buffer returned as an output."""

    def __init__(self):
        super().__init__()
        self.squeeze = torch.nn.Linear(8, 0)
        self.register_buffer("nothing", torch.zeros(0, 0))

    def forward(self, x):
        return x * torch.sigmoid(self.squeeze(x).sum(-1, keepdim=True)), self.nothing


def test_zero_size_constants_load_and_run(tmp_path):
    with torch.no_grad():
        ep = torch.export.export(EmptyParts().eval(), (torch.randn(2, 8),))
        model = aotc.load_package(aotc.compile_and_package(ep, package_path=tmp_path / "z.pt2"))
        x = torch.randn(2, 8)
        torch.testing.assert_close(model(x), ep.module()(x))


def test_package_for_a_cpu_this_one_is_not_names_the_missing_features(readme, tmp_path, monkeypatch):
    _, path = readme
    forced = tmp_path / "avx512.pt2"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(forced, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("metadata.json"):
                meta = json.loads(data)
                meta["target"] = {"device": "cpu", "arch": "x86-64-v4", "isa": "avx512"}
                data = json.dumps(meta).encode()
            zout.writestr(info, data)
    avx2_only = frozenset({"sse2", "avx", "avx2", "fma", "bmi2"})
    monkeypatch.setattr(host, "cpu_flags", lambda: avx2_only)
    with pytest.raises(aotc.PackageError, match=r"lacks \['avx512bw', 'avx512dq', 'avx512f', "
                                                r"'avx512vl'\]"):
        aotc.load_package(forced)


class Broken(torch.nn.Module):
    def forward(self, x):
        return torch.fake_quantize_per_tensor_affine(x, 0.1, 0, 0, 255)  # no lowering


def test_failed_compile_leaves_the_existing_package_untouched(readme, tmp_path):
    ep, path = readme
    target = tmp_path / "keep.pt2"
    target.write_bytes(Path(path).read_bytes())
    before = target.read_bytes()
    broken = torch.export.export(Broken(), (torch.randn(3, 3),))
    with pytest.raises(aotc.UnsupportedOperatorError):
        aotc.compile_and_package(broken, package_path=target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.pt2"]
    x = torch.randn(5, 10)
    torch.testing.assert_close(aotc.load_package(target)(x), ep.module()(x))
