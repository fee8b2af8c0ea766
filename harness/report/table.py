"""The version-by-version table (tabulate), rendered from cells."""

from __future__ import annotations

from typing import Any

from packaging.version import Version
from tabulate import tabulate

from harness.core import markdown
from harness.core.records import plain
from harness.verdicts.boundaries import Boundaries, release_boundaries
from harness.evidence.keys import cell_comparison, comparison_of, longest_compiles
from harness.verdicts.phrases import unserved_module
from harness.evidence.program_packages import PACKAGES_HEADER, ProgramPackages, line_with_packages
from harness.verdicts.verdict import rank_runs, suite_size
from harness.evidence.not_cached import cell_not_cached, not_cached_modules, not_cached_phrase
from harness.evidence.misses import SuiteFindings, suite_findings
from harness.core.confidence import (miss_probability_random, runs_for_strong, runs_for_target,
                                     runs_to_target,
                                     target_bound_phrase, unseen_orders_phrase, weak_bound_phrase)
from harness.evidence.cost import cost_of, cost_phrase, seconds
from harness.core.model import CellResult
from harness.core.kinds import Verdict
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.summary import SUMMARY_FORMAT, Summary, SummaryCell, SummarySeconds
from harness.verdicts.factor_verdicts import MOVED_FOLDER, by_factors_only, moved_folder_column, moved_folder_line, vary_column

HEADERS = ["jax", "mesh", "platform", "verdict", "runs ok", "keys", "miss bound", "detail"]
VARY_HEADER = "vary"  # --vary: the factors that missed


def _keys_column(cell: CellResult) -> str:
    """`jit_f: 1 + 3 new`: the first run's keys of the module that moved (the most new keys) and the new ones
    later runs brought; `jit_f: 2 per run` when none moved: the user's own function, the largest program by
    JAX's compile times (not a helper with many keys: Comparison.main_module). A job's are process 0's, or
    the module its processes disagree on."""
    if cell.rank_split is not None:
        return f"{cell.rank_split.module}: processes differ"
    if cell.spec.is_multiprocess:
        runs = rank_runs(cell.runs, 0)
        comparison = comparison_of(runs)
    else:
        runs, comparison = cell.runs, cell_comparison(cell)
    module = comparison.moved_module()
    if module is not None:
        return f"{module}: {len(comparison.baseline.get(module, []))} + {len(comparison.new_keys(module))} new"
    compile_s = longest_compiles([r for r in runs if r.ok])
    module = unserved_module(comparison, compile_s)
    if module is not None:  # the same keys, compiled again by a later run instead of loaded
        return f"{module}: {len(comparison.baseline.get(module, []))} per run, compiled again"
    if suite_size([r for r in runs if r.ok]) and comparison.baseline:  # a suite: all of it, not one helper
        keys = sum(len(k) for k in comparison.baseline.values())
        return f"{keys} of {len(comparison.baseline)} function{'s' if len(comparison.baseline) != 1 else ''} per run"
    module = comparison.main_module(compile_s)
    return f"{module}: {len(comparison.baseline[module])} per run" if module is not None else "-"


def _bound_column(cell: CellResult) -> str:
    """For a clean cell: the chance a real regression was missed (see harness.core.confidence)."""
    return cell.miss_bounds.label() if cell.miss_bounds else "-"


def in_version_order(cells: list[CellResult]) -> list[CellResult]:
    """By version, then mesh: a bisection measures cells out of order."""
    return sorted(cells, key=lambda c: (Version(c.spec.jax_version), c.spec.mesh.label if c.spec.mesh else ""))


def cell_label(cell: CellResult) -> str:
    """The first column: the release, or `jax@<sha> (<date>)` for a commit's cell."""
    commit = cell.commit
    return f"{commit.label} ({commit.info.date[:10]})" if commit else cell.spec.jax_version


def varied(cells: list[CellResult]) -> bool:
    """Whether the table gets the --vary column (only then: tables without it stay as they were)."""
    return any(c.variation is not None for c in cells)


def moved(cells: list[CellResult]) -> bool:
    """Whether the table gets the moved-folder column: a check's cells (tables without it stay as they were)."""
    return any(c.moved_folder is not None for c in cells)


def detail(cell: CellResult) -> str:
    """The cell's detail (what its own thresholds would not write, then its reason), then what its misses
    cost (or its hits saved) per fresh process."""
    # a `not cached` cell's reason says its cost (with what JAX logs no time for): not again, less complete
    cost = "" if cell.verdict == Verdict.NOT_CACHED else (
        factor_cost_phrase(cell) or cost_phrase(cost_of(cell), cell.spec.processes))
    return "; ".join(part for part in (cell.detail, cost, weak_bound(cell),
                                       unseen_orders_phrase(cell.miss_bounds, cell.seeds)) if part)


def factor_cost_phrase(cell: CellResult) -> str:
    """A cell reproduced only under --vary (its own fresh processes all hit): what a start under the factor
    loses, `under --vary cache-path a start misses 3 of 3 modules: up to 6.64 s lost per start (what its fresh
    processes' hits saved)`, never `a hit saves 6.64 s` beside `reproduced` (issue 47.5); "" otherwise."""
    cost = cost_of(cell)
    if not by_factors_only(cell) or cell.variation is None or cost is None or cost.missed_modules:
        return ""
    missed = cell.variation.missed()
    if not missed:
        return ""  # the control run missed: the reason says so
    names = ", ".join(str(f.factor) for f in missed)
    counted = [f for f in missed if f.modules_total]
    modules = (f" misses {max(len(f.modules) for f in counted)} of {counted[0].modules_total} "
               f"module{'' if counted[0].modules_total == 1 else 's'}") if counted else " misses"
    lost = (f": up to {seconds(cost.saved_per_start_s)} lost per start (what its fresh processes' hits saved)"
            if cost.saved_per_start_s > 0 else "")
    return f"under --vary {names} a start{modules}{lost}"


def weak_bound(cell: CellResult) -> str:
    """A clean cell's weak miss bound said, with the runs that would make it strong; one above the 1e-3 target
    (a test suite's default runs), with the runs that reach it ("" otherwise)."""
    return weak_bound_phrase(cell.miss_bounds, cell.seeds) or target_bound_phrase(cell.miss_bounds, cell.seeds)


def weak_bounds_sentence(cells: list[CellResult]) -> str:
    """For the summary: which clean cells are weak, and how many runs would make them strong."""
    weak = [(c, c.miss_bounds, c.seeds) for c in in_version_order(cells)
            if weak_bound_phrase(c.miss_bounds, c.seeds) and c.miss_bounds is not None and c.seeds is not None]
    if weak:
        worst = max(bounds.set_order for _, bounds, _ in weak)
        releases = ", ".join(dict.fromkeys(cell_label(c) for c, _, _ in weak))
        runs = max(runs_for_strong(seeds) for _, _, seeds in weak)
        return (f"clean on {releases} is weak (a regression would read clean with chance up to {worst:.2g}): "
                f"measure with --runs {runs}")
    above = [(c, c.miss_bounds, c.seeds) for c in in_version_order(cells)
             if target_bound_phrase(c.miss_bounds, c.seeds) and c.miss_bounds is not None and c.seeds is not None]
    if not above:
        return ""
    worst = max(bounds.worst for _, bounds, _ in above)
    releases = ", ".join(dict.fromkeys(cell_label(c) for c, _, _ in above))
    runs = max(runs_to_target(bounds, seeds) for _, bounds, seeds in above)
    return (f"clean on {releases}: a regression would read clean with chance up to {worst:.2g} "
            f"(--runs {runs} would make it at most {miss_probability_random(runs_for_target()):.2g})")


def rows(cells: list[CellResult]) -> list[list[Any]]:
    out = []
    with_vary, with_moved = varied(cells), moved(cells)
    packages = ProgramPackages.of(cells)  # the column only where the program's packages differ between cells
    with_packages = bool(packages.varying())
    for c in in_version_order(cells):
        ok = sum(r.ok for r in c.runs)
        row = [cell_label(c), c.spec.mesh_label, c.devices_label, str(c.verdict), f"{ok}/{len(c.runs)}",
               _keys_column(c), _bound_column(c), detail(c)]
        if with_vary:
            row.insert(-1, vary_column(c.variation))
        if with_moved:
            row.insert(-1, moved_folder_column(c.moved_folder))
        if with_packages:
            row.insert(-1, packages.column(c))
        out.append(row)
    return out


def render(cells: list[CellResult], fmt: str = "github") -> str:
    """The table for a terminal: each cell on one line (a name or a reason with a newline would split a row)."""
    if not cells:
        return "(no cells measured)"
    return tabulate([[markdown.one_line(v) for v in row] for row in rows(cells)], headers=_headers(cells),
                    tablefmt=fmt)


def render_markdown_table(cells: list[CellResult]) -> str:
    """The table for report.md and table.md: every cell's text escaped for Markdown (a module name or a
    reason from a program or a results file cannot add columns, rows or HTML)."""
    if not cells:
        return "(no cells measured)"
    return tabulate([[markdown.cell(markdown.text(v)) for v in row] for row in rows(cells)], headers=_headers(cells),
                    tablefmt="github")


def _headers(cells: list[CellResult]) -> list[str]:
    extra = ([VARY_HEADER] * varied(cells) + [MOVED_FOLDER] * moved(cells)
             + [PACKAGES_HEADER] * bool(ProgramPackages.of(cells).varying()))
    return [*HEADERS[:-1], *extra, HEADERS[-1]]


def summary_line(cells: list[CellResult], boundary_line: str | None = None) -> str:
    """The summary line: the boundaries' (`boundary_line`, as the results header knows them: harness/report/
    reproduce.py's summary_of; without it, of the cells alone, the releases between them on the index not
    known), then what weak miss bounds leave open."""
    line = boundary_line if boundary_line is not None else boundaries_of(cells)
    return "; ".join(part for part in (line, weak_bounds_sentence(cells), not_cached_sentence(cells),
                                       new_input_sentence(cells)) if part)


def boundaries_of(cells: list[CellResult]) -> str:
    """The boundaries' line of the cells alone: their environments say what the program asked for."""
    found = release_boundaries(cells)
    return line_with_packages(lambda also: found.line(also=also), ProgramPackages.of(cells))


def not_cached_sentence(cells: list[CellResult]) -> str:
    """`not cached on 0.10.2: jit_while uses a host callback (zoom_linesearch.py:132 jax.debug.print), ...`: cells
    where no key moved but JAX never wrote some module, so every fresh process compiles it again."""
    found = [c for c in in_version_order(cells) if c.verdict == Verdict.NOT_CACHED]
    if not found:
        return ""
    first = found[0]
    modules = not_cached_modules(first.runs, first.callback_sites, first.refusal_seconds)
    if modules and first.nothing_cached is None:
        what = not_cached_phrase(modules)
    else:  # the reason is the headline (as the program runs: its threshold), up to what would keep them
        keep = first.reason.find(" would keep ")
        end = first.reason.find(";", keep) if keep >= 0 else -1
        what = first.reason[:end] if end >= 0 else first.reason
    labels = list(dict.fromkeys(cell_label(c) for c in found))
    return f"not cached on {', '.join(labels)} ({'on ' + cell_label(first) + ': ' if len(labels) > 1 else ''}{what})"


def new_input_sentence(cells: list[CellResult]) -> str:
    """`new input on 0.4.31 (...)`: cells where no key moved but a later run compiled new argument types."""
    labels = [cell_label(c) for c in in_version_order(cells) if c.verdict == Verdict.NEW_INPUT]
    if not labels:
        return ""
    return (f"new input on {', '.join(dict.fromkeys(labels))} (a later run compiled a function at argument types "
            "the first run never had: the program's own, not a key that moved)")


def render_markdown(cells: list[CellResult], document: ResultsDocument, summary: str | None = None) -> str:
    """table.md; `summary`: the line as the header knows it (harness/report/reproduce.py's summary_of)."""
    title = markdown.text(document.header.config.name or "sweep")
    line = summary_line(cells, summary if summary is not None else release_boundaries(cells, document.header.releases).line())
    lines = [f"# {title}", "", render_markdown_table(cells), "", f"**{markdown.text(line)}**", ""]
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
    line = line if line is not None else summary_line(cells, boundaries.line())
    summary: dict[str, Any] = plain(Summary(SUMMARY_FORMAT, status, results_file, report_file, line, boundaries.recorded(),
                                      {v: sum(c.verdict == v for c in cells) for v in Verdict},
                                      tuple(_summary_cell(c) for c in in_version_order(cells))))
    return summary


def _summary_cell(cell: CellResult) -> SummaryCell:
    cost = cost_of(cell)
    return SummaryCell(cell_label(cell), cell.spec.jax_version, cell.spec.mesh_label, cell.spec.devices_label,
                       cell.verdict, cell.reason, len(cell.runs), sum(r.ok for r in cell.runs), _keys_column(cell),
                       cell.miss_bounds.label() if cell.miss_bounds else None, detail(cell),
                       SummarySeconds(round(sum(r.duration_s for r in cell.runs), 3),
                                      cost.lost_per_start_s if cost else None,
                                      cost.saved_per_start_s if cost else None,
                                      cost.first_run_s if cost else None),
                       moved_folder_line(cell.moved_folder).removeprefix(f"{MOVED_FOLDER}: ") or None,
                       _per_test(cell))


def _per_test(cell: CellResult) -> SuiteFindings | None:
    found = suite_findings(cell.runs, cell_comparison(cell), cell.seed_control, cell_not_cached(cell))
    return found if found.misses or found.changed or found.tests else None
