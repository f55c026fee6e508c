"""AOTC_LOGS turns on one logger per artifact (as TORCH_LOGS does); AOTC_LOG and
AOTC_DEBUG_DIR keep working."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import torch

import aotc
from aotc.logs import ARTIFACTS, STAGE_ARTIFACT, configure_logging, parse_logs
from models import ReadmeModel


def test_parse_logs():
    assert parse_logs("graph,+perf") == {"graph": logging.INFO, "perf": logging.DEBUG}
    assert parse_logs("all") == dict.fromkeys(ARTIFACTS, logging.INFO)
    assert parse_logs("+all") == dict.fromkeys(ARTIFACTS, logging.DEBUG)
    with pytest.warns(UserWarning, match="unknown artifact 'grpah'"):
        assert parse_logs("grpah") == {}


def test_every_pipeline_stage_has_an_artifact(tmp_path):
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    aotc.compile_and_package(ep, tmp_path / "m.pt2", {"debug_dir": str(tmp_path / "dbg")})
    stages = {p.stem.split("_", 1)[1] for p in (tmp_path / "dbg").rglob("[0-9][0-9]_*")}
    assert {"import", "codegen", "build", "weights", "metadata"} <= stages
    assert stages <= set(STAGE_ARTIFACT)
    assert set(STAGE_ARTIFACT.values()) <= set(ARTIFACTS)
    assert STAGE_ARTIFACT["weights"] == STAGE_ARTIFACT["metadata"] == "package"


@pytest.fixture
def restore_loggers():
    names = ["aotc"] + [f"aotc.{a}" for a in ARTIFACTS]
    saved = {n: logging.getLogger(n).level for n in names}
    handlers = list(logging.getLogger("aotc").handlers)
    yield
    for n, level in saved.items():
        logging.getLogger(n).setLevel(level)
    logging.getLogger("aotc").handlers[:] = handlers


def test_each_artifact_has_its_logger(tmp_path, caplog, restore_loggers):
    configure_logging({"AOTC_LOGS": "ir,code,package,perf"})
    with torch.no_grad():
        ep = torch.export.export(ReadmeModel().eval(), (torch.randn(2, 10),))
    with caplog.at_level(logging.INFO, logger="aotc.code"):
        aotc.compile_and_package(ep, tmp_path / "m.pt2")
    by_logger: dict[str, str] = {}
    for r in caplog.records:
        by_logger[r.name] = by_logger.get(r.name, "") + r.getMessage()
    assert "after stage import" in by_logger["aotc.ir"] and "after stage dce" in by_logger["aotc.ir"]
    code = by_logger["aotc.code"]  # the model's own run, then the C ABI over it
    assert "int run(Model *m" in code and "#include \"aotc_model_abi.h\"" in code
    assert "stage build took" in by_logger["aotc.perf"] and "after stage build" in by_logger["aotc.perf"]
    package = by_logger["aotc.package"]
    assert "after stage weights" in package
    assert "after stage metadata" in package and '"format_version"' in package
    assert "aotc.graph" not in by_logger and "aotc.fusion" not in by_logger
    assert "aotc.schedule" not in by_logger


def test_environment_in_a_fresh_process(tmp_path):
    script = (
        "import torch, aotc\n"
        "from model import Model\n"
        "ep = torch.export.export(Model().eval(), (torch.randn(2, 10),))\n"
        f"aotc.compile_and_package(ep, {str(tmp_path / 'm.pt2')!r})\n")
    env = {**os.environ, "AOTC_LOGS": "graph,schedule", "AOTC_LOG": "info",
           "AOTC_DEBUG_DIR": str(tmp_path / "dbg")}
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    env["PYTHONPATH"] = os.pathsep.join([examples, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "[aotc.graph INFO]" in err and "torch.ops.aten.linear.default" in err
    assert "[aotc.schedule INFO]" in err and "kernel 0" in err
    assert "[aotc.perf INFO]" in err and "compiled model 'model'" in err  # AOTC_LOG=info
    assert "[aotc.code" not in err and "[aotc.ir" not in err
    assert (tmp_path / "dbg" / "model" / "07_codegen.cpp").exists()
