"""`harness run` and `harness check`: sweep a config's cells (or a shard, or what an interrupted sweep
still lacks), and the line that resumes it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TypeVar
from collections.abc import Callable

import msgspec
from filelock import FileLock

from harness.core.confidence import default_runs
from harness.core.runs import PYTEST
from harness.inputs.config import CHECK_SOURCE, MAX_NAME, Config, ConfigFile, load_config, parse_config
from harness.inputs.dependencies import Requirements, read_script_requirements_file, split_script_requirements
from harness.core.errors import UserError
from harness.core.files import fitting_name
from harness.core.model import CellSpec
from harness.results.header import RecordedOptions, RecordedShard, ResultsHeader
from harness.inputs.options import DEFAULT_RESULTS, Given
from harness.measure.progress import Progress
from harness.report.reproduce import summary_of
from harness.verdicts.boundaries import release_boundaries
from harness.environments.package_index import PyPIIndex
from harness.results.document import (
    SweepStatus,
    load_results,
    lock_results_folder,
    new_results_folder,
    results_file,
    results_folder,
    utc_now,
)
from harness.results.resume import check_same_sweep, finished_cells, still_to_measure
from harness.service import measurement
from harness.service.measurement import finish, sources_line
from harness.service.option_checks import check_pytest
from harness.service.command_options import MeasureOptions, ScriptCheck, ScriptRunOptions, SweepOptions
from harness.service.outcomes import SweepOutcome
from harness.measure.sweep import Sweep, plan_cells
from harness.inputs.versions import LATEST, releases_between
from harness.output.results_folder import ResultsWriter


def resume_command(given: Given, run_dir: Path) -> str:
    """The command `given` again, continuing in `run_dir` (an earlier --resume replaced, --out dropped)."""
    return given.with_values(out=DEFAULT_RESULTS, resume=run_dir).line()


def run(config_path: Path, options: SweepOptions, progress: Progress) -> SweepOutcome:
    """`harness run CONFIG`."""
    return sweep(load_config(config_path), options, progress)

M = TypeVar("M", bound=MeasureOptions)


def script_requirements(script_run: ScriptRunOptions) -> tuple[Requirements, tuple[Path, ...]]:
    """The requirements of --with and --requirements, and the user's own package folders they name
    (`--with .`, `-e PATH` in the file): those are installed as --with-editable PATH is."""
    requirements, folders = split_script_requirements(script_run.with_requirements, "--with")  # a bad one names the flag
    for file in script_run.requirements_files:
        from_file, found = read_script_requirements_file(file, "--requirements")  # a missing or odd file is one line
        requirements, folders = requirements + from_file, folders + found
    return requirements, folders


def with_script_packages(options: M, script_run: ScriptRunOptions) -> M:
    """The options with the package folders --with and --requirements name added to --with-editable."""
    _, folders = script_requirements(script_run)
    return replace(options, with_editable=(*options.with_editable, *folders)) if folders else options


def with_pytest(requirements: tuple[str, ...]) -> tuple[str, ...]:
    """check --pytest's --with: pytest itself added, unless the user named it (pinned, or with extras)."""
    names = {re.split(r"[\s\[<>=!~;@]", r.strip(), maxsplit=1)[0].lower() for r in requirements}
    return requirements if PYTEST in names else (*requirements, PYTEST)


def as_pytest(given: Given, program: str) -> Given:
    """check's and bisect's --pytest as the `-m pytest` it stands for: pytest added to --with (unless named), and
    the program's positional (`program`: check's SCRIPT, bisect's CONFIG|SCRIPT), when given, pytest's first
    argument (`harness check --pytest tests/`). `given` unchanged without --pytest; its lines spell `-m pytest
    --pytest`, which reads back the same."""
    check_pytest(given.pytest, given.module)
    if not given.pytest:
        return given
    first = (str(given[program]),) if given[program] is not None else ()
    return given.with_values(module=PYTEST, **{program: None}, script_args=(*first, *given.script_args),
                             with_requirements=with_pytest(given.with_requirements))


def check_config(check: ScriptCheck, moved_folder: bool = False) -> Config:
    """`harness check SCRIPT` or `harness check -m MODULE`: the config of a user's code, measured like any
    other; `moved_folder`: each cell also reads its folder through another path (check's default, not
    reduce's or fingerprint's)."""
    script, script_run = check.script, check.script_run
    if script_run.module is None:
        if script is None or not script.is_file():
            raise UserError(f"{script}: no such script")
        stem, repro = script.stem, str(script.resolve())
    else:
        stem, repro = script_run.module, None
    requirements, _ = script_requirements(script_run)
    given = ConfigFile(
        name=fitting_name("check-" + (re.sub(r"[^A-Za-z0-9._-]", "_", stem) or "script"), MAX_NAME), repro=repro,
        module=script_run.module,
        jax_versions=list(check.versions or [LATEST]), platform=check.platform, device_count=check.device_count,
        runs=default_runs(check.runs, suite=script_run.module is not None, platform=check.platform), timeout_s=check.timeout_s, requirements=list(requirements.items),
        args=list(script_run.args), env=dict(script_run.env),
        cwd=None if script_run.cwd is None else str(script_run.cwd.resolve()))
    data = msgspec.to_builtins(given)  # checked as a config file's keys are
    return replace(parse_config(data, source=CHECK_SOURCE, base_dir=Path.cwd()), moved_folder=moved_folder)


def sweep(config: Config, options: SweepOptions, progress: Progress,
          after_releases: Callable[[Sweep, PyPIIndex], object] | None = None) -> SweepOutcome:
    """Measure the config's cells (or a shard of them, or what an interrupted sweep still lacks);
    `after_releases`, when given, measures further cells into the same results after them (nightly's commit)."""
    lock = None
    if options.resume is not None:
        # First, before anything is resolved or printed: a folder another process is writing is
        # refused in one line, and what is read below is what nobody else writes.
        load_results(options.resume)  # a folder that is no results folder is said so before locking it
        lock = lock_results_folder(results_folder(results_file(options.resume)))
    opened = measurement.open(config, options)
    config, choice = opened.config, opened.choice
    progress.say(f"backend: {choice.backend.name} ({choice.why})")
    progress.say(sources_line(choice.sources))
    if config.requirements:
        progress.say(f"the script's requirements, installed with each release as of its date: "
                     f"{', '.join(config.requirements.items)}")
    versions = opened.versions(options.versions, progress)
    runs = opened.runs
    planned = plan_cells(config, versions)
    shard = options.shard
    cells = shard.select(planned) if shard else planned
    if shard:
        progress.say(f"shard {shard}: {len(cells)} of {len(planned)} cell(s)")
    progress.say(f"{len(versions)} JAX version(s): {', '.join(versions)}; {len(cells)} cell(s), "
                 f"up to {runs} runs each")

    at_once = opened.ready(options, progress)
    header = opened.header(options.command, versions,
                           RecordedOptions(runs=runs, runs_at_once=at_once.count, runs_at_once_why=at_once.why,
                                           seeds=options.seeds,
                                           all_runs=options.all_runs,
                                           # a check's (on or off); a config's sweep makes no such run: absent
                                           moved_folder=config.moved_folder if config.source == CHECK_SOURCE else None))
    header.releases = releases_between(opened.index, versions)  # the index was read to resolve them: no new query
    if shard:
        header.shard = RecordedShard(shard.index, shard.count, [c.key for c in planned], [c.key for c in cells])
    writer, cells = _writer(config, options, header, cells, lock, progress)
    progress.say(f"results: {writer.path}")
    cells_sweep = Sweep(config, choice.backend, writer, progress, at_once=at_once.count,
                        planner=opened.planner(),
                        stop_when_reproduced=not options.all_runs, device_shares=at_once.shares)

    def measure() -> None:
        cells_sweep.run(cells)
        if after_releases is not None:
            after_releases(cells_sweep, opened.index)

    status, _ = finish(writer, measure, lambda _: SweepStatus.COMPLETE, new_folder=options.resume is None)
    given = options.given
    again = resume_command(given, writer.dir) if status == SweepStatus.INTERRUPTED and given else None
    # One boundaries object for every output of the sweep (issue 47.5): the line printed, --json, CI's.
    boundaries = release_boundaries(writer.cells, writer.document.header.releases)
    return SweepOutcome(writer.dir, writer.cells, status, again,
                        summary_of(writer.document.header, writer.cells, boundaries), boundaries)


def _writer(config: Config, options: SweepOptions, header: ResultsHeader, cells: list[CellSpec],
            lock: FileLock | None, progress: Progress) -> tuple[ResultsWriter, list[CellSpec]]:
    """The writer of the sweep's results, and the cells it still has to measure: a new results folder, or
    (--resume) the one named, with the cells it already finished kept."""
    if options.resume is None:
        return ResultsWriter(new_results_folder(options.out, config.name), header), cells
    previous = load_results(options.resume)  # again, now that no other process can be writing it
    check_same_sweep(previous.header, header, str(options.resume))
    kept = finished_cells(previous.cells)
    cells = still_to_measure(cells, kept)
    progress.say(f"resuming {options.resume}: {len(kept)} cell(s) kept, {len(cells)} to measure")
    run_dir = results_folder(results_file(options.resume))
    header.created, header.resumed = previous.header.created, [*previous.header.resumed, utc_now()]
    return ResultsWriter(run_dir, header, cells=kept, lock=lock), cells
