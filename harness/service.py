"""The application service (layer 5): what each command does, with its options already parsed.

`run`, `check`, `nightly`, `bisect`, `merge` and `submit` all come through here. A measurement is opened in one
place (`_open_backend`, `_header`, the writer) and finished in one (`_finish`: the status, and the
resume command after Ctrl-C); each function returns what it produced (a `SweepOutcome`, a
`BisectOutcome`, ...) and prints nothing but progress: the CLI shows the outcome.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable, TypeVar

from harness.bisect import report as bisect_report
from harness.bisect.bisection import DEFAULT_SOURCES, Bisection, Outcome
from harness.bisect.commits import CommitSources, GitRepo
from harness.bisect.ref import RefCommit, fetch_ref, measure_ref
from harness.bisect.state import BisectState
from harness.confidence import SeedStrategy, runs_for_target
from harness.config import CHECK_SOURCE, Config, load_config, parse_config, processes_problem
from harness.dependencies import parse_requirements, read_requirements_file
from harness.environments import BackendChoice, BackendName, BackendOptions, make_backend
from harness.environments import interpreters
from harness.errors import UserError
from harness.files import write_atomic
from harness.identity import SweepIdentity
from harness.model import CellResult, Platform, ThresholdMode
from harness.nightly.compare import CellChange, check_same_repro, compare, repro_of
from harness.options import DEFAULT_RESULTS, Given, options_for, parse
from harness.parallelism import Jobs, choose_jobs, usable_cores
from harness.progress import Progress
from harness.pythons import PythonChooser, PythonVersion
from harness.report import write_report
from harness.results import (RESULTS_FILE, ResultsHeader, RunStatus, host_facts, load_results,
                             lock_results_folder, new_run_dir, results_file, results_folder, utc_now)
from harness.resume import check_same_sweep, finished_cells, still_to_measure
from harness.seeds import SeedPlanner
from harness.shards.merge import merge_documents
from harness.shards.select import Shard
from harness.slurm import submission
from harness.slurm.jobs import Resources, SweepJobs, check_time
from harness.slurm.scheduler import Slurm
from harness.slurm.submission import MergedSweep, Submitted
from harness.sweep import Sweep, plan_cells
from harness.versions import (LATEST, PyPIIndex, Resolution, check_syntax, is_specifier, matches, release_pythons,
                              resolve)
from harness.writer import ResultsWriter, write_files

BISECT_REPORT_FILE = "bisect.md"
MERGE_COPIED = ("logs",)  # what the report's evidence reads; caches stay behind (listings are in the JSON)

T = TypeVar("T")
# Set where you submit, the shard tasks get it too (written into the job script): node-local environments.
SUBMIT_PASSES_ON = ("HARNESS_ENV_DIR",)


@dataclass(frozen=True)
class PythonOptions:
    """Where to look for the Pythons that releases need besides the harness's own (harness/pythons.py)."""

    # --python-search: interpreters, or folders holding them
    search: tuple[Path, ...] = field(default=(), metadata={"option": "python_search"})
    # --install-python: let uv download a Python none here has (off: it downloads)
    install: bool = field(default=False, metadata={"option": "install_python"})


@dataclass(frozen=True)
class MeasureOptions:
    """What every measuring command takes (run, check, nightly, bisect)."""

    backend: BackendName = BackendName.VENV
    versions: tuple[str, ...] | None = None  # replaces the config's jax_versions
    runs: int | None = None  # replaces the config's runs
    jobs: int | None = None  # runs at once; None: auto (harness/parallelism.py)
    out: Path = DEFAULT_RESULTS
    rebuild: bool = False
    python: str | None = None  # --backend local: the interpreter
    seeds: SeedStrategy = SeedStrategy.CHOSEN
    shard: Shard | None = None
    pythons: PythonOptions = PythonOptions()
    cache_thresholds: ThresholdMode | None = None  # replaces the config's cache_thresholds
    # The command as parsed (harness/options.py): every command line printed for it is spelled from this.
    given: Given | None = field(default=None, compare=False)
    processes: int | None = None  # replaces the config's processes (a multi-process job per run)


@dataclass(frozen=True)
class SweepOptions(MeasureOptions):
    all_runs: bool = False  # every run even after a cell reproduced
    resume: Path | None = None  # finish the sweep of this results folder
    argv: tuple[str, ...] = ()  # the command as typed (after `harness`): the header records it


@dataclass(frozen=True)
class SubmitOptions(MeasureOptions):
    """`harness submit`: the sweep's options (as for run) and what each Slurm task asks for."""

    shards: int = 1
    all_runs: bool = False
    partition: str | None = None  # None: the cluster's default
    cpus_per_task: int | None = None  # None: --jobs (each parallel run has a core)
    time: str | None = None  # Slurm's format; None: the scripts' default
    sbatch_args: tuple[str, ...] = ()  # more #SBATCH lines, e.g. --account=lab
    only_shards: tuple[int, ...] = ()  # re-submit these into the folder `out` names
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class BisectOptions(MeasureOptions):
    good: str | None = None
    bad: str | None = None
    jax_repo: Path | None = None
    fresh: bool = False


@dataclass(frozen=True)
class InFolder:
    """What a command produced in a results folder."""

    folder: Path

    @property
    def results_file(self) -> Path:
        return self.folder / RESULTS_FILE


@dataclass(frozen=True)
class SweepOutcome(InFolder):
    cells: list[CellResult]
    status: RunStatus
    resume_command: str | None = None  # when interrupted: the command that finishes it


@dataclass(frozen=True)
class BisectOutcome(InFolder):
    status: RunStatus
    command: str  # reproduces, and resumes, this bisection
    state_path: Path
    points: int  # points recorded in the state
    outcome: Outcome | None = None  # None when interrupted
    text: str = ""  # bisect.md

    @property
    def report_file(self) -> Path:
        return self.folder / BISECT_REPORT_FILE


@dataclass(frozen=True)
class NightlyOutcome:
    sweep: SweepOutcome
    changes: list[CellChange] = field(default_factory=list)  # empty unless the sweep completed


@dataclass(frozen=True)
class SubmitOutcome:
    jobs: SweepJobs  # the scripts (a dry run's are for a folder not yet made)
    submitted: Submitted | None  # None: a dry run
    merged_before: frozenset[str] = frozenset()  # merged folders already there (a re-submission's)


@dataclass(frozen=True)
class SubmitWaitOutcome:
    merged: MergedSweep | None  # None: the merge job left no results
    resubmit_command: str | None = None  # when shards are missing or did not finish


@dataclass(frozen=True)
class MergeOutcome(InFolder):
    cells: list[CellResult]


# ---- opening and finishing a measurement ---------------------------------------------------------

def _open_backend(config: Config, options: MeasureOptions) -> tuple[BackendChoice, PyPIIndex]:
    index = PyPIIndex()  # asks the network only when a version is resolved or dated
    return make_backend(options.backend, _backend_options(config, options, index)), index


def _backend_options(config: Config, options: MeasureOptions, index: PyPIIndex) -> BackendOptions:
    search = options.pythons.search
    return BackendOptions(rebuild=options.rebuild, python=options.python, docker=config.docker,
                          release_date=index.release_date, python_pin=config.python,
                          interpreters=lambda: interpreters.discover(search),
                          wheel_pythons=lambda platforms: release_pythons(index, platforms),
                          install_python=interpreters.install_with_uv if options.pythons.install else None,
                          requirements=config.requirements)


def _jobs(config: Config, options: MeasureOptions, progress: Progress) -> Jobs:
    """The runs at once (--jobs, or auto from the cores and the platform), said and then recorded."""
    jobs = choose_jobs(options.jobs, config.platform, usable_cores())
    progress.say(jobs.line())
    return jobs


def _say_left_out(resolution: Resolution, progress: Progress | None) -> list[str]:
    for line in resolution.notes() if progress else ():
        progress.say(line)
    return resolution.versions


def _header(command: str, config: Config, versions: list[str], choice: BackendChoice,
            options: dict) -> ResultsHeader:
    """The results document's header: what was measured, how, where."""
    return ResultsHeader(command=command, config=config.to_json(), versions=versions,
                         options={**options, "backend": choice.backend.name, "backend_reason": choice.why},
                         host=host_facts(choice.backend.describe()))


def _finish(writer: ResultsWriter, measure: Callable[[], T], status: Callable[[T], RunStatus],
            new_folder: bool = False) -> tuple[RunStatus, T | None]:
    """Run `measure` and record how it ended in the results: Ctrl-C (or SIGTERM) gives `interrupted`
    (what was measured stays), a failure of the harness `failed` (and goes on up), otherwise
    `status(what it returned)`. Bad input found late in a `new_folder` that holds no cell yet (a
    backend that cannot run) removes the folder: bad input leaves nothing written."""
    try:
        value = measure()
    except KeyboardInterrupt:
        writer.finish(RunStatus.INTERRUPTED)
        return RunStatus.INTERRUPTED, None
    except UserError:
        if new_folder and not writer.cells:
            writer.discard()
        else:
            writer.finish(RunStatus.FAILED)
        raise
    except BaseException:
        try:
            writer.finish(RunStatus.FAILED)  # what was measured stays; the status says it did not end well
        except OSError:
            pass  # a full disk: results.json keeps what the last cell wrote; the first error is the news
        raise
    ended = status(value)
    writer.finish(ended)
    return ended, value


# ---- versions ------------------------------------------------------------------------------------

def version_entries(config: Config, versions: tuple[str, ...] | None) -> tuple[tuple[str, ...], str]:
    """The version entries to resolve (--versions over the config's) and where they came from."""
    if not versions:
        return config.jax_versions, f"{config.source}: jax_versions"
    for entry in versions:
        problem = check_syntax(entry)
        if problem:
            raise UserError(f"--versions: {problem}")
    return tuple(versions), "--versions"


def list_versions(config_path: Path, versions: tuple[str, ...] | None, python: str | None,
                  pythons: PythonOptions = PythonOptions()) -> Resolution:
    """`harness versions`: the releases a config (or --versions) resolves to, each with the Python its
    venv would use (`python`, "3.N", pins one as the config's python: does)."""
    config = load_config(config_path)
    if python:
        try:
            config = replace(config, python=PythonVersion.parse(python))
        except ValueError as exc:
            raise UserError(f"--python-version: {exc}") from None
    entries, source = version_entries(config, versions)
    choice, index = _open_backend(config, MeasureOptions(pythons=pythons))
    return resolve(entries, index, source=source, pythons=choice.backend.pythons)


def _sweep_versions(config: Config, versions: tuple[str, ...] | None, choice: BackendChoice,
                    index: PyPIIndex, progress: Progress | None) -> list[str]:
    entries, source = version_entries(config, versions)
    installed = choice.backend.installed_version()
    if installed is not None:  # a backend with one JAX (local) measures that one, if the config names it
        if any(matches(e, installed) for e in entries):
            return [installed]
        raise UserError(f"{source}: the local interpreter has jax {installed}, which "
                        f"{', '.join(entries)} does not include (pass --versions {installed})")
    return _say_left_out(resolve(entries, index, source=source, pythons=choice.backend.pythons), progress)


# ---- sweeps: run, check, nightly -----------------------------------------------------------------

def given_of(options: MeasureOptions, argv: tuple[str, ...] = ()) -> Given | None:
    """The command as parsed: the options' own, or (for a caller that built them by hand) `argv` read
    by the same parser."""
    if options.given is not None:
        return options.given
    return parse(list(argv))[0] if argv else None


def resume_command(given: Given, run_dir: Path) -> str:
    """The command `given` again, continuing in `run_dir` (an earlier --resume replaced, --out dropped)."""
    return given.with_values(out=DEFAULT_RESULTS, resume=run_dir).line()


def run(config_path: Path, options: SweepOptions, progress: Progress) -> SweepOutcome:
    """`harness run CONFIG`."""
    return sweep(load_config(config_path), options, progress)


@dataclass(frozen=True)
class ScriptRun:
    """How `harness check` runs the user's code: a module instead of the script, arguments, environment
    additions, working folder (validated as a config's module/args/env/cwd keys)."""

    module: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    # The script's requirements besides those in its inline metadata: --with strings, --requirements files.
    with_requirements: tuple[str, ...] = ()
    requirements_files: tuple[Path, ...] = ()


def check_config(script: Path | None, versions: tuple[str, ...] | None, platform: Platform, device_count: int,
                 runs: int | None, timeout_s: float, how: ScriptRun = ScriptRun()) -> Config:
    """`harness check SCRIPT` or `harness check -m MODULE`: the config of a user's code, measured like any
    other."""
    if how.module is None:
        if script is None or not script.is_file():
            raise UserError(f"{script}: no such script")
        stem, target = script.stem, {"repro": str(script.resolve())}
    else:
        stem, target = how.module, {"module": how.module}
    requirements = parse_requirements(how.with_requirements, "--with")  # a bad one names the flag
    for file in how.requirements_files:
        if not file.is_file():
            raise UserError(f"--requirements: {file}: no such file")
        requirements += read_requirements_file(file, "--requirements")
    data = {"name": "check-" + (re.sub(r"[^A-Za-z0-9._-]", "_", stem) or "script"),
            **target, "jax_versions": list(versions or [LATEST]),
            "platform": str(platform), "device_count": device_count,
            # A script's name sets are unknown, so its seeds are random: enough for the 1e-3 target.
            "runs": runs or runs_for_target(), "timeout_s": timeout_s, "requirements": requirements.to_json()}
    if how.args:
        data["args"] = list(how.args)
    if how.env:
        data["env"] = dict(how.env)
    if how.cwd is not None:
        data["cwd"] = str(how.cwd.resolve())
    return parse_config(data, source=CHECK_SOURCE, base_dir=Path.cwd())


def with_processes(config: Config, processes: int | None) -> Config:
    """The config with --processes in place of its processes:, checked as the key is."""
    if processes is None or processes == config.processes:
        return config
    problem = processes_problem(processes, config.device_count, config.platform, config.repro)
    if problem:
        raise UserError(f"--processes {processes}: {problem}")
    return replace(config, processes=processes)


def sweep(config: Config, options: SweepOptions, progress: Progress,
          more: Callable[[Sweep, PyPIIndex], object] | None = None) -> SweepOutcome:
    """Measure the config's cells (or a shard of them, or what an interrupted sweep still lacks);
    `more`, when given, measures further cells into the same results after them (nightly's commit)."""
    lock = None
    if options.resume is not None:
        # First, before anything is resolved or printed: a folder another process is writing is
        # refused in one line, and what is read below is what nobody else writes.
        load_results(options.resume)  # a folder that is no results folder is said so before locking it
        lock = lock_results_folder(results_folder(results_file(options.resume)))
    if options.cache_thresholds is not None:
        config = replace(config, cache_thresholds=options.cache_thresholds)
    config = with_processes(config, options.processes)
    choice, index = _open_backend(config, options)
    progress.say(f"backend: {choice.backend.name} ({choice.why})")
    if config.requirements:
        progress.say(f"the script's requirements, installed with each release as of its date: "
                     f"{', '.join(config.requirements.items)}")
    versions = _sweep_versions(config, options.versions, choice, index, progress)
    runs = options.runs or config.runs
    planned = plan_cells(config, versions)
    shard = options.shard
    cells = shard.select(planned) if shard else planned
    if shard:
        progress.say(f"shard {shard}: {len(cells)} of {len(planned)} cell(s)")
    progress.say(f"{len(versions)} JAX version(s): {', '.join(versions)}; {len(cells)} cell(s), "
                 f"up to {runs} runs each")

    choice.backend.check(config.platform, progress.say)
    choice.backend.check_gpus(config.platform, config.device_count, f"{config.source}: device_count", progress.say)
    jobs = _jobs(config, options, progress)
    header = _header(shlex.join(["harness", *options.argv]), config, versions, choice,
                     {"runs": runs, "jobs": jobs.count, "jobs_why": jobs.why, "seeds": str(options.seeds),
                      "all_runs": options.all_runs})
    if shard:
        header.shard = shard.to_json([c.key for c in planned], [c.key for c in cells])
    if options.resume is not None:
        previous = load_results(options.resume)  # again, now that no other process can be writing it
        check_same_sweep(previous.header.to_json(), header.to_json(), str(options.resume))
        kept = finished_cells(previous.cells)
        cells = still_to_measure(cells, kept)
        progress.say(f"resuming {options.resume}: {len(kept)} cell(s) kept, {len(cells)} to measure")
        run_dir = results_folder(results_file(options.resume))
        header.created, header.resumed = previous.header.created, [*previous.header.resumed, utc_now()]
        writer = ResultsWriter(run_dir, header, cells=kept, lock=lock)
    else:
        writer = ResultsWriter(new_run_dir(options.out, config.name), header)
    progress.say(f"results: {writer.path}")
    measurement = Sweep(config, choice.backend, writer, progress, jobs=jobs.count,
                        planner=SeedPlanner(options.seeds, runs=runs),
                        stop_when_reproduced=not options.all_runs)
    def measure() -> None:
        measurement.run(cells)
        if more is not None:
            more(measurement, index)

    status, _ = _finish(writer, measure, lambda _: RunStatus.COMPLETE, new_folder=options.resume is None)
    given = given_of(options, options.argv)
    again = resume_command(given, writer.dir) if status == RunStatus.INTERRUPTED and given else None
    return SweepOutcome(writer.dir, writer.cells, status, again)


def compare_folders(results: Path, baseline: Path) -> list[CellChange]:
    """`harness compare RESULTS --baseline RESULTS`: each cell against the baseline."""
    base, current = load_results(baseline), load_results(results)
    check_same_repro(results, repro_of(current.header.config), baseline, repro_of(base.header.config))
    return compare(current.cells, base.cells)


def nightly(config_path: Path, options: SweepOptions, baseline: Path, config_versions: bool,
            progress: Progress, jax_ref: JaxRef | None = None) -> NightlyOutcome:
    """`harness nightly`: sweep (the latest release unless told otherwise, and the commit `jax_ref`
    names when given), then compare."""
    base = load_results(baseline)  # a bad baseline fails before an hour of sweeping
    config = load_config(config_path)
    check_same_repro(config_path, repro_of(config.to_json()), baseline, repro_of(base.header.config))
    if not options.versions and not config_versions:
        options = replace(options, versions=(LATEST,))
    more = None
    if jax_ref is not None:
        if options.backend != BackendName.VENV:
            # The commit's jax/ goes on PYTHONPATH as a host path, which a container cannot see.
            raise UserError("--jax-repo: the commit runs with --backend venv")
        if options.shard:
            raise UserError("--jax-repo: the commit is one more cell on one machine; run nightly without --shard")
        repo = GitRepo(jax_ref.repo)
        more = partial(_measure_commit, fetch_ref(repo, jax_ref.ref, progress.say), repo)
    swept = sweep(config, options, progress, more)
    if swept.status != RunStatus.COMPLETE:
        return NightlyOutcome(swept)
    return NightlyOutcome(swept, compare(load_results(swept.folder).cells, base.cells))


@dataclass(frozen=True)
class JaxRef:
    """nightly --jax-repo PATH --ref REF: the jax commit measured beside the releases."""

    repo: Path
    ref: str = "main"


ANY_RELEASE = ">=0"


def _measure_commit(target: RefCommit, repo: GitRepo, measurement: Sweep, index: PyPIIndex) -> None:
    # The jaxlibs on offer: every release the backend can make an environment for (a Python here runs it).
    releases = resolve((ANY_RELEASE,), index, source="--jax-repo", pythons=measurement.backend.pythons).versions
    measure_ref(target, CommitSources(repo, DEFAULT_SOURCES), releases, measurement)


# ---- bisection -----------------------------------------------------------------------------------

# Spelled even at their defaults: a bisection's line says how it was searched, for the reader of bisect.md.
BISECT_SPELLED = ("seeds", "backend", "out")


def bisect_command(config_path: Path, options: BisectOptions) -> str:
    """The command that reproduces (and resumes) this bisection: every option it was given (endpoints as
    resolved), spelled by the options' one declaration."""
    given = options.given or Given("bisect", {})
    values = {"config": config_path, "good": options.good, "bad": options.bad, "versions": options.versions,
              "jax_repo": options.jax_repo, "seeds": options.seeds, "runs": options.runs,
              "backend": options.backend, "out": options.out}
    if options.given is None:  # built by hand: what the fields say
        values.update(jobs=options.jobs, python=options.python, python_search=options.pythons.search,
                      install_python=options.pythons.install, cache_thresholds=options.cache_thresholds,
                      rebuild=options.rebuild)
    # --fresh starts over once; the line resumes what it started.
    return given.with_values(**values, fresh=False).line(always=BISECT_SPELLED)


def _release_range(config: Config, options: BisectOptions, index: PyPIIndex,
                   pythons: PythonChooser | None, progress: Progress) -> tuple[list[str], BisectOptions]:
    """The releases to bisect, and the options with --good/--bad as the index spells them."""
    entries, source = version_entries(config, options.versions)
    entries = list(entries)
    endpoints = {}
    for flag, value in (("--good", options.good), ("--bad", options.bad)):
        if value is None:
            continue
        if check_syntax(value) or is_specifier(value):
            raise UserError(f"{flag}: {value!r} must be one release, e.g. 0.4.26")
        # Resolved on its own so that an unknown release is blamed on the flag, not on the config;
        # kept as the index spells it (0.4.26, not 0.4.26.0).
        release = resolve((value,), index, source=flag, pythons=pythons).versions[0]
        endpoints[flag[2:]] = release
        entries.append(release)
    options = replace(options, **endpoints)
    versions = _say_left_out(resolve(tuple(entries), index, source=source, pythons=pythons), progress)
    if options.good and options.bad and versions.index(options.good) >= versions.index(options.bad):
        raise UserError(f"--good {options.good} must be an earlier release than --bad {options.bad}")
    return versions, options


def bisect(config_path: Path, options: BisectOptions, progress: Progress) -> BisectOutcome:
    """`harness bisect`: the releases (then, with a jax repository, the commits) where a regression
    appears and where it is fixed; resumable from its state."""
    config = with_processes(load_config(config_path), options.processes)
    if options.cache_thresholds is not None:
        config = replace(config, cache_thresholds=options.cache_thresholds)
    if options.backend == BackendName.LOCAL:
        raise UserError("--backend local has one JAX version; bisection needs venv or docker")
    if options.jax_repo is not None and options.backend != BackendName.VENV:
        # A commit's jax/ goes on PYTHONPATH as a host path, which a container cannot see.
        raise UserError("--jax-repo: commit bisection runs with --backend venv")
    if options.shard:
        raise UserError("--shard: a bisection cannot be split; each step depends on the last")
    # Checked now, not after the release bisection has been measured and written.
    repo = GitRepo(options.jax_repo) if options.jax_repo is not None else None
    choice, index = _open_backend(config, options)
    # Releases no Python here can run are left out (each named), as `harness run` does.
    versions, options = _release_range(config, options, index, choice.backend.pythons, progress)
    if repo is not None:  # a git repository, but is it jax's, with its release tags?
        repo.release_commit(options.good or versions[0])
    choice.backend.check(config.platform, progress.say)  # no Docker daemon: say so before writing
    choice.backend.check_gpus(config.platform, config.device_count, f"{config.source}: device_count", progress.say)
    command = bisect_command(config_path, options)
    jax_repo = str(repo.path.resolve()) if repo else None
    jobs = _jobs(config, options, progress)
    header = _header(command, config, versions, choice, {
        "runs": options.runs, "jobs": jobs.count, "jobs_why": jobs.why, "seeds": str(options.seeds),
        "good": options.good, "bad": options.bad, "jax_repo": jax_repo})
    # The same sweep, searched between the same endpoints the same way, finds its recorded state.
    search = {"good": options.good, "bad": options.bad, "backend": choice.backend.name, "jax_repo": jax_repo}
    identity = SweepIdentity.of(header.to_json())
    folder = options.out / f"bisect-{config.name}-{identity.key(**search)}"
    folder.mkdir(parents=True, exist_ok=True)
    state = BisectState.open(folder, {**asdict(identity), **search}, fresh=options.fresh)
    if state.resumed:
        progress.say(f"resuming: {len(state.points)} point(s) recorded in {state.path}")
    writer = ResultsWriter(folder, header)
    progress.say(f"backend: {choice.backend.name}; releases {versions[0]}..{versions[-1]} "
                 f"({len(versions)}); seeds: {options.seeds}; results: {folder}")
    bisection = Bisection(config, versions, choice.backend, SeedPlanner(options.seeds, runs=options.runs),
                          state, writer, progress, jobs=jobs.count, good=options.good, bad=options.bad,
                          jax_repo=repo)
    status, outcome = _finish(writer, bisection.run, lambda found: RunStatus.COMPLETE
                              if found.releases.problem is None else RunStatus.PROBLEM)
    text = ""
    if outcome is not None:
        text = bisect_report.text(outcome, command)
        write_atomic(folder / BISECT_REPORT_FILE, text + "\n")
    return BisectOutcome(folder, status, command, state.path, len(state.points), outcome, text)


# ---- output only: report, merge ------------------------------------------------------------------

def report(results: Path) -> Path:
    """`harness report RESULTS`: report.md written again from the folder's results.json."""
    return write_report(results_folder(results))


def merge(folders: list[Path], out_root: Path, command: str) -> MergeOutcome:
    """`harness merge`: the shards' folders joined into one (refused, before anything is written,
    when they are not shards of one sweep)."""
    folders = [results_folder(f) for f in folders]
    merged = merge_documents([(str(f), load_results(f)) for f in folders], command)
    out = new_run_dir(out_root, f"{merged.header.config.get('name', 'sweep')}-merged")
    for folder in folders:
        for name in MERGE_COPIED:
            if (folder / name).is_dir():
                # Slugs name cells, and each cell is in one shard: the trees do not collide.
                shutil.copytree(folder / name, out / name, dirs_exist_ok=True)
    write_files(out, merged)
    return MergeOutcome(out, merged.cells)


# ---- Slurm: submit ----------------------------------------------------------------------------

# What a shard task sets itself (its shard and folder: the job script), or must not (a task is quiet).
_TASK_OWN = ("config", "shard", "out", "resume", "quiet")
# Spelled even at their defaults: the tasks run as the submitter's harness chose, whatever theirs defaults to.
TASK_SPELLED = ("versions", "runs", "jobs", "backend", "seeds")


def _task_args(options: SubmitOptions, versions: list[str], runs: int) -> tuple[str, ...]:
    """`harness run` options of every shard task: each option `submit` was given that `run` takes too,
    versions and runs resolved, paths absolute (the tasks may start elsewhere)."""
    given = options.given
    values = dict(given.values) if given is not None else {
        "jobs": options.jobs, "backend": options.backend, "seeds": options.seeds, "all_runs": options.all_runs,
        "python": options.python, "python_search": options.pythons.search,
        "install_python": options.pythons.install, "cache_thresholds": options.cache_thresholds}
    run_dests = {o.dest for o in options_for("run")} - set(_TASK_OWN)
    task = Given("run", {k: v for k, v in values.items() if k in run_dests})
    task = task.with_values(versions=tuple(versions), runs=runs, jobs=options.jobs)
    return tuple(task.words(always=TASK_SPELLED, absolute=True)[1:])


def _same_task_options(recorded: list[str], now: tuple[str, ...]) -> bool:
    """Whether two shard tasks' `harness run` options mean the same, however each was spelled."""
    try:
        return parse(["run", "CONFIG", *recorded])[0] == parse(["run", "CONFIG", *now])[0]
    except SystemExit:  # words this harness does not read: not the same
        return False


def _check_submit_options(options: SubmitOptions) -> None:
    if options.shard is not None:
        raise UserError("--shard: submit cuts the sweep itself; use --shards N (and --only-shards I to re-submit)")
    if options.rebuild:
        raise UserError("--rebuild: not with submit (every task would rebuild the environments it shares with "
                        "the others); remake them with `make clean-envs` or `harness run --rebuild` on one node")
    if options.time is not None and (problem := check_time(options.time)):
        raise UserError(f"--time: {problem}")
    outside = [i for i in options.only_shards if not 1 <= i <= options.shards]
    if outside:
        raise UserError(f"--only-shards {outside[0]}: shards are numbered 1 to {options.shards}")
    if options.partition is not None and not options.partition.strip():
        raise UserError("--partition: empty name")


def plan_submission(config_path: Path, options: SubmitOptions,
                    progress: Progress | None = None) -> tuple[SweepJobs, dict]:
    """The job scripts and the submission record; UserError, with nothing written, for bad input.
    `progress` hears of the releases left out because no Python here can run them."""
    _check_submit_options(options)
    config = with_processes(load_config(config_path), options.processes)
    runs = options.runs or config.runs
    record = None
    if options.only_shards:  # the folder's sweep: its versions, unless named again
        record = submission.read_submission(options.out.absolute())
        versions = list(options.versions) if options.versions else record["versions"]
        sweep_dir = options.out.absolute()
    else:
        choice, index = _open_backend(config, options)
        versions = _sweep_versions(config, options.versions, choice, index, progress)
        cells = len(plan_cells(config, versions))
        if options.shards > cells:
            raise UserError(f"--shards {options.shards}: the sweep has only {cells} cell(s); "
                            f"use at most {cells} shards")
        # Named for a dry run; the real folder is made at submission (this name, or it with a suffix).
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        sweep_dir = (options.out / f"{stamp}-{config.name}-slurm").absolute()
    resources = Resources.for_config(
        config.platform, config.device_count, cpus_per_task=options.cpus_per_task or options.jobs or 1,
        time=options.time or Resources.time, partition=options.partition, extra=options.sbatch_args)
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
    done = submission.submit(slurm, jobs, record, options.out, only_shards=options.only_shards,
                             overrides=tuple(overrides) if again else (),
                             command=shlex.join(["harness", *options.argv]))
    return SubmitOutcome(jobs, done, before)


def wait_submission(submitted: SubmitOutcome, progress: Progress, slurm: Slurm | None = None,
                    poll_s: float = 3.0) -> SubmitWaitOutcome:
    """`harness submit --wait`: follow the jobs until the merge job has ended, then read its results."""
    done = submitted.submitted
    submission.follow(slurm or Slurm(), done, progress.say, poll_s)
    folder = submission.newest_merge(done.sweep_dir, exclude=set(submitted.merged_before))
    if folder is None:
        return SubmitWaitOutcome(None)
    merged = submission.read_merge(folder)
    again = None
    if not merged.complete and merged.unfinished:
        again = submission.resubmit_command(submission.read_submission(done.sweep_dir), done.sweep_dir,
                                            merged.unfinished)
    return SubmitWaitOutcome(merged, again)
