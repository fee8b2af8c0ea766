"""Start one interpreter as a fresh process with a timeout, and ask an interpreter which JAX it has:
shared by the venv and local backends (and the probe by docker)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.environments.base import Environment
from harness.errors import EnvironmentUnavailable
from harness.files import package_path
from harness.model import ProcessOutcome

# Variables of the harness's own process that must not leak into a run: they would change what JAX
# or Python does (a fixed hash seed hides set-order bugs; a stray cache dir or platform changes keys).
_SCRUBBED_PREFIXES = ("JAX_", "XLA_", "PYTHON", "VIRTUAL_ENV", "TF_CPP_")


def clean_environment(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    base.update(extra)
    return base


# Processes started here and still running, so that Ctrl-C can stop every parallel run at once.
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()

# Every run starts under supervise.py, which takes down whatever the script leaves behind (see there).
SUPERVISOR = package_path("harness.environments", "supervise.py")
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
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _signal(proc, signal.SIGTERM if SUPERVISED else signal.SIGKILL)


def _signal(proc: subprocess.Popen, signum: int) -> None:
    try:
        if signum == signal.SIGKILL:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile


def _stop(proc: subprocess.Popen) -> None:
    """Stop a run and everything it started: the supervisor kills them all on SIGTERM; its process
    group is SIGKILLed if it does not finish within the grace period."""
    if SUPERVISED:
        _signal(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _signal(proc, signal.SIGKILL)
    proc.wait()


def log_tail(path: Path, chars: int = 2000) -> str:
    """The end of a log, for an error that cites it; "" when it cannot be read."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def run_process(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float,
                cwd: Path | None = None, max_log_bytes: int = MAX_LOG_BYTES) -> ProcessOutcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "wb") as log:
        try:
            # A new session: the run's process group is its own, apart from the harness's terminal.
            proc = subprocess.Popen(supervised(argv, max_log_bytes), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
        except OSError as exc:  # a missing folder or interpreter: this run's failure, not the sweep's
            reason = f"could not start the run's process: {exc}"
            log.write(reason.encode() + b"\n")
            return ProcessOutcome(None, time.monotonic() - start, reason=reason)
        with _live_lock:
            _live.add(proc)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return ProcessOutcome(None, time.monotonic() - start, timed_out=True,
                                  reason=f"killed after the {timeout_s:g} s timeout")
        except BaseException:  # Ctrl-C, SIGTERM: never leave a child behind
            _stop(proc)
            raise
        finally:
            with _live_lock:
                _live.discard(proc)
    duration = time.monotonic() - start
    reason = ""
    if code < 0:
        reason = f"killed by signal {signal.Signals(-code).name}"
    elif code != 0:
        reason = f"exit code {code}"
    return ProcessOutcome(code, duration, reason=reason)


class InterpreterEnvironment(Environment):
    """An environment whose runs are `python script args` on this host, in the script's folder
    (venv and local): `python` is the interpreter."""

    python: str | Path

    def run(self, program, env, cache_dir, log_path, timeout_s) -> ProcessOutcome:
        full_env = clean_environment({**env, "JAX_COMPILATION_CACHE_DIR": str(cache_dir)})
        return run_process([str(self.python), *program.argv()], full_env, log_path, timeout_s,
                           cwd=program.workdir)

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
                              cwd=Path(python).parent)
        return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError):
        return {}


def probe_interpreter(python: Path, env: dict[str, str]) -> dict[str, Any]:
    """jax/jaxlib/numpy/Python versions as `python` sees them; EnvironmentUnavailable if it can't say."""
    try:
        # In the interpreter's folder: `-c` puts the working folder on sys.path, and a checkout's
        # *.egg-info there would be listed as installed.
        proc = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, env=env,
                              timeout=300, cwd=Path(python).parent)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnavailable(f"cannot run {python}: {exc}") from None
    if proc.returncode != 0:
        raise EnvironmentUnavailable(f"jax does not import with {python}: "
                                     + (proc.stderr.strip().splitlines() or ["?"])[-1],
                                     log_tail=proc.stderr[-2000:])
    try:
        facts = json.loads(proc.stdout.strip().splitlines()[-1])
        facts["jax"]  # noqa: B018 - the one fact every caller needs
    except (IndexError, ValueError, KeyError, TypeError):
        raise EnvironmentUnavailable(f"{python} did not report its jax version "
                                     f"(is it a Python interpreter?)") from None
    return facts
