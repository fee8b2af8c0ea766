"""What a miss costs, in seconds (pure): the runs' JAX logs in, each run's and each cell's cost out.

Every fresh process after a cell's first should load what the first compiled. A key a later run compiled
instead (a new key, or one JAX never writes) is a miss, and its cost is the compile seconds JAX logged for
it in that run; a hit saved what the run that wrote the entry had logged compiling it (JAX's own
`compile_time_saved_sec` is the same figure less the time to read the entry back).

Why JAX's log and not `jax.monitoring` listeners: the log is already read for every run (the key
attribution turns it on through the environment), in every backend, the built-in repro included, with no
code put into the program; and each duration comes with its module and key, which the monitoring events
of older releases do not carry. Its limits: seconds to the hundredth (JAX's `%.2f`), and no duration for a
module JAX refuses to write before timing it (host callbacks): such a miss is counted, not timed
(`untimed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from collections.abc import Sequence

from harness.core.jaxlog import LoggedKey, Outcome
from harness.core.findings import CellCost, RunCost
from harness.core.model import CellResult
from harness.core.runs import RunRecord
from harness.evidence.keys import counted

COMPILED = (Outcome.MISS, Outcome.WRITTEN, Outcome.NOT_WRITTEN)


def _compiled(key: LoggedKey) -> bool:
    return key.outcome in COMPILED


def _writer_seconds(runs: Sequence[RunRecord]) -> dict[str, float]:
    """key -> the compile seconds logged by the first run that compiled it (what a later hit saves)."""
    out: dict[str, float] = {}
    for run in runs:
        for k in run.keys.keys if run.keys is not None else ():
            if _compiled(k) and k.compile_time_s is not None:
                out.setdefault(k.key, k.compile_time_s)
    return out


def run_cost(run: RunRecord, writer_s: dict[str, float]) -> RunCost | None:
    """One run's misses and hits in seconds; None when its log named no key."""
    if run.keys is None:
        return None
    compiled = [k for k in run.keys.keys if _compiled(k)]
    hits = [k for k in run.keys.keys if k.outcome == Outcome.HIT]
    return RunCost(run=run.index, modules=len({k.module for k in run.keys.keys}), misses=len(compiled),
                   miss_s=_round(sum(k.compile_time_s or 0.0 for k in compiled)),
                   untimed_misses=sum(k.compile_time_s is None for k in compiled), hits=len(hits),
                   saved_s=_round(sum(writer_s.get(k.key, 0.0) for k in hits)),
                   missed_modules=tuple(sorted({k.module for k in compiled})))


def _round(value: float) -> float:
    return round(float(value), 3)


def cell_cost(runs: Sequence[RunRecord]) -> CellCost | None:
    """The cost of a cell's misses per fresh process after the first, and what its hits saved; None when
    no successful run's log named a key (nothing to say in seconds)."""
    good = sorted(counted(runs), key=lambda r: r.index)
    writer_s = _writer_seconds(good)
    costs = [c for c in (run_cost(r, writer_s) for r in good) if c is not None]
    if not costs or costs[0].run != good[0].index:
        return None  # the first run's log is the baseline: without it, later misses cannot be told
    first, later = costs[0], costs[1:]
    missed = sorted({m for c in later for m in c.missed_modules})
    each = sorted(m for m in missed if all(m in c.missed_modules for c in later))
    by_module = {(r.index, k.module): k for r in good if r.keys is not None for k in r.keys.keys if _compiled(k)}
    untimed = sorted({m for c in later for m in c.missed_modules
                      if by_module.get((c.run, m)) is not None and by_module[(c.run, m)].compile_time_s is None})
    modules = len({k.module for r in good[1:] if r.keys is not None for k in r.keys.keys})
    starts = len(later)
    return CellCost(starts=starts,
                    lost_per_start_s=_round(sum(c.miss_s for c in later) / starts) if starts else 0.0,
                    saved_per_start_s=_round(sum(c.saved_s for c in later) / starts) if starts else 0.0,
                    modules=modules, missed_modules=tuple(missed), each_start_missed=tuple(each),
                    untimed_modules=tuple(untimed), first_run_s=first.miss_s, runs=tuple(costs))


def cost_of(cell: CellResult) -> CellCost | None:
    """The cell's recorded cost, or the one its runs' logs give; None for a folder written before the
    harness kept compile seconds (its keys have none: nothing to say in seconds)."""
    if cell.cost is not None:
        return cell.cost
    timed = any(k.compile_time_s is not None for r in cell.runs if r.keys is not None for k in r.keys.keys)
    return cell_cost(cell.runs) if timed else None


def _names(modules: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(modules[:limit])
    return shown + (f" and {len(modules) - limit} more" if len(modules) > limit else "")


def seconds(value: float) -> str:
    """Seconds as the table shows them: two decimals under 10 s (JAX logs hundredths), whole above."""
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


def cost_phrase(cost: CellCost | None, processes: int = 1) -> str:
    """The table's and the report's words: `each fresh process recompiles jit_f: 0.80 s lost per start
    (1 of 4 modules missed)`, or on a clean cell `a hit saves 0.06 s per start (4 modules loaded)`;
    empty when there is nothing in seconds to say. A multi-process cell's start is a job, and a run's misses
    are any of its processes': `each job recompiles jit_f in at least one of its 2 processes`."""
    if cost is None or cost.starts == 0:
        return ""
    if cost.missed_modules:
        where = f" in at least one of its {processes} processes" if processes > 1 else ""
        if cost.each_start_missed:
            start = "each job" if processes > 1 else "each fresh process"
            who = f"{start} recompiles {_names(cost.each_start_missed)}{where}"
        else:
            missing = sum(bool(r.missed_modules) for r in cost.runs[1:])
            starts = "jobs" if processes > 1 else "fresh processes"
            who = f"{missing} of {cost.starts} {starts} recompile {_names(cost.missed_modules)}{where}"
        missed = f"{len(cost.missed_modules)} of {cost.modules} module" + ("" if cost.modules == 1 else "s") + \
            " missed"
        timed = [m for m in cost.missed_modules if m not in cost.untimed_modules]
        if not timed:  # JAX times a compile only when it considers writing it
            return f"{who} ({missed}; JAX logs no compile time for a module it never writes)"
        # JAX logs hundredths: a compile it logged as 0.00 s still cost something, under 0.01 s.
        amount = seconds(cost.lost_per_start_s) if cost.lost_per_start_s > 0 else "under 0.01 s"
        lost = f"{amount} lost per start" + ("" if cost.each_start_missed else " on average")
        if cost.untimed_modules:
            lost += f", plus {_names(cost.untimed_modules)} untimed (never written, so JAX logs no compile time)"
        return f"{who}: {lost} ({missed})"
    if cost.saved_per_start_s > 0:
        return f"a hit saves {seconds(cost.saved_per_start_s)} per start ({cost.modules} module" + \
            ("" if cost.modules == 1 else "s") + " loaded)"
    return ""


@dataclass(frozen=True)
class ModuleStats:
    """One module's persistent-cache statistics over a cell's runs (the report's `sccache --show-stats`)."""

    module: str
    requests: int  # keys computed, over all runs
    hits: int
    misses: int  # compiled (the first run's included: a cold cache)
    later_misses: int  # compiled by a later run: what a warm cache should have saved
    not_written: int
    reason: str  # JAX's words for the last refusal
    compile_s: float
    saved_s: float
    refused_runs: int = 0  # the processes (runs) in which JAX refused to write it: `not_written` counts compiles


def module_stats(runs: Sequence[RunRecord]) -> list[ModuleStats]:
    """Per module, over a cell's successful runs whose logs named keys."""
    good = sorted((r for r in counted(runs) if r.keys is not None), key=lambda r: r.index)
    writer_s = _writer_seconds(good)
    rows: dict[str, dict[str, Any]] = {}
    for number, run in enumerate(good):
        for k in run.keys.keys if run.keys is not None else []:
            row = rows.setdefault(k.module, {"requests": 0, "hits": 0, "misses": 0, "later_misses": 0,
                                             "not_written": 0, "reason": "", "compile_s": 0.0, "saved_s": 0.0})
            row["requests"] += 1
            if k.outcome == Outcome.HIT:
                row["hits"] += 1
                row["saved_s"] += writer_s.get(k.key, 0.0)
                continue
            row["misses"] += 1
            row["later_misses"] += number > 0
            row["compile_s"] += k.compile_time_s or 0.0
            if k.outcome == Outcome.NOT_WRITTEN:
                row["not_written"] += 1
                row["reason"] = k.reason
                row.setdefault("refused_in", set()).add(run.index)
    return [ModuleStats(m, r["requests"], r["hits"], r["misses"], r["later_misses"], r["not_written"], r["reason"],
                        _round(r["compile_s"]), _round(r["saved_s"]), len(r.get("refused_in", ())))
            for m, r in sorted(rows.items())]
