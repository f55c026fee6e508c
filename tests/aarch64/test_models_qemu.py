"""Models compiled with options={"target": "aarch64"} (and the neon-dotprod level), run under
qemu-user by tests/cpp/run_model.cpp cross-built with the CMake package's toolchain file, and
compared with eager on the host: an MLP, a CNN with a depthwise convolution, an attention
block, sort and cumsum, linear algebra, and an MLP with a dynamic batch at two sizes."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import torch
from cross_tools import BUILDS, LEVELS, ROOT, needs_tools, run_under_qemu
from raw_tensors import read_raw, write_raw

import aotc
from aotc.package.format import PackageReader

CMAKE_PREFIX = ROOT / "src" / "aotc" / "share" / "cmake"
TOOLCHAIN = CMAKE_PREFIX / "aotc" / "aarch64-linux-gnu.cmake"
# the CPUs qemu emulates for the two levels
BASELINE, HIGHER = LEVELS["armv8-a"], LEVELS["armv8.2-a+fp16+dotprod"]

pytestmark = [needs_tools, pytest.mark.skipif(shutil.which("cmake") is None,
                                              reason="cmake is not installed")]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(20, 48), torch.nn.GELU(),
                                       torch.nn.Linear(48, 5))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class DepthwiseCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = torch.nn.Conv2d(8, 16, 1)
        self.head = torch.nn.Linear(16, 4)
        with torch.no_grad():  # statistics that are not the identity, folded into the stem
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = torch.nn.functional.relu6(self.pointwise(self.depthwise(x)))
        return self.head(x.mean(dim=(2, 3)))


class AttentionBlock(torch.nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).split(d, dim=-1)
        q, k, v = (y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(b, t, d))


class Activations(torch.nn.Module):
    """The exp-based activations of aotc_codegen.h (sigmoid and tanh from exp(-|x|)) on
    values wide enough to reach their flat tails."""

    def forward(self, x):
        x = 30 * x
        return (torch.nn.functional.silu(x), torch.sigmoid(x), torch.tanh(x),
                torch.nn.functional.gelu(x, approximate="tanh"))


class SortScan(torch.nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=-1, descending=True)
        return values.cumsum(dim=-1), indices, torch.cumsum(x, dim=0)


class Linalg(torch.nn.Module):
    """LU, Cholesky, triangular solves (kernels/linalg.cpp), singular values
    (linalg_svd.cpp), the exponential (linalg_expm.cpp) and LDL (linalg_ldl.cpp) on batched
    odd sizes."""

    def forward(self, a, b):
        a = a + 5 * torch.eye(a.shape[-1])
        spd = a @ a.mT
        return (torch.linalg.solve(a, b), torch.linalg.det(a), torch.linalg.cholesky(spd),
                torch.linalg.solve_triangular(a, b, upper=True), torch.linalg.inv(a),
                torch.linalg.svdvals(b), torch.linalg.matrix_exp(0.1 * a),
                torch.linalg.ldl_factor(spd - 3 * torch.eye(a.shape[-1]))[0])


def _inputs(*shapes: tuple[int, ...], seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(s, generator=g) for s in shapes)


# name -> (module, example inputs, dynamic shapes, the inputs each run gets)
BATCH = torch.export.Dim("batch", min=1, max=64)
MODELS = {
    "mlp": (MLP, _inputs((4, 20)), None, [_inputs((4, 20), seed=1)]),
    "cnn": (DepthwiseCNN, _inputs((2, 3, 12, 12)), None, [_inputs((2, 3, 12, 12), seed=1)]),
    "attention": (AttentionBlock, _inputs((2, 10, 32)), None, [_inputs((2, 10, 32), seed=1)]),
    "activations": (Activations, _inputs((4, 257)), None, [_inputs((4, 257), seed=1)]),
    "sort_scan": (SortScan, _inputs((6, 33)), None, [_inputs((6, 33), seed=1)]),
    "linalg": (Linalg, _inputs((3, 5, 5), (3, 5, 2)), None, [_inputs((3, 5, 5), (3, 5, 2), seed=1)]),
    "dynamic": (MLP, _inputs((4, 20)), {"x": {0: BATCH}},
                [_inputs((3, 20), seed=1), _inputs((17, 20), seed=2)]),
}


def _exported(name: str) -> torch.export.ExportedProgram:
    make, args, dynamic, _ = MODELS[name]
    torch.manual_seed(0)
    module = make().eval()
    with torch.no_grad():
        return torch.export.export(module, args, dynamic_shapes=dynamic)


@pytest.fixture(scope="module")
def programs() -> dict[str, torch.export.ExportedProgram]:
    return {name: _exported(name) for name in MODELS}


@pytest.fixture(scope="module")
def baseline_package(programs, tmp_path_factory):
    """Every model in one package for the aarch64 baseline (neon, armv8-a)."""
    path = tmp_path_factory.mktemp("a64") / "models.pt2"
    return aotc.compile_and_package(programs, path, options={"target": "aarch64"})


@pytest.fixture(scope="module")
def higher_package(programs, tmp_path_factory):
    path = tmp_path_factory.mktemp("a64") / "mlp-dotprod.pt2"
    return aotc.compile_and_package({"mlp": programs["mlp"]}, path,
                                    options={"target": "aarch64", "isa": "neon-dotprod"})


@pytest.fixture(scope="module")
def run_model():
    """tests/cpp/run_model.cpp, cross-built with aotc's CMake package and toolchain file."""
    out = BUILDS / "run_model"
    if not (out / "CMakeCache.txt").exists():
        configure = ["cmake", "-S", str(ROOT / "tests" / "cpp"), "-B", str(out),
                     f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", f"-DCMAKE_PREFIX_PATH={CMAKE_PREFIX}"]
        proc = subprocess.run(configure, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(["cmake", "--build", str(out), "-j", "2", "--target", "run_model"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "run_model"


def run_on_qemu(program, package, name, inputs, folder, cpu) -> tuple[subprocess.CompletedProcess,
                                                                       list[np.ndarray]]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [write_raw(folder / f"in{k}.raw", x.numpy()) for k, x in enumerate(inputs)]
    proc = run_under_qemu(program, str(package), name, str(folder), *files, cpu=cpu, timeout=300)
    return proc, [read_raw(p) for p in sorted(folder.glob("out*.raw"))]


def assert_matches_eager(ep, inputs, outputs) -> None:
    with torch.no_grad():
        expected = ep.module()(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        torch.testing.assert_close(torch.from_numpy(got.copy()), want, rtol=1e-4, atol=1e-5)


def test_the_package_holds_aarch64_libraries(baseline_package):
    reader = PackageReader(baseline_package)
    for name in MODELS:
        meta = reader.metadata(name)
        assert meta["target"] == {"device": "cpu", "arch": "armv8-a", "isa": "neon",
                                  "architecture": "aarch64", "cpu_features": "asimd fp"}
        assert reader.library(name, meta)[18:20] == (183).to_bytes(2, "little")  # EM_AARCH64
    reader.close()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_under_qemu_matches_eager(run_model, baseline_package, programs, tmp_path, name):
    for k, inputs in enumerate(MODELS[name][3]):
        proc, outputs = run_on_qemu(run_model, baseline_package, name, inputs, tmp_path / str(k),
                                    BASELINE)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert_matches_eager(programs[name], inputs, outputs)


def test_higher_level_runs_where_the_cpu_has_it(run_model, higher_package, programs, tmp_path):
    inputs = MODELS["mlp"][3][0]
    proc, outputs = run_on_qemu(run_model, higher_package, "mlp", inputs, tmp_path / "n1", HIGHER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_matches_eager(programs["mlp"], inputs, outputs)
    proc, _ = run_on_qemu(run_model, higher_package, "mlp", inputs, tmp_path / "a53", BASELINE)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert ("was compiled for armv8.2-a+fp16+dotprod (neon-dotprod); this CPU lacks asimddp "
            "asimdhp asimdrdm atomics fphp. Recompile with options={'target': 'aarch64'}") in proc.stdout
