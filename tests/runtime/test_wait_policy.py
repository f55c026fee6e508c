"""The runtime's OpenMP wait policy: a short GOMP_SPINCOUNT when it loads libgomp, the user's
OMP_WAIT_POLICY or GOMP_SPINCOUNT when set, nothing when libgomp is loaded already. libgomp
prints the settings it took when OMP_DISPLAY_ENV=verbose; each case runs in a fresh process
without torch (which would load libgomp itself)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
from numpy_only import BLOCK_TORCH

import aotc
from aotc.runtime import wait_policy
from models import ReadmeModel

SCRIPT = BLOCK_TORCH + textwrap.dedent("""
    import ctypes, os
    if sys.argv[2] == "gomp-first":
        ctypes.CDLL("libgomp.so.1")
    import numpy as np
    from aotc.runtime import load_package
    model = load_package(sys.argv[1], num_threads=2)
    y = model(np.ones((64, 10), np.float32))
    print(json.dumps({"after": os.environ.get("GOMP_SPINCOUNT"), "rows": int(y.shape[0]),
                      "torch_loaded": "torch" in sys.modules}))
""")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=256)
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(8, 10),),
                                 dynamic_shapes={"x": {0: batch}})
    return aotc.compile_and_package(ep, package_path=tmp_path_factory.mktemp("wp") / "m.pt2")


def run_child(package, mode: str = "plain", **env) -> tuple[dict, dict]:
    """(what libgomp printed it took, the child's report)."""
    clean = {k: v for k, v in os.environ.items() if k not in wait_policy.USER_VARIABLES}
    clean.update(env, OMP_DISPLAY_ENV="verbose")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(package), mode], env=clean,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    settings = dict(re.findall(r"^\s*(OMP_WAIT_POLICY|GOMP_SPINCOUNT) = '([^']*)'", proc.stderr,
                               re.MULTILINE))
    assert "GOMP_SPINCOUNT" in settings, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["rows"] == 64 and not report["torch_loaded"]
    return settings, report


def test_the_runtime_sets_a_short_spin_and_restores_the_environment(package):
    settings, report = run_child(package)
    assert settings["GOMP_SPINCOUNT"] == wait_policy.SPIN_COUNT
    assert report["after"] is None


@pytest.mark.parametrize("policy, spin", [("passive", "0"), ("active", "30000000000")])
def test_the_users_wait_policy_wins(package, policy, spin):
    settings, report = run_child(package, OMP_WAIT_POLICY=policy)
    assert settings == {"OMP_WAIT_POLICY": policy.upper(), "GOMP_SPINCOUNT": spin}
    assert report["after"] is None


def test_the_users_spin_count_wins(package):
    settings, report = run_child(package, GOMP_SPINCOUNT="12345")
    assert settings["GOMP_SPINCOUNT"] == "12345"
    assert report["after"] == "12345"


def test_a_libgomp_loaded_before_keeps_its_settings(package):
    settings, report = run_child(package, "gomp-first")
    assert settings["GOMP_SPINCOUNT"] == "300000"  # libgomp's own default
    assert report["after"] is None


def test_spin_setting_leaves_the_environment_alone_when_it_cannot_apply(monkeypatch):
    for name in wait_policy.USER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with wait_policy.spin_setting(loaded=lambda: True) as applied:
        assert not applied and "GOMP_SPINCOUNT" not in os.environ
    with wait_policy.spin_setting(loaded=lambda: False) as applied:
        assert applied and os.environ["GOMP_SPINCOUNT"] == wait_policy.SPIN_COUNT
    assert "GOMP_SPINCOUNT" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    with wait_policy.spin_setting(loaded=lambda: False) as applied:
        assert not applied and "GOMP_SPINCOUNT" not in os.environ

