"""Start one interpreter as a fresh process with a timeout: shared by the venv and local backends."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from harness.environments.base import Environment
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


def kill_all() -> None:
    """Kill every run still going (their process groups): called when a sweep is interrupted."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile


def log_tail(path: Path, chars: int = 2000) -> str:
    """The end of a log, for an error that cites it; "" when it cannot be read."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def run_process(argv: list[str], env: dict[str, str], log_path: Path, timeout_s: float,
                cwd: Path | None = None) -> ProcessOutcome:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "wb") as log:
        # A new session so a timeout kills the whole process group, not just the interpreter.
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True)
        with _live_lock:
            _live.add(proc)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            return ProcessOutcome(None, time.monotonic() - start, timed_out=True,
                                  reason=f"killed after the {timeout_s:g} s timeout")
        except BaseException:  # Ctrl-C: never leave a child behind
            _kill_group(proc)
            proc.wait()
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

    def run(self, script, args, env, cache_dir, log_path, timeout_s) -> ProcessOutcome:
        full_env = clean_environment({**env, "JAX_COMPILATION_CACHE_DIR": str(cache_dir)})
        return run_process([str(self.python), str(script), *args], full_env, log_path, timeout_s,
                           cwd=Path(script).parent)

    def interrupt(self) -> None:
        kill_all()
