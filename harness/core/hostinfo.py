"""Facts of the measuring host, for the report, read purely: `nvidia-smi`'s answer (asked by
harness/environments/gpus.py) and the Slurm job's variables. A host without nvidia-smi simply has no
such facts."""

from __future__ import annotations

import os
import re
from typing import Any
from collections.abc import Mapping

NVIDIA_SMI_QUERY = ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]


def parse_nvidia_smi(output: str) -> dict[str, Any]:
    """`name, driver, memory` lines -> {"gpus": [...], "driver_version": ...} (pure)."""
    gpus, drivers = [], set()
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0]:
            continue
        gpus.append(f"{parts[0]} ({parts[2]})" if len(parts) > 2 and parts[2] else parts[0])
        drivers.add(parts[1])
    if not gpus:
        return {}
    return {"gpus": gpus, "driver_version": ", ".join(sorted(drivers))}


# `nvidia-smi`'s header: "| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    CUDA Version: 13.0 |" (the newest
# CUDA the driver runs; no --query-gpu field says it on every driver).
_CUDA_VERSION_RE = re.compile(r"CUDA Version\s*:\s*([0-9]+(?:\.[0-9]+)*)")


def parse_cuda_version(output: str) -> str | None:
    """The CUDA version `nvidia-smi` says the driver runs (`13.0`), or None where it says none (pure)."""
    found = _CUDA_VERSION_RE.search(output)
    return found.group(1) if found else None


# The processes that hold a GPU's memory, as nvidia-smi lists them: "1234, /usr/bin/python3, 104000 MiB".
GPU_HOLDERS_QUERY = ["--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"]


def parse_gpu_holders(output: str) -> list[str]:
    """nvidia-smi's compute processes -> `pid 1234 python3, 104000 MiB` each (pure)."""
    out = []
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            out.append(f"pid {parts[0]} {parts[1].rsplit('/', 1)[-1]}, {parts[2]}")
    return out


# The JAX CUDA plugin's distributions, newest CUDA first (a --backend local interpreter's, or an image's).
JAX_CUDA_PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin")


def jax_cuda_plugin(distributions: Mapping[str, str]) -> str | None:
    """`jax-cuda13-plugin 0.11.2`: the plugin an interpreter has among its distributions (name -> version)."""
    return next((f"{name} {distributions[name]}" for name in JAX_CUDA_PLUGINS if name in distributions), None)


def tpu_facts(chips: int, environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """A TPU host's own facts ({} with no chip): its chips (device nodes) and the accelerator type a TPU VM sets
    in TPU_ACCELERATOR_TYPE (`v5litepod-4`: the slice's, not this host's chip count)."""
    if not chips:
        return {}
    kind = environ.get("TPU_ACCELERATOR_TYPE", "").strip()
    return {"tpu_chips": chips, **({"tpu_accelerator_type": kind} if kind else {})}


# Set by Slurm in a job's environment: which job (and array task) measured these results.
_SLURM_VARIABLES = {"slurm_job_id": "SLURM_JOB_ID", "slurm_array_job_id": "SLURM_ARRAY_JOB_ID",
                    "slurm_array_task_id": "SLURM_ARRAY_TASK_ID", "slurm_node": "SLURMD_NODENAME"}


def scheduler_facts(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The Slurm job this process runs in ({} outside Slurm), so `sacct -j` can find it later."""
    return {key: environ[var] for key, var in _SLURM_VARIABLES.items() if environ.get(var)}
