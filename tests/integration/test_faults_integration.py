"""Faults a user's script can cause, against real runs under every backend (issue 10).

Each case is run through the same CellRunner a sweep uses, in a real venv and (where a Docker engine
and the offline base image are here) a real container, so a backend that reads a crash as success
shows up as a wrong verdict.
"""

from __future__ import annotations

import json
import shutil
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from harness.cli import commands as cli
from harness.inputs.config import Repro
from harness.environments.docker import OFFLINE_BASE_IMAGE, OWNER_LABEL, DockerBackend
from harness.environments.venv import VenvBackend
from harness.environments import dated_venv_backend
from harness.core.model import CellSpec
from harness.core.kinds import Platform, Verdict
from harness.measure.cell_runner import CellRunner
from harness.environments.package_index import PyPIIndex
from tests.docker_engine import engine_with_base_image
from tests.helpers import machine_pid

pytestmark = pytest.mark.integration

VERSION = "0.4.29"
REPO = Path(__file__).resolve().parents[2]

# Compiles (so the cache gets an entry, which alone would read as `clean`), then dies by a signal
# it sends itself.
SELF_SIGNALLED_CRASH = """\
import os, signal
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
print("compiled", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
print("still alive after SIGSEGV")
"""


def _docker_environment():
    engine_with_base_image().close()
    backend = DockerBackend(base_image=OFFLINE_BASE_IMAGE, release_date=PyPIIndex().release_date)
    return backend.prepare(VERSION, Platform.CPU, print)


@pytest.fixture(scope="module", params=["venv", pytest.param("docker", marks=pytest.mark.docker)])
def environment(request):
    if request.param == "venv":
        return dated_venv_backend().prepare(VERSION, Platform.CPU)
    return _docker_environment()


def measure(environment, script_text: str, tmp_path, runs: int = 2):
    script = tmp_path / "script" / "user.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(script_text)
    spec = CellSpec(VERSION, Platform.CPU, 1, None)
    runner = CellRunner(environment, Repro("user", script, builtin=False), timeout_s=120)
    return runner.run(spec, range(1, runs + 1), tmp_path / "cache", tmp_path / "logs")


def test_a_self_signalled_crash_after_compiling_is_error(environment, tmp_path):
    cell = measure(environment, SELF_SIGNALLED_CRASH, tmp_path)
    assert cell.listing, "the script compiled before it crashed: its entry is in the cache"
    assert cell.verdict == Verdict.ERROR, (cell.verdict, cell.reason)
    assert all(not r.ok for r in cell.runs)
    assert "SIGSEGV" in cell.runs[0].reason, cell.runs[0].reason


# Says it started (a file in its cache folder, which the host sees under every backend), then hangs.
HANG_AFTER_START = """\
import os, time
open(os.path.join(os.environ["JAX_COMPILATION_CACHE_DIR"], f"started-{os.getpid()}-{os.stat('/proc/self/ns/pid').st_ino}"), "w").close()
time.sleep(300)
"""


def start_sweep(backend: str, script_text: str, tmp_path, runs: int = 3, timeout_s: int = 200,
                env: dict[str, str] | None = None):
    """`harness run` on a user script as its own process (as Slurm or `timeout` would start it), with `env` added
    to its environment."""
    script = tmp_path / "script" / "user.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(script_text)
    config = tmp_path / "sweep.yaml"
    config.write_text(f"name: faults\nrepro: {script}\njax_versions: ['{VERSION}']\nruns: {runs}\n"
                      f"timeout_s: {timeout_s}\ndocker: {{base_image: '{OFFLINE_BASE_IMAGE}'}}\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(config), "--backend", backend,
                             "--seeds", "random", "--out", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    return proc, out


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def started_markers(out: Path) -> list[Path]:
    return sorted(out.glob("*/caches/*/started-*"))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


@pytest.fixture(params=["venv", pytest.param("docker", marks=pytest.mark.docker)])
def backend_name(request):
    if request.param == "docker":
        _docker_environment()  # skips (or fails under HARNESS_REQUIRE_DOCKER) without an engine
    else:
        dated_venv_backend().prepare(VERSION, Platform.CPU)
    return request.param


def test_sigterm_stops_saves_and_leaves_nothing_running(backend_name, tmp_path):
    proc, out = start_sweep(backend_name, HANG_AFTER_START, tmp_path)
    try:
        (marker,) = wait_for(lambda: started_markers(out), 240, "the first run to start")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by SIGTERM: " in err and "resume with: harness run" in err, err
    (results,) = out.glob("*/results.json")
    document = json.loads(results.read_text())
    assert document["status"] == "interrupted"
    if backend_name == "venv":
        pid = machine_pid(marker.name.split("-", 1)[1])  # its pid here: it ran in a PID namespace of its own
        assert pid is None or not pid_alive(pid), "the run outlived the sweep"
    else:
        client = docker.from_env()
        left = client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={proc.pid}"})
        assert left == [], "a container outlived the sweep"


@pytest.mark.docker
def test_a_sigkilled_harness_leaves_no_container_past_its_deadline_nor_for_the_next_sweep(tmp_path):
    """Issue 27, item 9: SIGKILL cannot be caught, so the harness cannot remove its containers. Each ends
    by itself a little past the run's timeout (its own deadline, inside), and the next docker sweep
    removes what such a harness left (a stopped container; its owner's pid in its labels).

    The harness is stopped (SIGSTOP, which it cannot catch either) while its container's deadline is
    watched, and killed only after: a killed harness's container is every sweep's orphan, and the docker
    sweeps other tests run beside this one would remove it before its own deadline could be seen."""
    from harness.environments.docker import GRACE_VARIABLE, reap_orphans

    _docker_environment()
    client = docker.from_env()
    # The container's own deadline is the run's timeout and a grace (30 s by default): 3 s here, so the test waits
    # seconds for what it watches, not half a minute.
    timeout_s, grace_s = 5, 3
    proc, out = start_sweep("docker", HANG_AFTER_START, tmp_path / "killed", runs=2, timeout_s=timeout_s,
                            env={GRACE_VARIABLE: str(grace_s)})
    try:
        wait_for(lambda: started_markers(out), 240, "the first run to start")
        proc.send_signal(signal.SIGSTOP)
        mine = {"label": f"{OWNER_LABEL}={proc.pid}"}
        (container,) = client.containers.list(all=True, filters=mine)
        # Still running now (nobody kills it), but not after the run's timeout and the grace.
        started = time.monotonic()
        wait_for(lambda: not client.containers.list(filters=mine), timeout_s + grace_s + 30,
                 "the container to end by itself")
        assert time.monotonic() - started <= timeout_s + grace_s + 30
        proc.kill()
        proc.wait(timeout=30)
        assert [c.name for c in client.containers.list(all=True, filters=mine)] == [container.name]  # stopped
        # The next docker sweep removes it (and only containers whose owner is gone).
        said = []
        assert container.name in reap_orphans(client, said.append)
        assert client.containers.list(all=True, filters=mine) == [] and said
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for left in client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={proc.pid}"}):
            left.remove(force=True)


@pytest.fixture(scope="module")
def new_venv_by_two(tmp_path_factory):
    """Two processes prepare the same new venv at once (a folder of venvs of its own): their exit codes and outputs,
    and that folder. The venv it leaves is the damaged-venv test's to damage (one venv made for both)."""
    root = tmp_path_factory.mktemp("new-venv") / "envs"
    prepare = ("import json, sys; from pathlib import Path; from harness.environments.venv import VenvBackend; "
               "from harness.core.kinds import Platform; "
               f"env = VenvBackend(root=Path(sys.argv[1])).prepare({VERSION!r}, Platform.CPU, print); "
               "print(json.dumps(env.describe()))")
    procs = [subprocess.Popen([sys.executable, "-c", prepare, str(root)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    return [p.returncode for p in procs], outputs, root


def test_a_damaged_venv_is_detected_and_rebuilt(new_venv_by_two):
    """Its jax package deleted, the ready marker kept: rebuilt for real. (Each damage the reuse check knows, a
    dangling or non-executable bin/python too, is rebuilt saying why in tests/unit/test_venv_reuse.py.)"""
    backend = VenvBackend(root=new_venv_by_two[2])
    first = backend.prepare(VERSION, Platform.CPU)
    assert first.describe()["reused"] is True, "the venv the two processes made"
    (jax_package,) = first.path.glob("lib/python*/site-packages/jax")
    shutil.rmtree(jax_package)
    said: list[str] = []
    again = backend.prepare(VERSION, Platform.CPU, said.append)
    assert again.describe()["reused"] is False and again.python.exists()
    assert any(line.startswith("rebuilding ") and "the jax package is missing" in line for line in said), said
    assert list(again.path.glob("lib/python*/site-packages/jax/__init__.py"))
    assert backend.prepare(VERSION, Platform.CPU).describe()["reused"] is True


def test_two_sweeps_needing_one_new_venv_share_it(new_venv_by_two):
    """Two processes prepare the same new venv at once: one builds it, the other waits and reuses it."""
    codes, outputs, _ = new_venv_by_two
    assert codes == [0, 0], outputs
    facts = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert sorted(f["reused"] for f in facts) == [False, True], outputs
    assert any("waiting for another harness process" in out for out in outputs), outputs


def test_a_results_folder_being_written_refuses_a_second_writer(tmp_path, capsys):
    script = tmp_path / "script" / "quiet.py"
    script.parent.mkdir()
    script.write_text("print('nothing cached')\n")
    argv = ["check", str(script), "--versions", VERSION, "--runs", "2", "--quiet"]
    assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 0
    (folder,) = (tmp_path / "out").iterdir()
    capsys.readouterr()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from harness.results.document import "
                               "lock_results_folder; lock = lock_results_folder(sys.argv[1]); print('held', flush=True); "
                               "time.sleep(120)", str(folder)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert cli.main([*argv, "--resume", str(folder)]) == 2
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"another harness process (pid {holder.pid}: " in err and "is writing this results folder" in err, err


@pytest.mark.parametrize("content", [b"\x00\xff" * 50, b'{"schema_version": 1, "cells": {}}',
                                     b'{"schema_version": "1"}'], ids=["binary", "cells-map", "version-text"])
def test_resume_of_a_malformed_results_file_is_one_line(tmp_path, capsys, content):
    python = dated_venv_backend().prepare(VERSION, Platform.CPU).python
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "results.json").write_bytes(content)
    code = cli.main(["run", "configs/smoke.yaml", "--backend", "local", "--python", str(python),
                     "--versions", VERSION, "--quiet", "--resume", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "results.json" in err, err
