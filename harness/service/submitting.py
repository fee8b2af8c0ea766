"""`harness submit`: a sweep as a Slurm array of shard tasks and a merge job after them."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

from harness.inputs.config import load_config
from harness.core.confidence import default_runs
from harness.core.errors import UserError
from harness.core.files import fitting_name
from harness.inputs.options import Given, options_for, parse
from harness.measure.progress import Progress
from harness.service import measurement
from harness.service.option_checks import check_submit
from harness.service.command_options import SubmitOptions
from harness.service.outcomes import SubmitOutcome, SubmitWaitOutcome
from harness.slurm import submission
from harness.slurm.jobs import Resources, SweepJobs
from harness.slurm.scheduler import Slurm
from harness.measure.sweep import plan_cells

# Set where you submit, the shard tasks get it too (written into the job script): node-local environments.
SUBMIT_PASSES_ON = ("HARNESS_ENV_DIR",)

# What a shard task sets itself (its shard and folder: the job script), or must not: a task is quiet, and
# the CI outputs are of the merged cells (submit --wait writes them), not each task's share.
_TASK_OWN = ("config", "shard", "out", "resume", "quiet", "junit_xml", "fail_on")
# Spelled even at their defaults: the tasks run as the submitter's harness chose, whatever theirs defaults to.
TASK_SPELLED = ("versions", "runs", "runs_at_once", "backend", "seeds")


def _task_args(options: SubmitOptions, versions: list[str], runs: int) -> tuple[str, ...]:
    """`harness run` options of every shard task: each option `submit` was given that `run` takes too,
    versions and runs resolved, paths absolute (the tasks may start elsewhere)."""
    given = options.given
    values = dict(given.values) if given is not None else {
        "runs_at_once": options.runs_at_once, "backend": options.backend, "seeds": options.seeds,
        "all_runs": options.all_runs,
        "python": options.python, "python_search": options.pythons.search,
        "install_python": options.pythons.install, "cache_thresholds": options.cache_thresholds,
        "vary": options.vary}
    run_dests = {o.dest for o in options_for("run")} - set(_TASK_OWN)
    task = Given("run", {k: v for k, v in values.items() if k in run_dests})
    task = task.with_values(versions=tuple(versions), runs=runs, runs_at_once=options.runs_at_once)
    return tuple(task.words(always=TASK_SPELLED, absolute=True)[1:])


def _same_task_options(recorded: list[str], now: tuple[str, ...]) -> bool:
    """Whether two shard tasks' `harness run` options mean the same, however each was spelled."""
    try:
        return parse(["run", "CONFIG", *recorded])[0] == parse(["run", "CONFIG", *now])[0]
    except SystemExit:  # words this harness does not read: not the same
        return False


def plan_submission(config_path: Path, options: SubmitOptions,
                    progress: Progress | None = None) -> tuple[SweepJobs, dict[str, Any]]:
    """The job scripts and the submission record; UserError, with nothing written, for bad input.
    `progress` hears of the releases left out because no Python here can run them."""
    check_submit(options)
    config = measurement.configured(load_config(config_path), options)
    runs = default_runs(options.runs, config=config.runs)  # as measurement.open takes it
    record = None
    if options.only_shards:  # the folder's sweep: its versions, unless named again
        record = submission.read_submission(options.out.absolute())
        versions = list(options.versions) if options.versions else record["versions"]
        sweep_dir = options.out.absolute()
    else:
        # Only a new sweep opens a backend: re-submitted shards keep the folder's versions.
        versions = measurement.open(config, options).versions(options.versions, progress)
        cells = len(plan_cells(config, versions))
        if options.shards > cells:
            raise UserError(f"--shards {options.shards}: the sweep has only {cells} cell(s); "
                            f"use at most {cells} shards")
        # Named for a dry run; the real folder is made at submission (this name, or it with a suffix).
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        sweep_dir = (options.out / fitting_name(f"{stamp}-{config.name}-slurm")).absolute()
    resources = Resources.for_config(
        config.platform, config.device_count, cpus_per_task=options.cpus_per_task or options.runs_at_once or 1,
        time=options.time or Resources.time, partition=options.partition, extra=options.sbatch_args,
        tasks=config.processes)
    jobs = SweepJobs(name=config.name, sweep_dir=sweep_dir, harness=(sys.executable, "-m", "harness"),
                     config=config_path.absolute(), shards=options.shards,
                     sweep_args=_task_args(options, versions, runs), resources=resources, workdir=Path.cwd(),
                     env=tuple((k, os.environ[k]) for k in SUBMIT_PASSES_ON if os.environ.get(k)))
    if record is None:
        record = submission.new_record(jobs, versions)
    else:
        if _same_task_options(record.get("sweep_args") or [], jobs.sweep_args):
            jobs = replace(jobs, sweep_args=tuple(record["sweep_args"]))  # as an earlier release spelled them
        submission.check_same_submission(record, jobs)
    return jobs, record


def submit(config_path: Path, options: SubmitOptions, dry_run: bool = False,
           slurm: Slurm | None = None, progress: Progress | None = None) -> SubmitOutcome:
    """`harness submit`: the sweep as a Slurm array of shard tasks and a merge job after them."""
    jobs, record = plan_submission(config_path, options, progress)
    if dry_run:
        return SubmitOutcome(jobs, None)
    slurm = slurm or Slurm()
    slurm.check(options.partition)
    again = bool(options.only_shards)
    before = frozenset(submission.merged_folders(jobs.sweep_dir)) if again else frozenset()
    # Resources given again with --only-shards: sbatch's command line overrides the script's lines.
    overrides = ([f"--time={options.time}"] if options.time else []) + \
        ([f"--cpus-per-task={options.cpus_per_task}"] if options.cpus_per_task else []) + \
        ([f"--partition={options.partition}"] if options.partition else []) + list(options.sbatch_args)
    submitted = submission.submit(slurm, jobs, record, options.out, only_shards=options.only_shards,
                                  overrides=tuple(overrides) if again else (),
                                  command=options.command)
    return SubmitOutcome(jobs, submitted, before)


def wait_submission(submitted: SubmitOutcome, progress: Progress, slurm: Slurm | None = None,
                    poll_s: float = 3.0) -> SubmitWaitOutcome:
    """`harness submit --wait`: follow the jobs until the merge job has ended, then read its results."""
    batch = submitted.submitted  # the array and merge jobs sent
    if batch is None:
        raise ValueError("a dry run submitted nothing to wait for")
    submission.follow(slurm or Slurm(), batch, progress.say, poll_s)
    folder = submission.newest_merge(batch.sweep_dir, exclude=set(submitted.merged_before))
    if folder is None:
        return SubmitWaitOutcome(None)
    merged = submission.read_merge(folder)
    again = None
    if not merged.complete and merged.unfinished:
        again = submission.resubmit_command(submission.read_submission(batch.sweep_dir), batch.sweep_dir,
                                            merged.unfinished)
    return SubmitWaitOutcome(merged, again)
