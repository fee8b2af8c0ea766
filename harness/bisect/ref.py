"""One jax commit measured beside the releases (`harness nightly --jax-repo PATH --ref main`).

The commit bisection's machinery does the work: `jax/` at the commit from `git archive`, run on the
path of the newest jaxlib release's environment that the commit accepts (older ones when that one
cannot run it). Its cells carry the commit (sha, date, subject, ref, jaxlib) under `commit`, so
tables name them `jax@<sha>` and the nightly comparison holds them against the newest release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Callable

from packaging.version import Version

from harness.bisect.commits import (CommitEnvironment, CommitSources, GitRepo, JaxSource, acceptable_jaxlibs,
                                    commit_label)
from harness.bisect.measure_point import measure_alternatives
from harness.environments.base import Environment
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.model import CellResult, CellSpec, CommitInfo, MeasuredCommit
from harness.measure.cell_runner import error_cell
from harness.measure.sweep import Sweep, measure_cell, plan_cells

_SHA = re.compile(r"[0-9a-fA-F]{7,40}")


@dataclass(frozen=True)
class RefCommit:
    """What `--ref` named when the night began."""

    ref: str
    info: CommitInfo
    fetched_from: str | None  # the remote it was fetched from; None: the clone has none (or a sha)

    def measured(self, jaxlib: str | None) -> MeasuredCommit:
        return MeasuredCommit(self.info.sha, self.info.date, self.info.subject, self.ref, self.fetched_from, jaxlib)


def fetch_ref(repo: GitRepo, ref: str, say: Callable[[str], None]) -> RefCommit:
    """The commit `ref` names, fetched first when the clone has a remote (`origin`, else the first).
    A commit id never moves, so one already here is not fetched. A failed fetch of a ref that exists
    here measures the local one and says so; a ref found nowhere is bad input."""
    remotes = repo.remotes()
    remote = "origin" if "origin" in remotes else (remotes[0] if remotes else None)
    local = repo.resolve(ref)
    if remote is None or (local is not None and _SHA.fullmatch(ref) and local.startswith(ref.lower())):
        if local is None:
            raise UserError(f"--ref: {ref!r} is not a commit in {repo.path} (and it has no remote to fetch from)")
        return RefCommit(ref, repo.info(local), None)
    say(f"git fetch {remote} {ref} in {repo.path}")
    fetched, problem = repo.fetch(remote, ref)
    if fetched is not None:
        return RefCommit(ref, repo.info(fetched), remote)
    if local is None:
        raise UserError(f"--ref: {ref!r} is not a commit in {repo.path}, and git fetch {remote} {ref} failed: "
                        f"{problem}")
    say(f"git fetch {remote} {ref} failed ({problem}); measuring {ref} as it is here, {local[:12]}")
    return RefCommit(ref, repo.info(local), None)


def no_jaxlib_reason(label: str, source: JaxSource, releases: list[str]) -> str:
    newest = max(releases, key=Version) if releases else "none"
    return (f"no jaxlib release satisfies {label}: its jax/version.py asks for jaxlib >= "
            f"{source.minimum_jaxlib} and <= {source.version} (the newest a Python here can run: {newest})")


def measure_ref(target: RefCommit, sources: CommitSources, releases: list[str], sweep: Sweep) -> list[CellResult]:
    """The commit's cells on every mesh of the sweep's config, each tagged with the commit and the
    jaxlib it ran with, added to the sweep's results as they are settled (a cell cut short by Ctrl-C
    too). `releases`: the jax==jaxlib releases the backend can make environments for (some Python
    here has their wheels)."""
    cells = _measure(target, sources, releases, sweep)
    for cell in cells:
        sweep.writer.add(cell)
    return cells


def _measure(target: RefCommit, sources: CommitSources, releases: list[str], sweep: Sweep) -> list[CellResult]:
    sha, label = target.info.sha, target.info.label
    progress = sweep.progress
    progress.say(f"{label} ({target.ref}, {target.info.date[:10]}): {target.info.subject[:70]}")
    try:
        folder, source = sources.get(sha)
    except EnvironmentUnavailable as exc:
        return _tagged([error_cell(s, f"environment: {exc}") for s in _specs(sweep, None, sha)], target, None)
    specs = _specs(sweep, source, sha)
    if source is None:
        return _tagged([error_cell(s, f"{label}: jax/version.py missing or unreadable") for s in specs], target,
                       None)
    jaxlibs = acceptable_jaxlibs(source, releases)
    if not jaxlibs:
        reason = no_jaxlib_reason(label, source, releases)
        progress.say(f"  => error: {reason}")
        return _tagged([error_cell(s, reason) for s in specs], target, None)
    progress.say(f"{label}: jax {source.version} accepts jaxlib {', '.join(jaxlibs)}; trying the newest first")

    def environment(jaxlib: str) -> Callable[[], Environment]:
        return lambda: CommitEnvironment(sweep.backend.prepare(jaxlib, sweep.config.platform, progress.say),
                                         folder, sha, commit_label(source, sha), jaxlib)

    def measure(spec: CellSpec, env: Environment) -> CellResult:
        # Ctrl-C: what the cell measured is kept, named as the commit, then the sweep stops.
        def keep(cell: CellResult) -> None:
            sweep.writer.add(_tag(cell, target, cell.environment_facts.get("jaxlib_release")))

        return measure_cell(spec, env, sweep.config, sweep.planner, sweep.writer.dir, progress, keep=keep,
                            at_once=sweep.at_once, stop_when_reproduced=sweep.stop_when_reproduced,
                            read_cause=sweep.writer.cause)

    cells = measure_alternatives(specs, [environment(j) for j in jaxlibs], measure, progress, all_specs=True)
    return [_tag(c, target, c.environment_facts.get("jaxlib_release")) for c in cells]


def _specs(sweep: Sweep, source: JaxSource | None, sha: str) -> list[CellSpec]:
    return plan_cells(sweep.config, [commit_label(source, sha)])


def _tag(cell: CellResult, target: RefCommit, jaxlib: str | None) -> CellResult:
    cell.commit = target.measured(jaxlib)
    return cell


def _tagged(cells: list[CellResult], target: RefCommit, jaxlib: str | None) -> list[CellResult]:
    return [_tag(c, target, jaxlib) for c in cells]

