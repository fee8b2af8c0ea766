"""The search against scripted verdicts: no processes, no JAX."""

from __future__ import annotations

import json

import pytest

from harness.core.records import convert, plain
from harness.results import bisect_results
from harness.results.document import read_document
from harness.bisect.logic import Boundary, Role, between, search
from harness.core.model import CommitInfo
from harness.core.kinds import Verdict

C, R, E, U = Verdict.CLEAN, Verdict.REPRODUCED, Verdict.ERROR, Verdict.UNSUPPORTED


def scripted(verdicts: dict[str, Verdict]):
    calls: list[str] = []

    def test(point: str) -> Verdict:
        calls.append(point)
        return verdicts[point]
    return test, calls


def points(n: int) -> list[str]:
    return [f"v{i}" for i in range(n)]


def test_seed_case_finds_both_boundaries_and_steps_around_unsupported():
    # 0.4.25 unsupported, 0.4.26 clean, 0.4.27-28 reproduce, 0.4.29-31 clean
    versions = ["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31"]
    truth = dict(zip(versions, [U, C, R, R, C, C, C]))
    test, calls = scripted(truth)
    result = search(versions, test)
    assert result.problem is None
    assert result.appears == Boundary("0.4.26", "0.4.27")
    assert result.fixed == Boundary("0.4.28", "0.4.29")
    assert len(calls) == len(set(calls)), "a point is tested at most once"
    assert calls[:3] == ["0.4.25", "0.4.26", "0.4.31"], "endpoints are confirmed first"
    assert [s.role for s in result.steps[:3]] == [Role.ENDPOINT] * 3


@pytest.mark.parametrize("appear,fix", [(1, 2), (1, 30), (5, 17), (29, 30), (2, 31), (15, 16)])
def test_many_shapes_of_regression_window(appear, fix):
    pts = points(32)
    truth = {p: (R if appear <= i < fix else C) for i, p in enumerate(pts)}
    test, calls = scripted(truth)
    result = search(pts, test, bad=pts[appear])
    assert result.appears == Boundary(pts[appear - 1], pts[appear])
    if fix < 32:
        assert result.fixed == Boundary(pts[fix - 1], pts[fix])
    else:
        assert result.fixed == Boundary(pts[31], None)
    # binary search: about 2 log2(32) tests plus the three endpoints, far fewer than 32
    assert len(calls) <= 2 * 5 + 3 + 1


def test_untestable_points_are_stepped_around_and_listed_never_judged():
    pts = points(10)
    truth = dict(zip(pts, [C, C, C, E, E, R, R, R, C, C]))
    test, calls = scripted(truth)
    result = search(pts, test, good="v0", bad="v7")
    # v3, v4 cannot be tested; v2 is clean and v5 reproduces: both errors lie between
    assert result.appears == Boundary("v2", "v5", ("v3", "v4"))
    assert result.fixed == Boundary("v7", "v8")


def test_untestable_only_boundary_cannot_be_split():
    pts = points(5)
    truth = dict(zip(pts, [C, U, U, R, R]))
    result = search(pts, scripted(truth)[0])
    assert result.appears == Boundary("v0", "v3", ("v1", "v2"))
    assert result.fixed == Boundary("v4", None)


def test_regression_from_the_first_testable_point():
    pts = points(6)
    truth = dict(zip(pts, [E, R, R, R, C, C]))
    result = search(pts, scripted(truth)[0])
    assert result.appears == Boundary(None, "v1")
    assert result.fixed == Boundary("v3", "v4")


def test_never_reproduced_tests_everything_when_no_bad_point_is_known():
    pts = points(7)
    test, calls = scripted({p: C for p in pts})
    result = search(pts, test)
    assert result.appears is None and result.fixed is None and result.problem is None
    assert sorted(calls) == pts


def test_both_ends_clean_finds_a_bad_point_coarse_to_fine():
    pts = points(17)
    truth = {p: (R if 11 <= i < 13 else C) for i, p in enumerate(pts)}
    test, calls = scripted(truth)
    result = search(pts, test)
    assert result.appears == Boundary("v10", "v11")
    assert result.fixed == Boundary("v12", "v13")
    assert len(calls) < len(pts)


def test_endpoints_that_contradict_are_a_problem_not_an_answer():
    pts = points(5)
    truth = dict(zip(pts, [R, R, R, C, C]))
    result = search(pts, scripted(truth)[0], good="v1")
    assert result.problem and "v1 reproduces" in result.problem
    result = search(pts, scripted(truth)[0], good="v0", bad="v4")
    assert result.problem is not None  # v0 reproduces
    truth = dict(zip(pts, [C, C, C, C, C]))
    result = search(pts, scripted(truth)[0], bad="v3")
    assert result.problem and "v3 is clean" in result.problem


def test_flaky_point_is_tested_once_and_the_answer_is_consistent_with_what_was_seen():
    # v4 is bad but reads clean on its first test (a missed regression), bad afterwards.
    pts = points(9)
    truth = dict(zip(pts, [C, C, C, R, R, R, R, C, C]))
    seen: dict[str, int] = {}

    def flaky(point: str) -> Verdict:
        seen[point] = seen.get(point, 0) + 1
        if point == "v4" and seen[point] == 1:
            return C
        return truth[point]

    result = search(pts, flaky, bad="v5")
    assert all(count == 1 for count in seen.values())
    # What it saw: v4 clean, v5 bad -> it reports the boundary it measured, adjacent and consistent.
    verdicts = {s.point: s.verdict for s in result.steps}
    last, first = result.appears.last, result.appears.first
    assert verdicts[last] == C and verdicts[first] == R
    assert pts.index(first) - pts.index(last) == 1
    # Replaying the recorded verdicts takes the same path to the same answer (a resumed bisection).
    replay = search(pts, lambda p: verdicts[p], bad="v5")
    assert [s.point for s in replay.steps] == [s.point for s in result.steps]
    assert (replay.appears, replay.fixed) == (result.appears, result.fixed)


def test_between_confirms_endpoints_and_narrows_one_boundary():
    pts = points(40)
    truth = {p: (C if i < 23 else R) for i, p in enumerate(pts)}
    truth["v22"] = E  # an unimportable commit right at the boundary
    test, calls = scripted(truth)
    out = between(pts, test, C, R, Role.APPEARS)
    assert out.problem is None
    assert out.boundary == Boundary("v21", "v23", ("v22",))
    assert calls[:2] == ["v0", "v39"]
    assert len(calls) <= 9

    fix = {p: (R if i < 7 else C) for i, p in enumerate(pts)}
    out = between(pts, scripted(fix)[0], R, C, Role.FIXED)
    assert out.boundary == Boundary("v6", "v7")

    out = between(pts, scripted({p: C for p in pts})[0], C, R, Role.APPEARS)
    assert out.boundary is None and "expected reproduced" in out.problem


def test_a_long_untestable_stretch_stops_at_the_skip_budget_and_says_so():
    pts = points(200)
    truth = {p: (C if i < 20 else R) for i, p in enumerate(pts)}
    for i in range(15, 190):
        truth[pts[i]] = E
    test, calls = scripted(truth)
    out = between(pts, test, C, R, Role.APPEARS)
    assert out.boundary.resolved is False
    assert len(calls) < 40
    assert pts.index(out.boundary.last) <= 19 and pts.index(out.boundary.first) >= 190


def test_a_bisection_outcome_reads_back_from_its_json_as_written_now_and_before():
    culprit = CommitInfo("0123456789abcdef0123", "2024-04-20T10:00:00Z", "residual names from a set")
    before = CommitInfo("fedcba9876543210fedc", "2024-04-19T10:00:00Z", "an innocent commit")
    rows = [bisect_results.Row("0.4.26", Role.ENDPOINT, Verdict.CLEAN, 8, 0.0, "1 key", miss_bound_other=0.016),
            bisect_results.Row("0.4.27", Role.APPEARS, Verdict.REPRODUCED, 2, None, "a new key in run 2")]
    commit_row = bisect_results.Row(culprit.sha, Role.APPEARS, Verdict.REPRODUCED, 2, None, "new key", culprit, "0.4.26")
    search = bisect_results.CommitSearch(Role.APPEARS, ("0.4.26", "0.4.27"), 300, [commit_row],
                                    Boundary(before.sha, culprit.sha, ("abc",), resolved=False), None, culprit, before)
    outcome = bisect_results.BisectSection(Boundary("0.4.26", "0.4.27"), Boundary("0.4.28", None), None, rows, [search])
    data = json.loads(json.dumps(plain(outcome)))
    again = convert(data, bisect_results.BisectSection)
    assert again == outcome and plain(again) == data
    assert again.commits[0].culprit == culprit and again.commits[0].before == before
    assert [r.point for r in again.release_rows] == ["0.4.26", "0.4.27"]

    # As an earlier release wrote it: no `resolved`, no commit `boundary`, the counts it wrote for readers.
    for b in (data["appears"], data["fixed"]):
        b.pop("resolved")
    data["commits"][0].pop("boundary")
    data["commits"][0].update(skipped=["abc"], commits_tested=1)
    data.update(releases_tested=2, runs_total=12)
    old = read_document({"schema_version": 2, "bisect": data}, "old").sections["bisect"]
    assert old.appears == Boundary("0.4.26", "0.4.27") and old.commits[0].culprit == culprit
    assert old.commits[0].boundary == Boundary(before.sha, culprit.sha, ("abc",))