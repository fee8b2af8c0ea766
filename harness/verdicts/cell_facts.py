"""What the version table, its summary line and --json's summary say of one cell, derived from its record once:
when the cell enters a results document (harness/results/document.py: as a sweep adds it, as a folder is read), so
that rendering (harness/report/table.py) derives nothing again. Nothing here is stored: results.json keeps the
record alone, and a folder of any release gets its facts as it is read."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from packaging.version import Version

from harness.core.confidence import (runs_for_strong, runs_to_target, target_bound_phrase, unseen_orders_phrase,
                                     weak_bound_phrase)
from harness.core.comparison import Moved
from harness.core.kinds import Verdict
from harness.core.model import CellResult
from harness.core.findings import CellCost
from harness.evidence.cost import cost_of, cost_phrase, seconds
from harness.evidence.keys import cell_comparison, comparison_of, longest_compiles
from harness.evidence.not_cached import not_cached_modules, not_cached_phrase
from harness.verdicts.factor_verdicts import by_factors_only, moved_folder_column, vary_column
from harness.verdicts.phrases import unserved_module
from harness.verdicts.verdict import rank_runs, suite_size


class CellFacts(msgspec.Struct, frozen=True):
    """One cell's table row and summary facts, each derived once from its record."""

    cell: CellResult
    label: str  # the first column: the release, or `jax@<sha> (<date>)` for a commit's cell
    keys: str  # the keys column (`jit_f: 1 + 3 new`)
    detail: str  # the detail column: its reason, what its misses cost, what its miss bound leaves open
    cost: CellCost | None  # what its misses cost (its hits saved) per fresh process, when known
    weak: str  # a clean cell's weak miss bound said ("" when strong or not clean)
    strong_runs: int  # with `weak`: the runs that would make it strong
    above: str  # a clean cell's bound above the 1e-3 target said ("" otherwise)
    target_runs: int  # with `above`: the runs that reach the target
    not_cached: str  # a `not cached` cell's modules JAX never wrote, said ("": its reason says it)
    vary: str  # --vary's column
    moved: str  # the moved-folder column
    # the miss-bound column: a clean cell's miss bounds; a reproduced cell's bound on its cause, where the cause
    # controls said the hash seed (`0.035 (cause: hash seed)`); "-" otherwise
    bound: str = "-"


def cell_facts(cell: CellResult) -> CellFacts:
    """`cell`'s facts (see CellFacts)."""
    bounds, seeds = cell.miss_bounds, cell.seeds
    weak = weak_bound_phrase(bounds, seeds)
    above = target_bound_phrase(bounds, seeds)
    cost = cost_of(cell)
    return CellFacts(cell, cell_label(cell), keys_column(cell), detail(cell), cost, weak,
                     runs_for_strong(seeds) if weak and seeds is not None else 0, above,
                     runs_to_target(bounds, seeds) if above and bounds is not None and seeds is not None else 0,
                     _not_cached(cell), vary_column(cell.variation), moved_folder_column(cell.moved_folder),
                     bounds.label() if bounds else cause_bound_label(cell) or "-")


def cause_bound_label(cell: CellResult) -> str:
    """`0.035 (cause: hash seed)`: the largest bound of the cause controls' hash-seed decisions on the keys that moved
    a reproduced cell (the chance a program's own randomness agreed with every control); "" where none decided so."""
    if cell.verdict != Verdict.REPRODUCED or not cell.controls:
        return ""
    comparison = cell_comparison(cell)
    bounds = [d.bound for d in comparison.decisions if d.moved == Moved.HASH_SEED]
    return f"{max(bounds):.2g} (cause: hash seed)" if bounds else ""


def cells_facts(cells: Iterable[CellResult]) -> list[CellFacts]:
    """Each cell's facts, in the cells' order."""
    return [cell_facts(c) for c in cells]


def version_order(cell: CellResult) -> tuple[Version, str]:
    """The table's order: by version, then mesh (a bisection measures cells out of order)."""
    return Version(cell.spec.jax_version), cell.spec.mesh.label if cell.spec.mesh else ""


def cell_label(cell: CellResult) -> str:
    """The first column: the release, or `jax@<sha> (<date>)` for a commit's cell."""
    commit = cell.commit
    return f"{commit.label} ({commit.info.date[:10]})" if commit else cell.spec.jax_version


def keys_column(cell: CellResult) -> str:
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
        functions = len(comparison.baseline)
        return f"{keys} key{'s' if keys != 1 else ''} of {functions} function{'s' if functions != 1 else ''} per run"
    module = comparison.main_module(compile_s)
    return f"{module}: {len(comparison.baseline[module])} per run" if module is not None else "-"


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


def _not_cached(cell: CellResult) -> str:
    """A `not cached` cell's modules JAX never wrote, said from what its runs recorded ("" for another cell, or
    where its reason is the headline: nothing was cached, or no module was named)."""
    if cell.verdict != Verdict.NOT_CACHED or cell.nothing_cached is not None:
        return ""
    modules = not_cached_modules(cell.runs, cell.callback_sites, cell.refusal_seconds)
    return not_cached_phrase(modules) if modules else ""
