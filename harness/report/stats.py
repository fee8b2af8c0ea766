"""The report's cache statistics (pure), as `sccache --show-stats` gives them: per cell its requests, hits,
misses, modules never written and why, and the seconds compiled and saved; per module in a fold."""

from __future__ import annotations

from tabulate import tabulate

from harness.core import markdown as md
from harness.evidence.cost import ModuleStats, cost_of, cost_phrase, module_stats
from harness.core.model import CellResult
from harness.evidence.keys import counted

STATS_TITLE = "## Cache statistics"
MAX_MODULES = 5  # per cell in report.md (those that missed later first); every one in evidence/listings.md


def _where(cell: CellResult) -> str:
    return md.text(f"jax {cell.label}, {cell.spec.mesh_label}, {cell.spec.platform} x{cell.spec.device_count}")


def cache_statistics(cells: list[CellResult], modules: int = MAX_MODULES) -> list[str]:
    """The section's lines; empty when no cell's runs logged a key (nothing JAX said to count). `modules`: those
    named per cell (fewer where report.md would pass its budget: render.py; none, no per-module fold)."""
    measured = [(c, module_stats(c.runs)) for c in cells]
    measured = [(c, stats) for c, stats in measured if stats]
    if not measured:
        return []
    rows = []
    for cell, stats in measured:
        runs = sum(1 for r in counted(cell.runs) if r.keys is not None)
        rows.append([md.cell(md.text(cell.label)), md.cell(md.text(cell.spec.mesh_label)), runs, sum(s.requests for s in stats),
                     sum(s.hits for s in stats), sum(s.misses for s in stats), sum(s.later_misses for s in stats),
                     sum(s.not_written for s in stats), f"{sum(s.compile_s for s in stats):.2f}",
                     f"{sum(s.saved_s for s in stats):.2f}"])
    lines = [STATS_TITLE, "",
             ("From each run's JAX log: every key a run computed is a request, loaded (a hit) or compiled (a miss; "
              "a cell's first run has a cold cache, so its misses are expected, a later run's are not). Seconds "
              "are JAX's own compile times (to the hundredth); a hit saved what the run that wrote it logged."), "",
             md.pipe_table(rows, ["jax", "mesh", "runs", "requests", "hits", "misses", "later misses",
                                  "not written", "compile s", "saved s"]), ""]
    for cell, _ in measured:
        phrase = cost_phrase(cost_of(cell), cell.spec.processes)
        if phrase:
            lines.append(f"- {_where(cell)}: {md.text(phrase)}.")
    refused = [(cell, s) for cell, stats in measured for s in stats if s.not_written]
    if refused:
        lines += ["", "Not written to the cache, and why (JAX's words):", ""]
        lines += [f"- {_where(cell)}: {md.code(s.module)} in {_refusals(s, cell)}: \"{md.text(s.reason)}\""
                  for cell, s in refused[:max(modules, 1)]]
        if len(refused) > max(modules, 1):
            lines.append(f"- ... and {len(refused) - max(modules, 1)} more (evidence/listings.md)")
    for cell, stats in measured if modules else ():
        shown = sorted(stats, key=lambda s: (-s.later_misses, -s.not_written, -s.compile_s, s.module))[:modules]
        more = (f"and {len(stats) - len(shown)} more modules, every one in `evidence/listings.md`"
                if len(stats) > len(shown) else "")
        lines += ["", f"<details><summary>{_where(cell)}: per module</summary>", "", _module_table(shown, compact=True), "",
                  *([more, ""] if more else []), "</details>"]
    return lines


def _refusals(stats: ModuleStats, cell: CellResult) -> str:
    """`4 of 4 runs (104 compiles)`: the processes that refused it, of the cell's runs that logged keys, and where
    a run compiled it more than once (a suite's tests at several shapes), the compiles."""
    runs = sum(1 for r in counted(cell.runs) if r.keys is not None)
    compiles = f" ({stats.not_written} compiles)" if stats.not_written != stats.refused_runs else ""
    return f"{stats.refused_runs} of {runs} run{'s' if runs != 1 else ''}{compiles}"


def module_statistics(cells: list[CellResult]) -> list[str]:
    """Every module of every cell (evidence/listings.md: report.md shows the first MAX_MODULES)."""
    lines = []
    for cell in cells:
        stats = module_stats(cell.runs)
        if stats:
            lines += [f"## {_where(cell)}: per module", "", _module_table(stats), ""]
    return lines


def _module_table(stats: list[ModuleStats], compact: bool = False) -> str:
    """Per module: padded by tabulate for evidence/listings.md, unpadded (`compact`) for report.md."""
    rows = [[md.cell(md.text(s.module)), s.requests, s.hits, s.misses, s.later_misses, s.not_written, f"{s.compile_s:.2f}",
             f"{s.saved_s:.2f}"] for s in stats]
    headers = ["module", "requests", "hits", "misses", "later misses", "not written", "compile s", "saved s"]
    return md.pipe_table(rows, headers) if compact else tabulate(rows, headers=headers, tablefmt="github")
