"""A sweep: for each JAX version, prepare an environment and measure its cells, saving as it goes."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness.config import Config
from harness.environments.base import Backend, Environment
from harness.errors import EnvironmentUnavailable
from harness.model import CellResult, CellSpec
from harness.progress import Progress
from harness.runner import CellRunner, error_cell
from harness.seeds import SeedPlanner, record_plan


def plan_cells(config: Config, versions: list[str]) -> list[CellSpec]:
    meshes = config.meshes if config.repro.takes_mesh else (None,)
    return [CellSpec(v, config.platform, config.device_count, mesh) for v in versions for mesh in meshes]


class CellSink(Protocol):
    """Where a sweep's cells go as each finishes (the results writer of the output layer)."""

    dir: Path  # the cells' logs/ and caches/ go under it

    def add(self, cell: CellResult) -> None: ...


@dataclass
class Sweep:
    config: Config
    backend: Backend
    writer: CellSink
    progress: Progress
    jobs: int = 1
    planner: SeedPlanner = field(default_factory=SeedPlanner)  # which seeds, how many runs
    stop_when_reproduced: bool = True  # a later run with a new key settles the cell: stop its runs there

    def run(self, cells: list[CellSpec]) -> list[CellResult]:
        results = []
        environments: dict[str, object] = {}
        for number, spec in enumerate(cells, start=1):
            self.progress.cell_started(spec, number, len(cells))
            result = self._measure(spec, environments)
            self.writer.add(result)  # also a cell cut short by Ctrl-C: what it measured is kept
            if result.interrupted:
                raise KeyboardInterrupt
            self.progress.cell_finished(result)
            results.append(result)
        return results

    def _measure(self, spec: CellSpec, environments: dict) -> CellResult:
        # One environment per version, shared by that version's meshes; a failure is remembered.
        env = environments.get(spec.jax_version)
        if env is None:
            try:
                env = self.backend.prepare(spec.jax_version, spec.platform, self.progress.say)
            except EnvironmentUnavailable as exc:
                env = exc
            environments[spec.jax_version] = env
        if isinstance(env, EnvironmentUnavailable):
            return error_cell(spec, f"environment: {env}", {"backend": self.backend.name}, env.log_tail)
        return measure_cell(spec, env, self.config, self.planner, self.writer.dir, self.progress,
                            jobs=self.jobs, stop_when_reproduced=self.stop_when_reproduced)


def measure_cell(spec: CellSpec, environment: Environment, config: Config, planner: SeedPlanner,
                 work_dir: Path, progress: Progress, jobs: int = 1,
                 stop_when_reproduced: bool = True) -> CellResult:
    """One cell, with its caches/ and logs/ folders under `work_dir`: fresh folders, planned seeds,
    the seeds and miss bounds recorded in the result. After Ctrl-C the cell is `interrupted` and holds
    the runs that finished; the caller saves it (a sweep) or drops it (a bisection), then stops."""
    slug = spec.slug
    cache_dir, log_dir = work_dir / "caches" / slug, work_dir / "logs" / slug
    for leftover in (cache_dir, log_dir):  # a cell cut short earlier (resume, bisect): start afresh
        shutil.rmtree(leftover, ignore_errors=True)
    plan = planner.plan(spec, environment, log_dir)
    progress.say(f"  seeds: {plan.summary()}")
    runner = CellRunner(environment, config.repro, config.timeout_s, jobs, on_run=progress.run_finished,
                        thresholds=config.cache_thresholds, args=config.args, env=config.env, cwd=config.cwd)
    cell = runner.run(spec, plan.seeds, cache_dir, log_dir, results_root=work_dir,
                      stop_when_reproduced=stop_when_reproduced)
    record_plan(cell, plan)
    return cell
