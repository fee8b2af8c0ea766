"""What a run gets besides its script (pure): the environment variables and arguments of one run.

The runner sets them up for every run, and the report's "Reproduce with" commands are written from the
same functions, so what a JAX developer pastes cannot drift from what the harness measured.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.inputs.config import RESERVED_VARIABLES, Repro
from harness.core.jaxlog import LOG_ENV
from harness.core.model import CellSpec
from harness.core.kinds import FolderMode, ThresholdMode
from harness.core.platforms import describe
from harness.core.recorder import recorder_key
from harness.core.runs import DeviceFacts, Program, RunCommand, read_device_facts
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import FOLDER_VAR, RECORD_VAR, THRESHOLDS_VAR
from harness.inside.startup.jax_cache_harness_recorder import FALLBACK_VAR, FIRST_USE, RECORDER_KEY_VAR, RECORDER_VAR

# The harness's thresholds: every compiled module is cached. JAX's defaults skip small, fast
# compilations (a compile of 2 s on a GPU takes 20 ms on a CPU): this repro's would never be cached.
ZERO_THRESHOLDS = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


def process_env(spec: CellSpec, seed: int, thresholds: ThresholdMode = ThresholdMode.HARNESS) -> dict[str, str]:
    """What every run needs so that any script, unmodified, writes to the persistent cache; with
    `thresholds` SCRIPT, JAX's default thresholds apply where the script sets none."""
    env = {
        "PYTHONHASHSEED": str(seed),
        "PYTHONUNBUFFERED": "1",
        **(ZERO_THRESHOLDS if thresholds == ThresholdMode.HARNESS else {}),
        # JAX's own account of each key (its components, hit or miss, why not written), read after the run.
        **LOG_ENV,
    }
    env.update(describe(spec.platform).run_env(spec.device_count))
    return env


# A user's script does not print its lowered module as the built-in repro does; JAX's own IR dump
# (in every release this harness covers) writes each compiled module, the evidence for a report.
IR_DUMP_VAR = "JAX_DUMP_IR_TO"


def ir_dump_dir(log_path: Path) -> Path:
    """Where a run's IR dump goes: beside its log, so results folders stay self-contained."""
    return log_path.with_suffix(".ir")


def run_log(dump_dir: Path) -> Path:
    """The run's log beside its IR dump folder (`ir_dump_dir`'s inverse)."""
    return dump_dir.with_suffix(".log")


def script_settings_path(log_path: Path) -> Path:
    """Where the start-up hook records a user's script's own cache settings: beside the run's log."""
    return log_path.with_suffix(".cache.jsonl")


def devices_path(log_path: Path) -> Path:
    """Where the start-up hook records the devices JAX reported in a run: beside the run's log."""
    return log_path.with_suffix(".devices.json")


def read_devices(path: Path | None) -> DeviceFacts | None:
    """The devices a run recorded (None: not asked for, or the run never opened them)."""
    if path is None:
        return None
    try:
        return read_device_facts(path.read_text(errors="replace")[:100_000])
    except OSError:
        return None


def hook_env(record: Path, thresholds: ThresholdMode, folder: FolderMode = FolderMode.ENVIRONMENT,
             recorder: Path | None = None, first_use: bool = False) -> dict[str, str]:
    """What a user's script's run needs so that its own cache settings are taken over and recorded:
    the start-up hook's folder first on PYTHONPATH (Python then imports its sitecustomize), the file it
    records to, whose thresholds apply, and whether the cell's folder reaches JAX only through the
    script's own setting (FolderMode.HOOK: the hook takes it out of the environment at start-up).
    `recorder`: the file the in-process recorder writes JAX's cache messages to (harness/core/recorder.py).
    `first_use` (with FolderMode.HOOK): when the script has set no folder by JAX's first look for its cache,
    the hook sets the cell's folder then, so that one run both tells how the script sets its folder and caches.
    Host paths: the docker backend maps them into the container."""
    env = {"PYTHONPATH": str(startup_dir()), RECORD_VAR: str(record), THRESHOLDS_VAR: str(thresholds),
           FOLDER_VAR: str(folder)}
    if recorder is not None:
        env[RECORDER_VAR] = str(recorder)
        env[RECORDER_KEY_VAR] = recorder_key(recorder)
    if first_use and folder == FolderMode.HOOK:
        env[FALLBACK_VAR] = FIRST_USE
    return env


def repro_args(repro: Repro, spec: CellSpec) -> list[str]:
    if not repro.takes_mesh or spec.mesh is None:
        return []
    return ["--mesh-shape", ",".join(map(str, spec.mesh.shape)),
            "--axis-names", ",".join(spec.mesh.axis_names)]


def program_for(repro: Repro, spec: CellSpec, args: tuple[str, ...] = (), cwd: Path | None = None) -> Program:
    """What each run of a cell starts: the repro or script with its arguments, or the module, in the
    working folder `cwd` (the script's own folder by default)."""
    args = (*repro_args(repro, spec), *args)
    if repro.module:
        return Program(None, args, cwd, module=repro.module)
    return Program(repro.path, args, cwd)


def merge_user_env(env: dict[str, str], user: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The run's variables with the user's additions: XLA_FLAGS joined with the harness's device-count
    flag, PYTHONPATH after the harness's hook folder; the names the harness sets are refused earlier
    (config.RESERVED_VARIABLES)."""
    out = dict(env)
    for name, value in user:
        assert name not in RESERVED_VARIABLES, name
        if name == "XLA_FLAGS":
            out[name] = " ".join(v for v in (value, env.get(name)) if v)
        elif name == "PYTHONPATH":
            out[name] = os.pathsep.join(v for v in (env.get(name), value) if v)
        else:
            out[name] = value
    return out


def run_command(program: Program, env: dict[str, str], user: tuple[tuple[str, str], ...]) -> RunCommand:
    """What the report shows of a cell's runs: the interpreter's arguments, the user's variables as the
    runs got them (a merged XLA_FLAGS in full), the working folder."""
    shown = {name: env[name] if name == "XLA_FLAGS" else value for name, value in user}
    return RunCommand(tuple(program.argv()), shown, str(program.workdir))
