"""Run 2 beside run 1 (issue 51, item 7): a suite's check in three steps of two processes, not four.

A cell's run 1 runs alone in the cell's folder (its entries are the baseline). Where it is safe, run 2 starts at
the same time, in an empty folder of its own bound at the cell folder's path (harness/environments/same_path.py;
a container sees any host folder at one path), and its keys are compared with the entries run 1 left
(harness/evidence/beside_keys.py): a hit by key, not a served one. The runs after it (3..) run in the cell's folder
and measure real hits, so a clean verdict rests on measured hits too.

Run 2's seed is the plan's, as planned before any run (random, for a suite: its names are unknown before run 1),
not one chosen from what run 1 lowered; the seeds of runs 3.. are chosen from runs 1 and 2 as before. The
set-order bound stays honest: a seed the probe never predicted counts for no pair order it did not lower
(harness/measure/set_orders.py, OrderObserver.covers), only for the orders its module showed.

Where run 2's comparison cannot stand (run 1 ran again: its script set its own folder after its first
compilation; run 1 failed: run 2 may be the first run that counts, and its entries must be in the cell's folder),
run 2 runs again in the cell's folder after run 1, as it would have without the pairing.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.files import remove_path
from harness.core.runs import RunRecord
from harness.evidence.beside_keys import compared_by_key, why_not_compared

BESIDE_INDEX = 2  # the run that runs beside run 1
# Planned runs a cell needs before its run 2 runs beside run 1: at least one run after it in the cell's folder,
# so that its clean verdict rests on measured hits, not on run 2's comparison by key alone.
MIN_RUNS_TO_PAIR = 3
OWN_FOLDER_SUFFIX = f".run-{BESIDE_INDEX:02d}"
ATTEMPT_SUFFIX = ".beside.log"  # an attempt that did not count (run 2 ran again), kept for reading


def pairing_problem(*, builtin: bool, module: str | None, processes: int, varied: bool, at_once: int,
                    folder_known: bool, runs: int, give_up: bool, own_folder_problem: Callable[[], str]) -> str:
    """Why a cell's run 2 does not run beside its run 1 (its runs then go as before), or "" when it does (pure).
    Only a test suite or module (`--pytest`, `-m MODULE`), whose every run is its whole session; one process per
    run; no --vary (its factors are judged against runs made the usual way); two runs at once; a folder that its
    run 1 decides (harness reduce's candidates get theirs as the original's runs did); a run after run 2;
    nobody waiting to give up on the runs (harness reduce); and a folder of its own at the cell folder's path
    (`own_folder_problem`, asked last: a probe, made only for a cell that could pair)."""
    if builtin or module is None:
        return "only a test suite or a module (-m) pairs its first runs"
    if processes > 1:
        return "a multi-process cell's runs are jobs"
    if varied:
        return "--vary: its factors are judged against runs in the cell's folder"
    if at_once < 2:
        return "one run at a time"
    if folder_known:
        return "the folder's way is given (harness reduce)"
    if runs < MIN_RUNS_TO_PAIR:
        return f"fewer than {MIN_RUNS_TO_PAIR} runs: no run after run 2 would measure a served hit"
    if give_up:
        return "its runs may be given up early (harness reduce)"
    return own_folder_problem()


@dataclass
class BesideFirst:
    """A cell's run 2 beside its run 1: its own folder, whether it was taken, and run 1's record as run 1's
    thread ends (run 2's thread waits for it, then compares; the scheduler then tallies run 1 before run 2)."""

    own: Path  # run 2's own folder, kept beside the cell's
    cell_folder: Path
    taken: bool = False
    first_ran_again: bool = False  # set by run 1's thread before it runs again (OpenCell._first_run)
    _first: Future[RunRecord | None] = field(default_factory=Future)

    @classmethod
    def beside(cls, cache_dir: Path) -> BesideFirst:
        return cls(cache_dir.with_name(cache_dir.name + OWN_FOLDER_SUFFIX), cache_dir)

    def first_run(self, measure: Callable[[], RunRecord]) -> RunRecord:
        """Run 1, measured by `measure`; its record is told to run 2 whatever happens (None: it raised)."""
        record = None
        try:
            record = measure()
            return record
        finally:
            self._first.set_result(record)

    def first_record(self) -> RunRecord | None:
        """Run 1's record, once run 2 compared with it (None before, or when run 1 raised)."""
        return self._first.result() if self._first.done() else None

    def fresh_folder(self) -> Path:
        remove_path(self.own)
        self.own.mkdir(parents=True)
        return self.own

    def compare(self, run: RunRecord, folder_named: str, set_aside: Callable[[], None], wait_s: float) -> RunRecord:
        """Run 2's record once its process has ended: run 1's record waited for (at most `wait_s`), then run 2's
        keys compared with its entries (`compared_by_key` set). Where they cannot be (`why_not_compared`), the
        record as it ran, its files and own folder set aside: the scheduler runs it again in the cell's folder."""
        try:
            first = self._first.result(timeout=wait_s)
        except TimeoutError:
            first = None
        if why_not_compared(first, self.first_ran_again, run) or first is None:
            set_aside()
            remove_path(self.own)
            return run
        compared = compared_by_key(run, first, run.new_entries, folder_named)
        self._add_to_cell_folder(compared.new_entries)
        return compared

    def _add_to_cell_folder(self, names: list[str]) -> None:
        """The entries run 2 would have added to the cell's folder, copied there once it has ended (before run 3
        starts): a later run then finds what it would have found after a run 2 made in that folder (a random
        shape run 2 drew is a hit for run 4, not a miss no sequential check would show). Only plain files."""
        for name in names:
            source = self.own / name
            if source.is_file() and not source.is_symlink() and not (self.cell_folder / name).exists():
                shutil.copy2(source, self.cell_folder / name)
