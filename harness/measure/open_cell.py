"""A cell being measured (`OpenCell`): its folders, tally and seeds, which of its runs may start next, and each run
made (a fresh process, the cache folder listed before and after). See harness/measure/cell_runner.py for how its
runs follow one another."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.confidence import SeedPlan
from harness.core.files import remove_path
from harness.core.errors import GroupUnsupported
from harness.core.factors import Factor, RunVariation
from harness.measure.beside import ATTEMPT_SUFFIX, BESIDE_INDEX, BesideFirst, pairing_problem
from harness.measure.multiprocess_run import group_problem, measure_job
from harness.measure.parallelism import slot_env
from harness.core.platforms import describe
from harness.core.listing import list_dir, parse_name
from harness.core.model import CellResult, CellSpec
from harness.core.findings import FactorResult, SeedCheck, SeedRun
from harness.core.kinds import FolderMode, ThresholdMode, Verdict
from harness.core.runs import Program, ProgramKind, RunRecord
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import DEVICES_VAR
from harness.inputs.process_variables import (IR_DUMP_VAR, devices_path, read_devices, script_settings_path, hook_env, ir_dump_dir, merge_user_env, process_env)
from harness.core.bounded_read import irregular_entries
from harness.core.recorder import recorder_path
from harness.measure.run_logs import held_device, missing_module, read_run, with_log_detail
from harness.measure.seeds import Reseed, SeedWindow
from harness.verdicts.finish import Measured, finish_cell, with_plan
from harness.evidence.keys import counted
from harness.evidence.script_settings import compiled_without_the_folder, first_use, read_script_settings, sets_own_folder
from harness.evidence.misses import SEED_CONTROL
from harness.evidence.keys import controls_keys, next_control, observed_keys
from harness.verdicts.seed_check import FAILING, PASSING, RERUNS, candidates
from harness.verdicts.judge import Tally
from harness.verdicts.factor_verdicts import (reference_of, why_not_varied, without_planned_control)
from harness.measure.cell_settings import CellSettings, QueuedRun
from harness.measure.factor_phase import EarlyMoved, VaryPhase
from harness.measure.folder_watch import watched
from harness.measure.own_folder import SHARED, in_own_folder, mark_overlapped

# A cell's first runs go one at a time: the first is the baseline (it must run alone), and the second,
# with the seed that shows the axis names in the other order, settles a set-order regression (the cell
# stops there) or a cell that cached nothing. Only then do its planned runs overlap; meanwhile the free
# slots go to harness check's moved-folder run (OpenCell._moved_run_due), then to the next cell.
SETTLING_RUNS = 2


@dataclass
class OpenCell:
    """A cell being measured by `run_cells`: its runner, folders, tally and the runs it has yet to start."""

    runner: CellSettings
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
    # The cause controls (a later run's keys changed: harness/evidence/controls.py), one at a time: a run's seed
    # again, in a fresh folder with its entries, until what moved each changed key is decided
    control: list[QueuedRun] = field(default_factory=list)  # the next one, planned and not started
    control_running: bool = False
    # the next control as last planned, and the runs and controls it was planned from: planned again only when
    # either changed (startable is asked often)
    _control_plan: tuple[tuple[int, int], QueuedRun | None] | None = None
    # harness check's moved folder, begun as soon as run 1 has ended (beside run 2, see _moved_run_due): run 1's
    # orders are read (and the interpreter probed) when run 2 is taken, after it, so that the probe overlaps it.
    moved: EarlyMoved | None = None
    # A suite's run 2 beside its run 1 (harness/measure/beside.py); None: run 2 after run 1, in the cell's folder.
    beside: BesideFirst | None = None

    @classmethod
    def open(cls, runner: CellSettings, spec: CellSpec, seeds: Iterable[int | tuple[int, ...]], cache_dir: Path,
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
        if not self.control and not self.control_running and self.running == 0:
            self.control = self._plan_control()
        if self.control:
            return True
        if self._moved_planned_run_due():  # (no control to come: its planned run is decided now, before the phase)
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
            if self._control_to_come():
                return False  # decided once the control has ended: the cell may go on with its planned runs
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
            self.control_running = True
            return self.control.pop(0)
        return self._phase().take()

    def _control_to_come(self) -> bool:
        """A cause control is still to be made, or made and not ended: it may yet say that the key the cell
        stopped at is new input, and then the planned runs go on (Tally.stop_now)."""
        return bool(self.control) or self.control_running or bool(self._plan_control())

    @property
    def baseline_done(self) -> bool:
        return bool(self.tally.records)

    def finished(self) -> bool:
        return self.running == 0 and not self.startable()

    def measure(self, queued: QueuedRun) -> RunRecord | FactorResult:
        """One of the cell's runs (on a worker thread), `overlapped` where another of this harness's runs used its
        folder meanwhile (own_folder.SHARED)."""
        shared = self._shares_cell_folder(queued)
        with SHARED.using(self.cache_dir if shared else None) as beside:
            record = self._measure(queued)
        return mark_overlapped(record) if isinstance(record, RunRecord) and beside[0] else record

    def _own_folder(self, queued: QueuedRun) -> bool:
        """A planned run after the first gets a folder of its own at the cell folder's path where runs overlap and
        the environment can bind one there (harness/measure/own_folder.py)."""
        return (self.runner.at_once > 1 and queued.index > 1 and not self.spec.is_multiprocess
                and not self.runner.environment.own_folder_problem())

    def _shares_cell_folder(self, queued: QueuedRun) -> bool:
        """Whether the run's process works in the cell's folder itself (not one of its own)."""
        if queued.beside or queued.factor is not None or queued.control or (self.moved and queued is self.moved.queued):
            return False
        if queued.check is not None:
            return queued.check == SEED_CONTROL
        return self.spec.is_multiprocess or self.folder is None or not self._own_folder(queued)

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
        if self._own_folder(queued):
            return self._own_folder_run(queued, self.folder)
        return self.measure_run(queued, self.folder)

    def _own_folder_run(self, queued: QueuedRun, folder: FolderMode) -> RunRecord:
        """A planned run in a folder of its own bound at the cell folder's path (harness/measure/own_folder.py)."""
        return in_own_folder(self.cache_dir, queued.index, self.runner.environment, self.runner.program(self.spec),
                             lambda own, program, told: self.measure_run(queued, folder, own, program=program,
                                                                        given_folder=told))

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
        # (an environment that varies nothing need not take the argument: Environment.run); the folder watched as it goes
        outcome, seen = watched(cache_dir, lambda: runner.environment.run(program, env, given_folder or cache_dir, log,
            runner.timeout_s, **({} if variation is None else {"variation": variation})))
        added = sorted(list_dir(cache_dir) - before)
        reason = outcome.reason
        if not outcome.ok and not outcome.timed_out:
            reason = (program.module and missing_module(program.module, log)) or with_log_detail(reason, log)
            reason = held_device(reason, log, describe(spec.platform).sees_gpus)
        keys, note, tests, test_seconds, sources = read_run(log, spec.jax_version, outcome.ok,
                                                            None if builtin else recorded, program.kind is ProgramKind.PYTEST)
        if not builtin:  # a pipe or a folder put into the run's IR dump is left out of the evidence: said here
            note = "; ".join(n for n in (note, irregular_entries(ir_dump_dir(log), "the run's IR dump")) if n)
        return RunRecord(index=index, seed=seed, exit_code=outcome.exit_code,
                         duration_s=round(outcome.duration_s, 3), new_entries=added,
                         timed_out=outcome.timed_out, reason=reason,
                         log=str(log.relative_to(self.results_root) if self.results_root else log),
                         script_cache=None if builtin else read_script_settings(record_file),
                         keys=keys, log_note=note, tests=tests, test_seconds=test_seconds,
                         devices=read_devices(devices_file), sources=sources, seen=seen)

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
            if given and (record.ok or any(r is record for r in counted([record]))) and not compiled_without_the_folder(record):
                return record  # (a child of it without the hook had no folder: it runs again, as the later runs go)
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
        """The next cause control, while a later run's keys changed and what moved them is not decided to the bound
        (harness/evidence/controls.py): a run's own seed again (a user's program, one process); [] when none is
        needed, or when the runs cannot be repeated so (the built-in repro, a job, harness reduce's candidates)."""
        if self.runner.repro.builtin or self.spec.is_multiprocess or self.tally.give_up is not None:
            return []  # (give_up: harness reduce's candidates, judged by their signature alone)
        made = (len(self.tally.records), len(self.tally.controls))
        if self._control_plan is None or self._control_plan[0] != made:
            index = next_control(observed_keys(self.tally.records), controls_keys(self.tally.controls))
            run = next((r for r in self.tally.records if r.index == index), None)
            self._control_plan = (made, None if run is None else QueuedRun(run.index, run.seed, SEED_CONTROL))
        planned = self._control_plan[1]
        return [] if planned is None else [planned]

    def _control_run(self, queued: QueuedRun) -> RunRecord:
        """A cause control: a run's seed, and a fresh folder holding only that run's entries (those it wrote and those
        it hit) at the cell's own folder's path (from JAX 0.4.36 until 0.11.0 the path is in every key): the cell's
        folder is set aside meanwhile and put back after; the first control's folder is kept beside it
        (`<folder>.seed-control`), the others' removed (their runs' records hold what they computed)."""
        made = len(self.tally.controls) + 1
        aside = self.cache_dir.with_name(f"{self.cache_dir.name}.seed-control-aside")
        kept = self.cache_dir.with_name(f"{self.cache_dir.name}.seed-control" + (f"-{made}" if made > 1 else ""))
        remove_path(aside)
        remove_path(kept)
        self.cache_dir.rename(aside)
        try:
            self.cache_dir.mkdir()
            repeated = next(r for r in self.tally.records if r.index == queued.index)
            computed = {k.key for k in repeated.keys.keys} if repeated.keys is not None else set()
            for name in list_dir(aside):
                source = aside / name
                entry = parse_name(name)
                if ((name in repeated.new_entries or (entry is not None and entry.key in computed))
                        and source.is_file() and not source.is_symlink()):
                    shutil.copy2(source, self.cache_dir / name)
            again = f"-{made}" if made > 1 else ""
            return self.measure_run(queued, self.folder or FolderMode.ENVIRONMENT,
                                    name=f"seed-control{again}-run-{queued.index:02d}-seed-{queued.seed}")
        finally:
            self.cache_dir.rename(kept)
            aside.rename(self.cache_dir)
            if made > 1:
                remove_path(kept)

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
            # (the tally's: where the controls say the key the cell stopped at is new input, the planned runs go on)
            self.tally.controls.append(record)
            self.control_running = False
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
            controls=tuple(self.tally.controls), read_cause=runner.read_cause,
            read_uncached=runner.read_uncached))
