"""The Slurm job scripts of a submitted sweep (pure: a plan in, script text out).

Two scripts, written into the sweep's folder so a person can read them and run them again by hand:
`shard.sbatch`, an array job whose task I runs `harness run ... --shard I/N`, and `merge.sbatch`, which
joins what the shards left (`harness merge`). A shard that already has results (a cancelled task, a
lost node) resumes in its own folder, so re-submitting it measures only the cells it lacks.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.inputs.config import control_character
from harness.environments.process import LAUNCHER_VAR, SRUN
from harness.core.errors import ExitCode
from harness.core.kinds import Platform
from harness.core.platforms import describe

SHARD_SCRIPT = "shard.sbatch"
MERGE_SCRIPT = "merge.sbatch"
LOG_FOLDER = "slurm-logs"
MERGED_FOLDER = "merged"
DEFAULT_TIME = "02:00:00"
MERGE_TIME = "00:30:00"  # merging copies logs and renders tables: minutes, whatever the sweep cost

# Slurm's --time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
_TIME_RE = re.compile(r"^(\d+-\d{1,2}(:\d{1,2}){0,2}|\d+(:\d{1,2}){0,2})$")


def check_time(text: str) -> str | None:
    """None when `text` is a Slurm time limit, else what is wrong (for one error line)."""
    if not _TIME_RE.match(text) or not any(c != "0" for c in re.sub(r"\D", "", text)):
        return (f"{text!r} is not a Slurm time limit (minutes, HH:MM:SS or D-HH:MM:SS, "
                f"e.g. 90 or 02:00:00)")
    return None


def directive_problem(text: str) -> str | None:
    """None when `text` can be one `#SBATCH` line's words, else what is wrong: a control character (a
    newline would end the directive and start a script line of its own; sbatch stops reading
    directives at the first line that is not one, so `--array` below it would be lost)."""
    found = control_character(text)
    return f"contains a control character ({found}); an #SBATCH line must be one printable line" if found else None


def directive_path(path: Path) -> str:
    """A path as one word of an #SBATCH line: in double quotes (sbatch splits its directives at spaces,
    honouring double quotes and backslashes), with `%` doubled (sbatch's file name patterns)."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{text}"'


@dataclass(frozen=True)
class Resources:
    """What each shard task asks of the scheduler."""
    cpus_per_task: int = 1
    time: str = DEFAULT_TIME
    partition: str | None = None  # None: the cluster's default partition
    gpus: int = 0  # GPUs asked for by number (--gres=gpu:N), beside or instead of `devices`
    devices: str = ""  # the platform's own #SBATCH line for a config's devices (harness/core/platforms.py)
    extra: tuple[str, ...] = ()  # --sbatch-arg words, as given (e.g. --account=lab)
    # A multi-process sweep (--processes N): N Slurm tasks per shard, each run's processes started by srun,
    # one a task, wherever Slurm puts them (on a real cluster, N hosts).
    tasks: int = 1

    @classmethod
    def for_config(cls, platform: Platform, device_count: int, **given: Any) -> Resources:
        return cls(devices=describe(platform).slurm_line(device_count), **given)


@dataclass(frozen=True)
class SweepJobs:
    """One submitted sweep: what every shard task runs and where everything goes (absolute paths,
    since tasks start on other machines in whatever folder Slurm gives them)."""
    name: str  # the config's name: job names and the merged folder's
    sweep_dir: Path  # the folder this sweep's scripts, shard results and merge live in
    harness: tuple[str, ...]  # how a node runs the harness, e.g. (/home/me/.venv/bin/python, -m, harness)
    config: Path
    shards: int
    sweep_args: tuple[str, ...]  # --versions (resolved), --runs, --jobs, --backend, --seeds, ...
    resources: Resources = field(default_factory=Resources)
    workdir: Path = Path("/")  # where the commands run (relative paths in the config resolve from its file)
    env: tuple[tuple[str, str], ...] = ()  # variables exported first (HARNESS_ENV_DIR given at submit)

    def _header(self, job_name: str, output: str, time: str, gpus: int, cpus: int) -> list[str]:
        res = self.resources
        logs = directive_path(self.sweep_dir / LOG_FOLDER)[:-1] + f'/{output}"'  # the pattern's own % kept
        lines = [f"#SBATCH --job-name={job_name}", f"#SBATCH --output={logs}",
                 f"#SBATCH --cpus-per-task={cpus}", f"#SBATCH --time={time}"]
        if res.partition:
            lines.append(f"#SBATCH --partition={res.partition}")
        if gpus:
            lines.append(f"#SBATCH --gres=gpu:{gpus}")
        elif res.devices and job_name == f"harness-{self.name}":
            lines.append(res.devices)
        if res.tasks > 1 and job_name == f"harness-{self.name}":  # the shards, not the merge
            lines.append(f"#SBATCH --ntasks={res.tasks}")
        lines += [f"#SBATCH {arg}" for arg in res.extra]
        for line in lines:  # what came from the command line was refused before; this never writes one
            if problem := directive_problem(line):
                raise ValueError(f"{line!r}: {problem}")
        return lines

    def _prologue(self) -> list[str]:
        lines = ["set -euo pipefail", f"cd {shlex.quote(str(self.workdir))}"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in self.env]
        return lines

    def shard_script(self) -> str:
        res = self.resources
        run = shlex.join([*self.harness, "run", str(self.config), *self.sweep_args])
        out = shlex.quote(str(self.sweep_dir / "shard-"))
        return "\n".join([
            "#!/bin/bash",
            f"# The shards of the sweep {self.name}: task I measures shard I/{self.shards} of its cells.",
            f"# Written by harness submit; run again with `sbatch {SHARD_SCRIPT}` (every shard),",
            f"# `sbatch --array={self.shards} {SHARD_SCRIPT}` (shard {self.shards} alone) or, without Slurm,",
            f"# `SLURM_ARRAY_TASK_ID={self.shards} bash {SHARD_SCRIPT}`.",
            *self._header(f"harness-{self.name}", "shard-%a-%A.out", res.time, res.gpus, res.cpus_per_task),
            f"#SBATCH --array=1-{self.shards}",
            *self._prologue(),
            *([f"export {LAUNCHER_VAR}={SRUN}  # each run's {res.tasks} processes: the tasks of one srun step"]
              if res.tasks > 1 else []),
            "shard=${SLURM_ARRAY_TASK_ID:?run me with sbatch, or set SLURM_ARRAY_TASK_ID}",
            f"out={out}$shard",
            "# A shard cut short before (cancelled, node lost) resumes in its own folder: only the cells",
            "# it lacks are measured, and the merge finds one folder per shard.",
            "shopt -s nullglob",
            "previous=(\"$out\"/*/results.json)",
            "resume=()",
            "if [ ${#previous[@]} -gt 0 ]; then resume=(--resume \"$(dirname \"${previous[-1]}\")\"); fi",
            f"exec {run} --shard \"$shard/{self.shards}\" --out \"$out\" \"${{resume[@]}}\"",
            "",
        ])

    def merge_script(self) -> str:
        merge = shlex.join([*self.harness, "merge"])
        merged = shlex.quote(str(self.sweep_dir / MERGED_FOLDER))
        return "\n".join([
            "#!/bin/bash",
            f"# Joins the shards of the sweep {self.name} (harness merge) once their array job has ended,",
            "# however it ended: a missing or interrupted shard makes an incomplete merge that says which.",
            f"# Written by harness submit; run again with `sbatch {MERGE_SCRIPT}` or `bash {MERGE_SCRIPT}`.",
            *self._header(f"harness-{self.name}-merge", "merge-%j.out", MERGE_TIME, 0, 1),
            *self._prologue(),
            "shopt -s nullglob",
            "shards=()",
            f"for i in $(seq 1 {self.shards}); do",
            f"    found=({shlex.quote(str(self.sweep_dir))}/shard-\"$i\"/*/results.json)",
            ("    if [ ${#found[@]} -gt 0 ]; then shards+=(\"$(dirname \"${found[-1]}\")\"); "
             "else echo \"shard $i: no results\"; fi"),
            "done",
            # No shard left results: nothing was measured, a failure of the run, not a regression (ExitCode.FAILURE).
            (f"if [ ${{#shards[@]}} -eq 0 ]; then echo \"no shard left results: nothing to merge\" >&2; "
             f"exit {int(ExitCode.FAILURE)}; fi"),
            f"exec {merge} \"${{shards[@]}}\" --out {merged}",
            "",
        ])
