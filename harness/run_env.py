"""What a run gets besides its script (pure): the environment variables and arguments of one run.

The runner sets them up for every run, and the report's "Reproduce with" commands are written from the
same functions, so what a JAX developer pastes cannot drift from what the harness measured.
"""

from __future__ import annotations

from pathlib import Path

from harness.config import Repro
from harness.model import CellSpec, Platform


def process_env(spec: CellSpec, seed: int) -> dict[str, str]:
    """What every run needs so that any script, unmodified, writes to the persistent cache."""
    env = {
        "PYTHONHASHSEED": str(seed),
        "PYTHONUNBUFFERED": "1",
        # The defaults skip small, fast compilations: this repro's would never be cached.
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
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


def repro_args(repro: Repro, spec: CellSpec) -> list[str]:
    if not repro.takes_mesh or spec.mesh is None:
        return []
    return ["--mesh-shape", ",".join(map(str, spec.mesh.shape)),
            "--axis-names", ",".join(spec.mesh.axis_names)]
