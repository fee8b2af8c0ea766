"""--vary for one cell (`VaryPhase`: one run per factor after the cell's own runs, then a control run) and harness
check's moved-folder run made early, beside run 2 (`EarlyMoved`); what each run says is judged in
harness/verdicts/factor_verdicts.py. Their cell (`FactorCell`) is harness/measure/open_cell.py's OpenCell."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.core.records import replace
from harness.environments import factor_runs as varying
from harness.core.files import remove_path
from harness.core.factors import Factor, RunVariation
from harness.core.listing import entries, list_dir
from harness.core.model import CellSpec
from harness.core.findings import CellVariation, FactorResult
from harness.core.kinds import FolderMode, Verdict
from harness.core.runs import Program, RunRecord
from harness.verdicts.judge import Tally
from harness.verdicts.factor_verdicts import (as_planned_run, cannot_vary, counts_as_planned_run, judge_factor,
                                              needs_control, not_judged, reference_of, why_not_varied, with_control,
                                              with_planned_control)
from harness.measure.cell_settings import CellSettings, QueuedRun

class FactorCell(Protocol):
    """What a factor's run uses of the cell it belongs to (harness/measure/open_cell.py's OpenCell)."""

    runner: CellSettings
    spec: CellSpec
    cache_dir: Path
    log_dir: Path
    results_root: Path | None
    tally: Tally
    folder: FolderMode | None

    def measure_run(self, queued: QueuedRun, folder: FolderMode, cache_dir: Path | None = None,
                    name: str | None = None, program: Program | None = None,
                    variation: RunVariation | None = None, first_use: bool = False,
                    given_folder: Path | None = None) -> RunRecord: ...

    def planned_run_ended(self, record: RunRecord, log: Path | None = None) -> None: ...


@dataclass
class VaryPhase:
    """--vary for one cell: after its own runs, one run per factor with the reference run's hash seed,
    one at a time (each sees the cache folder as the cell's runs left it), then a control run when a
    factor missed. What each run says is judged in harness/verdicts/factor_verdicts.py. The default check's moved
    folder is the cache-path factor's run made the same way, kept apart (`moved_folder`) so that it never
    changes the verdict."""

    cell: FactorCell
    reference: RunRecord | None
    variation: CellVariation
    verdict: Verdict  # of the cell's own runs
    todo: list[Factor] = field(default_factory=list)
    runs_made: int = 0
    control_taken: bool = False
    moved_only: bool = False  # the cache-path run is the moved folder's, not an explicit --vary's
    moved_folder: FactorResult | None = None

    @classmethod
    def begin(cls, cell: FactorCell, moved_early: FactorResult | None = None) -> VaryPhase:
        """`moved_early`: the moved folder's run made beside run 2 (EarlyMoved), kept where factors are run at
        all (dropped where none is: an error cell says no moved folder, as it would without that run)."""
        reference = reference_of(cell.tally.records)
        verdict = cell.tally.cell(cell.spec, [], {}).verdict
        variation = CellVariation(reference.index if reference else 0, reference.seed if reference else 0)
        runner = cell.runner
        moved_only = runner.moved_folder and Factor.CACHE_PATH not in runner.vary
        why = why_not_varied(reference, verdict)
        moved = None
        if cell.spec.is_multiprocess:
            if runner.moved_folder and not why:  # said, not guessed: such a job is never moved
                moved = cannot_vary(Factor.CACHE_PATH, "a multi-process cell's runs are jobs; only single-process "
                                                       "cells are moved")
            why = "a multi-process cell's runs are jobs; --vary varies single-process cells only"
        if why:
            variation.note = f"no factor was run: {why}"
            return cls(cell, reference, variation, verdict, moved_only=moved_only, moved_folder=moved)
        if moved_early is not None:
            if runner.on_factor:  # told with the cell's runs, as it would be had it run after them
                runner.on_factor(cell.spec, moved_early)
            return cls(cell, reference, variation, verdict, list(runner.vary), runs_made=1, moved_only=moved_only,
                       moved_folder=moved_early)
        todo = [*runner.vary, *([Factor.CACHE_PATH] if moved_only else [])]
        return cls(cell, reference, variation, verdict, todo, moved_only=moved_only)

    def has_next(self) -> bool:
        return bool(self.todo) or (self.reference is not None and not self.control_taken
                                   and needs_control(self.variation, self.moved_folder if self.moved_only else None,
                                                     self.verdict))

    def _reference_run(self) -> RunRecord:
        """The run the factors' runs are judged against: there is one whenever a factor or the control is run
        (`begin` plans no factor, and `has_next` no control, without it)."""
        assert self.reference is not None, "a factor's run without a reference run"
        return self.reference

    def take(self) -> QueuedRun:
        self.runs_made += 1
        index = self.cell.tally.planned + self.runs_made  # after every run the cell could have made
        seed = self._reference_run().seed
        if self.todo:
            return QueuedRun(index, seed, factor=self.todo.pop(0))
        self.control_taken = True
        return QueuedRun(index, seed, control=True)

    def done(self, queued: QueuedRun, result: RunRecord | FactorResult) -> None:
        """Take the control run's record, or a factor's result."""
        if isinstance(result, RunRecord):  # the control run (a factor's run comes back judged)
            with_control(self.variation, self._reference_run(), result,
                         self.moved_folder if self.moved_only else None)
            return
        if queued.factor == Factor.CACHE_PATH and self.cell.runner.moved_folder:
            self.moved_folder = result  # an explicit --vary cache-path's too: one run, said in both places
        if queued.factor == Factor.CACHE_PATH and self.moved_only:
            if self.cell.runner.on_factor:
                self.cell.runner.on_factor(self.cell.spec, result)
            return
        self.variation.factors.append(result)
        if self.cell.runner.on_factor:
            self.cell.runner.on_factor(self.cell.spec, result)

    @staticmethod
    def log_name(queued: QueuedRun) -> str:
        if queued.in_planned_place:
            return f"{MOVED_LOG}-run-{queued.index:02d}-seed-{queued.seed}"
        return f"vary-{queued.factor}-seed-{queued.seed}" if queued.factor else f"control-seed-{queued.seed}"

    def _run(self, queued: QueuedRun, prepared: varying.FactorRun | None) -> RunRecord:
        cell = self.cell
        name = self.log_name(queued)
        return cell.measure_run(queued, cell.folder or FolderMode.ENVIRONMENT,
                                prepared.cache_dir if prepared else None, name=name,
                                program=prepared.program if prepared else None,
                                variation=prepared.variation if prepared else None)

    def measure(self, queued: QueuedRun) -> RunRecord | FactorResult:
        """The control run's record, or a factor's result (its run judged against the reference)."""
        if queued.control:
            return self._run(queued, None)
        return self.measure_prepared(queued, self.prepare(queued))

    def prepare(self, queued: QueuedRun) -> varying.FactorRun | FactorResult:
        """A factor's run made ready (its folders, its program), or its result already where it cannot be."""
        factor = queued.factor
        assert factor is not None
        cell, runner = self.cell, self.cell.runner
        environment = runner.environment
        why = environment.cannot_vary(factor)
        if why:
            return cannot_vary(factor, why)
        program = runner.program(cell.spec)
        work = cell.log_dir / f"vary-{factor}"
        try:
            prepared = varying.prepare(factor, program, cell.cache_dir, work, {**os.environ, **dict(runner.env)},
                                       tuple(p for p in (cell.results_root,) if p is not None))
            if factor == Factor.USER:
                for path in (prepared.program.script, prepared.program.workdir):
                    problem = path is not None and varying.unreachable_by_others(path)
                    if problem:
                        raise varying.CannotVary(problem)
                # Its IR dump's folder made now, so that it too is open to the other user.
                (cell.log_dir / f"{self.log_name(queued)}.ir").mkdir(parents=True, exist_ok=True)
                varying.open_to_all(cell.cache_dir, cell.log_dir)
            elif factor == Factor.PREFIX:
                copy = environment.prefix_copy()
                prepared = replace(prepared, change=f"the environment's packages copied to {copy.parent.parent}")
            elif factor == Factor.COMPRESSION:
                folder, change = environment.compression_folder(work)
                prepared = replace(prepared, variation=replace(prepared.variation, pythonpath_first=str(folder)),
                                   change=change)
        except varying.CannotVary as exc:
            return cannot_vary(factor, str(exc))
        except OSError as exc:  # its folders could not be made (a full disk, a file name too long): one factor lost
            return not_judged(factor, f"its folders could not be made ({exc}): the factor could not be measured")
        return prepared

    def measure_prepared(self, queued: QueuedRun, prepared: varying.FactorRun | FactorResult) -> FactorResult:
        """A prepared factor's run, judged against the reference."""
        if isinstance(prepared, FactorResult):
            return prepared
        factor = queued.factor
        assert factor is not None and self.reference is not None
        cell = self.cell
        record = self._run(queued, prepared)
        on_disk = frozenset(e.key for e in entries(list_dir(prepared.cache_dir)))
        if prepared.cache_dir == cell.cache_dir:  # the next factor sees the folder as the cell's runs left it
            for name in record.new_entries:
                entry = cell.cache_dir / name
                remove_path(entry)
        return judge_factor(factor, self._reference_run(), record, prepared.change, on_disk)


MOVED_LOG = "moved-folder"  # the log of a moved run in a planned run's place: moved-folder-run-03-seed-N.log


@dataclass
class EarlyMoved:
    """harness check's moved folder run as soon as run 1 has ended (OpenCell._moved_run_due): its folder is
    copied when it is taken, holding run 1's entries alone; the cell's VaryPhase takes its result once the cell's
    runs have ended.

    Where a planned run after run 2 is left (OpenCell._moved_takes_planned_run), it has that run's index and seed
    (issue 51 item 7): where every key it computed hit (factor_verdicts.counts_as_planned_run) it is that run,
    counted by the cell's tally like any later run; otherwise that run is made `again` in the cell's own folder with
    the same seed once run 2 has ended, the tally counting that one, and its outcome says whether the moved run's
    miss was the path's (with_planned_control); a cell that stopped at its first miss makes it not
    (OpenCell._moved_planned_run_due). Elsewhere it has run 1's seed and is judged against run 1 alone, beside
    the plan."""

    cell: FactorCell
    phase: VaryPhase
    queued: QueuedRun
    prepared: varying.FactorRun | FactorResult
    result: FactorResult | None = None
    again: QueuedRun | None = None  # its planned run, to be made in the cell's own folder
    again_taken: QueuedRun | None = None

    @classmethod
    def take(cls, cell: FactorCell, planned: QueuedRun | None = None) -> EarlyMoved:
        reference = reference_of(cell.tally.records)
        assert reference is not None
        phase = VaryPhase(cell, reference, CellVariation(reference.index, reference.seed), Verdict.CLEAN,
                          [Factor.CACHE_PATH], moved_only=True)
        if planned is None:
            queued = phase.take()
            return cls(cell, phase, queued, phase.prepare(queued))
        phase.todo.clear()
        phase.runs_made = 1
        prepared = phase.prepare(planned)
        if isinstance(prepared, varying.FactorRun):
            # run 1's entries alone, as the moved run beside the plan has: run 2 was started just before this copy
            for name in list_dir(prepared.cache_dir) - set(reference.new_entries):
                remove_path(prepared.cache_dir / name)
            prepared = replace(prepared, change=f"{prepared.change} (run {reference.index}'s entries), with run "
                                                f"{planned.index}'s seed {planned.seed}")
        return cls(cell, phase, planned, prepared)

    def measure(self) -> FactorResult:
        return self.phase.measure_prepared(self.queued, self.prepared)

    def ended(self, result: FactorResult) -> RunRecord | None:
        """Its result; its record where it counts as its planned run (told as progress)."""
        self.result = result
        if not self.queued.in_planned_place:
            return None
        if counts_as_planned_run(result):
            self.result = as_planned_run(result)
            assert result.run is not None
            self.cell.planned_run_ended(result.run, self.cell.log_dir / f"{VaryPhase.log_name(self.queued)}.log")
            return result.run
        self.again = QueuedRun(self.queued.index, self.queued.seed)
        return None

    def control_ended(self, record: RunRecord) -> None:
        """Its planned run, made in the cell's own folder with its seed, ended: what the moved run showed."""
        assert self.result is not None
        self.result = with_planned_control(self.result, self.phase._reference_run(), record)
