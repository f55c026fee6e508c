"""The C/C++ runtime against the Python runtime: the examples, the C API program, models with
two inputs and tuple outputs, several models in one package, threads, errors, ldd and size,
and AddressSanitizer runs that include the error paths."""
from __future__ import annotations

import os
import re
import subprocess
import zipfile

import numpy as np
import pytest
import torch
from cpp_builds import example_input
from raw_tensors import read_raw, write_raw

import aotc
from aotc.runtime import wait_policy
from models import ReadmeModel

ASAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:halt_on_error=1"}


def run(cmd, cwd=None, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def printed_batches(stdout: str) -> dict[int, np.ndarray]:
    """{batch: values} from a line 'batch N: [Tensor float32 [N, 1]] v v ...' and the indented
    lines that follow it."""
    found: dict[int, list[float]] = {}
    current = None
    for line in stdout.splitlines():
        m = re.match(r"batch (\d+):(.*)", line)
        if m:
            current = found.setdefault(int(m.group(1)), [])
            line = re.sub(r"Tensor \w+ \[[^\]]*\]", "", m.group(2))
        elif not line.startswith(" "):
            current = None
        if current is not None:
            current.extend(float(v) for v in line.split())
    return {b: np.array(v, dtype=np.float32) for b, v in found.items()}


def check_against_python(stdout: str, package) -> None:
    model = aotc.load_package(package)
    batches = printed_batches(stdout)
    assert sorted(batches) == [1, 8], stdout
    for batch, values in batches.items():
        want = model(example_input(batch)).reshape(-1)
        np.testing.assert_allclose(values, want, rtol=1e-6, atol=1e-7)


def test_plain_example_matches_python(plain_example):
    proc = run([plain_example / "inference"], cwd=plain_example)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "batch 8: Tensor float32 [8, 1]" in proc.stdout and "batch 1: Tensor float32 [1, 1]" in proc.stdout
    check_against_python(proc.stdout, plain_example / "model.pt2")


def test_torch_adapter_example_matches_python(torch_example):
    proc = run([torch_example / "inference"], cwd=torch_example)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_against_python(proc.stdout, torch_example / "model.pt2")


def test_no_libtorch_or_python_and_a_small_runtime(plain_example):
    for binary in (plain_example / "inference", plain_example / "libaotc_runtime.so"):
        proc = run(["ldd", binary])
        assert proc.returncode == 0, proc.stderr
        for banned in ("libtorch", "libc10", "libpython"):
            assert banned not in proc.stdout, f"{binary.name} links {banned}:\n{proc.stdout}"
    assert "libaotc_runtime.so" in run(["ldd", plain_example / "inference"]).stdout
    assert (plain_example / "libaotc_runtime.so").stat().st_size <= 200 * 1024


def damage(package, tmp_path):
    """A copy of the package with one byte of model.so flipped."""
    data = bytearray(package.read_bytes())
    with zipfile.ZipFile(package) as zf:
        info = zf.getinfo("aotc/model/model.so")
    name_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    data[info.header_offset + 30 + name_len + extra_len + 1000] ^= 0xFF
    bad = tmp_path / "damaged.pt2"
    bad.write_bytes(bytes(data))
    with pytest.raises(aotc.PackageError, match="corrupt"):  # the Python loader refuses it too
        aotc.load_package(bad)
    return bad


def test_c_api_program(test_programs, plain_example, tmp_path):
    package = plain_example / "model.pt2"
    proc = run([test_programs / "capi_test", package, damage(package, tmp_path)])
    assert proc.returncode == 0 and "\n0 failed" in proc.stdout, proc.stdout + proc.stderr
    assert "FAILED" not in proc.stdout
    check_against_python(proc.stdout, package)


def run_model(programs, package, name, inputs, tmp_path, *flags, env=None):
    out = tmp_path / f"out-{name}"
    out.mkdir(exist_ok=True)
    files = [write_raw(tmp_path / f"in{k}.raw", x) for k, x in enumerate(inputs)]
    proc = run([programs / "run_model", package, name, out, *files, *flags], env=env)
    outputs = sorted(out.glob("out*.raw"))
    return proc, [read_raw(p) for p in outputs]


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 4)

    def forward(self, x, idx):
        y = self.proj(x)
        return torch.softmax(y, dim=-1), (idx * 2 + 1)


@pytest.fixture(scope="module")
def two_inputs(tmp_path_factory):
    torch.manual_seed(0)
    rows = torch.export.Dim("rows", min=1, max=64)
    with torch.no_grad():
        ep = torch.export.export(TwoInputs().eval(), (torch.randn(5, 6), torch.arange(3)),
                                 dynamic_shapes={"x": {0: rows}, "idx": None})
    return aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("two") / "two.pt2")


def test_two_inputs_and_a_tuple_output(test_programs, two_inputs, tmp_path):
    x = np.random.default_rng(0).standard_normal((7, 6), dtype=np.float32)
    idx = np.array([3, -1, 4], dtype=np.int64)
    proc, outs = run_model(test_programs, two_inputs, "model", [x, idx], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "input x float32 [" in proc.stdout and "input idx int64 [3]" in proc.stdout
    assert "constant proj.weight" in proc.stdout and ", 64]" in proc.stdout
    want = aotc.load_package(two_inputs)(x, idx)
    assert len(outs) == len(want) == 2
    for got, expected in zip(outs, want):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
        assert got.dtype == expected.dtype


@pytest.mark.parametrize("bad, message", [
    (lambda x, idx: [x], "InputError: expected 2 inputs, got 1"),
    (lambda x, idx: [x.astype(np.float64), idx], "InputError: input 'x': expected dtype float32"),
    (lambda x, idx: [x[0], idx], "InputError: input 'x': expected rank 2, got 1"),
    (lambda x, idx: [np.zeros((65, 6), np.float32), idx], "outside the allowed range [0, 64]"),
    (lambda x, idx: [x, idx[:2]], "input 'idx': dim 0 is 2, expected 3"),
])
def test_input_errors_are_typed(test_programs, two_inputs, tmp_path, bad, message):
    x, idx = np.zeros((2, 6), np.float32), np.arange(3)
    proc, outs = run_model(test_programs, two_inputs, "model", bad(x, idx), tmp_path)
    assert proc.returncode == 3 and message in proc.stdout, proc.stdout + proc.stderr
    assert outs == []


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=1024)
    with torch.no_grad():
        mlp = torch.export.export(ReadmeModel().eval(), (torch.randn(8, 10),),
                                  dynamic_shapes={"x": {0: batch}})
        two = torch.export.export(TwoInputs().eval(), (torch.randn(5, 6), torch.arange(3)))
    path = tmp_path_factory.mktemp("multi") / "multi.pt2"
    return aotc.compile_and_package({"mlp": mlp, "two": two}, package_path=path)


@pytest.mark.parametrize("flags", [(), ("--buffer",)], ids=["path", "buffer"])
def test_models_of_one_package_by_name(test_programs, two_models, tmp_path, flags):
    x = example_input(8)
    proc, outs = run_model(test_programs, two_models, "mlp", [x], tmp_path, *flags)
    assert proc.returncode == 0 and "model_name mlp" in proc.stdout, proc.stdout + proc.stderr
    np.testing.assert_allclose(outs[0], aotc.load_package(two_models, "mlp")(x), rtol=1e-6)
    x2 = np.random.default_rng(1).standard_normal((5, 6), dtype=np.float32)
    idx = np.arange(3)
    proc, outs = run_model(test_programs, two_models, "two", [x2, idx], tmp_path, *flags)
    assert proc.returncode == 0 and "model_name two" in proc.stdout, proc.stdout + proc.stderr
    for got, want in zip(outs, aotc.load_package(two_models, "two")(x2, idx)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    proc, _ = run_model(test_programs, two_models, "three", [x], tmp_path, *flags)
    assert proc.returncode == 4 and "has no model named 'three'; it holds ['mlp', 'two']" in proc.stdout


class CountCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        self.total[1:] += x[1:]
        return x * self.count, self.total.clone()


def test_state_from_cpp(test_programs, tmp_path):
    """buffer_names, get_buffer, reset_buffers and set_buffer of the C++ API, against eager."""
    x = torch.tensor([1.0, 2.0, -1.0])
    ep = torch.export.export(CountCalls(), (x,))
    package = aotc.compile_and_package(ep, package_path=tmp_path / "state.pt2")
    proc, outs = run_model(test_programs, package, "model", [x.numpy()], tmp_path, "--calls", "5",
                           "--threads", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "buffer count\nbuffer total" in proc.stdout
    eager = ep.module()
    for _ in range(5):
        want = eager(x)
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w.numpy())
    out = tmp_path / "out-model"
    assert int(read_raw(out / "state0.raw")) == 5
    np.testing.assert_allclose(read_raw(out / "state1.raw"), eager.total.numpy())
    for j, w in enumerate(CountCalls()(x)):  # after reset_buffers: a first call
        np.testing.assert_allclose(read_raw(out / f"reset{j}.raw"), w.numpy())
    for j, w in enumerate(eager(x)):  # the saved state set back: the sixth call
        np.testing.assert_allclose(read_raw(out / f"restored{j}.raw"), w.numpy())
    # two runners share the loader's one state: 100 calls from two threads all count, once
    assert int(read_raw(out / "threaded0.raw")) == 6 + 100
    np.testing.assert_allclose(read_raw(out / "threaded1.raw"), [0.0, 2.0 * 106, -1.0 * 106])


class RowsWithPositiveSum(torch.nn.Module):
    def forward(self, x):
        s = x.sum(1)
        y = x[s > 0]
        return s, y * 2, torch.unique(y.round())


def test_sizes_bound_during_the_run_from_cpp(test_programs, tmp_path):
    """Outputs sized by a count that a reduction decides: the C++ loader sizes them through
    aotc_output_sizes (which runs the kernels up to the count) and matches eager."""
    ep = torch.export.export(RowsWithPositiveSum(), (torch.randn(7, 3),))
    package = aotc.compile_and_package(ep, package_path=tmp_path / "dd.pt2")
    for seed, shift in enumerate((-9.0, 0.0, 0.5, 9.0)):
        x = torch.randn(7, 3, generator=torch.Generator().manual_seed(seed)) + shift
        proc, outs = run_model(test_programs, package, "model", [x.numpy()], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        want = ep.module()(x)
        assert len(outs) == len(want)
        for got, w in zip(outs, want):
            np.testing.assert_allclose(got, w.numpy(), rtol=1e-6, atol=1e-6)


def test_one_loader_from_several_threads(test_programs, plain_example, tmp_path):
    proc, outs = run_model(test_programs, plain_example / "model.pt2", "model",
                           [example_input(64)], tmp_path, "--threads", "4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "threads 4 mismatches 0" in proc.stdout


def assert_asan_clean(proc):
    text = proc.stdout + proc.stderr
    assert "AddressSanitizer" not in text and "LeakSanitizer" not in text, text
    assert proc.returncode == 0, text


def test_address_sanitizer(test_programs_asan, plain_example_asan, two_inputs, tmp_path):
    package = plain_example_asan / "model.pt2"
    assert_asan_clean(run([plain_example_asan / "inference"], cwd=plain_example_asan, env=ASAN_ENV))
    proc = run([test_programs_asan / "capi_test", package, damage(package, tmp_path)], env=ASAN_ENV)
    assert_asan_clean(proc)
    assert "\n0 failed" in proc.stdout
    proc, _ = run_model(test_programs_asan, package, "model", [example_input(16)], tmp_path,
                        "--threads", "2", "--buffer", env=ASAN_ENV)
    assert_asan_clean(proc)
    # a C++ exception path: the wrong dtype is refused and everything is still freed
    proc, _ = run_model(test_programs_asan, two_inputs, "model",
                        [np.zeros((2, 6)), np.arange(3)], tmp_path, env=ASAN_ENV)
    assert "InputError" in proc.stdout and proc.returncode == 3
    assert "AddressSanitizer" not in proc.stderr and "LeakSanitizer" not in proc.stderr, proc.stderr
    # independent states on two threads, a StateLimitError thrown, and the profile read
    x = torch.tensor([1.0, 2.0, -1.0])
    states = aotc.compile_and_package(torch.export.export(CountCalls(), (x,)),
                                      package_path=tmp_path / "states.pt2")
    proc, _ = run_model(test_programs_asan, states, "model", [x.numpy()], tmp_path, "--states",
                        "2", "--calls", "2", "--threads", "2", "--profile", env=ASAN_ENV)
    assert_asan_clean(proc)
    assert "StateLimitError" in proc.stdout


@pytest.mark.parametrize("change, lacks", [
    # what the package records in target.cpu_features is what counts, not its arch
    ({"cpu_features": "made_up_feature"},
     "; this CPU lacks made_up_feature. Recompile with options={'isa': 'avx2'}"),
    ({"precision": "bf16", "features": "no_such_cpu_feature", "cpu_features": "no_such_cpu_feature"},
     " with precision 'bf16'; this CPU lacks no_such_cpu_feature. Recompile with "
     "options={'precision': 'fp32'}"),
    # written before cpu_features: the arch's features and target.features (precision "bf16"
    # records avx512_bf16)
    ({"precision": "bf16", "features": "no_such_cpu_feature", "cpu_features": None},
     " with precision 'bf16'; this CPU lacks no_such_cpu_feature"),
], ids=["recorded", "recorded-bf16", "old-package-bf16"])
def test_package_needing_a_missing_cpu_feature_is_refused(test_programs, plain_example, tmp_path,
                                                          change, lacks):
    from aotc.package.format import ModelFiles, PackageReader, write_package

    reader = PackageReader(plain_example / "model.pt2")
    meta = reader.metadata("model")
    weights = bytes(reader.weights("model", meta)[0])
    library = reader.library("model", meta)
    reader.close()
    target = {**meta["target"], **change}
    meta["target"] = {k: v for k, v in target.items() if v is not None}
    package = write_package(tmp_path / "needs.pt2", {"model": ModelFiles(meta, library, "",
                                                                         weights)})
    proc, _ = run_model(test_programs, package, "model", [example_input(2)], tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert lacks in proc.stdout
    with pytest.raises(aotc.PackageError, match="lacks.*" + lacks.split("lacks ")[1].split(".")[0]):
        aotc.load_package(package)


@pytest.mark.parametrize("env, spin", [({}, wait_policy.SPIN_COUNT),
                                       ({"OMP_WAIT_POLICY": "passive"}, "0"),
                                       ({"GOMP_SPINCOUNT": "12345"}, "12345")],
                         ids=["runtime", "user-policy", "user-spin"])
def test_wait_policy_as_the_python_runtime(test_programs, plain_example, tmp_path, env, spin):
    # libgomp prints the settings it took when it loads (with the model library)
    clean = {k: v for k, v in os.environ.items() if k not in wait_policy.USER_VARIABLES}
    files = [write_raw(tmp_path / "in0.raw", example_input(8))]
    proc = subprocess.run([str(test_programs / "run_model"), str(plain_example / "model.pt2"),
                           "model", str(tmp_path), *files], capture_output=True, text=True,
                          timeout=120, env={**clean, **env, "OMP_DISPLAY_ENV": "verbose"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(rf"^\s*GOMP_SPINCOUNT = '{spin}'", proc.stderr, re.MULTILINE), proc.stderr


def test_profile_from_cpp(test_programs, tmp_path):
    """The C++ loader's profile switch and counts: every step of every call, named as the
    library's own table names them, and zeroed after a reading that resets."""
    torch.manual_seed(0)
    x = torch.randn(3, 10)
    ep = torch.export.export(ReadmeModel().eval(), (x,))
    package = aotc.compile_and_package(ep, package_path=tmp_path / "p.pt2")
    proc, outs = run_model(test_programs, package, "model", [x.numpy()], tmp_path, "--calls", "4",
                           "--profile")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(outs[0], ep.module()(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("profile ")]
    steps = aotc.load_package(package).profiler().steps
    assert [ln[1] for ln in lines] == [s.kernel for s in steps]
    assert all(ln[3] == "4" and int(ln[5]) > 0 for ln in lines)  # runs, total ns
    assert float(lines[0][7]) == 2 * 3 * 16 * 10  # fc1's flops at batch 3
    assert "profile not reset" not in proc.stdout


def test_independent_states_from_cpp(test_programs, tmp_path):
    """ModelPackageLoader::new_state: each state its own counter (k + 1 calls on state k,
    then 20 more on each from its own thread, two runners), the limit a StateLimitError,
    reset on one state, and the loader's own state untouched by them all."""
    x = torch.tensor([1.0, 2.0, -1.0])
    ep = torch.export.export(CountCalls(), (x,))
    package = aotc.compile_and_package(ep, package_path=tmp_path / "states.pt2")
    proc, outs = run_model(test_programs, package, "model", [x.numpy()], tmp_path, "--states", "3",
                           "--calls", "2", "--threads", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "StateLimitError: the loader holds 3 states already" in proc.stdout
    out = tmp_path / "out-model"
    for k in range(3):
        assert int(read_raw(out / f"seq{k}_0.raw")) == k + 1
        np.testing.assert_allclose(read_raw(out / f"seq{k}_1.raw"), [0.0, 2 * (k + 1), -(k + 1)])
        assert int(read_raw(out / f"seqmore{k}_0.raw")) == k + 21
    assert int(read_raw(out / "seqreset.raw")) == 0
    assert int(read_raw(out / "state0.raw")) == 2  # the loader's own: its two calls only
