"""Orchestration: releases first, then (with a jax repository) commits inside each boundary.

Wires the pure search (`logic`) to measurement (`measure_point`), the record (`bisect_state`) and the results
file; prints nothing itself except through `progress`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from harness.bisect import logic
from harness.bisect.commits import CommitSources, GitRepo, commit_environments, commit_label
from harness.bisect.logic import Step
from harness.bisect.measure_point import PointMeasurer
from harness.bisect.bisect_state import BisectState, commit_id, is_release, release_id
from harness.inputs.config import Config
from harness.environments.base import Backend, Environment
from harness.core.errors import EnvironmentUnavailable
from harness.core.model import CellResult, CommitInfo
from harness.core.kinds import Verdict
from harness.results.bisect_results import Boundary, CommitSearch, BisectSection, Role, Row
from harness.measure.progress import Progress
from harness.measure.seeds import SeedPlanner
from harness.measure.sweep import CellSink, plan_cells

DEFAULT_SOURCES = Path.home() / ".cache" / "jax-cache-harness" / "commits"


def row_for(step: Step[str], cells: list[CellResult], commit: CommitInfo | None = None) -> Row:
    runs = sum(len(c.runs) for c in cells)
    bounds = [b for c in cells if (b := c.miss_bounds) is not None]
    clean = step.verdict == Verdict.CLEAN and bool(cells) and len(bounds) == len(cells)
    detail = "; ".join(c.reason for c in cells if c.reason)
    jaxlib = next((c.environment_facts.get("jaxlib_release") for c in cells if c.environment_facts), None)
    set_order = other = None
    if clean:
        set_order = max(b.set_order for b in bounds)
        if any(b.other is not None for b in bounds):
            # A random-seed cell (no separate figure) bounds every mechanism with its own bound.
            other = max(b.set_order if b.other is None else b.other for b in bounds)
    return Row(str(step.point), step.role, step.verdict, runs, set_order, detail, commit, jaxlib, other)


class BisectionSink(CellSink, Protocol):
    """The results writer: release cells as they are measured, the bisection's record under a key."""

    def set(self, key: str, value: Any) -> None: ...


@dataclass
class Bisection:
    config: Config
    versions: list[str]  # the release range, oldest first
    backend: Backend
    planner: SeedPlanner
    state: BisectState
    writer: BisectionSink
    progress: Progress
    at_once: int = 1
    good: str | None = None
    bad: str | None = None
    jax_repo: GitRepo | None = None  # built (so checked) by the caller before anything is measured
    # A commit known bad after the last release (`harness triage` of a night at a jax commit): the commits from
    # `good`'s release commit to it are searched, with no release search (the night measured both ends).
    bad_commit: str | None = None
    sources_root: Path = DEFAULT_SOURCES
    # Injectable for tests: the environment providing jaxlib `version` (default: the backend's release).
    jaxlib_environment: Callable[[str], Environment] | None = None
    _cells: dict[str, list[CellResult]] = field(default_factory=dict)
    _environments: dict[str, Environment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.measurer = PointMeasurer(self.config, self.planner, self.state, self.writer.dir, self.progress,
                                      self._on_point, self.at_once, self._on_interrupted, self.writer.cause)

    def _on_point(self, point: str, cells: list[CellResult], replayed: bool) -> None:
        if is_release(point):
            for cell in cells:
                self.writer.add(cell)
        self._cells[point] = cells
        if replayed:
            verdict = next(iter({c.verdict for c in cells}), Verdict.ERROR)
            self.progress.say(f"{point}: recorded earlier ({verdict}), not measured again")

    def _on_interrupted(self, point: str, cell: CellResult) -> None:
        if is_release(point):  # the results hold release cells; a commit's are in the state alone
            self.writer.add(cell)

    def _release_env(self, version: str) -> Environment:
        if version not in self._environments:
            self._environments[version] = self.backend.prepare(version, self.config.platform, self.progress.say)
        return self._environments[version]

    def test_release(self, version: str) -> Verdict:
        self.progress.say(f"release {version}")
        return self.measurer.measure(release_id(version), plan_cells(self.config, [version]),
                                     lambda: self._release_env(version))

    def run(self) -> BisectSection:
        if self.bad_commit is not None:
            return self._to_commit(self.bad_commit)
        search = logic.search(self.versions, self.test_release, self.good, self.bad)
        outcome = BisectSection(search.appears, search.fixed, search.problem,
                          [row_for(s, self._cells[release_id(s.point)]) for s in search.steps])
        self.writer.set("bisect", outcome)
        if self.jax_repo is not None and search.problem is None:
            sources = CommitSources(self.jax_repo, self.sources_root)
            for boundary, kind in ((search.appears, Role.APPEARS), (search.fixed, Role.FIXED)):
                if boundary is None:
                    continue
                outcome.commits.append(self.commit_search(self.jax_repo, sources, boundary, kind))
                self.writer.set("bisect", outcome)
        return outcome

    def _to_commit(self, sha: str) -> BisectSection:
        assert self.jax_repo is not None and self.good is not None  # the service checks both
        outcome = BisectSection(Boundary(self.good, sha), None, None, [])
        sources = CommitSources(self.jax_repo, self.sources_root)
        outcome.commits.append(self.commit_search(self.jax_repo, sources, Boundary(self.good, sha), Role.APPEARS))
        self.writer.set("bisect", outcome)
        return outcome

    def _commit_of(self, repo: GitRepo, point: str) -> str:
        return point if point == self.bad_commit else repo.release_commit(point)

    def commit_search(self, repo: GitRepo, sources: CommitSources, boundary: Boundary[str],
                      kind: Role) -> CommitSearch:
        before, after = (Verdict.CLEAN, Verdict.REPRODUCED) if kind == Role.APPEARS else \
            (Verdict.REPRODUCED, Verdict.CLEAN)
        found = CommitSearch(kind, (str(boundary.last), str(boundary.first)))
        if boundary.last is None or boundary.first is None:
            found.problem = ("no clean release before the regression in the range" if kind == Role.APPEARS
                             else "not fixed in the range")
            return found
        commits = repo.first_parent_range(self._commit_of(repo, boundary.last),
                                          self._commit_of(repo, boundary.first))
        found.count = len(commits)
        self.progress.say(f"commits {boundary.last}..{boundary.first}: {len(commits)} on the first-parent line")
        # The jaxlibs on offer: the releases on both sides of the boundary (and any between).
        lo = self.versions.index(boundary.last)
        # A commit after the last release: any release from the boundary's on may be its jaxlib.
        hi = len(self.versions) - 1 if boundary.first == self.bad_commit else self.versions.index(boundary.first)
        jaxlibs: dict[str, Callable[[], Environment]] = {v: partial(self._jaxlib_env, v)
                                                         for v in self.versions[lo:hi + 1]}
        infos: dict[str, CommitInfo] = {}

        def test(sha: str) -> Verdict:
            info = infos.setdefault(sha, repo.info(sha))
            self.progress.say(f"commit {sha[:10]} {info.date[:10]} {info.subject[:60]}")
            try:
                _, source = sources.get(sha)
            except EnvironmentUnavailable:
                source = None  # measure() records the same failure as an error cell
            specs = plan_cells(self.config, [commit_label(source, sha)])
            return self.measurer.measure(commit_id(sha), specs, commit_environments(sha, sources, jaxlibs))

        narrowed = logic.between(commits, test, before, after, kind)
        found.boundary, found.problem = narrowed.boundary, narrowed.problem
        found.rows = [row_for(s, self._cells[commit_id(s.point)], infos.get(s.point))
                      for s in narrowed.steps]
        if found.boundary is not None:
            found.culprit = infos.get(found.boundary.first) if found.boundary.first else None
            found.before = infos.get(found.boundary.last) if found.boundary.last else None
        failed = next((r for r in found.rows if r.verdict == Verdict.ERROR), None)
        if found.problem and failed:
            found.problem += f": {failed.detail}"
        return found

    def _jaxlib_env(self, version: str) -> Environment:
        if self.jaxlib_environment is not None:
            return self.jaxlib_environment(version)
        return self._release_env(version)

