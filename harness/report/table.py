"""The version-by-version table (tabulate), rendered from its cells' facts (harness/verdicts/cell_facts.py: derived
once, as a cell enters a results document)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from harness.core import markdown
from harness.core.records import plain
from harness.verdicts.boundaries import Boundaries, release_boundaries
from harness.verdicts.cell_facts import CellFacts, cells_facts, version_order
from harness.evidence.keys import cell_comparison, counted
from harness.evidence.program_packages import PACKAGES_HEADER, ProgramPackages, line_with_packages
from harness.evidence.not_cached import cell_not_cached
from harness.evidence.misses import SuiteFindings, suite_findings
from harness.core.confidence import miss_probability_random, runs_for_target
from harness.core.model import CellResult
from harness.core.kinds import Verdict
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.summary import SUMMARY_FORMAT, Summary, SummaryCell, SummarySeconds
from harness.verdicts.factor_verdicts import MOVED_FOLDER, moved_folder_line

HEADERS = ["jax", "mesh", "platform", "verdict", "runs ok", "keys", "miss bound", "detail"]
MAX_DETAIL = 240  # characters of a cell's detail in report.md's table; table.md and results.json have it whole
VARY_HEADER = "vary"  # --vary: the factors that missed


def in_version_order(cells: list[CellResult]) -> list[CellResult]:
    """By version, then mesh: a bisection measures cells out of order."""
    return sorted(cells, key=version_order)


def _ordered(facts: Sequence[CellFacts]) -> list[CellFacts]:
    return sorted(facts, key=lambda f: version_order(f.cell))


class _Columns:
    """The columns a table of these cells has beyond HEADERS: --vary's, the moved folder's, the program's packages
    (each only where some cell has it: tables without it stay as they were)."""

    def __init__(self, facts: Sequence[CellFacts]):
        self.vary = any(f.cell.variation is not None for f in facts)
        self.moved = any(f.cell.moved_folder is not None for f in facts)
        self.packages = ProgramPackages.of([f.cell for f in facts])
        self.with_packages = bool(self.packages.varying())

    def headers(self) -> list[str]:
        extra = [VARY_HEADER] * self.vary + [MOVED_FOLDER] * self.moved + [PACKAGES_HEADER] * self.with_packages
        return [*HEADERS[:-1], *extra, HEADERS[-1]]

    def row(self, f: CellFacts) -> list[Any]:
        c = f.cell
        row = [f.label, c.spec.mesh_label, c.devices_label, str(c.verdict), runs_ok_label(c),
               f.keys, f.bound, f.detail]
        if self.vary:
            row.insert(-1, f.vary)
        if self.moved:
            row.insert(-1, f.moved)
        if self.with_packages:
            row.insert(-1, self.packages.column(c))
        return row


def runs_ok_label(cell: CellResult) -> str:
    """`runs ok`: the runs the verdict counted (harness/evidence/keys.py `counted`), a pytest run that ran to its end
    with failing tests among them (said: `2/2 (tests failing)`), of the runs made."""
    ok = counted(cell.runs)
    failing = " (tests failing)" if any(not r.ok for r in ok) else ""
    return f"{len(ok)}/{len(cell.runs)}{failing}"


def rows(cells: list[CellResult]) -> list[list[Any]]:
    return _rows(cells_facts(cells))


def _rows(facts: Sequence[CellFacts]) -> list[list[Any]]:
    columns = _Columns(facts)
    return [columns.row(f) for f in _ordered(facts)]


def render(cells: list[CellResult], fmt: str = "github") -> str:
    """The table for a terminal: each cell on one line (a name or a reason with a newline would split a row)."""
    if not cells:
        return "(no cells measured)"
    facts = cells_facts(cells)
    return tabulate([[markdown.one_line(v) for v in row] for row in _rows(facts)], headers=_Columns(facts).headers(),
                    tablefmt=fmt)


def render_markdown_table(facts: Sequence[CellFacts], compact: bool = False) -> str:
    """The table for table.md (padded, as tabulate aligns it) and report.md (`compact`: unpadded, each detail cut
    at MAX_DETAIL characters, its whole text in results.json and `--json`): every cell's text escaped for
    Markdown (a module name or a reason from a program or a results file cannot add columns, rows or HTML)."""
    if not facts:
        return "(no cells measured)"
    columns = _Columns(facts)
    rows = [columns.row(f) for f in _ordered(facts)]
    if not compact:
        return tabulate([[markdown.cell(markdown.text(v)) for v in row] for row in rows], headers=columns.headers(),
                        tablefmt="github")
    return markdown.pipe_table([[markdown.cell(markdown.text(v)) for v in [*row[:-1], _cut(str(row[-1]))]]
                                for row in rows], columns.headers())


def _cut(detail: str) -> str:
    """A detail of at most MAX_DETAIL characters, cut at a word, saying where the rest is."""
    if len(detail) <= MAX_DETAIL:
        return detail
    return detail[:MAX_DETAIL].rsplit(" ", 1)[0].rstrip(",;:") + " … (the rest: results.json, harness check --json)"


def summary_line(cells: list[CellResult], boundary_line: str | None = None) -> str:
    """The summary line: the boundaries' (`boundary_line`, as the results header knows them: harness/report/
    reproduce.py's summary_of; without it, of the cells alone, the releases between them on the index not
    known), then what weak miss bounds leave open."""
    return facts_line(cells_facts(cells), boundary_line if boundary_line is not None else boundaries_of(cells))


def facts_line(facts: Sequence[CellFacts], boundary_line: str) -> str:
    """summary_line of the cells' facts, after the boundaries' `boundary_line`."""
    ordered = _ordered(facts)
    return "; ".join(part for part in (boundary_line, weak_bounds_sentence(ordered), not_cached_sentence(ordered),
                                       new_input_sentence(ordered)) if part)


def boundaries_of(cells: list[CellResult]) -> str:
    """The boundaries' line of the cells alone: their environments say what the program asked for."""
    found = release_boundaries(cells)
    return line_with_packages(lambda also: found.line(also=also), ProgramPackages.of(cells))


def _labels(facts: Sequence[CellFacts]) -> str:
    return ", ".join(dict.fromkeys(f.label for f in facts))


def weak_bounds_sentence(facts: Sequence[CellFacts]) -> str:
    """For the summary: which clean cells are weak, and how many runs would make them strong (`facts` in version
    order)."""
    weak = [f for f in facts if f.weak and f.cell.miss_bounds is not None]
    if weak:
        worst = max(f.cell.miss_bounds.set_order for f in weak if f.cell.miss_bounds is not None)
        return (f"clean on {_labels(weak)} is weak (a regression would read clean with chance up to {worst:.2g}): "
                f"measure with --runs {max(f.strong_runs for f in weak)}")
    above = [f for f in facts if f.above and f.cell.miss_bounds is not None]
    if not above:
        return ""
    worst = max(f.cell.miss_bounds.worst for f in above if f.cell.miss_bounds is not None)
    return (f"clean on {_labels(above)}: a regression would read clean with chance up to {worst:.2g} "
            f"(--runs {max(f.target_runs for f in above)} would make it at most "
            f"{miss_probability_random(runs_for_target()):.2g})")


def not_cached_sentence(facts: Sequence[CellFacts]) -> str:
    """`not cached on 0.10.2: jit_while uses a host callback (zoom_linesearch.py:132 jax.debug.print), ...`: cells
    where no key moved but JAX never wrote some module, so every fresh process compiles it again (`facts` in
    version order)."""
    found = [f for f in facts if f.cell.verdict == Verdict.NOT_CACHED]
    if not found:
        return ""
    first = found[0]
    what = first.not_cached
    if not what:  # the reason is the headline (as the program runs: its threshold), up to what would keep them
        reason = first.cell.reason
        keep = reason.find(" would keep ")
        end = reason.find(";", keep) if keep >= 0 else -1
        what = reason[:end] if end >= 0 else reason
    labels = list(dict.fromkeys(f.label for f in found))
    return f"not cached on {', '.join(labels)} ({'on ' + first.label + ': ' if len(labels) > 1 else ''}{what})"


def new_input_sentence(facts: Sequence[CellFacts]) -> str:
    """`new input on 0.4.31 (...)`: cells where no key moved but a later run compiled what the first never did (new
    argument types, or other values baked in)."""
    found = [f for f in facts if f.cell.verdict == Verdict.NEW_INPUT]
    if not found:
        return ""
    return (f"new input on {_labels(found)} (a later run compiled something the first run never had: other argument "
            "types, or values the program draws anew each start; the program's own, not a key that moved)")


def render_markdown(document: ResultsDocument, summary: str) -> str:
    """table.md; `summary`: the boundaries' line as the header knows it (harness/report/reproduce.py's summary_of)."""
    assert len(document.facts) == len(document.cells) and all(f.cell is c for f, c in zip(document.facts, document.cells)), \
        "a cell entered the results document without its add()"
    title = markdown.text(document.header.config.name or "sweep")
    line = facts_line(document.facts, summary)
    lines = [f"# {title}", "", render_markdown_table(document.facts), "", f"**{markdown.text(line)}**", ""]
    if document.status_text != SweepStatus.COMPLETE:
        lines.append(f"_status: {markdown.text(document.status_text)}_\n")
    return "\n".join(lines)


# ---- the summary as one JSON object (--json: docs/results.md) --------------------------------------------

def summary_json(cells: list[CellResult], status: SweepStatus, results_file: str, report_file: str,
                 boundaries: Boundaries | None = None, line: str | None = None) -> dict[str, Any]:
    """What a sweep's table and summary line say, as data (harness/results/summary.py's `Summary`): each cell's
    verdict, reason, runs and seconds, the count of each verdict, the releases' boundaries, where the results are.
    `boundaries` and `line`: the sweep's, as it printed them (without them, of the cells alone)."""
    boundaries = boundaries or release_boundaries(cells)
    facts = cells_facts(cells)
    line = line if line is not None else facts_line(facts, boundaries.line())
    summary: dict[str, Any] = plain(Summary(SUMMARY_FORMAT, status, results_file, report_file, line, boundaries.recorded(),
                                      {v: sum(c.verdict == v for c in cells) for v in Verdict},
                                      tuple(_summary_cell(f) for f in _ordered(facts))))
    return summary


def _summary_cell(facts: CellFacts) -> SummaryCell:
    cell, cost = facts.cell, facts.cost
    return SummaryCell(facts.label, cell.spec.jax_version, cell.spec.mesh_label, cell.spec.devices_label,
                       cell.verdict, cell.reason, len(cell.runs), len(counted(cell.runs)), facts.keys,
                       cell.miss_bounds.label() if cell.miss_bounds else None, facts.detail,
                       SummarySeconds(round(sum(r.duration_s for r in cell.runs), 3),
                                      cost.lost_per_start_s if cost else None,
                                      cost.saved_per_start_s if cost else None,
                                      cost.first_run_s if cost else None),
                       moved_folder_line(cell.moved_folder).removeprefix(f"{MOVED_FOLDER}: ") or None,
                       _per_test(cell))


def _per_test(cell: CellResult) -> SuiteFindings | None:
    found = suite_findings(cell.runs, cell_comparison(cell), cell_not_cached(cell))
    return found if found.misses or found.changed or found.tests else None
