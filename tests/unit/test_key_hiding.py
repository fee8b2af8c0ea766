"""The harness's seal key out of the reach of the programs it runs (environments/key_hiding.py): a run's
interpreter sees an empty file in its place, and cannot uncover it (no capability, locked mounts, its own PID
namespace). Real processes and bubblewrap, no JAX."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from harness.core import seal
from harness.core.runs import Program
from harness.environments import key_hiding
from harness.environments.local import LocalEnvironment

# Every way to the key a program of the harness's user has: the path, the machine's view through another
# process's /proc/<pid>/root, and the bind undone (unmounted in its own namespace, or in a user namespace it makes).
TRIES = textwrap.dedent("""
    import ctypes, glob, os, sys
    key = sys.argv[1]
    libc = ctypes.CDLL(None, use_errno=True)
    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read(64).hex()
        except OSError as exc:
            return exc.strerror
    print("path", read(key))
    for root in glob.glob("/proc/[0-9]*/root"):
        print("via", root, read(root + key))
    print("umount", libc.umount2(key.encode(), 2), read(key), flush=True)
    if os.fork() == 0:
        made = libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS
        print("nested", made, libc.umount2(key.encode(), 2), read(key), flush=True)
        os._exit(0)
    os.wait()
""")


@pytest.fixture
def hider():
    if key_hiding.hiding_problem():
        if os.environ.get("HARNESS_REQUIRE_BWRAP") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BWRAP=1 but {key_hiding.hiding_problem()}")
        pytest.skip(f"the key cannot be hidden here: {key_hiding.hiding_problem()}")


def test_a_measured_program_cannot_read_the_seal_key(tmp_path, monkeypatch, hider):
    """Issue 73 #5: a program `harness check` ran read the key and re-sealed another bisection's state.json with
    forged verdicts. Now it reads an empty file, by every way there is, and the run is otherwise as it was."""
    key = tmp_path / "keys" / "reduce-state.key"
    monkeypatch.setattr(seal, "KEY_FILE", key)
    secret = seal.state_key(key).hex()
    outside = subprocess.Popen(["sleep", "60"], cwd=tmp_path)  # a shell of the same user, whose view shows the key
    script = tmp_path / "tries.py"
    script.write_text(TRIES)
    try:
        environment = LocalEnvironment(sys.executable, {"jax": "0.4.29"})
        outcome = environment.run(Program(script, args=(str(key),)), {}, tmp_path / "cache", tmp_path / "run.log", 60)
    finally:
        outside.kill()
        outside.wait()
    log = (tmp_path / "run.log").read_text()
    assert outcome.ok, log
    assert secret not in log, log
    lines = log.splitlines()
    assert "path " in lines[0] and lines[0] == "path ", log  # an empty file in its place
    assert any(line.startswith("nested ") for line in lines) and any(line.startswith("umount -1") for line in lines)
    assert seal.state_key(key).hex() == secret  # the key itself untouched


def test_the_hider_is_skipped_where_a_launcher_hides_the_key_or_no_interpreter_starts(tmp_path, monkeypatch, hider):
    from harness.environments.process import _hider

    monkeypatch.setattr(seal, "KEY_FILE", tmp_path / "reduce-state.key")
    assert "--" in _hider(Program(tmp_path / "x.py"), sys.executable)
    assert _hider(Program(tmp_path / "x.py", key_hidden=True), sys.executable) == ()
    assert _hider(Program(tmp_path / "x.py"), str(tmp_path / "gone" / "python")) == ()


def test_each_run_under_the_hider_has_another_pid(tmp_path, monkeypatch, hider):
    """In a PID namespace of its own every run was pid 2: a program that bakes its pid into a computation (a
    worker's seed) computed the same key every start and was judged clean, where on a machine it misses every
    start. Runs have other pids now, as on a machine."""
    monkeypatch.setattr(seal, "KEY_FILE", tmp_path / "reduce-state.key")
    script = tmp_path / "pid.py"
    script.write_text("import os; print('pid', os.getpid())")
    environment = LocalEnvironment(sys.executable, {"jax": "0.4.29"})
    pids = set()
    for run in range(4):
        log = tmp_path / f"run-{run}.log"
        assert environment.run(Program(script), {}, tmp_path / "cache", log, 60).ok, log.read_text()
        pids.add(next(line for line in log.read_text().splitlines() if line.startswith("pid ")))
    assert len(pids) == 4, pids


@pytest.mark.parametrize("code,reason", [("import os; os.kill(os.getpid(), 11)", "killed by signal SIGSEGV"),
                                         ("import os; os.abort()", "killed by signal SIGABRT"),
                                         ("raise SystemExit(3)", "exit code 3")])
def test_a_run_under_the_hider_ends_as_its_program_did(tmp_path, monkeypatch, hider, code, reason):
    """bubblewrap ends with 128 + N when its child dies by signal N: the supervisor passes the signal on, so a
    crash reads as the crash it was (not `exit code 139`)."""
    monkeypatch.setattr(seal, "KEY_FILE", tmp_path / "reduce-state.key")
    script = tmp_path / "ends.py"
    script.write_text(code)
    outcome = LocalEnvironment(sys.executable, {"jax": "0.4.29"}).run(Program(script), {}, tmp_path / "cache",
                                                                       tmp_path / "run.log", 60)
    assert outcome.reason == reason
    assert "HARNESS_SIGNAL_EXIT" not in (tmp_path / "run.log").read_text()


def test_the_supervisor_reads_a_wrapper_s_128_plus_n_as_signal_n():
    from harness.inside.supervise import unwrapped

    assert unwrapped(139 << 8) == 11  # exit 139: the wait status of a death by SIGSEGV
    assert unwrapped(3 << 8) == 3 << 8 and unwrapped(128 << 8) == 128 << 8 and unwrapped(200 << 8) == 200 << 8
    assert unwrapped(9) == 9  # a death by signal stays one
