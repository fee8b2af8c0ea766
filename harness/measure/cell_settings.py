"""How a cell's runs are made (`CellSettings`: the environment, the program as its author runs it, the factors
varied) and one run of an open cell as it waits to start (`QueuedRun`): what every part of a cell's measurement
reads (open_cell.py, factor_phase.py, cell_schedule.py, cell_runner.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.inputs.config import Repro
from harness.environments.base import Environment
from harness.core.factors import Factor
from harness.core.model import CellSpec
from harness.core.findings import FactorResult
from harness.core.kinds import FolderMode, ThresholdMode
from harness.core.runs import Program, RunRecord
from harness.inputs.process_variables import (merge_user_env, process_env,
                             program_for, run_command)
from harness.verdicts.finish import CauseReader, ScriptRun, UncachedReader

# Runs are told about as they finish: (cell, record, runs planned).
OnRun = Callable[[CellSpec, RunRecord, int], None]
# --vary: each factor's result as it is judged.
OnFactor = Callable[[CellSpec, FactorResult], None]


@dataclass
class CellSettings:
    """How a cell's runs are made (the environment, the program as its author runs it, the factors varied): what
    every part of a cell's measurement reads. CellRunner (harness/measure/cell_runner.py) is these settings with
    `run`."""

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
