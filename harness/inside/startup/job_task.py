"""One process of a multi-process run started by `srun` (harness submit --processes N): Slurm starts this
on each task's node; it runs the command of its rank (SLURM_PROCID) with that rank's own environment (its
hash seed must be set before the interpreter starts), its output into the rank's log, and writes its exit
status beside the spec. The job's coordinator, rank and size come from Slurm's variables (JAX's own
cluster detection), not from the harness: on a real cluster the ranks are on different hosts.

Each task gets a temporary folder of its own on its node (TMPDIR, TEMP, TMP), removed when its process
ends: the harness's own per-run folder is on the harness's node, which a task elsewhere does not see.

Usage: python -I -S job_task.py SPEC_DIR    (SPEC_DIR/rank<R>.json: {"argv", "env", "log", "cwd"})
Standard library only."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

# The harness's loopback coordinator and rank mean nothing across hosts: JAX finds them from SLURM_*.
NOT_ACROSS_HOSTS = ("HARNESS_JOB_COORDINATOR", "HARNESS_JOB_RANK", "HARNESS_RUN_TMPDIR")
RUN_TMP_VARS = ("TMPDIR", "TEMP", "TMP")


def task_tmp(env):
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


def main(spec_dir):
    rank = int(os.environ["SLURM_PROCID"])
    with open(os.path.join(spec_dir, "rank%d.json" % rank)) as f:
        spec = json.load(f)
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
    with open(os.path.join(spec_dir, "rank%d.status" % rank), "w") as f:
        json.dump({"exit_code": code}, f)
    sys.exit(0 if code == 0 else 1)


def run_task(spec, env, rank):
    with open(spec["log"], "ab") as log:
        log.write(("harness: srun task %d of %s on %s\n" % (rank, os.environ.get("SLURM_NTASKS", "?"),
                                                            os.uname().nodename)).encode())
        log.flush()
        proc = subprocess.Popen(spec["argv"], env=env, cwd=spec["cwd"], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)

        def forward(signum, frame):
            proc.send_signal(signum)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCONT):
            signal.signal(signum, forward)
        return proc.wait()


if __name__ == "__main__":
    main(sys.argv[1])
