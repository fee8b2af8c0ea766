"""A sweep: for each JAX version, prepare an environment and measure its cells, saving as it goes."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from collections.abc import Callable

from harness.core.files import remove_path
from harness.core.confidence import SeedPlan
from harness.inputs.config import Config
from harness.environments.base import Backend, Environment
from harness.core.errors import EnvironmentUnavailable
from harness.core.model import CellResult, CellSpec
from harness.core.findings import FactorResult
from harness.core.kinds import Cause, Platform
from harness.core.factors import Factor
from harness.verdicts.factor_verdicts import moved_folder_finding
from harness.verdicts.finish import CauseReader, UncachedReader
from harness.measure.progress import Progress
from harness.measure.cell_runner import CellRunner, error_cell
from harness.measure.cell_schedule import CellOpener, run_cells
from harness.measure.cell_settings import OnFactor, OnRun
from harness.measure.open_cell import OpenCell
from harness.measure.seeds import Reseed, SeedPlanner


# Environments made beyond the one being measured: installs overlap runs, and at most this many
# finished environments wait (a Ctrl-C waits for at most one install still going).
PREPARE_AHEAD = 2
# Installs are mostly waiting on uv (links from its cache, metadata): two at a time overlap well.
PREPARE_WORKERS = 2


class Preparations:
    """The sweep's environments, one per (version, platform), made in cell order by a few worker
    threads while the cells run, a bounded number ahead. A failure is the value of that environment (its
    cells are `error`), remembered like a success."""

    def __init__(self, backend: Backend, progress: Progress, ahead: int):
        self.backend, self.progress, self.ahead = backend, progress, ahead
        self._pool = ThreadPoolExecutor(PREPARE_WORKERS, thread_name_prefix="prepare")
        self._made: dict[tuple[str, Platform], Future[Environment | EnvironmentUnavailable]] = {}

    def want(self, upcoming: list[CellSpec]) -> None:
        """`upcoming[0]` is measured now: make sure it and the next `ahead` environments are on the way."""
        keys = list(dict.fromkeys((spec.jax_version, spec.platform) for spec in upcoming))
        for key in keys[: 1 + self.ahead]:
            if key not in self._made:
                self._made[key] = self._pool.submit(self._prepare, *key, ahead=key != keys[0])

    def get(self, spec: CellSpec) -> Environment | EnvironmentUnavailable:
        future = self._made[(spec.jax_version, spec.platform)]
        if not future.done():
            self.progress.say(f"  waiting for the environment of jax {spec.jax_version}")
        return future.result()  # a bug of the harness in preparing is raised here

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _prepare(self, version: str, platform: Platform, ahead: bool) -> Environment | EnvironmentUnavailable:
        say = self.progress.say
        if ahead:  # said while another cell's runs are being reported
            def say(message: str) -> None:
                self.progress.say(f"  (preparing jax {version} ahead) {message.strip()}")
        try:
            return self.backend.prepare(version, platform, say)
        except EnvironmentUnavailable as exc:
            return exc


def plan_cells(config: Config, versions: list[str]) -> list[CellSpec]:
    meshes = config.meshes if config.repro.takes_mesh else (None,)
    return [CellSpec(v, config.platform, config.device_count, mesh, config.processes) for v in versions
            for mesh in meshes]


class CellSink(Protocol):
    """Where a sweep's cells go as each finishes (the results writer of the output layer)."""

    dir: Path  # the cells' logs/ and caches/ go under it

    def add(self, cell: CellResult) -> None: ...

    def cause(self, cell: CellResult) -> Cause | None: ...  # a finished cell's likely cause (CauseReader)

    # a `not cached` cell's callback lines and untimed seconds (UncachedReader)
    def uncached(self, cell: CellResult) -> tuple[dict[str, str], dict[str, float]]: ...


@dataclass
class Sweep:
    config: Config
    backend: Backend
    writer: CellSink
    progress: Progress
    at_once: int = 1
    planner: SeedPlanner = field(default_factory=SeedPlanner)  # which seeds, how many runs
    stop_when_reproduced: bool = True  # a later run with a new key settles the cell: stop its runs there
    device_shares: tuple[tuple[int, ...], ...] = ()  # each run slot's own devices (RunsAtOnce.shares)

    prepare_ahead: int = PREPARE_AHEAD

    def run(self, cells: list[CellSpec]) -> list[CellResult]:
        """Measure `cells`, overlapping them where a cell leaves run slots free (run_cells), and give
        each to the writer in cell order as soon as it and those before it are done."""
        results: list[CellResult] = []
        preparations = Preparations(self.backend, self.progress, self.prepare_ahead)

        def opener(number: int, spec: CellSpec) -> CellOpener:
            def open_cell() -> OpenCell | CellResult:
                preparations.want(cells[number - 1:])
                self.progress.cell_started(spec, number, len(cells))
                env = preparations.get(spec)
                if isinstance(env, EnvironmentUnavailable):
                    return error_cell(spec, f"environment: {env}", {"backend": self.backend.name}, env.log_tail)
                cache_dir, log_dir = fresh_folders(spec, self.writer.dir)
                plan = self.planner.plan(spec, env, log_dir)
                self.progress.say(f"  seeds: {plan.summary()}")
                runner = cell_runner(env, self.config, self.at_once,
                                     on_factor=factor_line(self.progress, self.config.vary),
                                     read_cause=self.writer.cause, device_shares=self.device_shares,
                                     read_uncached=self.writer.uncached)
                return OpenCell.open(runner, spec, plan.launches(), cache_dir, log_dir, self.writer.dir,
                                     stop_when_reproduced=self.stop_when_reproduced,
                                     reseed=said(self.planner.reseeder(spec, plan, env, log_dir), plan,
                                                 self.progress), plan=plan)
            return open_cell

        def finished(result: CellResult) -> None:
            self.writer.add(result)  # also a cell cut short by Ctrl-C (keep_then_stop's policy: kept, then on up)
            if not result.interrupted:
                self.progress.cell_finished(result)
                results.append(result)

        try:
            run_cells((opener(n, spec) for n, spec in enumerate(cells, start=1)), self.at_once, finished,
                      on_run=self.progress.run_finished)
        finally:
            preparations.close()
        return results


def said(reseed: Reseed | None, plan: SeedPlan, progress: Progress) -> Reseed | None:
    """The reseed, telling the seeds it chose."""
    if reseed is None:
        return None

    told: list[list[int]] = []

    def reseed_and_say(index: int, seed: int, dump: Path, started: list[int], pending: int) -> list[int]:
        later = reseed(index, seed, dump, started, pending)
        if not told or (pending and plan.chosen != told[-1]):  # run 1's plan, then each change of it
            progress.say(f"  seeds after run {index}: {plan.summary()}")
            told.append(list(plan.chosen))
        return later
    return reseed_and_say


def cell_runner(environment: Environment, config: Config, at_once: int, on_run: OnRun | None = None,
                on_factor: OnFactor | None = None, read_cause: CauseReader | None = None,
                device_shares: tuple[tuple[int, ...], ...] = (),
                read_uncached: UncachedReader | None = None) -> CellRunner:
    """The runner of a cell of `config`: its program as the author runs it, its thresholds and timeout,
    the factors it varies; `read_cause`: where a reproduced cell's likely cause is read from, if anywhere."""
    return CellRunner(environment, config.repro, config.timeout_s, at_once, on_run=on_run,
                      thresholds=config.cache_thresholds, args=config.args, env=config.env, cwd=config.cwd,
                      vary=config.vary, on_factor=on_factor, moved_folder=config.moved_folder, read_cause=read_cause,
                      device_shares=device_shares, read_uncached=read_uncached)


def factor_line(progress: Progress, vary: tuple[Factor, ...] = ()) -> OnFactor:
    """--vary: one progress line per factor judged; check's moved folder (a factor not in `vary`) as it reads
    in the table."""
    def say(spec: CellSpec, result: FactorResult) -> None:
        if result.factor not in vary:
            progress.say(f"  jax {spec.jax_version} {spec.mesh_label} {moved_folder_finding(result)}")
            return
        progress.say(f"  jax {spec.jax_version} {spec.mesh_label} vary {result.factor}: {result.outcome}"
                     + (f" ({result.reason})" if result.reason else ""))
    return say


def fresh_folders(spec: CellSpec, work_dir: Path) -> tuple[Path, Path]:
    """The cell's caches/ and logs/ folders under `work_dir`, emptied of what a cell cut short earlier
    (resume, bisect) left there."""
    cache_dir, log_dir = work_dir / "caches" / spec.slug, work_dir / "logs" / spec.slug
    for leftover in (cache_dir, log_dir):
        remove_path(leftover)
    return cache_dir, log_dir


def keep_then_stop(cell: CellResult, keep: Callable[[CellResult], None]) -> CellResult:
    """The one Ctrl-C policy of every path that measures a cell (a sweep's, a bisection's point, nightly's
    commit): a cell cut short is kept (`keep`: the results hold what it measured, `interrupted`), then the
    interrupt goes on up. It is never a finished cell: a resumed sweep or bisection measures it again."""
    if cell.interrupted:
        keep(cell)
        raise KeyboardInterrupt
    return cell


def measure_cell(spec: CellSpec, environment: Environment, config: Config, planner: SeedPlanner,
                 work_dir: Path, progress: Progress, keep: Callable[[CellResult], None], at_once: int = 1,
                 stop_when_reproduced: bool = True, read_cause: CauseReader | None = None) -> CellResult:
    """One cell, with its caches/ and logs/ folders under `work_dir`: fresh folders, planned seeds,
    the seeds and miss bounds recorded in the result (`read_cause`: see cell_runner). After Ctrl-C the cell
    (`interrupted`, with the runs that finished) goes to `keep`, and KeyboardInterrupt on up (`keep_then_stop`)."""
    cache_dir, log_dir = fresh_folders(spec, work_dir)
    plan = planner.plan(spec, environment, log_dir)
    progress.say(f"  seeds: {plan.summary()}")
    runner = cell_runner(environment, config, at_once, on_run=progress.run_finished,
                         on_factor=factor_line(progress, config.vary), read_cause=read_cause)
    cell = runner.run(spec, plan.launches(), cache_dir, log_dir, results_root=work_dir,
                      stop_when_reproduced=stop_when_reproduced,
                      reseed=said(planner.reseeder(spec, plan, environment, log_dir), plan, progress), plan=plan)
    return keep_then_stop(cell, keep)
