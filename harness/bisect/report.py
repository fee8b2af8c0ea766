"""What a bisection prints and saves as text (pure): tables of tested points, the boundaries, the
culprits, ready to paste into an issue."""

from __future__ import annotations

import re

from packaging.version import Version
from tabulate import tabulate

from harness.bisect.logic import testable
from harness.core.confidence import ASSUMES_RANDOM, TARGET_MISS, bound_label
from harness.core.kinds import Verdict
from harness.results.bisection import CommitSearch, Outcome, Role, Row
from harness.verdicts.boundaries import Boundaries, FailedRelease
from harness.evidence.failure import outside_jax
from harness.evidence.program_packages import NO_PACKAGES, PACKAGES_HEADER, ProgramPackages, line_with_packages


def _num(x: float) -> str:
    return f"{x:.2g}"  # 0, 1, 0.0039, 9.5e-07


def _bound(row: Row) -> str:
    return bound_label(row.miss_bound, row.miss_bound_other)


def release_table(outcome: Outcome, fmt: str = "github", packages: ProgramPackages = NO_PACKAGES) -> str:
    """One row per release tested; a `packages` column where the program's own packages differ between them."""
    varying = packages.varying()
    rows = [[i, r.point, r.role, r.verdict, r.runs, _bound(r),
             *([packages.release_column(r.point)] if varying else []), r.detail[:70]]
            for i, r in enumerate(outcome.release_rows, start=1)]
    return tabulate(rows, headers=["#", "jax", "tested as", "verdict", "runs", "miss bound",
                                   *([PACKAGES_HEADER] if varying else []), "detail"], tablefmt=fmt)


def commit_table(search: CommitSearch, fmt: str = "github") -> str:
    rows = [[i, r.point[:10], r.commit.date[:10] if r.commit else "", (r.commit.subject if r.commit else "")[:50],
             r.jaxlib or "-", r.verdict, r.runs]
            for i, r in enumerate(search.rows, start=1)]
    return tabulate(rows, headers=["#", "commit", "date", "subject", "jaxlib", "verdict", "runs"], tablefmt=fmt)


def release_boundaries(outcome: Outcome) -> Boundaries:
    """The bisection's boundaries as a sweep's are told: the releases it tested, those it stepped around
    between them (`skipped`), and which failed and why, so no boundary is named through a failure."""
    s = outcome
    appears, fixed = s.appears, s.fixed
    tested = outcome.release_rows
    measured = tuple(sorted((r.point for r in tested if testable(r.verdict)), key=Version))
    failed = tuple(FailedRelease(r.point, _what_failed(r.detail), outside_jax(r.detail))
                   for r in sorted(tested, key=lambda r: Version(r.point)) if r.verdict == Verdict.ERROR)
    between = {p for b in (appears, fixed) if b for p in b.skipped}
    return Boundaries(appears.first if appears else None, appears.last if appears else None,
                      fixed.first if fixed else None,
                      last_reproduced_before_fix=fixed.last if fixed and fixed.first else None,
                      releases=tuple(sorted({*measured, *between, *(r.point for r in tested)}, key=Version)),
                      measured=measured, failed=failed)


# A failed cell's reason as verdicts/verdict.py words it, with the stop note judge.py may add after it.
_FAILED_RUNS_RE = re.compile(r"^\d+ of \d+ runs failed \(run \d+: (?P<why>.*)\)$")


def _what_failed(detail: str) -> str:
    """The failed run's own reason (`exit code 1: AttributeError: ...`) out of a row's detail."""
    head = detail.split("; stopped after ", 1)[0]
    found = _FAILED_RUNS_RE.match(head)
    return found.group("why") if found else detail


def boundaries_line(outcome: Outcome, packages: ProgramPackages = NO_PACKAGES) -> str:
    """`packages`: the program's own packages per release, named where they change at a boundary."""
    s = outcome
    if s.problem:  # what failed outside JAX first: it is often why nothing could be tested
        return "; ".join([*release_boundaries(outcome).outside_jax_phrases(), f"cannot bisect: {s.problem}"])
    # The releases stepped around between a boundary's two are in it (`with 0.4.32-0.5.2 failing`).
    found = release_boundaries(outcome)
    return line_with_packages(lambda also: found.line(also=also), packages)


def commit_line(search: CommitSearch) -> str:
    what = "first bad commit" if search.kind == Role.APPEARS else "first fixed commit"
    span = f"{search.releases[0]}..{search.releases[1]}"
    if search.problem:
        return f"{what} ({span}): not found: {search.problem}"
    c, b = search.culprit, search.boundary
    if b is None:
        return f"{what} ({span}): not found"
    if not b.resolved or c is None:
        return (f"{what} ({span}): somewhere among {len(b.skipped) + 1} commits after {(b.last or '?')[:10]} up to "
                f"{(b.first or '?')[:10]}: too many could not be run to split them ({len(search.rows)} tested)")
    text = (f"{what} ({span}): {c.sha} {c.date} \"{c.subject}\" "
            f"({len(search.rows)} of {search.count} commits tested)")
    if search.boundary and search.boundary.skipped:
        text += f"; {len(search.boundary.skipped)} untestable commit(s) just before it could not be split"
    return text


def confidence_line(outcome: Outcome) -> str:
    bounds = [(r.miss_bound, r.miss_bound_other) for r in outcome.release_rows + [r for c in outcome.commits for r in c.rows]
              if r.miss_bound is not None]
    if not bounds:
        return "no clean verdicts"
    worst = max(bound for bound, _ in bounds)
    if all(other is None for _, other in bounds):  # random seeds only: one bound for any mechanism
        return (f"each clean verdict: chance a regression was missed <= {_num(worst)} "
                f"(target {TARGET_MISS:g}), assuming {ASSUMES_RANDOM}")
    # Chosen seeds rule out a set-order key only; say what any other hash-order dependence gets.
    other = max(bound if bound_other is None else bound_other for bound, bound_other in bounds)
    why = ("the chosen seeds show every pair in both orders" if worst == 0 else
           "not every cell's seeds show every pair in both orders; random runs bound the rest")
    runs_note = ("no random runs; --runs N fills each cell up to N runs with random seeds, each halving it"
           if other >= 1 else "from the random runs")
    return (f"each clean verdict: chance a regression was missed <= {_num(worst)} if the key follows the "
            f"order of a set of the mesh's axis names ({why}); for any other hash-order dependence, "
            f"<= {_num(other)} ({runs_note})")


def text(outcome: Outcome, command: str, fmt: str = "github", packages: ProgramPackages = NO_PACKAGES) -> str:
    parts = [release_table(outcome, fmt, packages), "", boundaries_line(outcome, packages)]
    for search in outcome.commits:
        if search.rows:
            parts += ["", commit_table(search, fmt)]
        parts.append(commit_line(search))
    parts += ["", confidence_line(outcome),
              (f"{len(outcome.release_rows)} release(s) and {sum(len(c.rows) for c in outcome.commits)} "
               f"commit(s) tested, {outcome.runs} runs"), "", f"Reproduce with: {command}"]
    return "\n".join(parts)
