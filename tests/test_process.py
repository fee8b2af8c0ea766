"""One run as a process (environments/process.py): a timeout kills its whole process group, an exit by
signal says which, and the harness's own environment does not leak into a run. Real processes, no JAX."""

from __future__ import annotations

import os
import signal
import sys
import time

from harness.environments.process import clean_environment, run_process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_timeout_kills_the_run_and_the_children_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "spawner.py"
    script.write_text(
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n")
    start = time.monotonic()
    outcome = run_process([sys.executable, str(script)], clean_environment({}), tmp_path / "run.log", timeout_s=2)
    assert time.monotonic() - start < 30
    assert outcome.timed_out and outcome.exit_code is None and not outcome.ok
    assert outcome.reason == "killed after the 2 s timeout"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:  # the kill is delivered, then reaped by init
        time.sleep(0.05)
    assert not _alive(child), "the grandchild survived the timeout"


def test_an_exit_by_signal_is_named(tmp_path):
    code = "import os, signal; print('about to crash', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"
    outcome = run_process([sys.executable, "-c", code], clean_environment({}), tmp_path / "run.log", timeout_s=30)
    assert outcome.exit_code == -signal.SIGSEGV and not outcome.timed_out and not outcome.ok
    assert outcome.reason == "killed by signal SIGSEGV"
    assert (tmp_path / "run.log").read_text() == "about to crash\n"


def test_a_nonzero_exit_says_its_code(tmp_path):
    outcome = run_process([sys.executable, "-c", "raise SystemExit(3)"], clean_environment({}),
                          tmp_path / "run.log", timeout_s=30)
    assert outcome.exit_code == 3 and outcome.reason == "exit code 3"


def test_the_harness_environment_does_not_leak_into_a_run(monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "0")  # a fixed seed would hide every set-order bug
    monkeypatch.setenv("JAX_PLATFORMS", "tpu")
    monkeypatch.setenv("XLA_FLAGS", "--stray")
    env = clean_environment({"PYTHONHASHSEED": "7"})
    assert env["PYTHONHASHSEED"] == "7" and "JAX_PLATFORMS" not in env and "XLA_FLAGS" not in env
    assert env["PATH"] == os.environ["PATH"]
