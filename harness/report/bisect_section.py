"""The bisect section (pure): a bisection's BisectSection (harness/results/bisect_results.py) as Markdown. report.md's
`## Bisection` and what `harness bisect` prints and writes (bisect.md) are this one rendering: the boundaries,
the confidence of the clean verdicts, each commit search and its culprit, and the steps tested."""

from __future__ import annotations

import re

from packaging.version import Version
from tabulate import tabulate

from harness.core import markdown as md
from harness.core.confidence import ASSUMES_CHOSEN, ASSUMES_OTHER, ASSUMES_RANDOM, bound_label
from harness.core.kinds import Verdict
from harness.core.model import CommitInfo
from harness.results.bisect_results import CommitSearch, BisectSection, Row, testable
from harness.verdicts.boundaries import Boundaries, FailedRelease
from harness.evidence.failure import outside_jax
from harness.evidence.program_packages import NO_PACKAGES, PACKAGES_HEADER, ProgramPackages, line_with_packages

SECTION_TITLE = "## Bisection"
JAX_COMMIT_URL = "https://github.com/jax-ml/jax/commit/"
DETAIL_CHARS = 70  # a step's detail in the tables: the start of its reason (the results keep all of it)


def bisect_section(outcome: BisectSection, packages: ProgramPackages = NO_PACKAGES) -> list[str]:
    """The section's lines. `packages`: the program's own packages per release (--with, PEP 723, requirements:),
    named where they change at a boundary and, where they differ between releases, in the release steps."""
    lines = [SECTION_TITLE, "", *_headline(outcome, packages)]
    for b, label in ((outcome.appears, "Appears"), (outcome.fixed, "Fixed")):
        if b is not None and b.first:
            lines.append(f"- {label} in {md.text(b.first)}" + (f" (last before: {md.text(b.last)})" if b.last else "")
                         + (f"; stepped over {md.text(', '.join(map(str, b.skipped)))}" if b.skipped else ""))
    commits = sum(len(c.rows) for c in outcome.commits)
    if outcome.release_rows:
        lines.append(f"- {len(outcome.release_rows)} release(s)" + (f" and {commits} commit(s)" if commits else "")
                     + f" tested, {outcome.runs} runs in all")
    lines += confidence_lines(outcome)
    for search in outcome.commits:
        lines += ["", *_commit_search(search)]
    if outcome.release_rows:
        lines += ["", _release_table(outcome, packages)]
    return lines


REPRODUCE_WITH = "Reproduce with: "  # bisect.md's last line: then the command, a code span


def bisect_text(outcome: BisectSection, command: str, packages: ProgramPackages = NO_PACKAGES) -> str:
    """What `harness bisect` prints and writes (bisect.md): the section, then the command that reproduces it (a
    code span: a program's arguments show as they are, never as Markdown or HTML)."""
    return "\n".join([*bisect_section(outcome, packages), "", f"{REPRODUCE_WITH}{md.code(command)}"])


def release_boundaries(outcome: BisectSection) -> Boundaries:
    """The bisection's boundaries as a sweep's are told: the releases it tested, those it stepped around
    between them (`skipped`), and which failed and why, so no boundary is named through a failure."""
    appears, fixed = outcome.appears, outcome.fixed
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


def boundaries_line(outcome: BisectSection, packages: ProgramPackages = NO_PACKAGES) -> str:
    """Where the regression appears and is fixed, in a sweep's words (`regression appears in ...`), with the
    releases stepped around between a boundary's two in it, and the program's package changes at a boundary."""
    found = release_boundaries(outcome)
    return line_with_packages(lambda also: found.line(also=also), packages)


def _headline(outcome: BisectSection, packages: ProgramPackages) -> list[str]:
    if outcome.problem:  # what failed outside JAX first: it is often why nothing could be tested
        outside = release_boundaries(outcome).outside_jax_phrases()
        return [*([md.text("; ".join(outside)), ""] if outside else []),
                f"_Could not bisect: {md.text(outcome.problem)}._", ""]
    return [md.text(boundaries_line(outcome, packages)), ""]


# A failed cell's reason as verdicts/verdict.py words it, with the stop note judge.py may add after it.
_FAILED_RUNS_RE = re.compile(r"^\d+ of \d+ runs failed \(run \d+: (?P<why>.*)\)$")


def _what_failed(detail: str) -> str:
    """The failed run's own reason (`exit code 1: AttributeError: ...`) out of a row's detail."""
    head = detail.split("; stopped after ", 1)[0]
    found = _FAILED_RUNS_RE.match(head)
    return found.group("why") if found else detail


def confidence_lines(outcome: BisectSection) -> list[str]:
    """The worst miss bounds of the clean points tested. Chosen seeds give `miss_bound` 0 only under their
    stated assumption; `miss_bound_other_mechanisms`, for any other hash-order dependence, counts every distinct
    seed run (1 for a single seed): both are shown, or the 0 overstates."""
    rows = outcome.release_rows + [r for c in outcome.commits for r in c.rows]
    bounds = [(r.miss_bound, r.miss_bound_other) for r in rows if r.miss_bound is not None]
    if not bounds:
        return []
    points = "release or commit" if any(c.rows for c in outcome.commits) else "release"
    worst = max(bound for bound, _ in bounds)
    chosen = any(other is not None for _, other in bounds)  # random seeds only: one bound for any mechanism
    assumes = ASSUMES_CHOSEN if chosen else ASSUMES_RANDOM
    lines = [f"- Each clean {points}: `miss_bound` (chance a regression was missed) ≤ {worst:.2g}, assuming {assumes}"]
    if chosen:
        # A random-seed cell has no separate figure: its own bound holds for every mechanism.
        other = max(bound if bound_other is None else bound_other for bound, bound_other in bounds)
        lines.append(f"- For any other hash-order dependence: `miss_bound_other_mechanisms` ≤ {other:.2g} "
                     f"({ASSUMES_OTHER}" + ("; one seed alone says nothing of it: `--runs N` adds seeds" if other >= 1 else "") + ")")
    return lines


def _release_table(outcome: BisectSection, packages: ProgramPackages) -> str:
    """One row per release tested; a `packages` column where the program's own packages differ between them."""
    varying = packages.varying()
    rows = [[i, *(_cell(v) for v in (r.point, r.role, r.verdict, r.runs, _bound(r),
                                     *([packages.release_column(r.point)] if varying else []),
                                     r.detail[:DETAIL_CHARS]))]
            for i, r in enumerate(outcome.release_rows, start=1)]
    return tabulate(rows, headers=["#", "jax", "tested as", "verdict", "runs", "miss bound",
                                   *([PACKAGES_HEADER] if varying else []), "detail"], tablefmt="github")


def _commit_search(search: CommitSearch) -> list[str]:
    title = (f"**Commits between {md.text(search.releases[0])} and {md.text(search.releases[1])}** "
             f"({md.text(search.kind)}): {len(search.rows)} of {search.count} tested")
    lines = [title, ""]
    if search.problem:
        lines.append(f"_No culprit: {md.text(search.problem)}._")
    boundary = search.boundary
    if boundary is not None and not boundary.resolved:  # its first commit is only where the skipped ones end
        lines.append(f"- Not split: somewhere among {len(boundary.skipped) + 1} commits after "
                     f"{md.code((boundary.last or '?')[:12])} up to {md.code((boundary.first or '?')[:12])}: too many "
                     "could not be run to split them")
    else:
        if search.culprit:
            lines.append(f"- Culprit: {commit_link(search.culprit)}")
        if search.before:
            lines.append(f"- Last commit before it: {commit_link(search.before)}")
    if search.boundary and search.boundary.skipped:
        lines.append(f"- Untestable, stepped over: {md.text(', '.join(s[:12] for s in search.boundary.skipped))}")
    if search.rows:
        rows = [[i, *(_cell(v) for v in (r.point[:10], r.commit.date[:10] if r.commit else "",
                                         (r.commit.subject if r.commit else "")[:50], r.jaxlib or "-", r.verdict,
                                         r.runs))]
                for i, r in enumerate(search.rows, start=1)]
        lines += ["", tabulate(rows, headers=["#", "commit", "date", "subject", "jaxlib", "verdict", "runs"],
                               tablefmt="github")]
    return lines


def commit_link(info: CommitInfo) -> str:
    """A jax commit as a link to it, its subject and date."""
    sha, date = info.sha, md.text(info.date[:10])
    link = f"[{md.code(sha[:12])}]({JAX_COMMIT_URL}{sha})" if re.fullmatch(r"[0-9a-f]{4,40}", sha) else md.code(sha)
    return f"{link} {md.text(info.subject)}" + (f" ({date})" if date else "")


def _bound(row: Row) -> str:
    return bound_label(row.miss_bound, row.miss_bound_other)


def _cell(value: object) -> str:
    return md.cell(md.text(value))
