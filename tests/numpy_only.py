"""Run a package in a child process where torch and sympy cannot be imported."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

# the start of every numpy-only child script: torch and sympy cannot be imported
BLOCK_TORCH = textwrap.dedent("""
    import sys, json
    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch.") or name == "sympy":
                raise ImportError(f"{name} is blocked in this run")
    sys.meta_path.insert(0, NoTorch())
""")

SCRIPT = BLOCK_TORCH + textwrap.dedent("""
    import numpy as np
    from aotc.runtime import load_package
    model = load_package(sys.argv[1])
    folder = sys.argv[2]
    calls = json.loads(open(folder + "/calls.json").read())
    for c, n_in in enumerate(calls):
        args = [np.load(f"{folder}/in_{c}_{k}.npy") for k in range(n_in)]
        out = model(*args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for k, o in enumerate(outs):
            np.save(f"{folder}/out_{c}_{k}.npy", np.asarray(o))
        for k, a in enumerate(args):  # after the call: inputs the model updates in place
            np.save(f"{folder}/after_{c}_{k}.npy", a)
        json.dump(len(outs), open(f"{folder}/n_out_{c}.json", "w"))
    print(json.dumps({"torch_loaded": "torch" in sys.modules}))
""")


def run_without_torch(package: str | Path, calls: list[list[np.ndarray]], folder: Path,
                      with_inputs: bool = False) -> list:
    """Each call's inputs -> its outputs (numpy), all calls on one loaded model; with
    `with_inputs`, (outputs, the inputs as the call left them) per call."""
    folder.mkdir(parents=True, exist_ok=True)
    for c, args in enumerate(calls):
        for k, a in enumerate(args):
            np.save(folder / f"in_{c}_{k}.npy", a)
    (folder / "calls.json").write_text(json.dumps([len(a) for a in calls]))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(package), str(folder)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"torch_loaded": False}
    results = []
    for c in range(len(calls)):
        n = json.loads((folder / f"n_out_{c}.json").read_text())
        outs = [np.load(folder / f"out_{c}_{k}.npy") for k in range(n)]
        after = [np.load(folder / f"after_{c}_{k}.npy") for k in range(len(calls[c]))]
        results.append((outs, after) if with_inputs else outs)
    return results
