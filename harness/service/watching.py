"""`harness nightly` and `harness compare`: the newest releases (and a jax commit) against a baseline."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from harness.bisect.bisection import DEFAULT_SOURCES
from harness.bisect.commits import CommitSources, GitRepo
from harness.bisect.ref import RefCommit, fetch_ref, measure_ref
from harness.inputs.config import load_config
from harness.core.kinds import BackendName
from harness.core.errors import UserError
from harness.results.header import recorded_config
from harness.nightly.compare import CellChange, check_same_repro, compare, repro_of
from harness.measure.progress import Progress
from harness.environments.package_index import PyPIIndex
from harness.results.document import SweepStatus, load_results
from harness.service.command_options import JaxRef, SweepOptions
from harness.service.outcomes import NightlyOutcome
from harness.service.sweeping import sweep
from harness.measure.sweep import Sweep
from harness.inputs.versions import LATEST, resolve


def compare_folders(results: Path, baseline: Path, max_lost_growth: float | None = None) -> list[CellChange]:
    """`harness compare RESULTS --baseline RESULTS`: each cell against the baseline."""
    base, current = load_results(baseline), load_results(results)
    check_same_repro(results, repro_of(current.header.config), baseline, repro_of(base.header.config))
    return compare(current.cells, base.cells, max_lost_growth)


def nightly(config_path: Path, options: SweepOptions, baseline: Path, config_versions: bool,
            progress: Progress, jax_ref: JaxRef | None = None,
            max_lost_growth: float | None = None) -> NightlyOutcome:
    """`harness nightly`: sweep (the latest release unless told otherwise, and the commit `jax_ref`
    names when given), then compare."""
    base = load_results(baseline)  # a bad baseline fails before an hour of sweeping
    config = load_config(config_path)
    check_same_repro(config_path, repro_of(recorded_config(config)), baseline,
                     repro_of(base.header.config))
    if not options.versions and not config_versions:
        options = replace(options, versions=(LATEST,))
    after_releases = None
    if jax_ref is not None:
        if options.backend != BackendName.VENV:
            # The commit's jax/ goes on PYTHONPATH as a host path, which a container cannot see.
            raise UserError("--jax-repo: the commit runs with --backend venv")
        if options.shard:
            raise UserError("--jax-repo: the commit is one more cell on one machine; run nightly without --shard")
        assert jax_ref.repo is not None  # a JaxRef is made only with a repository
        repo = GitRepo(jax_ref.repo)
        after_releases = partial(_measure_commit, fetch_ref(repo, jax_ref.ref, progress.say), repo)
    swept = sweep(config, options, progress, after_releases)
    if swept.status != SweepStatus.COMPLETE:
        return NightlyOutcome(swept)
    return NightlyOutcome(swept, compare(load_results(swept.folder).cells, base.cells, max_lost_growth))

ANY_RELEASE = ">=0"


def _measure_commit(target: RefCommit, repo: GitRepo, measurement: Sweep, index: PyPIIndex) -> None:
    # The jaxlibs on offer: every release the backend can make an environment for (a Python here runs it).
    releases = resolve((ANY_RELEASE,), index, source="--jax-repo", pythons=measurement.backend.pythons).versions
    measure_ref(target, CommitSources(repo, DEFAULT_SOURCES), releases, measurement)
