"""Orchestration: releases first, then (with a jax repository) commits inside each boundary.

Wires the pure search (`logic`) to measurement (`measure`), the record (`state`) and the results
file; prints nothing itself except through `progress`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from harness.bisect import logic
from harness.core.codec import Record, shape, shaped
from harness.bisect.commits import (CommitInfo, CommitSources, GitRepo, commit_environments,
                                    commit_label)
from harness.bisect.logic import Boundary, Role, Step
from harness.bisect.measure import PointMeasurer
from harness.bisect.state import BisectState, commit_id, is_release, release_id
from harness.inputs.config import Config
from harness.environments.base import Backend, Environment
from harness.core.errors import EnvironmentUnavailable
from harness.core.model import CellResult, Verdict
from harness.measure.progress import Progress
from harness.measure.seeds import SeedPlanner
from harness.measure.sweep import CellSink, plan_cells

DEFAULT_SOURCES = Path.home() / ".cache" / "jax-cache-harness" / "commits"


def _no_commit(row: Row) -> bool:
    return row.commit is None


@shaped(order=("point", "role", "verdict", "runs", "miss_bound", "miss_bound_other_mechanisms", "detail", "commit",
               "jaxlib"))
@dataclass
class Row(Record):
    """One tested point as the table and results show it."""

    point: str  # a version or a commit sha
    role: Role
    verdict: Verdict
    runs: int
    miss_bound: float | None
    detail: str
    commit: CommitInfo | None = field(default=None, metadata=shape(omit=_no_commit))
    jaxlib: str | None = field(default=None, metadata=shape(omit=_no_commit))  # written with the commit
    # Chosen seeds: the bound for hash-order dependence other than set order (random extras only).
    # None when every cell ran random seeds, whose bound already is `miss_bound`.
    miss_bound_other: float | None = field(default=None, metadata=shape(key="miss_bound_other_mechanisms"))



def _boundary_json(b: Boundary | None) -> dict[str, Any] | None:
    if b is None:
        return None
    return {"last": b.last, "first": b.first, "skipped": list(b.skipped), "resolved": b.resolved}


def _boundary(data: dict[str, Any] | None) -> Boundary | None:
    """A boundary as results.json holds it (`resolved` is absent from older folders: they were)."""
    if data is None:
        return None
    return Boundary(data.get("last"), data.get("first"), tuple(data.get("skipped") or ()),
                    bool(data.get("resolved", True)))


@dataclass
class CommitSearch:
    kind: Role  # APPEARS: first bad commit; FIXED: first good commit
    releases: tuple[str, str]  # the release boundary searched inside
    count: int = 0  # commits in the range, endpoints included
    rows: list[Row] = field(default_factory=list)
    boundary: Boundary | None = None
    problem: str | None = None
    infos: dict[str, CommitInfo] = field(default_factory=dict)

    @property
    def culprit(self) -> CommitInfo | None:
        return self.infos.get(self.boundary.first) if self.boundary and self.boundary.first else None

    @property
    def before(self) -> CommitInfo | None:
        return self.infos.get(self.boundary.last) if self.boundary and self.boundary.last else None

    def to_json(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "releases": list(self.releases), "commits_in_range": self.count,
                "commits_tested": len(self.rows), "problem": self.problem,
                "culprit": self.culprit.to_json() if self.culprit else None,
                "before_culprit": self.before.to_json() if self.before else None,
                "skipped": list(self.boundary.skipped) if self.boundary else [],
                "boundary": _boundary_json(self.boundary),
                "steps": [r.to_json() for r in self.rows]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommitSearch:
        rows = [Row.from_json(r) for r in data.get("steps") or ()]
        infos = {r.commit.sha: r.commit for r in rows if r.commit}
        ends = {k: CommitInfo.from_json(data[k]) for k in ("culprit", "before_culprit") if data.get(k)}
        infos.update({info.sha: info for info in ends.values()})
        boundary = _boundary(data.get("boundary"))
        if boundary is None and (ends or data.get("skipped")):  # written before `boundary` was
            boundary = Boundary(ends["before_culprit"].sha if "before_culprit" in ends else None,
                                ends["culprit"].sha if "culprit" in ends else None, tuple(data.get("skipped") or ()))
        return cls(Role(data["kind"]), tuple(data["releases"]), int(data.get("commits_in_range", 0)), rows,
                   boundary, data.get("problem"), infos)


@dataclass
class Outcome:
    releases: logic.Search
    release_rows: list[Row]
    commits: list[CommitSearch] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return sum(r.runs for r in self.release_rows) + sum(r.runs for c in self.commits for r in c.rows)

    def to_json(self) -> dict[str, Any]:
        return {"appears": _boundary_json(self.releases.appears), "fixed": _boundary_json(self.releases.fixed),
                "problem": self.releases.problem, "releases_tested": len(self.release_rows),
                "runs_total": self.runs, "steps": [r.to_json() for r in self.release_rows],
                "commits": [c.to_json() for c in self.commits]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        """The outcome as results.json's `bisect` holds it (folders of earlier releases included)."""
        rows = [Row.from_json(r) for r in data.get("steps") or ()]
        search = logic.Search(_boundary(data.get("appears")), _boundary(data.get("fixed")),
                              [Step(r.point, r.verdict, r.role) for r in rows], data.get("problem"))
        return cls(search, rows, [CommitSearch.from_json(c) for c in data.get("commits") or ()])


def row_for(step: Step, cells: list[CellResult], commit: CommitInfo | None = None) -> Row:
    runs = sum(len(c.runs) for c in cells)
    bounds = [c.miss_bounds for c in cells]
    clean = step.verdict == Verdict.CLEAN and bool(bounds) and all(b is not None for b in bounds)
    detail = "; ".join(c.reason for c in cells if c.reason)
    jaxlib = next((c.environment.get("jaxlib_release") for c in cells if c.environment), None)
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
    sources_root: Path = DEFAULT_SOURCES
    # Injectable for tests: the environment providing jaxlib `version` (default: the backend's release).
    jaxlib_environment: Callable[[str], Environment] | None = None
    _cells: dict[str, list[CellResult]] = field(default_factory=dict)
    _environments: dict[str, Environment] = field(default_factory=dict)

    def __post_init__(self):
        self.measurer = PointMeasurer(self.config, self.planner, self.state, self.writer.dir, self.progress,
                                      self._on_point, self.at_once, self._on_interrupted)

    def _on_point(self, point: str, cells: list[CellResult], replayed: bool) -> None:
        self._cells[point] = [self.writer.add(cell) for cell in cells] if is_release(point) else cells
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

    def run(self) -> Outcome:
        search = logic.search(self.versions, self.test_release, self.good, self.bad)
        outcome = Outcome(search, [row_for(s, self._cells[release_id(s.point)]) for s in search.steps])
        self.writer.set("bisect", outcome.to_json())
        if self.jax_repo is not None and search.problem is None:
            sources = CommitSources(self.jax_repo, self.sources_root)
            for boundary, kind in ((search.appears, Role.APPEARS), (search.fixed, Role.FIXED)):
                if boundary is None:
                    continue
                outcome.commits.append(self.commit_search(self.jax_repo, sources, boundary, kind))
                self.writer.set("bisect", outcome.to_json())
        return outcome

    def commit_search(self, repo: GitRepo, sources: CommitSources, boundary: Boundary,
                      kind: Role) -> CommitSearch:
        before, after = (Verdict.CLEAN, Verdict.REPRODUCED) if kind == Role.APPEARS else \
            (Verdict.REPRODUCED, Verdict.CLEAN)
        found = CommitSearch(kind, (str(boundary.last), str(boundary.first)))
        if boundary.last is None or boundary.first is None:
            found.problem = ("no clean release before the regression in the range" if kind == Role.APPEARS
                             else "not fixed in the range")
            return found
        commits = repo.first_parent_range(repo.release_commit(boundary.last),
                                          repo.release_commit(boundary.first))
        found.count = len(commits)
        self.progress.say(f"commits {boundary.last}..{boundary.first}: {len(commits)} on the first-parent line")
        # The jaxlibs on offer: the releases on both sides of the boundary (and any between).
        lo, hi = self.versions.index(boundary.last), self.versions.index(boundary.first)
        jaxlibs = {v: (lambda v=v: self._jaxlib_env(v)) for v in self.versions[lo:hi + 1]}

        def test(sha: str) -> Verdict:
            info = found.infos.setdefault(sha, repo.info(sha))
            self.progress.say(f"commit {sha[:10]} {info.date[:10]} {info.subject[:60]}")
            try:
                _, source = sources.get(sha)
            except EnvironmentUnavailable:
                source = None  # measure() records the same failure as an error cell
            specs = plan_cells(self.config, [commit_label(source, sha)])
            return self.measurer.measure(commit_id(sha), specs, commit_environments(sha, sources, jaxlibs))

        narrowed = logic.between(commits, test, before, after, kind)
        found.boundary, found.problem = narrowed.boundary, narrowed.problem
        found.rows = [row_for(s, self._cells[commit_id(s.point)], found.infos.get(s.point))
                      for s in narrowed.steps]
        failed = next((r for r in found.rows if r.verdict == Verdict.ERROR), None)
        if found.problem and failed:
            found.problem += f": {failed.detail}"
        return found

    def _jaxlib_env(self, version: str) -> Environment:
        if self.jaxlib_environment is not None:
            return self.jaxlib_environment(version)
        return self._release_env(version)

