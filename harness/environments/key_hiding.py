"""The harness's seal key (harness/core/seal.py) kept out of the reach of the programs it runs, on this host (the
venv and local backends; a container mounts only the folders its run names).

A measured program runs as the harness's user: it read `reduce-state.key` and re-sealed another bisection's
state.json with forged verdicts, which that bisection's own command then replayed. So each run's interpreter
starts under bubblewrap with an empty file of the harness's bound over the key (not /dev/null: a device bound
in a user namespace cannot be opened, so the program would tell a hidden key from none), and so that nothing uncovers it: in a
user namespace of its own with no capability, as root too (with CAP_SYS_ADMIN a program unmounts the bind, with
CAP_DAC_READ_SEARCH it opens the key by its handle), where the mounts bwrap made are locked for any namespace the
program makes itself; and in a PID namespace of its own with a fresh /proc (through /proc/<pid>/root of a process
outside, a shell of the same user, the machine's view shows the key). There every run's interpreter would be pid 2,
so a program that bakes its pid into a computation (a worker's seed) would compute the same key every start, where on
a machine each start has another pid: a shell in the namespace first starts short-lived children up to a target pid
(the next for each run) and then the interpreter as its own child, so each run has another pid. The rest is as the program had it: the
root bound whole and writable, devices, the machine's network; no new session, so the run's supervisor still
stops its process group. Where bubblewrap cannot do this, the key stays readable and the commands that trust a
seal say so.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

from harness.core import seal
from harness.core.files import private_folder

PROBE_TIMEOUT_S = 30
# The pid a run's command starts from in its namespace: PID_BASE + 0 .. PID_SPREAD - 1, the next one for each run
# this process starts, so any PID_SPREAD runs in a row (a cell's runs and controls, another cell's beside them) have
# distinct pids. A target, not a count of pids to pass over: how many pids a namespace used before the shell varies
# (a container's runtime takes 5 to 7 of them, measured), and a count on top of that repeated pids. Each pid passed
# over costs a fork (a fraction of a millisecond).
PID_BASE = 16
PID_SPREAD = 64
_runs_started = itertools.count()
_count_lock = threading.Lock()  # runs start from threads of their own
# Forks short-lived subshells until one had pid $0 or more, then runs the command as a child (not exec: that keeps
# the shell's pid) and ends as it did: a death by signal N is exit 128 + N, as bubblewrap's own is.
_PASS_OVER_PIDS = 't=$0; while :; do ( : ) & p=$!; wait "$p"; [ "$p" -ge "$t" ] && break; done; "$@"; exit $?'


_empty_lock = threading.Lock()  # runs start from threads of their own


def empty_file() -> Path:
    """An empty file of this process's own (in a private folder made once, removed at exit), made anew when gone
    (a cleaner of /tmp): what a run sees in the key's place."""
    with _empty_lock:
        path = private_folder("harness-key-") / "empty"
        if not path.is_file() or path.stat().st_size:
            path.write_bytes(b"")
    return path


def cover_argv(key: Path) -> list[str]:
    """bubblewrap's options that show `key` as an empty file."""
    return ["--ro-bind", str(empty_file()), str(key)]


def hide_argv(key: Path) -> list[str]:
    """bubblewrap's command line that starts a command with `key` empty to it and nothing to uncover it."""
    return [shutil.which("bwrap") or "bwrap", "--dev-bind", "/", "/", "--unshare-user", "--cap-drop", "ALL",
            "--unshare-pid", "--proc", "/proc", *cover_argv(key), "--die-with-parent", "--"]


def another_pid_argv(shell: str | None = None) -> list[str]:
    """A command line that runs the command after it with another pid in its PID namespace than the last
    PID_SPREAD - 1 such commands had (`shell`: the shell's path where the command runs, a container's; this
    machine's by default)."""
    with _count_lock:
        target = PID_BASE + next(_runs_started) % PID_SPREAD
    return [shell or shutil.which("sh") or "/bin/sh", "-c", _PASS_OVER_PIDS, str(target)]


@cache
def hiding_problem() -> str:
    """Why the key cannot be hidden from runs here, or "" (probed once per process: a file hidden, read empty)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    with tempfile.TemporaryDirectory(prefix="harness-key-probe-") as work:
        secret = Path(work, "key")
        secret.write_text("secret")
        try:
            probe = subprocess.run([*hide_argv(secret), "cat", str(secret)], capture_output=True, text=True,
                                   timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap cannot run here ({exc})"
    if probe.returncode != 0 or probe.stdout:
        return f"bwrap cannot hide a file here ({probe.stderr.strip()[:200] or f'exit code {probe.returncode}'})"
    return ""


def key_hider() -> tuple[str, ...]:
    """What a run's interpreter starts under so that it cannot read the seal key, or () where that cannot hold
    (`hiding_problem`). The key is made first if there is none yet: a run started before the first seal must not
    find the one made while it runs. Each call starts its command at another pid (`another_pid_argv`)."""
    if hiding_problem():
        return ()
    key = seal.KEY_FILE.absolute()
    seal.state_key(key)
    return (*hide_argv(key), *another_pid_argv())


def key_reach_caveat() -> str:
    """"" where the programs the harness runs cannot read the seal key; else a clause saying they can."""
    problem = hiding_problem()
    return f"the programs it runs here can read the seal key {seal.KEY_FILE} ({problem})" if problem else ""
