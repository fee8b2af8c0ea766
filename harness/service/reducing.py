"""`harness reduce`: the service's side, thin: the original's config as `check` makes it, the backend, the
bad and good releases, the folder; the reduction itself is harness/reduce/."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from harness.bisect.bisection import DEFAULT_SOURCES
from harness.bisect.commit_backend import CommitBackend
from harness.bisect.commits import CommitSources, GitRepo
from harness.inputs.config import Config
from harness.core.errors import UserError
from harness.measure.progress import Progress
from harness.reduce.reduction import ReduceOutcome, Reduction
from harness.results.header import RecordedOptions, ResultsHeader
from harness.results.document import lock_results_folder, new_results_folder
from harness.inputs.versions import LATEST, check_syntax, is_specifier, resolve
from harness.service import measurement
from harness.service.option_checks import check_reduce
from harness.service.command_options import ReduceOptions, ScriptCheck
from harness.service.sweeping import check_config, with_script_packages


def _one_release(flag: str, value: str, opened: measurement.Measurement) -> str:
    if check_syntax(value) or is_specifier(value) or value == LATEST:
        raise UserError(f"{flag}: {value!r} must be one release, e.g. 0.4.28")
    return resolve((value,), opened.index, source=flag, pythons=opened.backend.pythons).versions[0]


def reduce(check: ScriptCheck, options: ReduceOptions, progress: Progress) -> ReduceOutcome:
    """`harness reduce SCRIPT --versions V [--good G]`: the smallest program that keeps the script's
    failure signature on V (and stays clean on G); resumable from its folder (harness/reduce/)."""
    check_reduce(options)
    # A reduction (or another --resume) at work in that folder: refused before anything is prepared.
    held = lock_results_folder(options.resume) if options.resume is not None else None
    try:
        return _reduce(check, options, progress)
    finally:
        if held is not None:
            held.release()


def _reduce(check: ScriptCheck, options: ReduceOptions, progress: Progress) -> ReduceOutcome:
    script = check.script
    assert script is not None  # reduce's SCRIPT is required
    # The one release reduced is --versions (resolved below), the runs the reduction's: not what check says.
    config = check_config(replace(check, versions=None, runs=options.runs))
    options = with_script_packages(options, check.script_run)  # --with . and -e PATH are --with-editable PATH
    return reduce_config(config, script, options, progress)


@dataclass(frozen=True)
class CommitPoint:
    """The first bad point as a jax commit (`harness triage`): reduced on as a release is."""

    label: str  # its PEP 440 label, as its cells name it
    sha: str
    repo: Path
    jaxlib: str  # the release whose jaxlib runs it (the one the night's cell ran with)


def reduce_config(config: Config, script: Path, options: ReduceOptions, progress: Progress,
                  commit: CommitPoint | None = None, folder: Path | None = None,
                  good_commit: CommitPoint | None = None) -> ReduceOutcome:
    """A reduction of `script` run as `config` says (a check's config, or a night's: `harness triage`), on
    --versions' one release (or `commit`) against --good (or `good_commit`, the commit before it), in `folder`
    (else a new one under --out; --resume's when given)."""
    # As a sweep takes them: the signature then names the factor that missed, or the processes that disagreed.
    opened = measurement.open(config, options, progress.say)
    config, choice = opened.config, opened.choice
    backend = choice.backend
    installed = backend.installed_version()
    if commit is not None:
        bad = commit.label
        points = {p.label: (p.sha, p.jaxlib) for p in (commit, good_commit) if p is not None}
        backend = CommitBackend(backend, CommitSources(GitRepo(commit.repo), DEFAULT_SOURCES), points)
    elif installed is not None:
        if options.good:
            raise UserError(f"--good: --backend {choice.backend.name} has one JAX version ({installed}); "
                            "use venv or docker")
        bad = opened.versions(options.versions, progress)[0]
    else:
        assert options.versions  # check_reduce: the one release
        bad = _one_release("--versions", options.versions[0], opened)
    good = good_commit.label if good_commit is not None else \
        _one_release("--good", options.good, opened) if options.good else None
    if good == bad:
        raise UserError(f"--good {good}: the same release as --versions")
    versions = [bad] + ([good] if good else [])
    config = replace(config, jax_versions=tuple(versions),
                     cwd=config.cwd.absolute() if config.cwd is not None else None)  # as --out and the script
    progress.say(f"backend: {choice.backend.name} ({choice.why})")
    at_once = opened.ready(options, progress, device_count_source="--device-count").unshared()
    command = options.command

    def header(measured: Config, measured_versions: list[str]) -> ResultsHeader:
        return opened.header(command, measured_versions,
                             RecordedOptions(runs=opened.runs, runs_at_once=at_once.count, runs_at_once_why=at_once.why,
                                             seeds=options.seeds, all_runs=False), config=measured)

    stem = re.sub(r"[^A-Za-z0-9._-]", "_", script.stem) or "script"
    # Absolute: candidates run in folders of their own, under bubblewrap, where a relative path names another place.
    folder = (options.resume or folder or new_results_folder(options.out, f"reduce-{stem}")).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    progress.say(f"reducing {script} on jax {bad}" + (f" (clean on {good})" if good else "") + f": {folder}")
    reduction = Reduction(config, script.absolute(), backend, bad, good, folder, header, progress,
                          opened.planner(), at_once=at_once.count,
                          max_candidates=options.max_candidates)
    return reduction.run(resume=options.resume is not None)
