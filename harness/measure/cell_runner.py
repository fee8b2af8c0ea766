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

import os
import shutil
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.records import replace
from harness.inputs.config import Repro
from harness.environments import factor_runs as varying
from harness.environments.base import Environment
from harness.core.confidence import SeedPlan
from harness.core.files import remove_path
from harness.core.errors import GroupUnsupported
from harness.core.factors import Factor, RunVariation
from harness.measure.beside import ATTEMPT_SUFFIX, BESIDE_INDEX, BesideFirst, pairing_problem
from harness.measure.multiprocess_run import group_problem, measure_job
from harness.measure.parallelism import slot_env
from harness.core.platforms import describe
from harness.core.listing import entries, list_dir
from harness.core.model import CellResult, CellSpec
from harness.core.findings import CellVariation, FactorResult, SeedCheck, SeedRun
from harness.core.kinds import FolderMode, ThresholdMode, Verdict
from harness.core.runs import Program, RunRecord
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import DEVICES_VAR
from harness.inputs.process_variables import (IR_DUMP_VAR, devices_path, read_devices, script_settings_path, hook_env, ir_dump_dir, merge_user_env, process_env,
                             program_for, run_command)
from harness.core.bounded_read import irregular_entries
from harness.core.recorder import recorder_path
from harness.measure.run_logs import missing_module, read_run, with_log_detail
from harness.measure.seeds import Reseed, SeedWindow
from harness.verdicts.finish import CauseReader, Measured, ScriptRun, UncachedReader, finish_cell, with_plan
from harness.evidence.keys import counted
from harness.evidence.script_settings import first_use, read_script_settings, sets_own_folder
from harness.evidence.per_test import SEED_CONTROL, control_baseline
from harness.verdicts.seed_check import FAILING, PASSING, RERUNS, candidates
from harness.verdicts.judge import Tally
from harness.verdicts.factor_verdicts import (as_planned_run, cannot_vary, counts_as_planned_run, judge_factor,
                                              needs_control, not_judged, reference_of, why_not_varied, with_control,
                                              with_planned_control, without_planned_control)

# A cell's first runs go one at a time: the first is the baseline (it must run alone), and the second,
# with the seed that shows the axis names in the other order, settles a set-order regression (the cell
# stops there) or a cell that cached nothing. Only then do its planned runs overlap; meanwhile the free
# slots go to harness check's moved-folder run (OpenCell._moved_run_due), then to the next cell.
SETTLING_RUNS = 2

# Runs are told about as they finish: (cell, record, runs planned).
OnRun = Callable[[CellSpec, RunRecord, int], None]
# --vary: each factor's result as it is judged.
OnFactor = Callable[[CellSpec, FactorResult], None]


@dataclass
class CellRunner:
    """How a cell's runs are made (the environment, the program as its author runs it, the factors varied).
    `run` measures one cell: its runs (`OpenCell.measure_run`, a fresh process each, the listing before and
    after), one at a time or `at_once` together, until the cell's `Tally` says stop; what is decided from the
    records (the verdict, when to stop) is the tally's, and the finished cell `finish_cell`'s, not the
    scheduler's."""

    environment: Environment
    repro: Repro
    timeout_s: float
    at_once: int = 1
    on_run: OnRun | None = None
    thresholds: ThresholdMode = ThresholdMode.HARNESS  # zeros (every module cached), or the script's own
    # As the script's author runs it: its arguments, environment additions, working folder.
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None
    # --vary: after the cell's runs, one run per factor with the first run's seed (harness/verdicts/factor_verdicts.py).
    vary: tuple[Factor, ...] = ()
    on_factor: OnFactor | None = None
    # harness check: one run more through another path to the cell's folder (the cache-path factor's run),
    # said beside the verdict and never changing it; an explicit --vary cache-path is that run already.
    moved_folder: bool = False
    # A reproduced cell's likely cause, read when it is finished (None: not looked for).
    read_cause: CauseReader | None = None
    # Each run slot's own devices (harness/measure/parallelism.py), () when runs need not be told.
    device_shares: tuple[tuple[int, ...], ...] = ()
    # A `not cached` cell's callback lines and untimed seconds, read when it is finished (None: not looked for).
    read_uncached: UncachedReader | None = None

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

    def program(self, spec: CellSpec) -> Program:
        """The cell's program as its runs start it."""
        return program_for(self.repro, spec, self.args, self.cwd)

    def script_run(self, spec: CellSpec, folder: FolderMode | None, folder_why: str) -> ScriptRun | None:
        """A user script's command as its runs ran it, and how they got the folder; None for the built-in repro."""
        if self.repro.builtin:
            return None
        command = run_command(self.program(spec), merge_user_env(process_env(spec, 1, self.thresholds), self.env),
                              self.env)
        return ScriptRun(command, folder, folder_why)


def error_cell(spec: CellSpec, reason: str, environment_facts: dict[str, Any] | None = None,
               log_tail: str = "") -> CellResult:
    """A cell whose environment could not be made: measured nothing, says `error`."""
    return CellResult(spec=spec, verdict=Verdict.ERROR, keys={}, runs=[], reason=reason,
                      environment_facts=environment_facts or {}, log_tail=log_tail)


@dataclass(frozen=True)
class QueuedRun:
    """One run of an open cell: a planned run (`check` None), a seed check's re-run of run `index`, or
    (--vary) a factor's run or the control run, with the reference run's seed."""

    index: int
    seed: int
    check: str | None = None  # a seed check's re-run: one of seed_check.RERUNS
    ranks: tuple[int, ...] = ()  # a multi-process cell's run: its seeds by process (`seed` is process 0's)
    factor: Factor | None = None
    control: bool = False
    in_planned_place: bool = False  # harness check's moved run, with this planned run's index and seed (EarlyMoved)
    beside: bool = False  # run 2 beside run 1, in a folder of its own (harness/measure/beside.py)


# This harness's runs going now, of every cell (planned runs, the moved-folder run, the seed control, run 2 beside
# run 1, --vary's), each with whether another ran beside it at any moment (OpenCell.measure).
_LIVE: dict[int, list[bool]] = {}
_LIVE_LOCK = threading.Lock()


@dataclass
class OpenCell:
    """A cell being measured by `run_cells`: its runner, folders, tally and the runs it has yet to start."""

    runner: CellRunner
    spec: CellSpec
    cache_dir: Path
    log_dir: Path
    results_root: Path | None
    tally: Tally
    pending: list[tuple[int, tuple[int, ...]]]  # (index, seeds: one, or one per process of a job), in order
    running: int = 0
    # How a user's script's runs get the cell's folder: decided by its first run (None until then).
    folder: FolderMode | None = None
    folder_why: str = ""
    checks: list[QueuedRun] | None = None  # the seed check's re-runs still to start (None: not planned yet)
    rechecked: dict[str, SeedRun] = field(default_factory=dict)
    vary: VaryPhase | None = None  # --vary: begun once the cell's own runs and checks are done
    # Its later seeds, chosen from what its runs lowered, each from the runs a fixed number of places before it
    # (not from whichever ended first), given to the reseeder as each run is taken.
    seed_window: SeedWindow | None = None
    started: list[int] = field(default_factory=list)  # the planned runs' seeds, as they were started
    plan: SeedPlan | None = None  # the seed plan the launches come from: recorded in the finished cell
    # The seed control (a key moved): the first run's seed again, in a fresh folder with its entries
    control: list[QueuedRun] | None = None  # still to start (None: not planned yet)
    control_record: RunRecord | None = None
    # harness check's moved folder, begun as soon as run 1 has ended (beside run 2, see _moved_run_due): run 1's
    # orders are read (and the interpreter probed) when run 2 is taken, after it, so that the probe overlaps it.
    moved: EarlyMoved | None = None
    # A suite's run 2 beside its run 1 (harness/measure/beside.py); None: run 2 after run 1, in the cell's folder.
    beside: BesideFirst | None = None

    @classmethod
    def open(cls, runner: CellRunner, spec: CellSpec, seeds: Iterable[int | tuple[int, ...]], cache_dir: Path,
             log_dir: Path, results_root: Path | None = None,
             stop_when_reproduced: bool = False, give_up: Callable[[list[RunRecord]], bool] | None = None,
             folder: FolderMode | None = None, reseed: Reseed | None = None,
             plan: SeedPlan | None = None) -> OpenCell | CellResult:
        """The cell ready to run; a multi-process cell whose environment cannot run such a job here is
        `unsupported` at once, saying why. `give_up`, `folder`, `reseed` and `plan`: see CellRunner.run."""
        launches = [s if isinstance(s, tuple) else (s,) for s in seeds]
        cache_dir, log_dir = cache_dir.resolve(), log_dir.resolve()
        cache_dir.mkdir(parents=True, exist_ok=True)
        log_dir.mkdir(parents=True, exist_ok=True)
        folder = FolderMode.ENVIRONMENT if runner.repro.builtin else folder
        folder_why = "as the original's runs got it (harness reduce)" if folder and not runner.repro.builtin else ""
        if spec.is_multiprocess:
            assert all(len(s) == spec.processes for s in launches), "a job's runs need a seed per process"
            try:
                problem = group_problem(runner.environment, spec, log_dir, runner.timeout_s)
            except GroupUnsupported as exc:
                problem = str(exc)
            if problem:  # measured nothing: the plan it would have run is still said
                unsupported = CellResult(spec=spec, verdict=Verdict.UNSUPPORTED, keys={}, runs=[], reason=problem,
                                         environment_facts=runner.environment.describe())
                return with_plan(unsupported, plan) if plan is not None else unsupported
            # Every process gets the folder from JAX_COMPILATION_CACHE_DIR (a folder the script sets in
            # code is redirected there by the hook): one way for all of a job's processes.
            folder = FolderMode.ENVIRONMENT
            folder_why = "a multi-process cell: each process gets the folder from JAX_COMPILATION_CACHE_DIR"
        beside = None if pairing_problem(
            builtin=runner.repro.builtin, module=runner.repro.module, processes=spec.processes,
            varied=bool(runner.vary), at_once=runner.at_once, folder_known=folder is not None, runs=len(launches),
            give_up=give_up is not None,
            own_folder_problem=runner.environment.own_folder_problem) else BesideFirst.beside(cache_dir)
        return cls(runner, spec, cache_dir, log_dir, results_root.resolve() if results_root else None,
                   Tally(len(launches), stop_when_reproduced, give_up=give_up), list(enumerate(launches, start=1)),
                   folder=folder,
                   folder_why=folder_why, plan=plan,
                   seed_window=None if spec.is_multiprocess or reseed is None else
                   SeedWindow(reseed, runner.at_once, SETTLING_RUNS, beside_first=beside is not None),
                   beside=beside)

    @property
    def slots(self) -> int:
        """Run slots one of its runs occupies: a job's processes each take one."""
        return self.spec.processes

    def _planned_runs_left(self) -> bool:
        return bool(self.pending) and not self.tally.stop_now()

    def startable(self) -> bool:
        if self._moved_run_due() or self._moved_planned_run_due():
            return True
        if self._planned_runs_left():
            if self._beside_due():
                return True
            if self._settling():  # one planned run at a time until the cell may have settled
                return self.running - (self.moved is not None and self.moved.result is None) == 0
            return self.seed_window is None or self.seed_window.ready(self.pending[0][0])
        if self.checks is None and self.running == 0:
            # A cell whose caller gave up (harness reduce's rejected candidate) needs no seed check, no factor.
            self.checks = [] if self.tally.gave_up else self._plan_checks()
        if self.checks:
            return True
        if self.tally.gave_up:
            return False
        if self.control is None and self.running == 0:
            self.control = self._plan_control()
        if self.control:
            return True
        # --vary (and the moved folder): their runs one at a time, once every other run of the cell has ended
        if self.running:
            return False
        phase = self._vary_phase()
        return phase is not None and phase.has_next()

    def _settling(self) -> bool:
        """Runs 1..SETTLING_RUNS have not all ended (a later run the moved run counted as settles nothing)."""
        return sum(r.index <= SETTLING_RUNS for r in self.tally.records) < min(SETTLING_RUNS, self.tally.planned)

    def _vary_phase(self) -> VaryPhase | None:
        if self.vary is None and (self.runner.vary or self.runner.moved_folder):
            self.vary = VaryPhase.begin(self, self.moved.result if self.moved is not None else None)
        return self.vary

    def _phase(self) -> VaryPhase:
        """The --vary phase its factor and control runs belong to (begun by `startable` before they are taken)."""
        assert self.vary is not None, "a factor's run before the cell's --vary phase began"
        return self.vary

    def _moved_run_due(self) -> bool:
        """harness check's moved folder starts as soon as run 1 has ended (and run 2 has started, where it takes
        a planned run's place: _moved_takes_planned_run), in a copy of the folder run 1 left, beside run 2 (on two
        cores it costs no wall time of its own, and a cell that reproduces at run 2 stops with it made): it is
        judged against run 1's keys, which that copy holds alone (with run 1's seed where it takes no planned run).
        Only the default check's own run (an explicit --vary cache-path counts in the verdict: it runs after the
        cell's runs, as every factor does), for one process, once run 1 ran and computed a key, and only with a
        slot to spare (one run at a time: after the cell's runs, where it costs the same)."""
        runner = self.runner
        # One run at a time: after the cell's runs; but on an accelerator (each run opens the device: seconds) in a
        # planned run's place, where a moved run whose keys all hit is that run: one process fewer.
        alone = runner.at_once < 2 and not (describe(self.spec.platform).accelerator and self._moved_takes_planned_run())
        if (self.moved is not None or self.vary is not None or not runner.moved_folder or alone
                or Factor.CACHE_PATH in runner.vary or self.spec.is_multiprocess or not self.tally.records
                or self.tally.stop_now()):
            return False
        if self._moved_takes_planned_run() and len(self.started) < SETTLING_RUNS:
            return False  # run 2 first (its seed is chosen then): the moved run takes the next planned run's place
        reference = reference_of(self.tally.records)
        return reference is not None and not why_not_varied(reference, Verdict.CLEAN)

    # ---- the moved run in a planned later run's place (issue 51 item 7) ----

    def _moved_takes_planned_run(self) -> bool:
        """Whether the moved run is made with a planned later run's seed (and counts as that run where every key
        hits: EarlyMoved.take) rather than run 1's, one run beside the plan: harness check's own moved run (not
        --vary, whose control and factors are judged against run 1's seed; not the built-in repro) of a cell
        with a planned run after run 2 not started yet."""
        return (not self.runner.vary and not self.runner.repro.builtin
                and any(index > SETTLING_RUNS for index, _ in self.pending))

    def _moved_planned_run_due(self) -> bool:
        """The planned run the moved run took, made again in the cell's own folder with the same seed, when the
        moved run did not count as it: once runs 1 and 2 have ended (the moved run ran beside run 2), as a later run
        of the cell. A cell that stopped at its first miss makes it not: its verdict needs no more runs, and a moved
        run of a set-order regression misses by its seed, which its planned run would only show again (a process
        for nothing where it would have cost none): whether the path moves the keys is then said not measured."""
        moved = self.moved
        if moved is None or moved.again is None:
            return False
        if self.tally.stop_now():
            assert moved.result is not None
            moved.again = None
            moved.result = without_planned_control(
                moved.result, moved.queued.index, f"the cell stopped at its first miss, so run {moved.queued.index} was not made in the "
                              "cell's own folder with this seed to tell the path from the seed")
            return False
        return not self._settling()

    def _plan_checks(self) -> list[QueuedRun]:
        """Some runs failed and others passed: re-run a failing and a passing seed (seed_check.RERUNS)."""
        found = candidates(self.tally.records)
        if found is None or self.spec.is_multiprocess:  # a job's seeds are several: its failures are not re-run
            return []
        failing, passing = found
        return [QueuedRun(run.index, run.seed, check) for check in RERUNS
                for run in ([failing] if check.startswith(FAILING) else [passing])]

    def take(self) -> QueuedRun:
        if self._moved_run_due():
            self.moved = EarlyMoved.take(self, self._planned_place())
            return self.moved.queued
        if self._moved_planned_run_due():
            assert self.moved is not None and self.moved.again is not None
            self.moved.again_taken, self.moved.again = self.moved.again, None
            return self.moved.again_taken
        if self._planned_runs_left():
            if self._beside_due():
                return self._take_beside()
            if self.seed_window is not None:
                self._reseeded(self.seed_window.seeds_for(self.pending[0][0], list(self.started), len(self.pending)))
            index, seeds = self._start_next_planned()
            return QueuedRun(index, seeds[0], ranks=seeds if self.spec.is_multiprocess else ())
        if self.checks:
            return self.checks.pop(0)
        if self.control:
            return self.control.pop(0)
        return self._phase().take()

    @property
    def baseline_done(self) -> bool:
        return bool(self.tally.records)

    def finished(self) -> bool:
        return self.running == 0 and not self.startable()

    def measure(self, queued: QueuedRun) -> RunRecord | FactorResult:
        """One of the cell's runs (on a worker thread). A run that another process of this harness ran beside, at any
        moment (of its cell or another: a program can write into any cell's folder), says so (RunRecord.overlapped):
        an entry that appeared meanwhile and that no run's own account computed could be either's, and is charged to
        neither (harness/evidence/keys.py)."""
        beside = [False]
        with _LIVE_LOCK:
            if _LIVE:
                beside[0] = True
                for other in _LIVE.values():
                    other[0] = True
            _LIVE[id(beside)] = beside
        try:
            record = self._measure(queued)
        finally:
            with _LIVE_LOCK:
                del _LIVE[id(beside)]
        if isinstance(record, RunRecord) and beside[0]:
            record.overlapped = True
        return record

    def _measure(self, queued: QueuedRun) -> RunRecord | FactorResult:
        if self.moved is not None and queued is self.moved.queued:
            return self.moved.measure()
        if queued.beside:
            return self._beside_run(queued)
        if queued.factor is not None or queued.control:
            return self._phase().measure(queued)
        if self.spec.is_multiprocess:
            return self.measure_job(queued)
        if queued.check == SEED_CONTROL:
            return self._control_run(queued)
        if queued.check is not None:
            return self._recheck(queued)
        if self.folder is None:
            if self.beside is not None and queued.index == 1:
                return self.beside.first_run(lambda: self._first_run(queued))
            return self._first_run(queued)
        return self.measure_run(queued, self.folder)

    def measure_run(self, queued: QueuedRun, folder: FolderMode, cache_dir: Path | None = None,
                    name: str | None = None, program: Program | None = None,
                    variation: RunVariation | None = None, first_use: bool = False,
                    given_folder: Path | None = None) -> RunRecord:
        """One run: a fresh process with `queued`'s index and hash seed, and the cache entries that appeared
        meanwhile in `cache_dir` (default the cell's). `folder`: how a user's script gets that folder; `name`:
        the log's, for a run outside the plan; a factor's run (--vary) has its own `program` and `variation`;
        `first_use` (hook-only): the cell's folder given at JAX's first compilation when the script has set
        none by then (run 1's); `given_folder`: the folder the process is told, where it sees `cache_dir` at
        another folder's path (run 2 beside run 1: Environment.own_folder_run)."""
        runner, spec = self.runner, self.spec
        cache_dir = cache_dir or self.cache_dir
        index, seed = queued.index, queued.seed
        before = list_dir(cache_dir)
        log = self.log_dir / f"{name or f'run-{index:02d}-seed-{seed}'}.log"
        builtin = runner.repro.builtin
        env = process_env(spec, seed, runner.thresholds if not builtin else ThresholdMode.HARNESS)
        env.update(slot_env(spec.platform, runner.device_shares))
        record_file = script_settings_path(log)
        recorded = recorder_path(log)
        if not builtin:
            env[IR_DUMP_VAR] = str(ir_dump_dir(log).resolve())  # the run's cwd is the script's folder
            remove_path(recorded)  # a leftover (an earlier attempt's), or a link planted there: gone
            env.update(hook_env(record_file, runner.thresholds, folder, recorded.resolve(), first_use))
            env = merge_user_env(env, runner.env)
        devices_file = devices_path(log) if queued.index == 1 and name is None else None
        if devices_file is not None:  # run 1 says what JAX ran on (the start-up hook, at exit)
            remove_path(devices_file)
            env[DEVICES_VAR] = str(devices_file.resolve())
            env.setdefault("PYTHONPATH", str(startup_dir()))
        program = program or runner.program(spec)
        if variation is None:  # (an environment that varies nothing need not take the argument: Environment.run)
            outcome = runner.environment.run(program, env, given_folder or cache_dir, log, runner.timeout_s)
        else:
            outcome = runner.environment.run(program, env, given_folder or cache_dir, log, runner.timeout_s,
                                             variation=variation)
        added = sorted(list_dir(cache_dir) - before)
        reason = outcome.reason
        if not outcome.ok and not outcome.timed_out:
            reason = (program.module and missing_module(program.module, log)) or with_log_detail(reason, log)
        keys, note, tests, test_seconds, sources = read_run(log, spec.jax_version, outcome.ok,
                                                            None if builtin else recorded, program.module == "pytest")
        if not builtin:  # a pipe or a folder put into the run's IR dump is left out of the evidence: said here
            note = "; ".join(n for n in (note, irregular_entries(ir_dump_dir(log), "the run's IR dump")) if n)
        return RunRecord(index=index, seed=seed, exit_code=outcome.exit_code,
                         duration_s=round(outcome.duration_s, 3), new_entries=added,
                         timed_out=outcome.timed_out, reason=reason,
                         log=str(log.relative_to(self.results_root) if self.results_root else log),
                         script_cache=None if builtin else read_script_settings(record_file),
                         keys=keys, log_note=note, tests=tests, test_seconds=test_seconds,
                         devices=read_devices(devices_file), sources=sources)

    def measure_job(self, queued: QueuedRun) -> RunRecord:
        """One run of a multi-process cell: a job of a process per seed (harness/measure/multiprocess_run.py)."""
        runner = self.runner
        return measure_job(runner.environment, runner.program(self.spec), self.spec, queued.ranks, self.cache_dir,
                             self.log_dir, self.results_root, queued.index, runner.timeout_s, runner.env,
                             runner.thresholds, script=not runner.repro.builtin)

    def _start_next_planned(self) -> tuple[int, tuple[int, ...]]:
        """The next planned run (its index and seeds), taken off the plan and its seed noted as started."""
        index, seeds = self.pending.pop(0)
        self.started.append(seeds[0])
        return index, seeds

    def _planned_place(self) -> QueuedRun | None:
        """The next planned run, taken for the moved run (its seed as chosen when run 2 was taken), or None where
        the moved run has run 1's seed."""
        if not self._moved_takes_planned_run():
            return None
        index, seeds = self._start_next_planned()
        return QueuedRun(index, seeds[0], factor=Factor.CACHE_PATH, in_planned_place=True)

    def planned_run_ended(self, record: RunRecord, log: Path | None = None) -> None:
        """A planned run's record to the tally, and what it lowered (its `log`'s IR dump; default its own run
        log's) to the seed window; once (run 1's may come with run 2's beside it)."""
        if any(r is record for r in self.tally.records):
            return
        log = log or self.log_dir / f"run-{record.index:02d}-seed-{record.seed}.log"
        self.tally.add(record)
        if self.seed_window is not None:
            self.seed_window.run_ended(record.index, record.seed, ir_dump_dir(log))

    def _reseeded(self, later: list[int] | None) -> None:
        """The seeds of the runs not started yet, chosen from what the runs before them lowered (None: as they were)."""
        if later is not None:
            self.pending = [(index, (seed,)) for (index, _), seed in zip(self.pending, later)]

    def _first_run(self, queued: QueuedRun) -> RunRecord:
        """A user's script's first run tells how its runs get the folder, and is the cell's run 1 as well: it
        gets the folder only through the hook (as the script runs, its own order of things kept), and when
        the script has set none by JAX's first compilation, the hook sets the cell's folder then (first use),
        as the environment would. Run again only when the script set its own folder after that first
        compilation (its order matters then, jax#25768), or set none and failed or never reached the fallback (it
        may read the variable itself, before JAX's first compilation): the first attempt's log kept as
        `.first-use.log`."""
        record = self.measure_run(queued, FolderMode.HOOK, first_use=True)
        log = self.log_dir / f"run-{queued.index:02d}-seed-{queued.seed}.log"
        api = sets_own_folder(record.script_cache)
        given, after = first_use(script_settings_path(log))
        if api is None:
            self.folder = FolderMode.ENVIRONMENT
            self.folder_why = ("the script set no cache folder in code (run 1 told): the folder comes from "
                               "JAX_COMPILATION_CACHE_DIR")
            # (a run that failed after the fallback may have read the variable before it; a pytest session that ran
            # to its end with a failing test, others passing, read it as the passing tests did: it counts as run 1)
            if given and (record.ok or any(r is record for r in counted([record]))):
                return record
        else:
            self.folder, self.folder_why = FolderMode.HOOK, f"the script sets its cache folder in code ({api})"
            if not after:
                return record
        if self.beside is not None:  # run 2, beside this attempt, compared with entries no longer there
            self.beside.first_ran_again = True
        if log.exists():
            log.replace(log.with_suffix(".first-use.log"))
        for leftover in (script_settings_path(log), ir_dump_dir(log), recorder_path(log)):
            remove_path(leftover)
        for name in list_dir(self.cache_dir):  # what the first attempt wrote: run 1 starts from an empty folder
            remove_path(self.cache_dir / name)
        return self.measure_run(queued, self.folder)

    def _plan_control(self) -> list[QueuedRun]:
        """A later run's key moved at argument types the first run had (a user's program, one process): one run
        with the first run's own seed (harness/evidence/per_test.py reads it)."""
        if self.runner.repro.builtin or self.spec.is_multiprocess or self.tally.give_up is not None:
            return []  # (give_up: harness reduce's candidates, judged by their signature alone)
        first = control_baseline(self.tally.records)
        return [] if first is None else [QueuedRun(first.index, first.seed, SEED_CONTROL)]

    def _control_run(self, queued: QueuedRun) -> RunRecord:
        """The seed control: the first run's seed, and a fresh folder holding only the first run's entries at the
        cell's own folder's path (from JAX 0.4.36 until 0.11.0 the path is in every key): the cell's folder is
        set aside meanwhile and put back after, the control's kept beside it (`<folder>.seed-control`)."""
        aside = self.cache_dir.with_name(f"{self.cache_dir.name}.seed-control-aside")
        kept = self.cache_dir.with_name(f"{self.cache_dir.name}.seed-control")
        remove_path(aside)
        remove_path(kept)
        self.cache_dir.rename(aside)
        try:
            self.cache_dir.mkdir()
            first = next(r for r in self.tally.records if r.index == queued.index)
            for name in first.new_entries:
                source = aside / name
                if source.is_file() and not source.is_symlink():
                    shutil.copy2(source, self.cache_dir / name)
            return self.measure_run(queued, self.folder or FolderMode.ENVIRONMENT,
                                    name=f"seed-control-run-{queued.index:02d}-seed-{queued.seed}")
        finally:
            self.cache_dir.rename(kept)
            aside.rename(self.cache_dir)

    def _recheck(self, queued: QueuedRun) -> RunRecord:
        """A seed check's re-run, in a fresh cache folder of its own (as the cell's first run had)."""
        again = "" if queued.check in (FAILING, PASSING) else "-again"
        cache = self.cache_dir.with_name(f"{self.cache_dir.name}.seed-check-{queued.seed}{again}")
        remove_path(cache)
        cache.mkdir(parents=True)
        return self.measure_run(queued, self.folder or FolderMode.ENVIRONMENT, cache,
                                name=f"seed-check-run-{queued.index:02d}-seed-{queued.seed}{again}")

    def done(self, queued: QueuedRun, record: RunRecord | FactorResult) -> RunRecord | None:
        """Take a finished run; its record where it is one of the cell's planned runs (told as progress)."""
        if self.moved is not None and queued is self.moved.queued:
            assert isinstance(record, FactorResult)
            return self.moved.ended(record)
        if isinstance(record, FactorResult) or queued.control:
            self._phase().done(queued, record)
            return None
        if queued.check == SEED_CONTROL:
            self.control_record = record
            return None
        if queued.beside:
            return self._beside_done(queued, record)
        if queued.check is None:
            self.planned_run_ended(record, self.log_dir / f"run-{record.index:02d}-seed-{record.seed}.log")
            if self.moved is not None and queued is self.moved.again_taken:
                self.moved.control_ended(record)
            return record
        detail = "" if record.ok else (record.reason or f"exit code {record.exit_code}")
        self.rechecked[queued.check] = SeedRun(queued.seed, queued.index, record.ok, detail, record.log)
        return None

    # ---- run 2 beside run 1 (harness/measure/beside.py) ----

    def _beside_due(self) -> bool:
        """Run 2 may start now, beside run 1: it is planned so, and run 1 alone has started and not ended."""
        beside = self.beside
        return (beside is not None and not beside.taken and bool(self.pending)
                and self.pending[0][0] == BESIDE_INDEX and len(self.started) == 1 and self.running == 1
                and not self.tally.records)

    def _take_beside(self) -> QueuedRun:
        """Run 2 with the plan's seed as planned before any run (none chosen from run 1's orders: not read yet)."""
        assert self.beside is not None
        self.beside.taken = True
        index, seeds = self._start_next_planned()
        return QueuedRun(index, seeds[0], beside=True)

    def _beside_run(self, queued: QueuedRun) -> RunRecord:
        """Run 2 in its own empty folder at the cell folder's path, as run 1's first attempt runs (the folder
        through the hook, set at JAX's first compilation where the script set none), then compared by key with
        run 1's entries once run 1 has ended (BesideFirst.compare)."""
        beside = self.beside
        assert beside is not None
        own = beside.fresh_folder()
        program, given = self.runner.environment.own_folder_run(self.runner.program(self.spec), self.cache_dir, own)
        record = self.measure_run(queued, FolderMode.HOOK, own, program=program, first_use=True, given_folder=given)
        named = str(own.relative_to(self.results_root)) if self.results_root and own.is_relative_to(
            self.results_root) else str(own)
        log = self.log_dir / f"run-{queued.index:02d}-seed-{queued.seed}.log"

        def set_aside() -> None:  # its attempt kept to read (`.beside.log`), its other files gone
            if log.exists():
                log.replace(log.with_suffix(ATTEMPT_SUFFIX))
            for leftover in (script_settings_path(log), ir_dump_dir(log), recorder_path(log)):
                remove_path(leftover)
        # run 1 started before it and is stopped by the same timeout: waited for a little longer, never forever
        return beside.compare(record, named, set_aside, wait_s=2 * self.runner.timeout_s + 60)

    def _beside_done(self, queued: QueuedRun, record: RunRecord) -> RunRecord | None:
        """Run 2 ended: compared by key, it is tallied after run 1 (whose own end may be taken after it); else it
        runs again, first of the planned runs, in the cell's folder with a seed chosen from run 1's orders."""
        beside = self.beside
        assert beside is not None
        first = beside.first_record()
        if record.compared_by_key is None or first is None:
            self.pending.insert(0, (queued.index, (queued.seed,)))
            self.started.remove(queued.seed)
            if self.seed_window is not None:
                self.seed_window.beside_first = False
            return None
        self.planned_run_ended(first)
        self.planned_run_ended(record)
        return record

    def seed_check(self) -> SeedCheck | None:
        if {FAILING, PASSING} <= set(self.rechecked):
            again = tuple(self.rechecked[c] for c in RERUNS if c not in (FAILING, PASSING) and c in self.rechecked)
            return SeedCheck(self.rechecked[FAILING], self.rechecked[PASSING], again)
        return None

    def result(self, interrupted: bool = False) -> CellResult:
        """The finished cell (`finish_cell`) from everything measured: the runs, and beside them --vary's
        factors, the moved folder, the seed check and the plan."""
        runner = self.runner
        if not interrupted and self.seed_window is not None:  # (a probe is a process: none after Ctrl-C)
            self._reseeded(self.seed_window.give_all(list(self.started), len(self.pending)))
        phase = self.vary if interrupted else self._vary_phase()  # interrupted while its factors ran: what was judged
        return finish_cell(Measured(
            self.spec, self.tally, sorted(list_dir(self.cache_dir)), runner.environment.describe(), interrupted,
            thresholds=runner.thresholds, script=runner.script_run(self.spec, self.folder, self.folder_why),
            variation=phase.variation if phase is not None and runner.vary else None,
            moved_folder=phase.moved_folder if phase is not None else None,
            seed_check=None if interrupted else self.seed_check(), plan=self.plan,
            seed_control=self.control_record, read_cause=runner.read_cause,
            read_uncached=runner.read_uncached))


@dataclass
class VaryPhase:
    """--vary for one cell: after its own runs, one run per factor with the reference run's hash seed,
    one at a time (each sees the cache folder as the cell's runs left it), then a control run when a
    factor missed. What each run says is judged in harness/verdicts/factor_verdicts.py. The default check's moved
    folder is the cache-path factor's run made the same way, kept apart (`moved_folder`) so that it never
    changes the verdict."""

    cell: OpenCell
    reference: RunRecord | None
    variation: CellVariation
    verdict: Verdict  # of the cell's own runs
    todo: list[Factor] = field(default_factory=list)
    runs_made: int = 0
    control_taken: bool = False
    moved_only: bool = False  # the cache-path run is the moved folder's, not an explicit --vary's
    moved_folder: FactorResult | None = None

    @classmethod
    def begin(cls, cell: OpenCell, moved_early: FactorResult | None = None) -> VaryPhase:
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

    cell: OpenCell
    phase: VaryPhase
    queued: QueuedRun
    prepared: varying.FactorRun | FactorResult
    result: FactorResult | None = None
    again: QueuedRun | None = None  # its planned run, to be made in the cell's own folder
    again_taken: QueuedRun | None = None

    @classmethod
    def take(cls, cell: OpenCell, planned: QueuedRun | None = None) -> EarlyMoved:
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
    pending = iter(openers)
    opened: list[OpenCell | CellResult] = []  # by cell number: still open, or its result
    emitted = 0
    running: dict[Future[RunRecord | FactorResult], tuple[OpenCell, QueuedRun]] = {}
    exhausted = False
    slots = max(1, at_once)

    def emit_ready() -> None:
        nonlocal emitted
        while emitted < len(opened):
            ready = opened[emitted]
            if not isinstance(ready, CellResult):
                return
            on_result(ready)
            emitted += 1

    pool = ThreadPoolExecutor(slots, thread_name_prefix="run")

    def busy() -> int:  # slots taken; a job wider than the runs at once runs alone
        return sum(min(cell.slots, slots) for cell, _ in running.values())

    def fits(cell: OpenCell) -> bool:
        return busy() + min(cell.slots, slots) <= slots

    def open_cells() -> list[OpenCell]:
        return [c for c in opened if isinstance(c, OpenCell)]

    def drive() -> None:
        """Start runs and take finished ones until every cell is done (or, once `exhausted`, every open one)."""
        nonlocal exhausted
        while True:
            while busy() < slots:
                startable = [c for c in open_cells() if c.startable()]
                cell = next((c for c in startable if fits(c)), None)
                if cell is None and startable:
                    break  # a job waits for slots to free up
                if cell is None:
                    opener = None if exhausted else next(pending, None)
                    if opener is None:
                        exhausted = True
                        break
                    try:
                        opened.append(opener())
                    except Exception:  # a bug of the harness: finish the cells already open, then raise it
                        exhausted = True
                        drive()
                        raise
                    continue
                queued = cell.take()
                cell.running += 1
                running[pool.submit(cell.measure, queued)] = (cell, queued)
            for number, done_cell in enumerate(opened):
                if isinstance(done_cell, OpenCell) and done_cell.finished():
                    opened[number] = done_cell.result()
            emit_ready()
            if not running:
                if exhausted:
                    return
                continue
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                ran, queued = running.pop(future)
                record = future.result()  # a harness failure is raised here
                ran.running -= 1
                planned = ran.done(queued, record)
                if planned is not None and on_run:
                    on_run(ran.spec, planned, ran.tally.planned)

    try:
        drive()
    except KeyboardInterrupt:
        for cell in {id(c): c for c in open_cells()}.values():
            cell.runner.environment.interrupt()
        pool.shutdown(wait=True, cancel_futures=True)  # the runs cut short measured nothing: not kept
        for number, cut_short in enumerate(opened):
            if isinstance(cut_short, OpenCell):
                opened[number] = cut_short.result(interrupted=True)
        emit_ready()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
