"""The one place a measured cell is finished (pure): everything its measurement gathered in, the cell out.

A cell's verdict is judged once from its runs (`Tally.cell`, with the cause controls' word on what moved each key
that changed: harness/evidence/controls.py); what the measurement learned beside
the runs then adds to it here, in one order: --vary's factors (a clean cell that misses under one is `reproduced`),
the moved folder (said beside the verdict, never changing it), what a miss costs, a user script's command and
how its runs got the folder, what its cache settings did and why nothing was cached, whether its failures
follow the hash seed, the seed plan with the miss bounds it gives a clean cell, and a reproduced cell's
likely cause. The scheduler (harness/measure/open_cell.py, cell_schedule.py) only gathers; nothing after this changes the
cell. The one thing read here is the cause: the cell's lowered modules are compared by whoever hands in a
`CauseReader` (the report layer, which keeps that evidence for report.md), as the judged cell says which runs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.core.records import replace
from harness.core.confidence import SeedPlan
from harness.core.model import CellResult, CellSpec
from harness.core.findings import CellVariation, FactorResult, SeedCheck
from harness.core.kinds import Cause, FolderMode, ThresholdMode, Verdict
from harness.core.runs import RunCommand, RunRecord
from harness.evidence.cost import cell_cost
from harness.evidence.not_cached import NOT_CACHED_TOLD, not_cached_modules, not_cached_phrase
from harness.verdicts.judge import Tally
from harness.evidence.script_settings import with_script_cache
from harness.verdicts.seed_check import with_seed_check
from harness.verdicts.uncached import explain
from harness.verdicts.factor_verdicts import verdict_with

INTERRUPTED_VARY = "interrupted before every factor was run"

# A judged cell's likely cause, from the diff of its lowered modules (harness/report/evidence.py); None when it
# is not reproduced or its modules show none.
CauseReader = Callable[[CellResult], Cause | None]
# A `not cached` (or `reproduced`) cell's modules JAX never wrote as its runs' files show them
# (harness/report/sources.py): module -> the line that put a host callback there, and module -> seconds per later
# start that JAX logged no compile time for.
UncachedReader = Callable[[CellResult], tuple[dict[str, str], dict[str, float]]]


@dataclass(frozen=True)
class ScriptRun:
    """How a user's script was run: the command its runs were (as the user would type it), and how they got
    the cell's cache folder (None: no run told), and why."""

    command: RunCommand
    folder: FolderMode | None = None
    folder_why: str = ""


@dataclass(frozen=True)
class Measured:
    """Everything one cell's measurement gathered: its runs (the tally, which judges them), the folder's
    listing and the environment's facts, and what was measured beside the runs."""

    spec: CellSpec
    tally: Tally
    listing: list[str]
    environment_facts: dict[str, Any]
    interrupted: bool = False  # by Ctrl-C: the runs that finished, nothing beside them judged
    thresholds: ThresholdMode = ThresholdMode.HARNESS  # the runs' cache thresholds (a script's own, or zeros)
    script: ScriptRun | None = None  # a user's script (None: the built-in repro)
    variation: CellVariation | None = None  # --vary's factors as judged (None: no --vary)
    moved_folder: FactorResult | None = None  # check's run through another path to the folder
    seed_check: SeedCheck | None = None  # the re-runs of a failing and a passing seed
    plan: SeedPlan | None = None  # the cell's seeds (None: its caller planned none)
    controls: tuple[RunRecord, ...] = ()  # the cause controls: each a run's seed again, in a fresh folder with its entries
    read_cause: CauseReader | None = None  # None: the cause is not looked for (no results folder keeps evidence)
    read_uncached: UncachedReader | None = None  # None: no callback's line or untimed cost is looked for


def finish_cell(measured: Measured) -> CellResult:
    """The finished cell: the runs' verdict, then what was measured beside them (see the module)."""
    cell = measured.tally.cell(measured.spec, measured.listing, measured.environment_facts, measured.interrupted,
                               controls=[] if measured.interrupted else list(measured.controls))
    variation = measured.variation
    if variation is not None and measured.interrupted:  # what was judged is kept, said incomplete
        variation = copy.copy(variation)
        variation.note = variation.note or INTERRUPTED_VARY
    elif variation is not None:
        cell.verdict, cell.reason = verdict_with(cell.verdict, cell.reason, variation)
    cell.variation = variation
    cell.moved_folder = measured.moved_folder  # beside the verdict, which it never changes
    if measured.controls and not measured.interrupted:  # beside it too
        cell.seed_control, *cell.more_controls = measured.controls
    cell.cost = cell_cost(cell.runs)
    script = measured.script
    if script is not None:
        cell.command = script.command
        cell = replace(cell, cache_folder=script.folder, cache_folder_why=script.folder_why)
    if measured.read_uncached is not None and cell.verdict in NOT_CACHED_TOLD and not measured.interrupted:
        cell = with_uncached_facts(cell, *measured.read_uncached(cell))
    cell = explain(with_script_cache(cell, measured.thresholds), tell_thresholds=script is not None)
    if measured.seed_check is not None and not measured.interrupted:
        cell = with_seed_check(cell, measured.seed_check)
    if measured.plan is not None:
        cell = with_plan(cell, measured.plan)
    if measured.read_cause is not None:  # last: the evidence reads the cell as finished
        cell.cause = measured.read_cause(cell)
    return cell


def with_uncached_facts(cell: CellResult, sites: dict[str, str], seconds: dict[str, float]) -> CellResult:
    """The `not cached` cell with where its callbacks are and what its untimed refusals cost, said in its reason
    (the judged phrase, which had neither, replaced where it stands)."""
    before = not_cached_phrase(not_cached_modules(cell.runs))
    cell = replace(cell, callback_sites=sites, refusal_seconds=seconds)
    after = not_cached_phrase(not_cached_modules(cell.runs, sites, seconds))
    return replace(cell, reason=cell.reason.replace(before, after, 1))


def with_plan(cell: CellResult, plan: SeedPlan) -> CellResult:
    """The cell with its seeds and miss bounds. The bounds speak only for a clean verdict: a reproduced cell is
    certain, an error or unsupported cell says nothing."""
    cell.seeds = plan
    cell.miss_bounds = plan.bounds if cell.verdict == Verdict.CLEAN else None
    return cell
