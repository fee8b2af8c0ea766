"""Start one interpreter as a fresh process with a timeout, and ask an interpreter which JAX it has:
shared by the venv and local backends (and the probe by docker)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from harness.environments.base import Environment
from harness.errors import EnvironmentUnavailable
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


PROBE = ("import json, platform, jax, jaxlib, numpy; print(json.dumps({'python': platform.python_version(),"
         " 'jax': jax.__version__, 'jaxlib': jaxlib.__version__, 'numpy': numpy.__version__}))")


def probe_interpreter(python: Path, env: dict[str, str]) -> dict[str, Any]:
    """jax/jaxlib/numpy/Python versions as `python` sees them; EnvironmentUnavailable if it can't say."""
    try:
        proc = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, env=env,
                              timeout=300)
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
