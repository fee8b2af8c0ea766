"""Slurm's own commands (sbatch, squeue, sinfo, scancel), the thin edge the submit command stands on.

Plain commands rather than a library: the job scripts stay ordinary files a person reads and
resubmits by hand, and these four commands are on every Slurm login node.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import UserError

TIMEOUT_S = 60  # a controller that does not answer in a minute is down, not slow


class SlurmError(UserError):
    """Slurm refused or cannot be reached: one line, exit 2 (as for any input the user can fix)."""


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


@dataclass
class Slurm:
    def _call(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        if shutil.which(argv[0]) is None:
            raise SlurmError(f"{argv[0]} not found: Slurm's commands are not on this machine's PATH "
                             "(run harness submit on a Slurm login node)")
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{argv[0]}: no answer from the Slurm controller in {TIMEOUT_S}s") from None

    def check(self, partition: str | None) -> None:
        """SlurmError unless a controller answers and `partition` (when given) exists."""
        completed = self._call(["sinfo", "--noheader", "--format=%R"])
        if completed.returncode != 0:
            raise SlurmError(f"sinfo: {_one_line(completed.stderr)} (is the Slurm controller running?)")
        partitions = sorted(set(completed.stdout.split()))
        if partition and partition not in partitions:
            raise SlurmError(f"--partition {partition}: no such partition "
                             f"(this cluster has {', '.join(partitions) or 'none'})")

    def submit(self, script: Path, *options: str) -> str:
        """The job id of `sbatch OPTIONS SCRIPT`."""
        completed = self._call(["sbatch", "--parsable", *options, str(script)])
        if completed.returncode != 0:
            raise SlurmError(f"sbatch {script.name}: {_one_line(completed.stderr)}")
        return completed.stdout.strip().split(";")[0]  # "id" or "id;cluster"

    def cancel(self, *job_ids: str) -> None:
        self._call(["scancel", *job_ids])

    def states(self, *job_ids: str) -> dict[str, str]:
        """Each job (array task as `ID_I`) still known to the controller -> its state; jobs that
        ended some minutes ago are gone from this view."""
        completed = self._call(["squeue", "--noheader", "--array", "--format=%i %T", "--jobs", ",".join(job_ids)])
        if completed.returncode != 0:
            if "Invalid job id" in completed.stderr:  # every one of them has ended and been purged
                return {}
            raise SlurmError(f"squeue: {_one_line(completed.stderr)}")
        return dict(line.split(maxsplit=1) for line in completed.stdout.splitlines() if line.strip())
