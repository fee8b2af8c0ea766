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


def cache_statistics(cells: list[CellResult]) -> list[str]:
    """The section's lines; empty when no cell's runs logged a key (nothing JAX said to count)."""
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
        lines += [f"- {_where(cell)}: {md.code(s.module)} in {s.not_written} run(s): \"{md.text(s.reason)}\""
                  for cell, s in refused[:MAX_MODULES]]
        if len(refused) > MAX_MODULES:
            lines.append(f"- ... and {len(refused) - MAX_MODULES} more (evidence/listings.md)")
    for cell, stats in measured:
        shown = sorted(stats, key=lambda s: (-s.later_misses, -s.not_written, -s.compile_s, s.module))[:MAX_MODULES]
        more = (f"and {len(stats) - len(shown)} more modules, every one in `evidence/listings.md`"
                if len(stats) > len(shown) else "")
        lines += ["", f"<details><summary>{_where(cell)}: per module</summary>", "", _module_table(shown, compact=True), "",
                  *([more, ""] if more else []), "</details>"]
    return lines


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
