"""`make gpu-check` (.ci/gpu-check) is wired right: it cannot run here on a GPU, so nvidia-smi and the harness are
stand-in scripts that record how they were called and write what a real run would; the interpreter that "has JAX"
is this one, with a folder of dist-info on PYTHONPATH naming jax and its CUDA plugin. (CI runs the whole check on
cpu for real: tests/make_targets.py.)"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "gpu-check"

SMI = """#!/bin/sh
case "${1:-}" in
  -L) printf 'GPU 0: NVIDIA H200 (UUID: GPU-0a)\\nGPU 1: NVIDIA H200 (UUID: GPU-1b)\\n';;
  *) echo '| NVIDIA-SMI 580.95.05   Driver Version: 580.95.05   CUDA Version: 13.0 |';;
esac
"""
# The stand-in harness: records its argv, writes a results folder as `harness run`/`check` does (its runs' logs,
# run 1's devices), prints a table. What each program's cell says comes from CELLS (by the results folder's name).
HARNESS = """#!{python}
import json, os, sys, time
from pathlib import Path
with open(os.environ["ARGV_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
name = Path(sys.argv[sys.argv.index("--out") + 1]).name
cell = json.loads(os.environ["CELLS"])[name]
out = Path(sys.argv[sys.argv.index("--out") + 1]) / f"{{time.time_ns()}}-{{name}}"
(out / "logs").mkdir(parents=True)
for i in range(cell.get("opens", cell["runs"])):
    (out / "logs" / f"run-{{i:02d}}.log").write_text("")
(out / "logs" / "seed-probe.log").write_text("")  # imports no JAX: never counted
devices = {{"platform": os.environ.get("REPORTED", "gpu"), "device_kind": "NVIDIA H200", "count": int(os.environ["SEEN"]),
           "platform_version": "PJRT C API\\ncuda 13000"}}
runs = [{{"exit_code": 0, "timed_out": False, **({{"devices": devices}} if i == 0 else {{}})}} for i in range(cell["runs"])]
host = {{"gpus": ["NVIDIA H200 (143771 MiB)"] * 2, "driver_version": "580.95.05", "cuda_version": "13.0",
         "jax_cuda_plugin": "jax-cuda13-plugin 0.11.2"}}
document = {{"host": host, "cells": [{{"spec": {{"jax_version": os.environ["JAX"]}}, "verdict": cell["verdict"],
                                     "reason": "", "runs": runs}}]}}
(out / "results.json").write_text(json.dumps(document))
print(f"| {{name}} | {{cell['verdict']}} |")
"""
CLEAN = {"seed-repro": {"verdict": "clean", "runs": 2}, "stable": {"verdict": "clean", "runs": 6},
         "hash-seeded": {"verdict": "reproduced", "runs": 2, "opens": 7},  # 2 runs, 5 seed controls
         "callback": {"verdict": "clean", "runs": 2}}


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def dist_info(site: Path, name: str, version: str) -> None:
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.fixture
def run(tmp_path):
    bin_dir = tmp_path / "bin"
    executable(bin_dir / "nvidia-smi", SMI)
    venv = tmp_path / "gpu-venv"  # the harness as the check installed it: the stand-in, and this interpreter
    executable(venv / "bin" / "harness", HARNESS.format(python=sys.executable))
    executable(venv / "bin" / "python", f'#!/bin/sh\nexec {sys.executable} "$@"\n')

    def go(jax="0.11.2", cells=None, smi=True, plugin="jax-cuda13-plugin", seen=2, **env):
        if not smi:
            (bin_dir / "nvidia-smi").unlink()
        site = tmp_path / f"site-{jax}"
        if not site.exists():
            dist_info(site, "jax", jax)
            dist_info(site, plugin, jax)
        (tmp_path / "argv.jsonl").unlink(missing_ok=True)
        environ = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPU_CHECK_VENV": str(venv), "GPU_PYTHON": sys.executable,
                   "PYTHONPATH": str(site), "GPU_CHECK_OUT": str(tmp_path / "out"),
                   "ARGV_LOG": str(tmp_path / "argv.jsonl"), "JAX": jax, "SEEN": str(seen),
                   "CELLS": json.dumps({**CLEAN, **(cells or {})}), **{k: str(v) for k, v in env.items()}}
        proc = subprocess.run([str(SCRIPT)], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120,
                              check=False)
        log = tmp_path / "argv.jsonl"
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        return proc, calls
    return go


def test_a_pass_says_the_plan_first_then_the_tables_the_host_the_devices_and_the_time(run, tmp_path):
    proc, calls = run()
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    # Every measurement through the interpreter that has JAX, keeping the user's environment (--backend local).
    assert [c[:2] for c in calls] == [["run", str(tmp_path / "out" / "seed-repro.yaml")],
                                      ["check", "examples/mlp_step.py"], ["check", "examples/hash_folded_key.py"],
                                      ["check", "examples/host_callback.py"]]
    assert all(c[-6:-2] == ["--backend", "local", "--python", sys.executable] for c in calls)
    assert "--no-moved-folder" in calls[2] and calls[3][calls[3].index("--runs") + 1] == "2"
    assert "--runs" not in calls[1]  # the stable program by check's defaults on a GPU
    assert "shape: [2, 1, 1, 1]" in (tmp_path / "out" / "seed-repro.yaml").read_text()  # nvidia-smi -L: 2 GPUs
    assert ("gpu-check: 2 GPU(s), jax 0.11.2 (CUDA plugin: jax-cuda13-plugin 0.11.2)" in out)
    plan = next(line for line in out.splitlines() if "processes will open the GPU" in line)
    assert plan.startswith("gpu-check: 17 processes will open the GPU (seed's repro 2, stable 6, hash-seeded 7, "
                           "callback 2), one at a time")
    assert out.index(plan) < out.index("== seed-repro") < out.index("| seed-repro | clean |")
    assert ("host: gpus NVIDIA H200 (143771 MiB), NVIDIA H200 (143771 MiB); driver_version 580.95.05; "
            "cuda_version 13.0; jax_cuda_plugin jax-cuda13-plugin 0.11.2") in out
    assert ("seed-repro: clean (expected clean); jax 0.11.2 on NVIDIA H200 x2 (cuda 13000); runs ok 2/2; "
            "2 process(es) opened the device") in out
    assert "callback: clean (expected clean)" in out and "hash-seeded: reproduced (expected reproduced)" in out
    assert "17 process(es) opened the device (17 expected)" in out
    assert out.strip().splitlines()[-1].startswith("gpu-check: PASS in ")


def test_the_gpus_counted_are_narrowed_by_cuda_visible_devices(run, tmp_path):
    proc, _ = run(seen=1, CUDA_VISIBLE_DEVICES="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shape: [1, 1, 1, 1]" in (tmp_path / "out" / "seed-repro.yaml").read_text()
    proc, _ = run(seen=2, CUDA_VISIBLE_DEVICES="1")  # JAX saw 2 where 1 was given: not what was asked
    assert proc.returncode == 1 and "seed-repro: JAX reported NVIDIA H200 x2, not the 1 gpu device(s)" in proc.stdout


def test_before_jax_0_11_a_host_callback_is_not_cached_and_the_folders_path_is_in_the_keys(run):
    cells = {"callback": {"verdict": "not cached", "runs": 2}, "stable": {"verdict": "clean", "runs": 6, "opens": 7}}
    proc, _ = run(jax="0.10.2", cells=cells, plugin="jax-cuda12-plugin")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "18 processes will open the GPU (seed's repro 2, stable 7" in proc.stdout
    assert "callback: not cached (expected not cached)" in proc.stdout
    proc, _ = run(jax="0.10.2", cells={**cells, "callback": {"verdict": "clean", "runs": 2}})
    assert proc.returncode == 1 and "callback: clean, expected not cached" in proc.stdout


@pytest.mark.parametrize("cells, says", [
    ({"seed-repro": {"verdict": "reproduced", "runs": 2}}, "seed-repro: reproduced, expected clean"),
    ({"stable": {"verdict": "clean", "runs": 6, "opens": 8}}, "stable: the device was opened 8 times, more than 7"),
    ({"hash-seeded": {"verdict": "clean", "runs": 6}}, "hash-seeded: clean, expected reproduced"),
])
def test_failures(run, cells, says):
    proc, _ = run(cells=cells)
    assert proc.returncode == 1 and says in proc.stdout.splitlines()[-1], proc.stdout


def test_on_cpu_the_same_steps_need_no_driver(run, tmp_path):
    proc, calls = run(smi=False, seen=8, REPORTED="cpu", GPU_CHECK_PLATFORM="cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # a GPU's 6 runs (cpu's default is 11), the moved one among them on 0.11.2
    assert "on cpu (GPU_CHECK_PLATFORM=cpu): 17 processes (seed's repro 2, stable 6," in proc.stdout
    assert calls[1][calls[1].index("--runs") + 1] == "6"
    assert "shape: [8, 1, 1, 1]" in (tmp_path / "out" / "seed-repro.yaml").read_text()
    assert all(c[c.index("--platform") + 1] == "cpu" for c in calls[1:])


def test_on_cpu_the_stable_program_s_runs_are_a_variable_and_a_gpu_s_never_change(run):
    proc, calls = run(GPU_CHECK_CPU_RUNS="2")  # on a GPU: check's own default, as before
    assert proc.returncode == 0 and "--runs" not in calls[1], proc.stdout + proc.stderr
    # CI's test makes 2 (tests/make_targets.py): the steps and the judge, not a GPU's stability
    cells = {"stable": {"verdict": "clean", "runs": 2}}
    proc, calls = run(cells=cells, smi=False, seen=8, REPORTED="cpu", GPU_CHECK_PLATFORM="cpu", GPU_CHECK_CPU_RUNS="2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls[1][calls[1].index("--runs") + 1] == "2" and "stable 2," in proc.stdout
    proc, calls = run(seen=8, REPORTED="cpu", GPU_CHECK_PLATFORM="cpu", GPU_CHECK_CPU_RUNS="1")
    assert proc.returncode == 2 and "GPU_CHECK_CPU_RUNS is a number of runs, at least 2, not 1" in proc.stderr
    assert calls == []


def test_no_driver_is_one_line_and_nothing_runs(run):
    proc, calls = run(smi=False)
    assert proc.returncode == 2 and calls == []
    assert proc.stderr.strip() == "gpu-check: nvidia-smi is not on PATH: no NVIDIA driver here, so no GPU to check"


def test_no_wheel_folder_is_one_line(run, tmp_path):
    proc, calls = run(GPU_CHECK_VENV=tmp_path / "fresh", GPU_WHEELS=tmp_path / "none")
    assert proc.returncode == 2 and calls == []
    assert proc.stderr.startswith(f"gpu-check: no harness wheel in {tmp_path / 'none'}/: make the folder with "
                                  "`make offline-wheels PY=")


def test_make_gpu_check_runs_the_script_with_the_interpreter_given():
    quiet = ["--no-print-directory"]  # under `make test` a nested make would announce its directory
    dry = subprocess.run(["make", *quiet, "-n", "gpu-check", "GPU_PYTHON=/x/python"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert dry.returncode == 0 and dry.stdout.splitlines() == [".ci/gpu-check "]  # no .venv: the host is offline
    # A variable given to make on its command line reaches the recipe's environment.
    shown = subprocess.run(["make", *quiet, "-s", "--eval", "show:\n\t@echo $$GPU_PYTHON", "show", "GPU_PYTHON=/x/python"],
                           cwd=ROOT, capture_output=True, text=True, check=False)
    assert shown.stdout.strip() == "/x/python"
