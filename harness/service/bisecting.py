"""`harness bisect`: the releases (then commits) where a regression appears and where it is fixed."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any
from pathlib import Path

from harness.bisect.bisection import Bisection
from harness.bisect.commits import GitRepo
from harness.bisect.bisect_state import PROGRAM, BisectState, program_content
from harness.results.bisect_results import BisectSection
from harness.inputs.config import Config, load_config
from harness.core.errors import UserError
from harness.core.files import fitting_name, write_atomic
from harness.results.header import BisectRange, RecordedOptions
from harness.results.identity import SweepIdentity
from harness.inputs.options import Given
from harness.measure.progress import Progress
from harness.environments.package_index import PyPIIndex
from harness.inputs.pythons import PythonChooser
from harness.results.document import SweepStatus
from harness.service import measurement
from harness.service.measurement import finish, say_left_out, version_entries
from harness.service.option_checks import check_bisect
from harness.service.command_options import BisectOptions, ScriptCheck
from harness.evidence.program_packages import ProgramPackages
from harness.report.bisect_section import bisect_text
from harness.service.sweeping import check_config, with_script_packages
from harness.service.outcomes import BISECT_REPORT_FILE, BisectOutcome
from harness.inputs.versions import check_syntax, is_specifier, resolve
from harness.output.results_folder import ResultsWriter

# Spelled even at their defaults: a bisection's line says how it was searched, for the reader of bisect.md.
BISECT_SPELLED = ("seeds", "backend", "out")


def bisect_command(config_path: Path | None, options: BisectOptions) -> str:
    """The command that reproduces (and resumes) this bisection: every option it was given (endpoints as
    resolved), spelled by the options' one declaration."""
    given = options.given or Given("bisect", {})
    values: dict[str, Any] = {"config": config_path, "good": options.good, "bad": options.bad, "versions": options.versions,
              "jax_repo": options.jax_repo, "seeds": options.seeds, "runs": options.runs,
              "backend": options.backend, "out": options.out}
    if options.given is None:  # built by hand: what the fields say
        values.update(runs_at_once=options.runs_at_once, python=options.python, python_search=options.pythons.search,
                      install_python=options.pythons.install, cache_thresholds=options.cache_thresholds,
                      rebuild=options.rebuild, vary=options.vary)
    # --fresh starts over once; the line resumes what it started.
    return given.with_values(**values, fresh=False).line(always=BISECT_SPELLED)


def _release_range(config: Config, options: BisectOptions, index: PyPIIndex,
                   pythons: PythonChooser | None, progress: Progress) -> tuple[list[str], BisectOptions]:
    """The releases to bisect, and the options with --good/--bad as the index spells them."""
    given_entries, source = version_entries(config, options.versions)
    entries = list(given_entries)
    endpoints: dict[str, str] = {}
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
    options = replace(options, good=endpoints.get("good", options.good), bad=endpoints.get("bad", options.bad))
    versions = say_left_out(resolve(tuple(entries), index, source=source, pythons=pythons), progress)
    if options.good and options.bad and versions.index(options.good) >= versions.index(options.bad):
        raise UserError(f"--good {options.good} must be an earlier release than --bad {options.bad}")
    return versions, options


def _status(found: BisectSection) -> SweepStatus:
    return SweepStatus.COMPLETE if found.problem is None else SweepStatus.PROBLEM


def bisect(config_path: Path, options: BisectOptions, progress: Progress) -> BisectOutcome:
    """`harness bisect CONFIG`: the releases (then, with a jax repository, the commits) where a regression
    appears and where it is fixed; resumable from its state."""
    return _bisect(load_config(config_path), config_path, options, progress)


def bisect_program(check: ScriptCheck, options: BisectOptions, progress: Progress) -> BisectOutcome:
    """`harness bisect SCRIPT` (or `-m MODULE`) with check's program options and no config: the program's
    config as `harness check` makes it (sweeping.check_config: its --with, PEP 723 and requirements, --env,
    --cwd, arguments), its releases --versions (or the range from --good to --bad)."""
    if not check.versions:
        if options.good is None or options.bad is None:
            raise UserError("bisect: a script has no config to name its releases: give them with --versions "
                            "(e.g. --versions '>=0.4.26,<=0.4.31') or --good V --bad V")
        check = replace(check, versions=(f">={options.good},<={options.bad}",))
    config = check_config(check)
    config = replace(config, name=config.name.removeprefix("check-"))  # bisect-train-<key>, not bisect-check-...
    options = with_script_packages(options, check.script_run)  # --with . is --with-editable .
    return _bisect(config, check.script, options, progress)


def bisect_config(config: Config, config_path: Path | None, options: BisectOptions, progress: Progress,
                  bad_commit: str | None = None) -> BisectOutcome:
    """A bisection of a config already loaded (`harness triage`: the night's). With `bad_commit` (a commit of
    --jax-repo after the release --good), the commits from --good's release commit to it are searched."""
    if bad_commit is not None and (options.jax_repo is None or options.good is None):
        raise UserError("a bisection to a commit needs --jax-repo and --good")
    return _bisect(config, config_path, options, progress, bad_commit)


def _bisect(config: Config, config_path: Path | None, options: BisectOptions, progress: Progress,
            bad_commit: str | None = None) -> BisectOutcome:
    """A bisection of `config` (a loaded config file, or a program's: `config_path` is then its script, or
    None for -m MODULE; the command line says it again as given)."""
    check_bisect(options)
    # Checked now, not after the release bisection has been measured and written.
    repo = GitRepo(options.jax_repo) if options.jax_repo is not None else None
    opened = measurement.open(config, options, progress.say)
    config, choice = opened.config, opened.choice
    # Releases no Python here can run are left out (each named), as `harness run` does.
    versions, options = _release_range(config, options, opened.index, choice.backend.pythons, progress)
    if repo is not None:  # a git repository, but is it jax's, with its release tags?
        repo.release_commit(options.good or versions[0])
    at_once = opened.ready(options, progress).unshared()  # no Docker daemon: said before anything is written
    command = bisect_command(config_path, options)
    runs = opened.runs  # the config's `runs:` unless --runs, as `harness run` takes it
    jax_repo = str(repo.path.resolve()) if repo else None
    header = opened.header(command, versions, RecordedOptions(
        runs=runs, runs_at_once=at_once.count, runs_at_once_why=at_once.why, seeds=options.seeds,
        bisect=BisectRange(options.good, options.bad, jax_repo)))
    # The same sweep, searched between the same endpoints the same way, finds its recorded state.
    search = {"good": options.good, "bad": options.bad, "backend": choice.backend.name, "jax_repo": jax_repo}
    if bad_commit is not None:  # only then: a bisection's identity from before stays what it was
        search["bad_commit"] = bad_commit
    identity = SweepIdentity.of(header)
    folder = options.out / fitting_name(f"bisect-{config.name}-{identity.key(**search)}")
    folder.mkdir(parents=True, exist_ok=True)
    state = BisectState.open(folder, {**asdict(identity), **search, PROGRAM: program_content(config)},
                             fresh=options.fresh)
    if state.restarted:
        progress.say(f"not resuming {state.path}: {state.restarted}")
    elif state.resumed:
        progress.say(f"resuming: {len(state.points)} point(s) recorded in {state.path}")
    writer = ResultsWriter(folder, header)
    progress.say(f"backend: {choice.backend.name}; releases {versions[0]}..{versions[-1]} "
                 f"({len(versions)}); seeds: {options.seeds}; results: {folder}")
    bisection = Bisection(config, versions, choice.backend, opened.planner(),
                          state, writer, progress, at_once=at_once.count, good=options.good, bad=options.bad,
                          jax_repo=repo, bad_commit=bad_commit)
    status, outcome = finish(writer, bisection.run, _status)
    text = ""
    if outcome is not None:
        # The program's own packages per release (--with, PEP 723, requirements:), named at a boundary they share.
        packages = ProgramPackages.of(writer.cells, config.requirements.items)
        text = bisect_text(outcome, command, packages)
        write_atomic(folder / BISECT_REPORT_FILE, text + "\n")
    return BisectOutcome(folder, status, command, state.path, len(state.points), outcome, text)
