"""Measure one point (a release or a commit): its cells, each stopping at the first later run with a new key.

Recorded points are replayed from the state instead of measured. A point's remaining meshes are
skipped once one reproduces: the point is bad whatever they say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Sequence

from harness.verdicts.boundaries import version_verdicts
from harness.verdicts.finish import CauseReader
from harness.bisect.bisect_state import BisectState, is_release
from harness.inputs.config import Config
from harness.environments.base import Environment
from harness.core.errors import EnvironmentUnavailable
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Verdict
from harness.measure.progress import Progress
from harness.measure.cell_runner import error_cell
from harness.measure.seeds import SeedPlanner
from harness.measure.sweep import measure_cell

OnPoint = Callable[[str, list[CellResult], bool], None]  # (point id, cells, replayed)
OnInterrupted = Callable[[str, CellResult], None]  # (point id, the cell Ctrl-C cut short)


def point_verdict(cells: list[CellResult]) -> Verdict:
    """The rule of `version_verdicts`: reproduced if any cell did, clean only if all are."""
    if not cells:
        return Verdict.ERROR
    return next(iter(version_verdicts(cells).values()))


@dataclass
class PointMeasurer:
    config: Config
    planner: SeedPlanner
    state: BisectState
    work_dir: Path  # logs/ and caches/ go here
    progress: Progress
    on_point: OnPoint
    at_once: int = 1
    on_interrupted: OnInterrupted = lambda point, cell: None  # where a cell cut short is kept
    read_cause: CauseReader | None = None  # a release's reproduced cell's likely cause (the results keep it)

    def measure(self, point: str, specs: list[CellSpec],
                prepare: Callable[[], Environment] | Sequence[Callable[[], Environment]]) -> Verdict:
        """The point's verdict. `prepare` may list alternative environments (for a commit: each jaxlib
        it accepts): the next is tried only when the previous could not run the point (`error`)."""
        recorded = self.state.cells(point)
        if recorded is not None:
            self.on_point(point, recorded, True)
            return point_verdict(recorded)
        alternatives = list(prepare) if isinstance(prepare, Sequence) else [prepare]
        def measure(spec: CellSpec, environment: Environment) -> CellResult:
            # Cut short, the cell is kept in the results (a release's; a commit's cells are in the state
            # only) but the point is never recorded: a resumed bisection measures it again.
            # (a commit's cells are in the state only: no evidence of theirs is written, no cause read)
            return measure_cell(spec, environment, self.config, self.planner, self.work_dir, self.progress,
                                keep=lambda cell: self.on_interrupted(point, cell), at_once=self.at_once,
                                stop_when_reproduced=True, read_cause=self.read_cause if is_release(point) else None)

        cells = measure_alternatives(specs, alternatives, measure, self.progress)
        self.state.record(point, cells)
        self.on_point(point, cells, False)
        return point_verdict(cells)


def measure_alternatives(specs: list[CellSpec], alternatives: list[Callable[[], Environment]],
                         measure: Callable[[CellSpec, Environment], CellResult], progress: Progress,
                         all_specs: bool = False) -> list[CellResult]:
    """The cells of one point, from the first environment that can run it: the next alternative is
    tried only when every cell of the previous one is `error`. Unless `all_specs`, the remaining
    meshes are skipped once one reproduces (a bisection step needs no more)."""
    tried: list[str] = []
    cells: list[CellResult] = []
    for prepare in alternatives:
        cells = _attempt(specs, prepare, measure, progress, all_specs)
        if point_verdict(cells) != Verdict.ERROR:
            break
        tried.append("; ".join(c.reason for c in cells))
    earlier = tried if point_verdict(cells) != Verdict.ERROR else tried[:-1]
    for cell in cells if earlier else []:
        cell.earlier_attempts = earlier  # why the preferred environments could not run it
    return cells


def _attempt(specs: list[CellSpec], prepare: Callable[[], Environment],
             measure: Callable[[CellSpec, Environment], CellResult], progress: Progress,
             all_specs: bool) -> list[CellResult]:
    try:
        environment = prepare()
    except EnvironmentUnavailable as exc:
        return [error_cell(s, f"environment: {exc}", log_tail=exc.log_tail) for s in specs]
    cells = []
    for number, spec in enumerate(specs, start=1):
        progress.cell_started(spec, number, len(specs))
        cell = measure(spec, environment)
        progress.cell_finished(cell)
        cells.append(cell)
        if cell.verdict == Verdict.REPRODUCED and not all_specs:
            break
    return cells
