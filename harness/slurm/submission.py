"""A submitted sweep's folder: its job scripts written and submitted, the jobs followed, the merge read back.

`submission.json` records what was submitted (the resolved versions, the task's sweep options, each
submission's job ids), so a shard can be submitted again into the same folder with the same sweep.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from collections.abc import Callable, Set as AbstractSet

from harness.core.errors import UserError
from harness.core.files import write_atomic
from harness.core.model import CellResult
from harness.results.document import RESULTS_FILE, SweepStatus, load_results, new_results_folder, utc_now
from harness.slurm.jobs import LOG_FOLDER, MERGE_SCRIPT, MERGED_FOLDER, SHARD_SCRIPT, SweepJobs
from harness.slurm.scheduler import Slurm

SUBMISSION_FILE = "submission.json"


@dataclass(frozen=True)
class Submitted:
    sweep_dir: Path
    array_job: str
    merge_job: str
    shards: tuple[int, ...]  # the array indices submitted this time


@dataclass(frozen=True)
class MergedSweep:
    """What a merge job left: the cells, and the shards it lacked or that did not finish."""
    folder: Path
    cells: list[CellResult]
    status: str  # results.json's, e.g. "incomplete: shard 2 interrupted"
    unfinished: tuple[int, ...]
    name: str = ""  # the sweep's (its config's name)

    @property
    def results_file(self) -> Path:
        return self.folder / RESULTS_FILE

    @property
    def complete(self) -> bool:
        return self.status == SweepStatus.COMPLETE


def new_record(jobs: SweepJobs, versions: list[str]) -> dict[str, Any]:
    return {"config": str(jobs.config), "name": jobs.name, "shards": jobs.shards, "versions": versions,
            "sweep_args": list(jobs.sweep_args), "submissions": []}


def read_submission(sweep_dir: Path) -> dict[str, Any]:
    path = sweep_dir / SUBMISSION_FILE
    try:
        record: dict[str, Any] = json.loads(path.read_text())
        return record
    except FileNotFoundError:
        raise UserError(f"--out {sweep_dir}: not a folder harness submit made (no {SUBMISSION_FILE}); "
                        "with --only-shards, --out names the sweep's folder") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable ({exc})") from None


def check_same_submission(record: dict[str, Any], jobs: SweepJobs) -> None:
    """UserError unless `jobs` would run the sweep the folder's shards ran."""
    where = f"--out {jobs.sweep_dir}"
    if record.get("name") != jobs.name:
        raise UserError(f"{where}: that folder holds the sweep {record.get('name')!r}, not {jobs.name!r}")
    if record.get("shards") != jobs.shards:
        raise UserError(f"{where}: that sweep was cut into {record.get('shards')} shards, not {jobs.shards}")
    if record.get("sweep_args") != list(jobs.sweep_args):
        raise UserError(f"{where}: its shards ran with {shlex.join(record.get('sweep_args') or [])}; "
                        "pass the same options to re-submit a shard")


def submit(slurm: Slurm, jobs: SweepJobs, record: dict[str, Any], out_root: Path,
           only_shards: tuple[int, ...] = (), overrides: tuple[str, ...] = (), command: str = "") -> Submitted:
    """Write the scripts into a new folder under `out_root` (or, re-submitting `only_shards`, use the
    folder's own) and submit the array and the merge after it. A refusal leaves nothing submitted and
    no new folder."""
    if only_shards:
        sweep_dir = jobs.sweep_dir
    else:
        sweep_dir = new_results_folder(out_root, f"{jobs.name}-slurm").absolute()
        jobs = replace(jobs, sweep_dir=sweep_dir)
        (sweep_dir / LOG_FOLDER).mkdir()
        for name, text in ((SHARD_SCRIPT, jobs.shard_script()), (MERGE_SCRIPT, jobs.merge_script())):
            write_atomic(sweep_dir / name, text)
            (sweep_dir / name).chmod(0o755)
    shards = only_shards or tuple(range(1, jobs.shards + 1))
    array = [f"--array={','.join(map(str, shards))}"] if only_shards else []  # else the script's 1-N

    def undo() -> None:
        if not only_shards:
            shutil.rmtree(sweep_dir, ignore_errors=True)

    try:
        array_job = slurm.submit(sweep_dir / SHARD_SCRIPT, *overrides, *array)
    except UserError:
        undo()
        raise
    try:
        partition = [o for o in overrides if o.startswith("--partition=")]
        merge_job = slurm.submit(sweep_dir / MERGE_SCRIPT, f"--dependency=afterany:{array_job}", *partition)
    except UserError:
        slurm.cancel(array_job)
        undo()
        raise
    record["submissions"].append({"array_job": array_job, "merge_job": merge_job, "shards": list(shards),
                                  "submitted": utc_now(), "command": command})
    write_atomic(sweep_dir / SUBMISSION_FILE, json.dumps(record, indent=2) + "\n")
    return Submitted(sweep_dir, array_job, merge_job, tuple(shards))


def follow(slurm: Slurm, submitted: Submitted, say: Callable[[str], None], poll_s: float = 3.0) -> None:
    """Until the merge job has ended, saying each job's (and array task's) change of state."""
    last: dict[str, str] = {}
    while True:
        states = slurm.states(submitted.array_job, submitted.merge_job)
        for job, state in sorted(states.items()):
            if last.get(job) != state:
                say(f"job {job}: {state.lower()}")
        last = states
        if submitted.merge_job not in states:
            return
        time.sleep(poll_s)


def merged_folders(sweep_dir: Path) -> set[str]:
    root = sweep_dir / MERGED_FOLDER
    return {p.name for p in root.iterdir() if (p / RESULTS_FILE).is_file()} if root.is_dir() else set()


def newest_merge(sweep_dir: Path, exclude: AbstractSet[str] = frozenset()) -> Path | None:
    """The newest merged folder not in `exclude` (folders are named by their UTC time)."""
    fresh = sorted(merged_folders(sweep_dir) - set(exclude))
    return sweep_dir / MERGED_FOLDER / fresh[-1] if fresh else None


def read_merge(folder: Path) -> MergedSweep:
    document = load_results(folder)
    shards = document.sections.get("shards") or {}  # absent in merges written before harness submit
    unfinished = tuple(sorted({*shards.get("missing", []), *map(int, shards.get("unfinished", {}))}))
    return MergedSweep(folder, document.cells, document.status_text, unfinished,
                       document.header.config.name or "")


def resubmit_command(record: dict[str, Any], sweep_dir: Path, shards: tuple[int, ...]) -> str:
    return shlex.join(["harness", "submit", record["config"], "--shards", str(record["shards"]),
                       *record["sweep_args"], "--only-shards", *map(str, shards), "--out", str(sweep_dir)])
