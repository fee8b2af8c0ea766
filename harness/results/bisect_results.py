"""What `harness bisect` adds to results.json (its `bisect` section) as Structs shaped like the file (pure): the
releases' boundaries, each tested point's row, and each search among the commits inside a boundary. The bisector
(harness/bisect/) makes them; the report (harness/report/render.py) and the bisection's own text read them."""

from __future__ import annotations

import enum
from typing import Any, Generic, TypeVar
from collections.abc import Hashable

import msgspec

from harness.core.model import CommitInfo
from harness.core.kinds import Verdict

P = TypeVar("P", bound=Hashable)


class Role(enum.StrEnum):
    """Why a point was tested: the table shows it."""

    ENDPOINT = "endpoint"
    FIND_BAD = "find-bad"  # both ends clean: look for any reproducing point in between
    APPEARS = "appears"  # narrowing where the regression appears
    FIXED = "fixed"  # narrowing where it is fixed


def testable(verdict: Verdict) -> bool:
    """A point with a verdict either way (clean or reproduced): an error or unsupported point says neither."""
    return verdict.measured


class Boundary(msgspec.Struct, Generic[P], frozen=True):
    """Two neighbouring tested points whose verdicts differ, the untestable ones stepped over between them."""

    last: P | None  # None: the later verdict holds from the first testable point on
    first: P | None  # None: the later verdict never came in the range
    skipped: tuple[P, ...] = ()
    resolved: bool = True  # False: the skip budget ran out; `skipped` holds untested points too


class Row(msgspec.Struct, omit_defaults=True):
    """One tested point as the table and results show it."""

    point: str  # a version or a commit sha
    role: Role
    verdict: Verdict
    runs: int
    miss_bound: float | None = None  # a clean point's (None: not clean, or older results)
    detail: str = ""
    commit: CommitInfo | None = None
    jaxlib: str | None = None  # the jaxlib release a commit ran with
    # Chosen seeds: the bound for hash-order dependence other than set order (every distinct seed; written by
    # releases before 0.6 from the random extras alone).
    # None when every cell ran random seeds, whose bound already is `miss_bound`.
    miss_bound_other: float | None = msgspec.field(default=None, name="miss_bound_other_mechanisms")


class CommitSearch(msgspec.Struct, omit_defaults=True):
    """A search among the commits between two releases (`kind`: where the regression appears, or is fixed)."""

    kind: Role  # APPEARS: first bad commit; FIXED: first good commit
    releases: tuple[str, str]  # the release boundary searched inside
    count: int = msgspec.field(default=0, name="commits_in_range")  # endpoints included
    rows: list[Row] = msgspec.field(default_factory=list, name="steps")
    boundary: Boundary[str] | None = None
    problem: str | None = None
    culprit: CommitInfo | None = None  # the boundary's first commit
    before: CommitInfo | None = msgspec.field(default=None, name="before_culprit")  # and its last


class BisectSection(msgspec.Struct, omit_defaults=True):
    """A bisection's answer: where among the releases the regression appears and is fixed, the releases tested,
    and the commit searches inside those boundaries."""

    appears: Boundary[str] | None = None  # None: not reproduced in the range
    fixed: Boundary[str] | None = None  # None: never reproduced; .first None: not fixed in range
    problem: str | None = None  # an endpoint that says the opposite of what it was given as
    release_rows: list[Row] = msgspec.field(default_factory=list, name="steps")
    commits: list[CommitSearch] = []

    @property
    def runs(self) -> int:
        return sum(r.runs for r in self.release_rows) + sum(r.runs for c in self.commits for r in c.rows)


def upgrade_bisection(section: Any) -> Any:
    """A `bisect` section written before schema_version 3 in version 3's shape (pure): the counts it wrote for
    readers dropped (the steps say them), each commit search's boundary from its culprit where it was written
    before boundaries were."""
    if not isinstance(section, dict):
        return section
    out = {k: v for k, v in section.items() if k not in ("releases_tested", "runs_total")}
    if isinstance(out.get("commits"), list):
        out["commits"] = [_search(c) for c in out["commits"]]
    return out


def _search(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    out = {k: v for k, v in data.items() if k not in ("commits_tested", "skipped")}
    ends = {k: data[k].get("sha") for k in ("culprit", "before_culprit") if isinstance(data.get(k), dict)}
    if out.get("boundary") is None and (ends or data.get("skipped")):  # written before `boundary` was
        out["boundary"] = {"last": ends.get("before_culprit"), "first": ends.get("culprit"),
                           "skipped": data.get("skipped") or []}
    return out
