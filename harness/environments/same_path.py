"""A run's own empty cache folder at the path where the cell's runs see the cell's folder (issue 51, item 7).

From JAX 0.4.36 until 0.11.0 the folder's path is in every key: a run given another path computes other keys.
So a run that must not see the cell's folder (run 2 beside run 1, harness/measure/beside.py) keeps the path and
gets another folder there: bubblewrap binds its own folder over the cell's, in a mount namespace of that process
alone (everything else as it is: the root bound whole, read-write, devices included; no PID namespace, no new
session, so the run's supervisor still stops its process group)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

PROBE_TIMEOUT_S = 30
_MARK = "private"


def bind_argv(private: Path, shown: Path) -> list[str]:
    """bubblewrap's command line (pure) that starts a command with `private` where it sees `shown`."""
    return [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/", "--bind", str(private.resolve()),
            str(shown.resolve()), "--die-with-parent", "--"]


@cache
def same_path_problem() -> str:
    """Why a run cannot get a folder of its own at another folder's path here, or "" (probed once per process:
    the bind made, and a file of the private folder seen through the other path)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    with tempfile.TemporaryDirectory(prefix="harness-same-path-") as work:
        shown, private = Path(work, "shown"), Path(work, "private")
        shown.mkdir()
        private.mkdir()
        (private / _MARK).touch()
        try:
            probe = subprocess.run([*bind_argv(private, shown), "test", "-e", str(shown / _MARK)],
                                   capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap cannot run here ({exc})"
    if probe.returncode != 0:
        return f"bwrap cannot bind a folder here ({probe.stderr.strip()[:200] or f'exit code {probe.returncode}'})"
    return ""
