"""One run as a process (environments/process.py): a timeout kills its whole process group, an exit by
signal says which, the harness's own environment does not leak into a run, and whatever a run starts is
gone when it ends (the supervisor). Real processes, no JAX."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.core.kinds import Platform
from harness.core.records import plain
from harness.environments import process
from harness.environments.process import clean_environment, run_process
from tests.helpers import pid_exists

supervised_only = pytest.mark.skipif(not process.SUPERVISED, reason="the supervisor needs Linux's prctl")


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
    while pid_exists(child) and time.monotonic() < deadline:  # the kill is delivered, then reaped by init
        time.sleep(0.05)
    assert not pid_exists(child), "the grandchild survived the timeout"


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


# Starts a grandchild in a session of its own (out of the run's process group), records its pid.
LEAVE_A_SETSID_GRANDCHILD = """\
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
open({pid_file!r}, "w").write(str(child.pid))
"""

# A double fork: the grandchild is orphaned at once and reparented (to init, without a subreaper).
DOUBLE_FORK = """\
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open({pid_file!r} + ".part", "w") as f:
            f.write(str(os.getpid()))
        os.rename({pid_file!r} + ".part", {pid_file!r})
        time.sleep(600)
    # The run must not end before the grandchild has said its pid (else the test reads no file, not a leak).
    while not os.path.exists({pid_file!r}):
        time.sleep(0.01)
    os._exit(0)
os.wait()
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or reaped between the open and the read
        return False


def wait_for_file(path: Path, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def script(tmp_path: Path, text: str) -> tuple[list[str], Path]:
    pid_file = tmp_path / "leftover.pid"
    path = tmp_path / "script.py"
    path.write_text(text.format(pid_file=str(pid_file)))
    return [sys.executable, str(path)], pid_file


@supervised_only
@pytest.mark.parametrize("text", [LEAVE_A_SETSID_GRANDCHILD, DOUBLE_FORK], ids=["setsid", "double-fork"])
def test_what_a_run_leaves_behind_after_exit_0_is_gone_when_it_ends(tmp_path, text):
    argv, pid_file = script(tmp_path, text)
    outcome = run_process(argv, dict(os.environ), tmp_path / "run.log", timeout_s=60)
    assert outcome.exit_code == 0, (tmp_path / "run.log").read_text()
    assert not alive(int(wait_for_file(pid_file)))


@supervised_only
def test_a_timeout_takes_down_a_setsid_grandchild_too(tmp_path):
    argv, pid_file = script(tmp_path, LEAVE_A_SETSID_GRANDCHILD + "import time; time.sleep(600)\n")
    outcome = run_process(argv, dict(os.environ), tmp_path / "run.log", timeout_s=3)
    assert outcome.timed_out
    assert not alive(int(wait_for_file(pid_file)))


@supervised_only
def test_an_interpreter_that_cannot_start_is_a_failed_run_not_an_exception(tmp_path):
    dangling = tmp_path / "venv" / "bin" / "python"
    dangling.parent.mkdir(parents=True)
    dangling.symlink_to(tmp_path / "gone" / "python3.11")
    outcome = run_process([str(dangling), "x.py"], dict(os.environ), tmp_path / "run.log", timeout_s=60)
    assert not outcome.ok and outcome.exit_code == 127
    assert "cannot start" in (tmp_path / "run.log").read_text()
    missing_cwd = run_process([sys.executable, "-c", "pass"], dict(os.environ), tmp_path / "cwd.log",
                              timeout_s=60, cwd=tmp_path / "no-such-folder")
    assert not missing_cwd.ok and "could not start" in missing_cwd.reason


@supervised_only
def test_a_killed_harness_leaves_no_run_behind(tmp_path):
    """SIGKILL cannot be handled: the supervisor learns of it from the kernel (PR_SET_PDEATHSIG)."""
    argv, pid_file = script(tmp_path, LEAVE_A_SETSID_GRANDCHILD + "import time; time.sleep(600)\n")
    harness = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import os
        from pathlib import Path
        from harness.environments.process import run_process
        run_process({argv!r}, dict(os.environ), Path({str(tmp_path / 'run.log')!r}), timeout_s=600)
        """)], cwd=Path(__file__).resolve().parents[2])
    try:
        leftover = int(wait_for_file(pid_file))
        harness.kill()
        harness.wait()
        deadline = time.monotonic() + 20
        while alive(leftover) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(leftover)
    finally:
        harness.kill()


@supervised_only
def test_a_run_that_prints_without_end_keeps_the_head_and_the_tail_of_its_log(tmp_path):
    code = ("import sys; print('FIRST LINE', flush=True); "
            "[sys.stdout.write('x' * 1000 + '\\n') for _ in range(5000)]; print('LAST LINE')")
    outcome = run_process([sys.executable, "-c", code], clean_environment({}), tmp_path / "run.log",
                          timeout_s=60, max_log_bytes=100_000)
    assert outcome.ok
    log = (tmp_path / "run.log").read_bytes()
    assert len(log) < 100_000 + 200
    assert log.startswith(b"FIRST LINE\n") and log.endswith(b"LAST LINE\n")
    assert b"bytes of output cut here; the log keeps the first 50000 and the last 50000 bytes" in log


@supervised_only
def test_stdout_and_stderr_reach_the_log_in_order(tmp_path):
    code = "import sys; print('out', flush=True); print('err', file=sys.stderr, flush=True); print('out2')"
    run_process([sys.executable, "-c", code], clean_environment({}), tmp_path / "run.log", timeout_s=60)
    assert (tmp_path / "run.log").read_text() == "out\nerr\nout2\n"


# Issue 27: JAX's cache lines printed among 30 MB of a script's own output (the seed's 0.4.31 log, line by line).
SEED_LOG = Path(__file__).parents[1] / "fixtures" / "jax_logs" / "seed-0.4.31-hs2-8.err"


def _flood_around(log_lines: list[str], noise: int) -> bytes:
    out = []
    for i, line in enumerate(log_lines):
        out.append(("x" * 999 + "\n") * noise)
        out.append(line + "\n")
    return "".join(out).encode()


def _capped(data: bytes, path: Path, limit: int, cache_limit: int | None = None, chunk: int = 4093) -> bytes:
    from harness.inside.supervise import CappedLog

    with open(path, "wb") as f:
        log = CappedLog(f.fileno(), limit, cache_limit)
        for start in range(0, len(data), chunk):  # chunks that end inside lines
            log.write(data[start:start + chunk])
        log.close()
    return path.read_bytes()


def test_a_cut_log_keeps_every_line_of_jaxs_cache_log(tmp_path):
    from harness.core import jaxlog

    lines = SEED_LOG.read_text().splitlines()
    data = _flood_around(lines, noise=100)
    assert len(data) > 20 * 50_000
    out = _capped(data, tmp_path / "log", 50_000)
    text = out.decode()
    assert plain(jaxlog.parse(text)) == plain(jaxlog.parse(lines))
    assert "bytes of output cut here" in text and "bytes of JAX's cache lines from between]" in text
    assert len(out) < 50_000 + sum(len(line) + 1 for line in lines if jaxlog.is_cache_line(line)) + 300
    assert text.startswith("x" * 999 + "\n") and text.endswith(lines[-1] + "\n")


def test_cache_lines_past_their_own_limit_are_cut_and_said(tmp_path):
    data = b"h" * 1000 + b"\n" + b"to compile\n" * 500 + b"t" * 1000 + b"\n"
    text = _capped(data, tmp_path / "log", 2_000, cache_limit=1_000).decode()
    assert text.count("to compile") == 1000 // len("to compile\n")
    assert "bytes of them were cut too, JAX's log of this run is incomplete]" in text


@supervised_only
def test_a_supervised_run_that_prints_30_mb_keeps_its_jax_cache_lines(tmp_path):
    from harness.core import jaxlog

    lines = SEED_LOG.read_text().splitlines()
    script = tmp_path / "flood.py"
    script.write_text("import sys\nlines = open(sys.argv[1]).read().splitlines()\n"
                      "for line in lines:\n    sys.stdout.write(('x' * 999 + '\\n') * 2000)\n"
                      "    print(line, file=sys.stderr if 'DEBUG' in line else sys.stdout, flush=True)\n")
    outcome = run_process([sys.executable, str(script), str(SEED_LOG)], clean_environment({}),
                          tmp_path / "run.log", timeout_s=120, max_log_bytes=1 << 20)
    assert outcome.ok
    text = (tmp_path / "run.log").read_text()
    assert len(text) < (1 << 20) + 100_000
    assert plain(jaxlog.parse(text)) == plain(jaxlog.parse(lines))


# ---- issue 32.10: a temporary folder per run, removed with the run ------------------------------

# What a training script does: a checkpoint folder under the temporary folder, one read-only inside it.
TRAIN_CKPT = """\
import json, os, sys, tempfile
folder = tempfile.mkdtemp(prefix="train-ckpt-")
open(os.path.join(folder, "step-1.ckpt"), "w").write("weights")
os.makedirs(os.path.join(folder, "frozen"))
open(os.path.join(folder, "frozen", "f"), "w").write("x")
os.chmod(os.path.join(folder, "frozen"), 0o500)
with open({record!r}, "a") as f:
    f.write(json.dumps({{v: os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP", "HARNESS_RUN_TMPDIR")}}
                       | {{"made": folder}}) + "\\n")
"""


def tmp_script(tmp_path: Path, tail: str = "") -> tuple[list[str], Path, Path]:
    record, base = tmp_path / "record.jsonl", tmp_path / "machine-tmp"
    base.mkdir(parents=True)
    path = tmp_path / "train.py"
    path.write_text(TRAIN_CKPT.format(record=str(record)) + tail)
    return [sys.executable, str(path)], record, base


def records(path: Path) -> list[dict]:
    import json
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_run_gets_its_own_temporary_folder_and_it_goes_with_the_run(tmp_path):
    """Before, a script's /tmp/train-ckpt-* stayed, one per run (107 were found)."""
    argv, record, base = tmp_script(tmp_path)
    for i in (1, 2):
        outcome = run_process(argv, clean_environment({"TMPDIR": str(base)}), tmp_path / f"run{i}.log", 60)
        assert outcome.ok, (tmp_path / f"run{i}.log").read_text()
    first, second = records(record)
    for seen in (first, second):
        assert seen["TMPDIR"] == seen["TEMP"] == seen["TMP"] and Path(seen["made"]).parent == Path(seen["TMPDIR"])
        assert Path(seen["TMPDIR"]).parent == base and Path(seen["TMPDIR"]).name.startswith("harness-run-")
        assert seen["HARNESS_RUN_TMPDIR"] is None or not process.SUPERVISED  # the supervisor's, not the script's
    assert first["TMPDIR"] != second["TMPDIR"]
    assert list(base.iterdir()) == []  # nothing left, read-only folder included


def test_a_timed_out_run_and_a_process_group_leave_no_temporary_folder(tmp_path):
    argv, record, base = tmp_script(tmp_path, "import time; time.sleep(600)\n")
    outcome = run_process(argv, clean_environment({"TMPDIR": str(base)}), tmp_path / "run.log", timeout_s=3)
    assert outcome.timed_out and records(record)
    assert list(base.iterdir()) == []
    argv, record, base = tmp_script(tmp_path / "job")
    env = clean_environment({"TMPDIR": str(base)})
    outcomes = process.run_processes([(argv, env, tmp_path / "job" / f"rank{r}.log") for r in (0, 1)], 60)
    assert all(o.ok for o in outcomes)
    made = {r["TMPDIR"] for r in records(record)}
    assert len(made) == 2 and list(base.iterdir()) == []  # a folder per process, both gone


@supervised_only
def test_a_killed_harness_leaves_no_temporary_folder_the_supervisor_removes_it(tmp_path):
    """SIGKILL: the harness cannot remove the folder; its supervisor, told by the kernel, does."""
    argv, record, base = tmp_script(tmp_path, "import time; time.sleep(600)\n")
    harness = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        from pathlib import Path
        from harness.environments.process import clean_environment, run_process
        run_process({argv!r}, clean_environment({{"TMPDIR": {str(base)!r}}}), Path({str(tmp_path / 'run.log')!r}),
                    timeout_s=600)
        """)], cwd=Path(__file__).resolve().parents[2])
    try:
        wait_for_file(record)
        harness.kill()
        harness.wait()
        deadline = time.monotonic() + 20
        while list(base.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(base.iterdir()) == []
    finally:
        harness.kill()


def test_an_srun_task_gets_a_temporary_folder_of_its_own_on_its_node(tmp_path):
    """job_task.py (one Slurm task) as srun starts it, here without Slurm: rank 0 of a spec."""
    import json

    argv, record, base = tmp_script(tmp_path)
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    (spec_dir / "rank0.json").write_text(json.dumps({"argv": argv, "env": clean_environment({"TMPDIR": str(base)}),
                                                     "log": str(tmp_path / "task.log"), "cwd": str(tmp_path)}))
    done = subprocess.run([sys.executable, "-I", "-S", str(process.JOB_TASK), str(spec_dir)],
                          env={**os.environ, "SLURM_PROCID": "0"}, timeout=60)
    assert done.returncode == 0, (tmp_path / "task.log").read_text()
    (seen,) = records(record)
    assert Path(seen["TMPDIR"]).parent == base and seen["TEMP"] == seen["TMPDIR"]
    assert list(base.iterdir()) == []


def test_the_supervisor_and_the_harness_name_the_run_folder_alike():
    from harness.inside import supervise
    assert supervise.RUN_TMPDIR_VAR == process.RUN_TMPDIR_VAR


def test_a_runs_end_is_waited_for_not_polled(tmp_path, monkeypatch):
    """The harness notices a run's end when the kernel says so (a pidfd), never by sleeping between looks as
    subprocess's own wait(timeout=...) does: a sleep anywhere in the wait fails the run here."""
    if not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfd on this system: the wait falls back to polling")

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s waiting for a run")

    monkeypatch.setattr(time, "sleep", no_sleep)
    outcome = run_process([sys.executable, "-c", "raise SystemExit(4)"], clean_environment({}), tmp_path / "run.log",
                          timeout_s=60)
    assert outcome.exit_code == 4
    job = process.run_processes([([sys.executable, "-c", "pass"], clean_environment({}), tmp_path / f"rank{r}.log")
                                 for r in (0, 1)], 60)
    assert [o.exit_code for o in job] == [0, 0]


def test_waiting_for_any_of_several_processes():
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    quick = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert not process.wait_any([slow], 0.2)  # still running: the timeout ends the wait
        assert process.wait_for(quick, 60) == 0
        assert process.wait_any([slow, quick], 60)  # one of them has ended
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait_for(slow, 0.2)
        slow.kill()
        assert process.wait_any([slow], 60) and slow.wait() == -signal.SIGKILL
    finally:
        slow.kill()
        slow.wait()


def test_local_keeps_the_user_s_environment_but_the_harness_s_names(monkeypatch):
    from harness.environments.process import clean_environment, kept_line, users_environment

    user = {"PYTHONPATH": "/opt/jax-site", "LD_LIBRARY_PATH": "/opt/lib", "TPU_ACCELERATOR_TYPE": "v5litepod-4",
            "TPU_WORKER_ID": "0", "XLA_FLAGS": "--xla_dump_to=/tmp/x", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
            "CUDA_HOME": "/usr/local/cuda", "NVIDIA_VISIBLE_DEVICES": "all", "PYTHONHASHSEED": "0",
            "JAX_PLATFORMS": "cpu", "HOME": "/home/u"}
    kept = users_environment(user)
    assert set(kept) == {"PYTHONPATH", "LD_LIBRARY_PATH", "TPU_ACCELERATOR_TYPE", "TPU_WORKER_ID", "XLA_FLAGS",
                         "XLA_PYTHON_CLIENT_PREALLOCATE", "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES"}
    assert kept_line(kept) == "PYTHONPATH, LD_LIBRARY_PATH, TPU_* (2), CUDA_* (1), NVIDIA_* (1), XLA_* (2)"
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    env = clean_environment({"PYTHONPATH": "/harness/startup", "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
                             "JAX_PLATFORMS": "tpu", "PYTHONHASHSEED": "7"}, kept)
    assert env["PYTHONPATH"] == "/harness/startup:/opt/jax-site"  # the hook's folder first, then the user's
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=8"
    assert env["JAX_PLATFORMS"] == "tpu" and env["PYTHONHASHSEED"] == "7"  # the harness's names are its own
    assert env["TPU_WORKER_ID"] == "0" and env["LD_LIBRARY_PATH"] == "/opt/lib"
    # without `kept` (venv, docker): scrubbed as before
    plain = clean_environment({"PYTHONPATH": "/harness/startup"})
    assert plain["PYTHONPATH"] == "/harness/startup" and "XLA_FLAGS" not in plain
    assert kept_line({}) == "nothing"


def test_local_backend_probes_with_the_user_s_pythonpath(tmp_path, monkeypatch):
    from harness.core.errors import BackendUnavailable
    from harness.environments.local import LocalBackend

    site = tmp_path / "site"
    (site / "jax").mkdir(parents=True)
    (site / "jax" / "__init__.py").write_text("__version__ = '0.10.2'\n")
    (site / "jaxlib").mkdir()
    (site / "jaxlib" / "__init__.py").write_text("__version__ = '0.10.2'\n")
    (site / "numpy").mkdir()
    (site / "numpy" / "__init__.py").write_text("__version__ = '2.0'\n")
    python = sys.executable
    said = []
    backend = LocalBackend(python, kept={"PYTHONPATH": str(site)})
    assert backend.installed_version() == "0.10.2"
    backend.check(Platform.TPU, said.append)
    assert any("kept from your environment: PYTHONPATH" in line for line in said)
    with pytest.raises(BackendUnavailable, match="with nothing kept from your environment"):
        LocalBackend(python, kept={}).installed_version()


def test_the_harness_and_the_supervisor_remove_a_run_s_temporary_folder_by_one_function(tmp_path):
    """One function for both (harness/inside/supervise.py): a folder made read-only inside goes, and a folder gone
    already leaves its parent as it was (the error handler would have made the parent writable by its owner only)."""
    from harness.inside import supervise
    assert process.remove_run_tmp is supervise.remove_run_tmp
    run_tmp = tmp_path / "base" / "run"
    (run_tmp / "frozen" / "inside").mkdir(parents=True)
    (run_tmp / "frozen").chmod(0o500)
    process.remove_run_tmp(run_tmp)
    assert not run_tmp.exists()
    (tmp_path / "base").chmod(0o755)
    supervise.remove_run_tmp(str(run_tmp))
    assert (tmp_path / "base").stat().st_mode & 0o777 == 0o755


def test_an_interrupted_sweep_kills_a_supervisor_that_outlives_the_grace_period(monkeypatch):
    """kill_all SIGTERMs every supervisor; one that does not end (hung) is killed with its group after the grace
    period, not left for its run thread to wait out the run's whole timeout."""
    import threading

    from harness.core.signals import stop_signals_interrupt

    monkeypatch.setattr(process, "STOP_GRACE_S", 0.5)
    deaf_source = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)"
    deaf = subprocess.Popen([sys.executable, "-c", deaf_source], stdout=subprocess.PIPE, start_new_session=True)
    assert deaf.stdout is not None and deaf.stdout.readline() == b"ready\n"
    with process._live_lock:
        process._live.add(deaf)
    try:
        with stop_signals_interrupt():
            started = time.monotonic()
            process.kill_all()
            waiter = threading.Thread(target=deaf.wait)
            waiter.start()
            waiter.join(10)
            assert deaf.returncode == -signal.SIGKILL, deaf.returncode
            assert time.monotonic() - started < 5
    finally:
        with process._live_lock:
            process._live.discard(deaf)
        if deaf.poll() is None:
            deaf.kill()
