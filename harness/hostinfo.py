"""Accelerator facts of the measuring host, for the report: GPUs and the NVIDIA driver.

Collected when a sweep starts (a report may be rendered later, elsewhere). Never fails a sweep:
a host without nvidia-smi simply has no such facts.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

_QUERY = ["--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]


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


def accelerator_facts() -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    try:
        proc = subprocess.run([smi, *_QUERY], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_nvidia_smi(proc.stdout) if proc.returncode == 0 else {}
