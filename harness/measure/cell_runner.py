"""Measure one cell: several fresh processes sharing one new cache folder, a listing after each.

Each run gets its own PYTHONHASHSEED (recorded): a fixed seed hides set-order bugs entirely.
The first run always runs alone in the cell's folder: its entries are the cell's baseline, so with `at_once > 1`
any entry that appears after it is a key the first run did not compute (the verdict needs no more).
The second runs alone too among the planned runs in that folder (see SETTLING_RUNS), beside harness check's
moved-folder run (in a copy of the folder, with the next planned run's seed: where every key hits it is that run,
see EarlyMoved); a suite's run 2 runs beside run 1 instead, in an empty folder of its own at the cell folder's
path, compared by key (harness/measure/beside.py), and the moved run then beside run 2. The later runs then
overlap, and a run's `new_entries` are what appeared while it ran, which may include a neighbour's entries.
`run_cells` schedules the runs of many cells in one set of slots (a sweep); `CellRunner.run` is it for one cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.confidence import SeedPlan
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import FolderMode, Verdict
from harness.core.runs import RunRecord
from harness.measure.seeds import Reseed
from harness.measure.cell_settings import CellSettings
from harness.measure.cell_schedule import run_cells
from harness.measure.open_cell import OpenCell


@dataclass
class CellRunner(CellSettings):
    """How a cell's runs are made (CellSettings), and `run`, which measures one cell: its runs
    (`OpenCell.measure_run`, a fresh process each, the listing before and after), one at a time or `at_once`
    together, until the cell's `Tally` says stop; what is decided from the records (the verdict, when to stop) is
    the tally's, and the finished cell `finish_cell`'s, not the scheduler's."""

    def run(self, spec: CellSpec, seeds: Iterable[int | tuple[int, ...]], cache_dir: Path, log_dir: Path,
            results_root: Path | None = None, stop_when_reproduced: bool = False,
            give_up: Callable[[list[RunRecord]], bool] | None = None,
            folder: FolderMode | None = None, reseed: Reseed | None = None,
            plan: SeedPlan | None = None) -> CellResult:
        """Run once per seed (fewer if `stop_when_reproduced` and a later run brings a new key, or
        nothing can change). `folder`: how a user's script gets the cell's folder when that is known
        already (harness reduce: as the original got it); None: its first run tells. `reseed`: the seeds
        after the first, chosen from what it lowered. `plan`: the seed plan the seeds come from, recorded in
        the cell with its miss bounds. After Ctrl-C the cell comes back `interrupted`, with the runs that
        finished: the caller saves it, then stops."""
        results: list[CellResult] = []
        try:
            run_cells([lambda: OpenCell.open(self, spec, seeds, cache_dir, log_dir, results_root,
                                             stop_when_reproduced, give_up, folder, reseed, plan)], self.at_once,
                      results.append,
                      self.on_run)
        except KeyboardInterrupt:
            pass  # the cell came back interrupted
        return results[0]


def error_cell(spec: CellSpec, reason: str, environment_facts: dict[str, Any] | None = None,
               log_tail: str = "") -> CellResult:
    """A cell whose environment could not be made: measured nothing, says `error`."""
    return CellResult(spec=spec, verdict=Verdict.ERROR, keys={}, runs=[], reason=reason,
                      environment_facts=environment_facts or {}, log_tail=log_tail)
