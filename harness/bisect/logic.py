"""The search (pure): an ordered list of points (releases or commits), a `test(point) -> Verdict`,
and the two boundaries: where the regression appears and where it is fixed.

`reproduced` is bad, `clean` is good; anything else (`error`, `unsupported`) means the point could
not be tested and is stepped around, never counted good or bad. Each point is tested at most once:
the memo is the record, so a flaky point cannot flip an answer already used, and replaying recorded
verdicts (a resumed bisection) takes exactly the same path to exactly the same answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from collections.abc import Callable, Hashable, Iterable, Sequence

from harness.core.kinds import Verdict
from harness.results.bisect_results import Boundary, Role, testable

P = TypeVar("P", bound=Hashable)

GOOD, BAD = Verdict.CLEAN, Verdict.REPRODUCED


@dataclass(frozen=True)
class Step(Generic[P]):
    point: P
    verdict: Verdict
    role: Role


@dataclass
class BoundariesFound(Generic[P]):
    appears: Boundary[P] | None = None  # None: not reproduced in the range
    fixed: Boundary[P] | None = None  # None: never reproduced; .first None: not fixed in range
    steps: list[Step[P]] = field(default_factory=list)
    problem: str | None = None  # an endpoint that says the opposite of what it was given as


class Tester(Generic[P]):
    """Wraps `test` with the memo and the step log."""

    def __init__(self, points: Sequence[P], test: Callable[[P], Verdict]):
        self.points, self._test = list(points), test
        self.known: dict[int, Verdict] = {}
        self.steps: list[Step[P]] = []

    def __call__(self, index: int, role: Role) -> Verdict:
        if index not in self.known:
            verdict = self._test(self.points[index])
            self.known[index] = verdict
            self.steps.append(Step(self.points[index], verdict, role))
        return self.known[index]

    def first_testable(self, indices: Iterable[int], role: Role, limit: int | None = None) -> tuple[int, Verdict] | None:
        """The first of `indices` that can be tested, trying at most `limit` of them."""
        for i in list(indices)[:limit]:
            v = self(i, role)
            if testable(v):
                return i, v
        return None


SKIP_BUDGET = 16


def narrow(tester: Tester[P], lo: int, hi: int, role: Role, skip_budget: int = SKIP_BUDGET) -> Boundary[P]:
    """Binary search between `lo` (one verdict) and `hi` (the other) for the adjacent testable pair.

    An untestable middle is replaced by the nearest untested point (the lower one on a tie), as
    `git bisect skip` does; the boundary then lists the untestable points it could not split. After
    `skip_budget` untestable points the search stops with what it has (`resolved` False): a long
    untestable stretch would otherwise be walked point by point.
    """
    before = tester.known[lo]
    skips = 0
    while skips <= skip_budget:
        open_ = [i for i in range(lo + 1, hi) if i not in tester.known]
        if not open_:
            break
        mid = (lo + hi) // 2
        pick = min(open_, key=lambda i: (abs(i - mid), i))
        verdict = tester(pick, role)
        if not testable(verdict):
            skips += 1
        elif verdict == before:
            lo = pick
        else:
            hi = pick
    skipped = tuple(tester.points[i] for i in range(lo + 1, hi))
    resolved = all(i in tester.known for i in range(lo + 1, hi))
    return Boundary(tester.points[lo], tester.points[hi], skipped, resolved)


def search(points: Sequence[P], test: Callable[[P], Verdict], good: P | None = None,
           bad: P | None = None) -> BoundariesFound[P]:
    """Both boundaries over `points` (oldest first).

    Endpoints are confirmed first: `good` (default: the first testable point) must be clean and `bad`
    (default: the last testable point) must reproduce; an untestable endpoint is replaced by its
    nearest testable neighbour inwards. When no bad point is named and both ends are clean, points are
    tried coarse to fine (midpoints of the widest gaps) until one reproduces. Then each boundary is
    narrowed by binary search, reusing every verdict already known.
    """
    points = list(points)
    tester: Tester[P] = Tester(points, test)
    result: BoundariesFound[P] = BoundariesFound(steps=tester.steps)
    n = len(points)
    if n == 0:
        result.problem = "no points to test"
        return result
    g = points.index(good) if good is not None else 0
    b = points.index(bad) if bad is not None else n - 1
    if b < g:
        result.problem = f"the bad point {points[b]} comes before the good point {points[g]}"
        return result

    start = tester.first_testable(range(g, b + 1), Role.ENDPOINT)
    if start is None:
        result.problem = "no point in the range could be tested"
        return result
    g, first_verdict = start
    if first_verdict == BAD and good is not None:
        result.problem = f"{points[g]} reproduces, so it cannot be the good endpoint (try an earlier one)"
        return result

    last = n - 1 if bad is None else b
    end = tester.first_testable(range(last, g, -1), Role.ENDPOINT)
    if bad is not None and first_verdict != BAD and (end is None or end[1] != BAD):
        what = "could not be tested" if end is None else "is clean"
        result.problem = f"{points[b]} {what}, so it cannot be the bad endpoint"
        return result
    if bad is not None:  # the far end too, before any narrowing: it decides whether a fix is in range
        tester.first_testable(range(n - 1, b, -1), Role.ENDPOINT)

    if first_verdict == BAD:
        result.appears = Boundary(None, points[g])
    else:
        if not any(v == BAD for v in tester.known.values()) and (end is None or _find_bad(tester, g, end[0]) is None):
            return result  # never reproduced in the range
        # Start from the tightest pair already known: the last clean before the earliest bad.
        first_bad = min(i for i, v in tester.known.items() if v == BAD)
        lo = max(i for i, v in tester.known.items() if v == GOOD and i < first_bad)
        result.appears = narrow(tester, lo, first_bad, Role.APPEARS)
    assert result.appears.first is not None  # a bad point was found above
    result.fixed = _fixed(tester, points.index(result.appears.first))
    return result


def _fixed(tester: Tester[P], appears_at: int) -> Boundary[P]:
    """Fixed-in: the end of the whole range is tested too (a named bad point need not be the last
    bad one); the first clean point after the regression is narrowed against the last bad before it."""
    points = tester.points
    tester.first_testable(range(len(points) - 1, appears_at, -1), Role.ENDPOINT)
    goods_after = [i for i, v in tester.known.items() if v == GOOD and i > appears_at]
    if not goods_after:
        return Boundary(points[_last_bad(tester, appears_at)], None)
    first_good = min(goods_after)
    lo = max(i for i, v in tester.known.items() if v == BAD and appears_at <= i < first_good)
    return narrow(tester, lo, first_good, Role.FIXED)


def _last_bad(tester: Tester[P], start: int) -> int:
    return max(i for i, v in tester.known.items() if v == BAD and i >= start)


def _find_bad(tester: Tester[P], lo: int, hi: int) -> int | None:
    """Both `lo` and `hi` are clean: test midpoints of the widest untested gaps until one reproduces.
    Without a known bad point this is the only honest way; in the worst case it tests everything."""
    while True:
        tested = sorted(i for i in tester.known if lo <= i <= hi)
        gaps = [(b - a, a, b) for a, b in itertools.pairwise(tested) if b - a > 1]
        if not gaps:
            return None
        _, a, b = max(gaps, key=lambda gap: (gap[0], -gap[1]))
        mid = (a + b) // 2
        if tester(mid, Role.FIND_BAD) == BAD:
            return mid


@dataclass
class Narrowed(Generic[P]):
    boundary: Boundary[P] | None
    steps: list[Step[P]]
    problem: str | None = None


def between(points: Sequence[P], test: Callable[[P], Verdict], before: Verdict, after: Verdict,
            role: Role, endpoint_tries: int = 3) -> Narrowed[P]:
    """One boundary between two points known (e.g. from releases) to say `before` and `after`.

    The endpoints are confirmed first, since a commit runs with a different jaxlib than its release
    did; an untestable endpoint is replaced by its nearest testable neighbour inwards, trying at most
    `endpoint_tries` on each side: if a release's own commit cannot run, the setup is wrong (no jaxlib
    fits, a broken clone) and walking through hundreds of commits would only confirm it.
    """
    tester: Tester[P] = Tester(points, test)
    out: Narrowed[P] = Narrowed(None, tester.steps)
    n = len(points)
    first = tester.first_testable(range(n), Role.ENDPOINT, endpoint_tries)
    last = tester.first_testable(range(n - 1, first[0], -1), Role.ENDPOINT, endpoint_tries) if first else None
    if first is None or last is None:
        failed = next((s for s in tester.steps if not testable(s.verdict)), None)
        out.problem = ("the range's endpoints could not be tested"
                       + (f" ({failed.point} is {failed.verdict})" if failed else ""))
    elif first[1] != before:
        out.problem = f"{points[first[0]]} is {first[1]} here, expected {before}"
    elif last[1] != after:
        out.problem = f"{points[last[0]]} is {last[1]} here, expected {after}"
    else:
        out.boundary = narrow(tester, first[0], last[0], role)
    return out
