"""Measure one cell: several fresh processes sharing one new cache folder, a listing after each.

Each run gets its own PYTHONHASHSEED (recorded): a fixed seed hides set-order bugs entirely.
The first run always runs alone: its entries are the cell's baseline, so with `jobs > 1` any
entry that appears after it is a key the first run did not compute (the verdict needs no more).
The later runs then overlap, and a run's `new_entries` are what appeared while it ran, which may
include a neighbour's entries.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from harness.analysis import judge
from harness.config import Repro
from harness.environments.base import Environment
from harness.listing import list_dir
from harness.model import CellResult, CellSpec, RunRecord, Verdict
from harness.run_env import IR_DUMP_VAR, ir_dump_dir, process_env, repro_args

# Runs are told about as they finish: (cell, record, runs planned).
OnRun = Callable[[CellSpec, RunRecord, int], None]


@dataclass
class CellRunner:
    environment: Environment
    repro: Repro
    timeout_s: float
    jobs: int = 1
    on_run: OnRun | None = None

    def run(self, spec: CellSpec, seeds: Iterable[int], cache_dir: Path, log_dir: Path,
            results_root: Path | None = None, stop_when_reproduced: bool = False) -> CellResult:
        """Run once per seed (fewer if `stop_when_reproduced` and a later run brings a new key)."""
        seeds = list(seeds)
        # Runs start in other folders (the script's, a container's): give them absolute paths.
        cache_dir, log_dir = cache_dir.resolve(), log_dir.resolve()
        results_root = results_root.resolve() if results_root else None
        cache_dir.mkdir(parents=True, exist_ok=True)
        log_dir.mkdir(parents=True, exist_ok=True)
        args = repro_args(self.repro, spec)
        records: list[RunRecord] = []
        lock = threading.Lock()
        stopping = threading.Event()

        def one(index: int, seed: int) -> RunRecord:
            before = list_dir(cache_dir)
            log = log_dir / f"run-{index:02d}-seed-{seed}.log"
            env = process_env(spec, seed)
            if not self.repro.builtin:
                env[IR_DUMP_VAR] = str(ir_dump_dir(log).resolve())  # the run's cwd is the script's folder
            outcome = self.environment.run(self.repro.path, args, env, cache_dir, log, self.timeout_s)
            added = sorted(list_dir(cache_dir) - before)
            rel = log.relative_to(results_root) if results_root else log
            reason = outcome.reason
            if not outcome.ok and not outcome.timed_out:
                reason = _with_last_line(reason, log)
            record = RunRecord(index=index, seed=seed, exit_code=outcome.exit_code,
                               duration_s=round(outcome.duration_s, 3), new_entries=added,
                               timed_out=outcome.timed_out, reason=reason, log=str(rel))
            if stopping.is_set():
                return record  # cut short by Ctrl-C: it measured nothing
            with lock:
                records.append(record)
            if self.on_run:
                self.on_run(spec, record, len(seeds))
            return record

        def reproduced() -> bool:
            return stop_when_reproduced and judge(records).verdict == Verdict.REPRODUCED

        pending = list(enumerate(seeds, start=1))
        try:
            if self.jobs <= 1:
                for index, seed in pending:
                    one(index, seed)
                    if reproduced():
                        break
            elif pending:
                one(*pending.pop(0))  # the baseline, alone: nothing it computed can appear later
                self._run_parallel(one, pending, reproduced, stopping)
        except KeyboardInterrupt:
            # Keep the runs that finished before Ctrl-C; the ones it cut short measured nothing.
            with lock:
                finished = list(records)
            raise CellInterrupted(self._result(spec, finished, seeds, cache_dir, interrupted=True)) from None
        return self._result(spec, records, seeds, cache_dir, stopped_early=reproduced())

    def _run_parallel(self, one, pending, reproduced, stopping: threading.Event) -> None:
        with ThreadPoolExecutor(self.jobs) as pool:
            running = set()
            try:
                while pending or running:
                    while pending and len(running) < self.jobs and not reproduced():
                        running.add(pool.submit(one, *pending.pop(0)))
                    if not running:
                        break
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        future.result()  # re-raise a harness failure here
                    if reproduced():
                        pending.clear()
            except BaseException:
                # The pool joins its threads on the way out: stop their processes so that is quick.
                pending.clear()
                stopping.set()
                self.environment.interrupt()
                raise

    def _result(self, spec: CellSpec, records: list[RunRecord], seeds: list[int], cache_dir: Path,
                stopped_early: bool = False, interrupted: bool = False) -> CellResult:
        records = sorted(records, key=lambda r: r.index)
        stopped_early = stopped_early and len(records) < len(seeds)
        judgement = judge(records, expected_runs=None if stopped_early else len(seeds))
        reason = judgement.reason
        if interrupted and judgement.verdict != Verdict.REPRODUCED:
            reason = f"interrupted after {len(records)} of {len(seeds)} runs"
        return CellResult(spec=spec, verdict=judgement.verdict, keys=judgement.keys, runs=records,
                          reason=reason, listing=sorted(list_dir(cache_dir)),
                          environment=self.environment.describe(),
                          interrupted=interrupted)


class CellInterrupted(KeyboardInterrupt):
    """Ctrl-C during a cell, carrying what the cell measured before it (to be saved)."""

    def __init__(self, partial: CellResult):
        super().__init__("interrupted")
        self.partial = partial


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
