"""`run_cells`: the runs of many open cells (harness/measure/open_cell.py) in one set of slots, a sweep's, results in
cell order, Ctrl-C handled."""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from collections.abc import Callable, Iterable, Iterator

from harness.core.model import CellResult
from harness.core.signals import stop_runs
from harness.core.findings import FactorResult
from harness.core.runs import RunRecord
from harness.measure.cell_settings import OnRun, QueuedRun
from harness.measure.open_cell import OpenCell

# What `run_cells` is given for each cell, in order, when a slot is free for it: the cell to measure,
# or its result already (an environment that could not be made).
CellOpener = Callable[[], "OpenCell | CellResult"]


def run_cells(openers: Iterable[CellOpener], at_once: int, on_result: Callable[[CellResult], None],
              on_run: OnRun | None = None) -> None:
    """Measure cells with `at_once` runs at once in all: a cell's first run alone (in its own folder), then
    its later runs, and when the open cells cannot use a free slot (a cell's first run, or a cell that
    stopped), the next cell starts. Each cell keeps its own folders, seeds and tally, so what it
    measures does not depend on its neighbours; results reach `on_result` in cell order.

    A failure opening a cell (a bug of the harness) lets the cells already open finish, then goes on up.
    Ctrl-C: every open cell comes back `interrupted` with the runs that finished (in order, after the
    cells before it), then KeyboardInterrupt goes on up."""
    schedule = _Schedule(iter(openers), max(1, at_once), on_result, on_run)
    try:
        schedule.drive()
    except KeyboardInterrupt:
        schedule.interrupted()
        raise
    finally:
        schedule.pool.shutdown(wait=True, cancel_futures=True)


class _Schedule:
    """run_cells's state: the cells opened (by cell number: still open, or its result), the runs going, the
    results told so far."""

    def __init__(self, pending: Iterator[CellOpener], slots: int, on_result: Callable[[CellResult], None],
                 on_run: OnRun | None) -> None:
        self.pending, self.slots, self.on_result, self.on_run = pending, slots, on_result, on_run
        self.opened: list[OpenCell | CellResult] = []  # by cell number: still open, or its result
        self.emitted = 0
        self.running: dict[Future[RunRecord | FactorResult], tuple[OpenCell, QueuedRun]] = {}
        self.exhausted = False
        self.pool = ThreadPoolExecutor(slots, thread_name_prefix="run")

    def emit_ready(self) -> None:
        while self.emitted < len(self.opened):
            ready = self.opened[self.emitted]
            if not isinstance(ready, CellResult):
                return
            self.on_result(ready)
            self.emitted += 1

    def busy(self) -> int:  # slots taken; a job wider than the runs at once runs alone
        return sum(min(cell.slots, self.slots) for cell, _ in self.running.values())

    def fits(self, cell: OpenCell) -> bool:
        return self.busy() + min(cell.slots, self.slots) <= self.slots

    def open_cells(self) -> list[OpenCell]:
        return [c for c in self.opened if isinstance(c, OpenCell)]

    def drive(self) -> None:
        """Start runs and take finished ones until every cell is done (or, once `exhausted`, every open one)."""
        while True:
            self.start_runs()
            for number, done_cell in enumerate(self.opened):
                if isinstance(done_cell, OpenCell) and done_cell.finished():
                    self.opened[number] = done_cell.result()
            self.emit_ready()
            if not self.running:
                if self.exhausted:
                    return
                continue
            self.take_finished()

    def start_runs(self) -> None:
        """Runs started while slots are free: the open cells' first, else the next cell opened."""
        while self.busy() < self.slots:
            startable = [c for c in self.open_cells() if c.startable()]
            cell = next((c for c in startable if self.fits(c)), None)
            if cell is None and startable:
                break  # a job waits for slots to free up
            if cell is None:
                opener = None if self.exhausted else next(self.pending, None)
                if opener is None:
                    self.exhausted = True
                    break
                try:
                    self.opened.append(opener())
                except Exception:  # a bug of the harness: finish the cells already open, then raise it
                    self.exhausted = True
                    self.drive()
                    raise
                continue
            queued = cell.take()
            cell.running += 1
            self.running[self.pool.submit(cell.measure, queued)] = (cell, queued)

    def take_finished(self) -> None:
        """The runs that finished first, each to its cell (a harness failure is raised here)."""
        finished, _ = wait(self.running, return_when=FIRST_COMPLETED)
        for future in finished:
            ran, queued = self.running.pop(future)
            record = future.result()  # a harness failure is raised here
            ran.running -= 1
            planned = ran.done(queued, record)
            if planned is not None and self.on_run:
                self.on_run(ran.spec, planned, ran.tally.planned)

    def interrupted(self) -> None:
        """Ctrl-C: the runs cut short measured nothing (not kept); every open cell comes back `interrupted`."""
        stop_runs()  # no run starts after (a retry of one the interruption killed, a queued one)
        for cell in {id(c): c for c in self.open_cells()}.values():
            cell.runner.environment.interrupt()
        self.pool.shutdown(wait=True, cancel_futures=True)  # the runs cut short measured nothing: not kept
        for number, cut_short in enumerate(self.opened):
            if isinstance(cut_short, OpenCell):
                self.opened[number] = cut_short.result(interrupted=True)
        self.emit_ready()
