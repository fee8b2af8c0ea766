"""One process of a multi-process run started by `srun` (harness submit --processes N): Slurm starts this
on each task's node; it runs the command of its rank (SLURM_PROCID) with that rank's own environment (its
hash seed must be set before the interpreter starts), its output into the rank's log, and writes its exit
status beside the spec. The job's coordinator, rank and size come from Slurm's variables (JAX's own
cluster detection), not from the harness: on a real cluster the ranks are on different hosts.

Each task gets a temporary folder of its own on its node (TMPDIR, TEMP, TMP), removed when its process
ends: the harness's own per-run folder is on the harness's node, which a task elsewhere does not see.

Usage: python -I -S job_task.py SPEC_DIR    (SPEC_DIR/rank<R>.json: {"argv", "env", "log", "cwd"})
Standard library only; the annotations are never evaluated (any Python a JAX release supports runs this)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

TYPE_CHECKING = False  # typing's, without importing typing at start-up (jax_cache_harness_hook says why)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import FrameType
    from typing import TypedDict

    class TaskSpec(TypedDict):
        """SPEC_DIR/rank<R>.json, written by the harness (harness/environments/process.py, run_processes_srun)."""

        argv: list[str]
        env: dict[str, str]
        log: str
        cwd: str | None  # None: the step's own (srun --chdir)

# The harness's loopback coordinator and rank mean nothing across hosts: JAX finds them from SLURM_*.
NOT_ACROSS_HOSTS = ("HARNESS_JOB_COORDINATOR", "HARNESS_JOB_RANK", "HARNESS_RUN_TMPDIR")
RUN_TMP_VARS = ("TMPDIR", "TEMP", "TMP")


def task_tmp(env: Mapping[str, str]) -> str | None:
    """A new temporary folder on this node (under the TMPDIR the task was given, when it exists here)."""
    for base in (env.get("TMPDIR"), os.environ.get("TMPDIR"), "/tmp"):
        if base and os.path.isdir(base):
            try:
                folder = tempfile.mkdtemp(prefix="harness-run-", dir=base)
                os.chmod(folder, 0o1777)
                return folder
            except OSError:
                continue
    return None


def main(spec_dir: str) -> None:
    rank = int(os.environ["SLURM_PROCID"])
    with open(os.path.join(spec_dir, f"rank{rank}.json")) as f:
        spec: TaskSpec = json.load(f)
    env = {k: v for k, v in spec["env"].items() if k not in NOT_ACROSS_HOSTS}
    env.update({k: v for k, v in os.environ.items() if k.startswith("SLURM")})
    folder = task_tmp(env)
    if folder:
        env.update({name: folder for name in RUN_TMP_VARS})
    try:
        code = run_task(spec, env, rank)
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    with open(os.path.join(spec_dir, f"rank{rank}.status"), "w") as f:
        json.dump({"exit_code": code}, f)
    sys.exit(0 if code == 0 else 1)


def run_task(spec: TaskSpec, env: dict[str, str], rank: int) -> int:
    with open(spec["log"], "ab") as log:
        started = f"harness: srun task {rank} of {os.environ.get('SLURM_NTASKS', '?')} on {os.uname().nodename}\n"
        log.write(started.encode())
        log.flush()
        proc = subprocess.Popen(spec["argv"], env=env, cwd=spec["cwd"], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

        def forward(signum: int, frame: FrameType | None) -> None:
            proc.send_signal(signum)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCONT):
            signal.signal(signum, forward)
        return proc.wait()


if __name__ == "__main__":
    main(sys.argv[1])
