"""Each Makefile target CI does not run itself, run through make as a user runs it, made short
(tests/make_targets.py: the arguments, and why the benches and the GPU checks are dry runs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.kinds import Platform
from harness.environments import dated_venv_backend
from harness.environments.interpreters import discover
from harness.inputs.pythons import PythonVersion
from tests.make_targets import TARGETS, THIS_TEST, Target

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)  # the venv make's targets run from: this one
# What `make docs` writes: committed, and already what it would write (tests/unit/test_docs.py, test_schemas.py).
GENERATED = [*sorted((ROOT / "docs" / "reference" / "commands").glob("*.md")), *sorted((ROOT / "docs" / "schemas").glob("*"))]

# nightly compares with the results table wrote (this worker's `folder`): the two on one worker, in this order. The
# other targets are each other's strangers: spread over the workers (one worker held them all: 330 s in turn here).
TABLE_THEN_NIGHTLY = pytest.mark.xdist_group("make-table-nightly")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("make-targets")


@pytest.fixture(scope="module", autouse=True)
def installed_venv():
    """make bootstraps .venv when its stamp is older than pyproject.toml: a full install, not what is tested."""
    stamp = VENV / ".installed"
    if not stamp.exists() or stamp.stat().st_mtime < (ROOT / "pyproject.toml").stat().st_mtime:
        why = f"{stamp} is missing or older than pyproject.toml: run `make test-unit` once"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


def make(target: Target, folder: Path) -> subprocess.CompletedProcess[str]:
    found = sorted((folder / "table").glob("*/results.json"))
    fill = {"tmp": folder, "baseline": found[0].parent if found else folder / "table"}
    # Not the variables of the make that runs this test (make test ARGS=... would reach every target).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update({k: v.format(**fill) for k, v in target.env})
    if target.name == "gpu-check":  # as a GPU host's venv with JAX, on cpu: whatever driver this machine has
        env["GPU_PYTHON"] = dated_venv_backend().prepare("0.10.2", Platform.CPU).python
        env["GPU_CHECK_VENV"] = str(VENV)
    if target.name == "tpu-check":
        env.update(tpu_host_env())
        env["TPU_CHECK_VENV"] = str(VENV)
    argv = ["make", "--no-print-directory", target.name, f"VENV={VENV}", *(a.format(**fill) for a in target.args)]
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    print(f"make {target.name}: {time.monotonic() - start:.1f} s")  # CI's time for each (pytest -rA shows it)
    return proc


def tpu_host_env() -> dict[str, str]:
    """As on a TPU host: a plain interpreter (TPU_PYTHON) whose PYTHONPATH gives it JAX 0.10.2."""
    release = dated_venv_backend().prepare("0.10.2", Platform.CPU)
    site = next((Path(release.python).parent.parent / "lib").glob("python3*/site-packages"))
    cfg = dict(line.split(" = ", 1) for line in (Path(release.python).parent.parent / "pyvenv.cfg").read_text()
               .splitlines() if " = " in line)
    python = Path(cfg["home"]) / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return {"TPU_PYTHON": str(python), "PYTHONPATH": str(site)}


def test_gpu_check_without_a_driver_says_so(folder: Path):
    """On a machine without NVIDIA's driver (as CI's) the cuda check stops at its first check, installing nothing."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists())
    env["GPU_CHECK_VENV"] = str(folder / "gpu-venv")
    proc = subprocess.run(["make", "--no-print-directory", "gpu-check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "no NVIDIA driver here" in proc.stderr, proc.stdout + proc.stderr
    assert not (folder / "gpu-venv").exists()


def offline_install(wheels: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    """`pip install --no-index --find-links WHEELS jax-cache-harness` in a fresh Python 3.12 venv, with no index
    reachable by configuration: no pip config file, an index URL nothing answers, none of this machine's
    find-links."""
    found = [i for i in discover() if i.version == PythonVersion(3, 12)]
    if not found:
        reason = "no Python 3.12 on this machine (PATH, uv's Pythons, pyenv's versions folder)"
        if os.environ.get("HARNESS_REQUIRE_PYTHON_312") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    subprocess.run([found[0].path, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                           "--disable-pip-version-check", "--find-links", str(wheels), "jax-cache-harness"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_tpu_check_with_no_wheel_folder_says_so(folder: Path):
    """On a host nobody prepared (no wheel folder, no venv yet) it stops at its first check."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update({"TPU_WHEELS": str(folder / "no-wheels"), "TPU_CHECK_VENV": str(folder / "tpu-venv")})
    proc = subprocess.run(["make", "--no-print-directory", "tpu-check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "no harness wheel in" in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("target", [pytest.param(t, marks=[TABLE_THEN_NIGHTLY] if t.name in ("table", "nightly") else [])
                                    for t in TARGETS if t.ran_by == THIS_TEST], ids=lambda t: t.name)
def test_the_target_runs(target: Target, folder: Path):
    before = {path: path.read_bytes() for path in GENERATED} if target.name == "docs" else {}
    if target.name == "nightly" and not (folder / "table").exists():
        make(next(t for t in TARGETS if t.name == "table"), folder)
    if target.name == "clean-envs":
        (folder / "envs" / "jax-0.4.31-cpu-py3.11").mkdir(parents=True)
    proc = make(target, folder)
    said = proc.stdout + proc.stderr
    assert proc.returncode == target.expect_code, said[-3000:]
    assert target.expect_text in said, said[-3000:]
    if target.name == "docs":
        changed = [str(path.relative_to(ROOT)) for path, text in before.items() if path.read_bytes() != text]
        for path, text in before.items():
            path.write_bytes(text)
        assert not changed, f"make docs changed {changed}: the committed ones are stale"
    if target.name == "clean-envs":
        assert not (folder / "envs").exists()
    if target.name == "offline-wheels":
        installed = offline_install(folder / "offline-wheels", folder / "py312-venv")
        assert installed.returncode == 0, installed.stdout + installed.stderr
        version = subprocess.run([str(folder / "py312-venv" / "bin" / "harness"), "--version"], capture_output=True,
                                 text=True, timeout=60, check=False)
        assert version.returncode == 0 and version.stdout.startswith("harness "), version.stdout + version.stderr
    if target.name in ("table", "smoke", "nightly", "bisect", "reduce"):
        assert list((folder / target.name).glob("*/results.json")), said[-3000:]
    if target.name == "bench":
        scripts = re.findall(r"^\t\$\(BIN\)/python bench/", (ROOT / "Makefile").read_text().split("\nbench:", 1)[1]
                             .split("\n\n", 1)[0], re.M)
        assert said.count("usage: ") == len(scripts) > 0, said[-3000:]  # each script make runs, its arguments parsed
    shutil.rmtree(folder / "envs", ignore_errors=True)
