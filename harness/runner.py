"""Measure one cell: several fresh processes sharing one new cache folder, a listing after each.

Each run gets its own PYTHONHASHSEED (recorded): a fixed seed hides set-order bugs entirely.
The first run always runs alone: its entries are the cell's baseline, so with `jobs > 1` any
entry that appears after it is a key the first run did not compute (the verdict needs no more).
The second runs alone too (see SETTLING_RUNS); the later runs then overlap, and a run's `new_entries`
are what appeared while it ran, which may include a neighbour's entries. `run_cells` schedules the
runs of many cells in one set of slots (a sweep); `CellRunner.run` is it for one cell.
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from harness import jaxlog
from harness.config import Repro
from harness.environments.base import Environment
from harness.listing import list_dir
from harness.model import CellResult, CellSpec, RunRecord, ThresholdMode, Verdict
from harness.run_env import (IR_DUMP_VAR, cache_record_path, hook_env, ir_dump_dir, merge_user_env, process_env,
                             program_for, run_command)
from harness.script_cache import read_record, with_script_cache
from harness.tally import Tally

# A cell's first runs go one at a time: the first is the baseline (it must run alone), and the second,
# with the seed that shows the axis names in the other order, settles a set-order regression (the cell
# stops there) or a cell that cached nothing. Only then do its runs overlap; meanwhile the free slots
# go to the next cell.
SETTLING_RUNS = 2

# Runs are told about as they finish: (cell, record, runs planned).
OnRun = Callable[[CellSpec, RunRecord, int], None]


@dataclass
class CellRunner:
    """Measures one cell. `measure_run` makes one run (a fresh process, the listing before and after);
    `run` schedules them, one at a time or `jobs` at once, until the cell's `Tally` says stop; what is
    decided from the records (the verdict, when to stop) is the tally's, not the scheduler's."""

    environment: Environment
    repro: Repro
    timeout_s: float
    jobs: int = 1
    on_run: OnRun | None = None
    thresholds: ThresholdMode = ThresholdMode.SCRIPT  # a user's script's own thresholds kept, or zeros
    # As the script's author runs it: its arguments, environment additions, working folder.
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None

    def run(self, spec: CellSpec, seeds: Iterable[int], cache_dir: Path, log_dir: Path,
            results_root: Path | None = None, stop_when_reproduced: bool = False) -> CellResult:
        """Run once per seed (fewer if `stop_when_reproduced` and a later run brings a new key, or
        nothing can change). After Ctrl-C the cell comes back `interrupted`, with the runs that
        finished: the caller saves it, then stops."""
        results: list[CellResult] = []
        try:
            run_cells([lambda: OpenCell.open(self, spec, seeds, cache_dir, log_dir, results_root,
                                             stop_when_reproduced)], self.jobs, results.append, self.on_run)
        except KeyboardInterrupt:
            pass  # the cell came back interrupted
        return results[0]

    def finish(self, spec: CellSpec, cell: CellResult) -> CellResult:
        """The measured cell with what the runner adds: a user script's command, its cache settings."""
        if not self.repro.builtin:
            program = program_for(self.repro, spec, self.args, self.cwd)
            cell.command = run_command(program, merge_user_env(process_env(spec, 1), self.env), self.env)
        return with_script_cache(cell, self.thresholds)

    def measure_run(self, spec: CellSpec, cache_dir: Path, log_dir: Path, results_root: Path | None,
                    index: int, seed: int) -> RunRecord:
        """One run: a fresh process with its own hash seed, and the cache entries that appeared meanwhile."""
        before = list_dir(cache_dir)
        log = log_dir / f"run-{index:02d}-seed-{seed}.log"
        env = process_env(spec, seed)
        record_file = cache_record_path(log)
        if not self.repro.builtin:
            env[IR_DUMP_VAR] = str(ir_dump_dir(log).resolve())  # the run's cwd is the script's folder
            env.update(hook_env(record_file, self.thresholds))
            env = merge_user_env(env, self.env)
        program = program_for(self.repro, spec, self.args, self.cwd)
        outcome = self.environment.run(program, env, cache_dir, log, self.timeout_s)
        added = sorted(list_dir(cache_dir) - before)
        reason = outcome.reason
        if not outcome.ok and not outcome.timed_out:
            reason = _with_last_line(reason, log)
        keys, note = read_jax_log(log, spec.jax_version, outcome.ok)
        return RunRecord(index=index, seed=seed, exit_code=outcome.exit_code,
                         duration_s=round(outcome.duration_s, 3), new_entries=added,
                         timed_out=outcome.timed_out, reason=reason,
                         log=str(log.relative_to(results_root) if results_root else log),
                         script_cache=None if self.repro.builtin else read_record(record_file),
                         keys=keys, log_note=note)


def read_jax_log(log: Path, version: str, ok: bool) -> tuple[jaxlog.RunLog | None, str]:
    """What JAX's log says this run computed (None, and why, when it named no key); a log over
    `jaxlog.LOG_CAP_BYTES` is cut down to what attribution needs, its head and its tail."""
    try:
        text = log.read_text(errors="replace")
    except OSError as exc:
        return None, f"its log could not be read ({exc.strerror})"
    lines = text.splitlines()
    parsed = jaxlog.parse(lines)
    if len(text) > jaxlog.LOG_CAP_BYTES:
        cut = log.with_name(log.name + ".tmp")
        cut.write_text("\n".join(jaxlog.capped(lines)) + "\n")
        cut.replace(log)
    if parsed.empty:
        return None, jaxlog.no_keys_note(version) if ok else "the run failed before JAX logged a cache key"
    return parsed, ""


def _with_last_line(reason: str, log: Path, limit: int = 160) -> str:
    """A crash's reason with the last line it printed (usually the exception), so the table says why."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return reason
    if not lines:
        return reason
    if lines[-1] in reason:  # the backend already wrote its reason as the log (docker create failed)
        return reason
    last = lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 1] + "…"
    return f"{reason}: {last}" if reason else last


def error_cell(spec: CellSpec, reason: str, environment: dict | None = None,
               log_tail: str = "") -> CellResult:
    """A cell whose environment could not be made: measured nothing, says `error`."""
    return CellResult(spec=spec, verdict=Verdict.ERROR, keys={}, runs=[], reason=reason,
                      environment=environment or {}, log_tail=log_tail)


@dataclass
class OpenCell:
    """A cell being measured by `run_cells`: its runner, folders, tally and the runs it has yet to start."""

    runner: CellRunner
    spec: CellSpec
    cache_dir: Path
    log_dir: Path
    results_root: Path | None
    tally: Tally
    pending: list[tuple[int, int]]  # (index, seed), in order
    running: int = 0

    @classmethod
    def open(cls, runner: CellRunner, spec: CellSpec, seeds: Iterable[int], cache_dir: Path, log_dir: Path,
             results_root: Path | None = None, stop_when_reproduced: bool = False) -> OpenCell:
        seeds = list(seeds)
        cache_dir, log_dir = cache_dir.resolve(), log_dir.resolve()
        cache_dir.mkdir(parents=True, exist_ok=True)
        log_dir.mkdir(parents=True, exist_ok=True)
        return cls(runner, spec, cache_dir, log_dir, results_root.resolve() if results_root else None,
                   Tally(len(seeds), stop_when_reproduced), list(enumerate(seeds, start=1)))

    def startable(self) -> bool:
        if not self.pending or self.tally.stop_now():
            return False
        if len(self.tally.records) < SETTLING_RUNS:
            return self.running == 0  # one at a time until the cell may have settled
        return True

    @property
    def baseline_done(self) -> bool:
        return bool(self.tally.records)

    def finished(self) -> bool:
        return self.running == 0 and not self.startable()

    def measure(self, index: int, seed: int) -> RunRecord:
        return self.runner.measure_run(self.spec, self.cache_dir, self.log_dir, self.results_root, index, seed)

    def result(self, interrupted: bool = False) -> CellResult:
        cell = self.tally.cell(self.spec, sorted(list_dir(self.cache_dir)), self.runner.environment.describe(),
                               interrupted)
        return self.runner.finish(self.spec, cell)


# What `run_cells` is given for each cell, in order, when a slot is free for it: the cell to measure,
# or its result already (an environment that could not be made).
CellOpener = Callable[[], "OpenCell | CellResult"]


def run_cells(openers: Iterable[CellOpener], jobs: int, on_result: Callable[[CellResult], None],
              on_run: OnRun | None = None) -> None:
    """Measure cells with `jobs` runs at once in all: a cell's first run alone (in its own folder), then
    its later runs, and when the open cells cannot use a free slot (a cell's first run, or a cell that
    stopped), the next cell starts. Each cell keeps its own folders, seeds and tally, so what it
    measures does not depend on its neighbours; results reach `on_result` in cell order.

    Ctrl-C: every open cell comes back `interrupted` with the runs that finished (in order, after the
    cells before it), then KeyboardInterrupt goes on up."""
    openers = iter(openers)
    opened: list[OpenCell | CellResult | None] = []  # by cell number: still open, or its result
    emitted = 0
    running: dict[Future, tuple[int, OpenCell]] = {}
    exhausted = False
    failure: Exception | None = None

    def emit_ready() -> None:
        nonlocal emitted
        while emitted < len(opened) and isinstance(opened[emitted], CellResult):
            on_result(opened[emitted])
            emitted += 1

    pool = ThreadPoolExecutor(max(1, jobs), thread_name_prefix="run")
    try:
        while True:
            while len(running) < max(1, jobs):
                cell = next((c for c in opened if isinstance(c, OpenCell) and c.startable()), None)
                if cell is None:
                    if exhausted:
                        break
                    opener = next(openers, None)
                    if opener is None:
                        exhausted = True
                        break
                    try:
                        opened.append(opener())
                    except Exception as exc:  # a bug of the harness: finish the cells already open, then raise
                        failure, exhausted = exc, True
                        break
                    continue
                index, seed = cell.pending.pop(0)
                cell.running += 1
                running[pool.submit(cell.measure, index, seed)] = (opened.index(cell), cell)
            for number, cell in enumerate(opened):
                if isinstance(cell, OpenCell) and cell.finished():
                    opened[number] = cell.result()
            emit_ready()
            if not running:
                if exhausted:
                    if failure is not None:
                        raise failure
                    return
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                _, cell = running.pop(future)
                record = future.result()  # a harness failure is raised here
                cell.running -= 1
                cell.tally.add(record)
                if on_run:
                    on_run(cell.spec, record, cell.tally.planned)
    except KeyboardInterrupt:
        for cell in {id(c): c for c in opened if isinstance(c, OpenCell)}.values():
            cell.runner.environment.interrupt()
        pool.shutdown(wait=True, cancel_futures=True)  # the runs cut short measured nothing: not kept
        for number, cell in enumerate(opened):
            if isinstance(cell, OpenCell):
                opened[number] = cell.result(interrupted=True)
        emit_ready()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
