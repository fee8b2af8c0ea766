"""What a run gets besides its script (pure): the environment variables and arguments of one run.

The runner sets them up for every run, and the report's "Reproduce with" commands are written from the
same functions, so what a JAX developer pastes cannot drift from what the harness measured.
"""

from __future__ import annotations

from pathlib import Path

from harness.config import Repro
from harness.jaxlog import LOG_ENV
from harness.model import CellSpec, Platform, ThresholdMode
from harness.startup import STARTUP_DIR
from harness.startup.jax_cache_harness_hook import RECORD_VAR, THRESHOLDS_VAR


def process_env(spec: CellSpec, seed: int) -> dict[str, str]:
    """What every run needs so that any script, unmodified, writes to the persistent cache."""
    env = {
        "PYTHONHASHSEED": str(seed),
        "PYTHONUNBUFFERED": "1",
        # The defaults skip small, fast compilations: this repro's would never be cached.
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        # JAX's own account of each key (its components, hit or miss, why not written), read after the run.
        **LOG_ENV,
    }
    if spec.platform == Platform.CPU:
        env["JAX_PLATFORMS"] = "cpu"
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={spec.device_count}"
    elif spec.platform == Platform.CUDA:
        env["JAX_PLATFORMS"] = "cuda"
    return env


# A user's script does not print its lowered module as the built-in repro does; JAX's own IR dump
# (in every release this harness covers) writes each compiled module, the evidence for a report.
IR_DUMP_VAR = "JAX_DUMP_IR_TO"


def ir_dump_dir(log_path: Path) -> Path:
    """Where a run's IR dump goes: beside its log, so results folders stay self-contained."""
    return log_path.with_suffix(".ir")


def cache_record_path(log_path: Path) -> Path:
    """Where the start-up hook records a user's script's own cache settings: beside the run's log."""
    return log_path.with_suffix(".cache.jsonl")


def hook_env(record: Path, thresholds: ThresholdMode) -> dict[str, str]:
    """What a user's script's run needs so that its own cache settings are taken over and recorded:
    the start-up hook's folder first on PYTHONPATH (Python then imports its sitecustomize), the file it
    records to, and whose thresholds apply. Host paths: the docker backend maps them into the container."""
    return {"PYTHONPATH": str(STARTUP_DIR), RECORD_VAR: str(record), THRESHOLDS_VAR: str(thresholds)}


def repro_args(repro: Repro, spec: CellSpec) -> list[str]:
    if not repro.takes_mesh or spec.mesh is None:
        return []
    return ["--mesh-shape", ",".join(map(str, spec.mesh.shape)),
            "--axis-names", ",".join(spec.mesh.axis_names)]
