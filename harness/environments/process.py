"""Start one interpreter as a fresh process with a timeout, and ask an interpreter which JAX it has:
shared by the venv and local backends (and the probe by docker)."""

from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from harness.environments.base import Environment
from harness.environments.factor_runs import unreachable_by_others
from harness.environments.key_hiding import key_hider
from harness.environments.same_path import bind_argv, same_path_problem
from harness.core.errors import EnvironmentUnavailable
from harness.core.factors import OTHER_GID, Factor, RunVariation, reordered
from harness.core.bounded_read import LOG_MAX_BYTES, read_text_bounded
from harness.core.files import open_fresh, package_path, remove_path, write_atomic
from harness.core.signals import RunsStopped, refuse_if_stopping, stop_runs
from harness.core.runs import ProcessOutcome, Program
from harness.inside.startup import SOURCE_DIR
from harness.inside.supervise import SIGNAL_EXIT_VAR, remove_run_tmp

# Variables of the harness's own process that must not leak into a run: they would change what JAX
# or Python does (a fixed hash seed hides set-order bugs; a stray cache dir or platform changes keys).
_SCRUBBED_PREFIXES = ("JAX_", "XLA_", "PYTHON", "VIRTUAL_ENV", "TF_CPP_")


# What `--backend local` keeps of the user's own environment, as they run JAX there: a TPU VM image or an HPC module
# puts JAX on PYTHONPATH and libraries on LD_LIBRARY_PATH, and the accelerator's runtime reads TPU_*, CUDA_*,
# NVIDIA_* and XLA_* (the names the harness sets are still its own: `clean_environment`).
KEPT_NAMES = ("PYTHONPATH", "LD_LIBRARY_PATH")
KEPT_PREFIXES = ("TPU_", "CUDA_", "NVIDIA_", "XLA_")


def users_environment(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The user's variables `--backend local` keeps (pure, given `environ`)."""
    return {k: v for k, v in environ.items() if k in KEPT_NAMES or k.startswith(KEPT_PREFIXES)}


def kept_line(kept: Mapping[str, str]) -> str:
    """`PYTHONPATH, TPU_* (10)`: what was kept, for the progress line (the values may be long or private)."""
    words = [n for n in KEPT_NAMES if n in kept]
    for prefix in KEPT_PREFIXES:
        count = sum(k.startswith(prefix) for k in kept)
        if count:
            words.append(f"{prefix}* ({count})")
    return ", ".join(words) or "nothing"


def clean_environment(extra: dict[str, str], kept: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without what would change what JAX or Python does, then `kept` (the user's own,
    `--backend local`), then the run's `extra`: the harness's names replace the user's, but for PYTHONPATH (the
    harness's folder first, the user's after it) and XLA_FLAGS (the user's flags, then the harness's)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    base.update(kept or {})
    for name, value in extra.items():
        own = (kept or {}).get(name)
        if own and name == "PYTHONPATH":
            value = os.pathsep.join(v for v in (value, own) if v)
        elif own and name == "XLA_FLAGS":
            value = " ".join(v for v in (own, value) if v)
        base[name] = value
    return base


# Processes started here and still running, so that Ctrl-C can stop every parallel run at once.
_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()

# Every run starts under supervise.py, which takes down whatever the script leaves behind (see there).
SUPERVISOR = package_path("harness.inside", "supervise.py")
SUPERVISED = sys.platform.startswith("linux")
# How long a supervisor gets to kill its run's processes after SIGTERM before its group is SIGKILLed.
STOP_GRACE_S = 10.0
# A run's log keeps the first and last half of this much output, and says how much it cut between.
MAX_LOG_BYTES = 32 << 20


def supervised(argv: list[str], max_log_bytes: int = MAX_LOG_BYTES) -> list[str]:
    """The command line that runs `argv` under the supervisor (the harness's own interpreter; -I -S:
    it needs nothing but the standard library, and starts in milliseconds)."""
    if not SUPERVISED:
        return argv
    return [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), str(max_log_bytes), *argv]


def kill_all() -> None:
    """Stop every run still going: called when a sweep is interrupted."""
    stop_runs()  # and none starts after
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _signal(proc, signal.SIGTERM if SUPERVISED else signal.SIGKILL)
    if SUPERVISED and procs:
        # A run's thread waits for its supervisor up to the run's own timeout: a supervisor that does not end within
        # the grace period is killed with its group here, as _stop does, so an interrupted sweep ends promptly.
        escalate = threading.Timer(STOP_GRACE_S, _kill_left, (procs,))
        escalate.daemon = True
        escalate.start()


def _kill_left(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            _signal(proc, signal.SIGKILL)


def _signal(proc: subprocess.Popen[bytes], signum: int) -> None:
    try:
        if signum == signal.SIGKILL:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a run and everything it started: the supervisor kills them all on SIGTERM; its process
    group is SIGKILLed if it does not finish within the grace period."""
    if SUPERVISED:
        _signal(proc, signal.SIGTERM)
        try:
            wait_for(proc, STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _signal(proc, signal.SIGKILL)
    proc.wait()


# Where a process's end cannot be waited for by the kernel (no pidfd): how often to look.
_POLL_S = 0.05


def _pidfds(procs: list[subprocess.Popen[bytes]]) -> list[int] | None:
    """A pidfd per process (readable once it has ended), or None where this system has none (not Linux 5.3+).
    Only for processes not reaped yet: a reaped one's pid may be another process's by now."""
    fds: list[int] = []
    try:
        for proc in procs:
            fds.append(os.pidfd_open(proc.pid))
    except (AttributeError, OSError):
        for fd in fds:
            os.close(fd)
        return None
    return fds


def wait_any(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> bool:
    """Whether one of `procs` has ended, told as soon as it ends (the kernel wakes us through its pidfd) or
    False after `timeout_s`: no polling, so the next run starts the moment a slot frees, where subprocess's
    own `wait(timeout=...)` sleeps up to 50 ms between looks (measured: about 38 sleeps a run). Without
    pidfds, one look after at most `_POLL_S`."""
    if any(proc.poll() is not None for proc in procs):
        return True
    fds = _pidfds(procs)
    if fds is None:
        time.sleep(max(0.0, min(_POLL_S, timeout_s)))
        return any(proc.poll() is not None for proc in procs)
    try:
        waiter = select.poll()
        for fd in fds:
            waiter.register(fd, select.POLLIN)
        return bool(waiter.poll(max(0, math.ceil(timeout_s * 1000))))
    finally:
        for fd in fds:
            os.close(fd)


def wait_for(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """`proc.wait(timeout=timeout_s)`, woken by the process's end instead of polling for it (`wait_any`)."""
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        wait_any([proc], left)
    return proc.wait()


def log_tail(path: Path, chars: int = 2000) -> str:
    """The end of a log, for an error that cites it; "" when it cannot be read."""
    return (read_text_bounded(path, LOG_MAX_BYTES) or "")[-chars:]


# Each process of a run gets a temporary folder of its own in these variables, removed when it ends (however
# it ends: exit, crash, timeout, Ctrl-C): what a script leaves in its temporary folder (a checkpoint under
# /tmp/train-ckpt-*) goes with its run instead of piling up one per run. RUN_TMPDIR_VAR names the folder
# for the supervisor, which removes it too when the harness itself is killed (inside/supervise.py).
RUN_TMP_VARS = ("TMPDIR", "TEMP", "TMP")
RUN_TMPDIR_VAR = "HARNESS_RUN_TMPDIR"
RUN_TMP_PREFIX = "harness-run-"
_run_tmp: dict[subprocess.Popen[bytes], Path] = {}


def make_run_tmp(env: dict[str, str]) -> Path | None:
    """A new temporary folder for one run's process, in the temporary folder its environment names (the
    machine's otherwise); sticky and open to all, as /tmp is, so a run as another user (--vary user) can
    use it too. None when none can be made: the run then has the machine's."""
    for base in (env.get("TMPDIR"), tempfile.gettempdir(), "/tmp"):
        if not base:
            continue
        try:
            path = Path(tempfile.mkdtemp(prefix=RUN_TMP_PREFIX, dir=base))
            path.chmod(0o1777)
            return path
        except OSError:
            continue
    return None


def with_run_tmp(env: dict[str, str], folder: Path | None) -> dict[str, str]:
    if folder is None:
        return env
    return {**env, **{name: str(folder) for name in RUN_TMP_VARS}, RUN_TMPDIR_VAR: str(folder)}


def start_process(argv: list[str], env: dict[str, str], log: BinaryIO, cwd: Path | None = None,
                  max_log_bytes: int = MAX_LOG_BYTES) -> subprocess.Popen[bytes] | str:
    """Start `argv` supervised, its output into the open file `log`, registered for Ctrl-C, with a
    temporary folder of its own; or why it could not start (also written to the log). The caller waits
    for it, or `stop_process`es it, then calls `forget` (which removes its temporary folder)."""
    refuse_if_stopping()  # (a signal has stopped the work: no run starts, a retry included)
    folder = make_run_tmp(env)
    try:
        # A new session: the run's process group is its own, apart from the harness's terminal.
        proc = subprocess.Popen(supervised(argv, max_log_bytes), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=with_run_tmp(env, folder), cwd=cwd,
                                start_new_session=True)
    except OSError as exc:  # a missing folder or interpreter: this run's failure, not the sweep's
        remove_run_tmp(folder)
        reason = f"could not start the run's process: {exc}"
        log.write(reason.encode() + b"\n")
        return reason
    with _live_lock:
        _live.add(proc)
        if folder is not None:
            _run_tmp[proc] = folder
    try:  # the signal came while it started, after kill_all looked: stopped here (kill_all looks under the lock)
        refuse_if_stopping()
    except RunsStopped:
        _stop(proc)
        forget(proc)
        raise
    return proc


def forget(proc: subprocess.Popen[bytes]) -> None:
    """A run's process has ended (or been stopped): no longer one Ctrl-C stops; its temporary folder goes."""
    with _live_lock:
        _live.discard(proc)
        folder = _run_tmp.pop(proc, None)
    remove_run_tmp(folder)


def signal_stop(proc: subprocess.Popen[bytes]) -> None:
    """The first half of `_stop`: ask the supervisor to take the run down (several runs at once)."""
    _signal(proc, signal.SIGTERM if SUPERVISED else signal.SIGKILL)


stop_process = _stop


def exit_reason(code: int) -> str:
    if code < 0:
        return f"killed by signal {signal.Signals(-code).name}"
    return f"exit code {code}" if code != 0 else ""


def run_process(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float,
                cwd: Path | None = None, max_log_bytes: int = MAX_LOG_BYTES) -> ProcessOutcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(open_fresh(log_path), "wb") as log:
        proc = start_process(argv, env, log, cwd, max_log_bytes)
        if isinstance(proc, str):
            return ProcessOutcome(None, time.monotonic() - start, reason=proc)
        try:
            code = wait_for(proc, timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return ProcessOutcome(None, time.monotonic() - start, timed_out=True,
                                  reason=f"killed after the {timeout_s:g} s timeout")
        except BaseException:  # Ctrl-C, SIGTERM: never leave a child behind
            _stop(proc)
            raise
        finally:
            forget(proc)
    return ProcessOutcome(code, time.monotonic() - start, reason=exit_reason(code))


# When one process of a job fails, the others are given this long to end on their own (JAX's coordination
# service tells them), then stopped: a peer waiting on a collective would otherwise wait for the timeout.
PEER_GRACE_S = 10.0
AFTER_PEERS = "stopped after every other process had ended well"


def run_processes(starts: list[tuple[list[str], dict[str, str], Path]], timeout_s: float, cwd: Path | None = None,
                  peer_grace_s: float = PEER_GRACE_S) -> list[ProcessOutcome]:
    """Run the processes of one job at once, each `(argv, env, log)` supervised as `run_process` runs one.
    All are stopped at `timeout_s`; once one has failed, the rest `peer_grace_s` later. Every process is
    gone when this returns (its supervisor takes down what it started), also after Ctrl-C."""
    start = time.monotonic()
    logs: list[BinaryIO] = []
    procs: list[subprocess.Popen[bytes] | str] = []  # a str: why that one could not start
    outcomes: list[ProcessOutcome | None] = []
    try:
        for argv, env, log_path in starts:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            logs.append(open(open_fresh(log_path), "wb"))  # noqa: SIM115 - each closed in the finally below
            proc = start_process(argv, env, logs[-1], cwd)
            procs.append(proc)
            outcomes.append(ProcessOutcome(None, 0.0, reason=proc) if isinstance(proc, str) else None)
        deadline, why = start + timeout_s, f"killed after the {timeout_s:g} s timeout"
        while any(o is None for o in outcomes):
            now = time.monotonic()
            for i, proc in enumerate(procs):
                if outcomes[i] is None and not isinstance(proc, str) and (code := proc.poll()) is not None:
                    outcomes[i] = ProcessOutcome(code, now - start, reason=exit_reason(code))
            failed = next(((i, o) for i, o in enumerate(outcomes) if o is not None and not o.ok), None)
            if failed is not None and now + peer_grace_s < deadline:
                deadline = now + peer_grace_s
                why = f"stopped {peer_grace_s:g} s after process {failed[0]} failed ({failed[1].reason})"
            elif (failed is None and len(outcomes) > 1 and sum(o is None for o in outcomes) == 1
                  and now + peer_grace_s < deadline):  # the last one: JAX's process 0 can hang at exit
                deadline = now + peer_grace_s
                why = f"{AFTER_PEERS} ({peer_grace_s:g} s after the last one)"
            if all(o is not None for o in outcomes):
                break
            if now >= deadline:
                _stop_all([p for p, o in zip(procs, outcomes) if o is None and not isinstance(p, str)])
                outcomes = [o or ProcessOutcome(None, time.monotonic() - start, timed_out=True, reason=why)
                            for o in outcomes]
                break
            wait_any([p for p, o in zip(procs, outcomes) if o is None and not isinstance(p, str)],
                     deadline - now)
    except BaseException:  # Ctrl-C, SIGTERM: never leave a process behind
        _stop_all([p for p in procs if not isinstance(p, str) and p.poll() is None])
        raise
    finally:
        for proc in procs:
            if not isinstance(proc, str):
                forget(proc)
        for log in logs:
            log.close()
    return [o for o in outcomes if o is not None]  # each one set by now


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop several runs at once: every supervisor told first, then each waited for (or killed)."""
    for proc in procs:
        signal_stop(proc)
    for proc in procs:
        stop_process(proc)


# `harness submit --processes N` sets this in each shard task: a job's processes are then started by srun,
# one Slurm task each, on the allocation's nodes (harness/inside/startup/job_task.py).
LAUNCHER_VAR = "HARNESS_JOB_LAUNCHER"
SRUN = "srun"
JOB_TASK = SOURCE_DIR / "job_task.py"  # standard library only, run as a script (-I -S): nothing written beside it


def run_processes_srun(starts: list[tuple[list[str], dict[str, str], Path]], timeout_s: float,
                       cwd: Path | None = None) -> list[ProcessOutcome]:
    """Run a job's processes as the tasks of one `srun` step (one task each, wherever Slurm puts them),
    the step supervised as a run is: killed at `timeout_s`, and with it every task (--kill-on-bad-exit:
    one task failing ends the others too). Each task's outcome is the status file it wrote; a task that
    wrote none did not finish."""
    first_log = starts[0][2]
    spec_dir = first_log.with_name(first_log.stem + ".srun")
    remove_path(spec_dir)
    spec_dir.mkdir(parents=True)
    for rank, (argv, env, log) in enumerate(starts):
        log.parent.mkdir(parents=True, exist_ok=True)
        os.close(open_fresh(log))
        write_atomic(spec_dir / f"rank{rank}.json", json.dumps(
            {"argv": argv, "env": env, "log": str(log), "cwd": str(cwd) if cwd else None}))
    step = ["srun", f"--ntasks={len(starts)}", "--kill-on-bad-exit=1", "--export=ALL", f"--chdir={spec_dir}",
            sys.executable, "-I", "-S", str(JOB_TASK), str(spec_dir)]
    outcome = run_process(step, clean_environment({}), spec_dir / "srun.log", timeout_s)
    outcomes = []
    for rank in range(len(starts)):
        try:  # the task's status, read within bounds (the program's processes could reach the job's folder)
            text = read_text_bounded(spec_dir / f"rank{rank}.status", 1 << 20)
            if text is None:
                raise OSError(f"rank {rank} left no status")
            code = json.loads(text)["exit_code"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):  # the task did not finish: stopped
            # with the step, or never began
            said = log_tail(spec_dir / "srun.log", 300).strip().replace("\n", "; ")
            why = outcome.reason or "srun ended, but the task wrote no status"
            outcomes.append(ProcessOutcome(None, outcome.duration_s, timed_out=True,
                                           reason=why if outcome.timed_out or not said else f"{why} (srun: {said})"))
            continue
        outcomes.append(ProcessOutcome(code, outcome.duration_s, reason=exit_reason(code)))
    return outcomes


class InterpreterEnvironment(Environment):
    """An environment whose runs are `python script args` on this host, in the script's folder
    (venv and local): `python` is the interpreter."""

    python: str | Path
    kept: Mapping[str, str] = {}  # the user's own variables the runs keep (--backend local: users_environment)

    def run(self, program: Program, env: dict[str, str], cache_dir: Path, log_path: Path, timeout_s: float,
            variation: RunVariation | None = None) -> ProcessOutcome:
        extra = {**env, "JAX_COMPILATION_CACHE_DIR": str(cache_dir)}
        python = str(self.python)
        if variation is not None:
            extra.update(variation.env)
            if variation.pythonpath_first:
                extra["PYTHONPATH"] = os.pathsep.join(p for p in (variation.pythonpath_first,
                                                                  extra.get("PYTHONPATH")) if p)
            if variation.other_prefix:
                python = str(self.prefix_copy())
        full_env = reordered(clean_environment(extra, self.kept), variation)
        # As another user (--vary user) the key is the harness's user's alone already, and out of that user's reach.
        hider = () if variation is not None and variation.uid is not None else _hider(program, python)
        return run_process([*program.launcher, *wrapped([*hider, python, *program.argv()], variation)],
                           _signal_exit(full_env, program.launcher or hider), log_path, timeout_s,
                           cwd=program.workdir)

    def run_group(self, program: Program, envs: list[dict[str, str]], cache_dir: Path, log_paths: list[Path],
                  timeout_s: float) -> list[ProcessOutcome]:
        srun = os.environ.get(LAUNCHER_VAR) == SRUN  # Slurm's nodes: bubblewrap may not be there (docs/many-machines.md)
        hider = () if srun else _hider(program, str(self.python))
        argv = [*program.launcher, *hider, str(self.python), *program.argv()]
        full = [_signal_exit(clean_environment({**env, "JAX_COMPILATION_CACHE_DIR": str(cache_dir)}, self.kept),
                             () if srun else program.launcher or hider) for env in envs]
        starts = [(argv, env, log) for env, log in zip(full, log_paths)]
        if srun:
            return run_processes_srun(starts, timeout_s, cwd=program.workdir)
        return run_processes(starts, timeout_s, cwd=program.workdir)

    def own_folder_problem(self) -> str:
        return same_path_problem()

    def own_folder_run(self, program: Program, cell_folder: Path, own: Path) -> tuple[Program, Path]:
        """The process is told the cell's folder (JAX_COMPILATION_CACHE_DIR, the hook's) and bubblewrap binds
        `own` over it (harness/environments/same_path.py)."""
        return replace(program, launcher=(*bind_argv(own, cell_folder), *program.launcher)), cell_folder

    def cannot_vary(self, factor: Factor) -> str:
        if factor == Factor.USER:
            return other_user_problem(Path(self.python))
        if factor == Factor.HOSTNAME:
            return uts_namespace_problem()
        if factor == Factor.PREFIX:
            return "the interpreter is not one the harness made: it is not copied"
        return ""

    def interrupt(self) -> None:
        kill_all()


# Every installed distribution and its version, so each cell records exactly what it ran with.
DISTRIBUTIONS = ("{d.metadata['Name']: d.version for d in importlib.metadata.distributions()"
                 " if d.metadata['Name']}")
PROBE = ("import json, platform, importlib.metadata, jax, jaxlib, numpy; print(json.dumps({"
         "'python': platform.python_version(), 'jax': jax.__version__, 'jaxlib': jaxlib.__version__,"
         f" 'numpy': numpy.__version__, 'distributions': {DISTRIBUTIONS}}}, sort_keys=True))")


def list_distributions(python: Path, env: dict[str, str]) -> dict[str, str]:
    """Installed distributions without importing jax (cheap); {} when the interpreter cannot say."""
    code = f"import json, importlib.metadata; print(json.dumps({DISTRIBUTIONS}, sort_keys=True))"
    try:
        proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, timeout=60,
                              cwd=Path(python).parent, check=False)
        return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return {}


def probe_interpreter(python: Path, env: dict[str, str]) -> dict[str, Any]:
    """jax/jaxlib/numpy/Python versions as `python` sees them; EnvironmentUnavailable if it can't say."""
    try:
        # In the interpreter's folder: `-c` puts the working folder on sys.path, and a checkout's
        # *.egg-info there would be listed as installed.
        # JAX_PLATFORMS=cpu: it only reads versions, and a TPU host's chip costs seconds to open (FACTS.md).
        proc = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True,
                              env={**env, "JAX_PLATFORMS": "cpu"},
                              timeout=300, cwd=Path(python).parent, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnavailable(f"cannot run {python}: {exc}") from None
    if proc.returncode != 0:
        raise EnvironmentUnavailable(f"jax does not import with {python}: "
                                     + (proc.stderr.strip().splitlines() or ["?"])[-1],
                                     log_tail=proc.stderr[-2000:])
    try:
        facts: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        facts["jax"]  # the one fact every caller needs: a KeyError here if the probe lacks it
    except (IndexError, ValueError, KeyError, TypeError):
        raise EnvironmentUnavailable(f"{python} did not report its jax version "
                                     f"(is it a Python interpreter?)") from None
    return facts


def _signal_exit(env: dict[str, str], wrapper: tuple[str, ...]) -> dict[str, str]:
    """`env`, telling the supervisor that the command is a wrapper's (bubblewrap) whose exit code 128 + N stands
    for its child's death by signal N (a program's own exit code of 129 to 192 then reads as that signal, as a
    container's does)."""
    return {**env, SIGNAL_EXIT_VAR: "1"} if wrapper else env


def _hider(program: Program, python: str) -> tuple[str, ...]:
    """What a run's interpreter starts under to keep the seal key out of its reach (key_hiding.py); nothing when
    its launcher does that already (the reducer's sandbox), or when the interpreter cannot start (a run that
    reads nothing, which fails as it always did: `cannot start`, not bubblewrap's words)."""
    if program.key_hidden or not os.access(python, os.X_OK):
        return ()
    return key_hider()


def wrapped(argv: list[str], variation: RunVariation | None) -> list[str]:
    """The command with what only a wrapper can change: another user (setpriv), another host name (a
    UTS namespace of its own, unshare)."""
    if variation is None:
        return argv
    if variation.hostname is not None:
        argv = [shutil.which("unshare") or "unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"',
                variation.hostname, *argv]
    if variation.uid is not None:
        argv = [shutil.which("setpriv") or "setpriv", f"--reuid={variation.uid}", f"--regid={OTHER_GID}", "--clear-groups", "--", *argv]
    return argv


def other_user_problem(python: Path) -> str:
    """Why a run cannot start as another uid here, or ""."""
    if os.geteuid() != 0:
        return f"starting a process as another user needs root (the harness runs as uid {os.geteuid()})"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    return unreachable_by_others(python) or unreachable_by_others(python.resolve())


_UTS_PROBLEM: list[str] = []  # probed once per process


def uts_namespace_problem() -> str:
    """Why a run cannot get a host name of its own (a UTS namespace) here, or ""."""
    if not _UTS_PROBLEM:
        if shutil.which("unshare") is None:
            _UTS_PROBLEM.append("unshare (util-linux) is not installed")
        else:
            try:
                probe = subprocess.run(["unshare", "--uts", "--", "hostname", "harness-probe"], capture_output=True,
                                       text=True, timeout=30, check=False)
                _UTS_PROBLEM.append("" if probe.returncode == 0 else
                                    f"no UTS namespace here (unshare --uts: {probe.stderr.strip() or probe.returncode})")
            except (OSError, subprocess.TimeoutExpired) as exc:
                _UTS_PROBLEM.append(f"no UTS namespace here ({exc})")
    return _UTS_PROBLEM[0]
