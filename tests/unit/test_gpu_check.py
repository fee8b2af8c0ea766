"""`make gpu-check` (.ci/gpu-check) is wired right: it cannot run here (no GPU), so nvidia-smi and the
harness are stand-in scripts that record how they were called and write what a real run would."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "gpu-check"

SMI = "#!/bin/sh\necho 'NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4'\necho '| 0  NVIDIA H100 |'\n"
# The stand-in harness: records its argv, writes a results folder as `harness run` does, prints a table.
HARNESS = """#!{python}
import json, os, sys, time
from pathlib import Path
Path(os.environ["ARGV_LOG"]).write_text(json.dumps(sys.argv[1:]))
time.sleep(float(os.environ.get("SLEEP", "0")))
out = Path(sys.argv[sys.argv.index("--out") + 1]) / f"{{time.time_ns()}}-gpu-local"
out.mkdir(parents=True)
runs = [{{"exit_code": 0, "timed_out": False}}] * int(os.environ.get("RUNS", "8"))
cell = {{"jax_version": os.environ["JAX"], "platform": "cuda", "device_count": 1,
         "verdict": os.environ["VERDICT"], "reason": "", "runs": runs}}
(out / "results.json").write_text(json.dumps({{"cells": [cell]}}))
print("| jax | verdict |")
sys.exit(int(os.environ.get("EXIT", "0")))
"""


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def run(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "nvidia-smi", SMI)
    harness = executable(tmp_path / "harness", HARNESS.format(python=sys.executable))

    def go(jax="0.4.31", verdict="clean", smi=True, **env):
        if not smi:
            (bin_dir / "nvidia-smi").unlink()
        environ = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HARNESS": str(harness), "HARNESS_PYTHON": sys.executable,
                   "GPU_PYTHON": "/opt/gpu/bin/python", "GPU_CHECK_OUT": str(tmp_path / "out"),
                   "ARGV_LOG": str(tmp_path / "argv.json"), "JAX": jax, "VERDICT": verdict,
                   **{k: str(v) for k, v in env.items()}}
        proc = subprocess.run([str(SCRIPT)], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60)
        argv = json.loads((tmp_path / "argv.json").read_text()) if (tmp_path / "argv.json").exists() else None
        return proc, argv
    return go


def test_a_pass_prints_the_devices_the_verdict_and_the_time(run):
    proc, argv = run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert argv == ["run", "configs/gpu_local.yaml", "--backend", "local", "--python", "/opt/gpu/bin/python",
                    "--out", argv[-1]]
    out = proc.stdout
    assert out.index("NVIDIA-SMI 550.54.15") < out.index("| jax | verdict |") < out.index("verdict: clean")
    assert "verdict: clean (jax 0.4.31, cuda x1, runs ok 8/8; expected clean)" in out
    assert out.strip().splitlines()[-1].startswith("gpu-check: PASS in ")


def test_0_4_28_must_reproduce(run):
    proc, _ = run(jax="0.4.28", verdict="reproduced", RUNS=2)
    assert proc.returncode == 0 and "gpu-check: PASS" in proc.stdout
    proc, _ = run(jax="0.4.28", verdict="clean")
    assert proc.returncode == 1 and "gpu-check: FAIL: jax 0.4.28: clean, expected reproduced" in proc.stdout


@pytest.mark.parametrize("env, says", [
    ({"VERDICT": "error"}, "gpu-check: FAIL: jax 0.4.31: error, expected clean"),
    ({"EXIT": 2}, "gpu-check: FAIL: the harness exited 2"),
    ({"SLEEP": 5, "GPU_CHECK_LIMIT_S": 1}, "gpu-check: FAIL: did not finish in 1 s"),
])
def test_failures(run, env, says):
    proc, _ = run(**env)
    assert proc.returncode == 1 and says in proc.stdout


def test_no_driver_is_one_line_and_nothing_runs(run):
    proc, argv = run(smi=False)
    assert proc.returncode == 2 and argv is None
    assert proc.stderr.strip() == "gpu-check: nvidia-smi is not on PATH: no NVIDIA driver here, so no GPU to check"


def test_make_gpu_check_runs_the_script_with_the_interpreter_given():
    quiet = ["--no-print-directory"]  # under `make test` a nested make would announce its directory
    dry = subprocess.run(["make", *quiet, "-n", "gpu-check", "GPU_PYTHON=/x/python"], cwd=ROOT,
                         capture_output=True, text=True)
    assert dry.returncode == 0 and ".ci/gpu-check" in dry.stdout.splitlines()[-1]
    # A variable given to make on its command line reaches the recipe's environment.
    shown = subprocess.run(["make", *quiet, "-s", "--eval", "show:\n\t@echo $$GPU_PYTHON", "show", "GPU_PYTHON=/x/python"],
                           cwd=ROOT, capture_output=True, text=True)
    assert shown.stdout.strip() == "/x/python"
