"""How many GPUs a cuda sweep's runs can see, asked once before the sweep instead of failing every run.

The host asks `nvidia-smi -L`; the docker backend asks a container with the GPUs requested, the way
its runs get them (see docker/gpu_probe.py). The judgement is pure.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any
from collections.abc import Mapping

from harness.core.hostinfo import (GPU_HOLDERS_QUERY, NVIDIA_SMI_QUERY, parse_cuda_version, parse_gpu_holders,
                                   parse_nvidia_smi)
from harness.core.kinds import Platform
from harness.core.platforms import DeviceProbe, describe, tpu_chips

_GPU_LINE = re.compile(r"^GPU \d+:", re.MULTILINE)  # `nvidia-smi -L`: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)"
TIMEOUT_S = 60
HOST_ADVICE = "check the NVIDIA driver (`nvidia-smi -L`) and CUDA_VISIBLE_DEVICES"
CONTAINER_ADVICE = ("check that the NVIDIA Container Toolkit is installed (and dockerd restarted since) and that "
                    "`nvidia-smi -L` lists the GPUs on the host")


@dataclass(frozen=True)
class GpuCount:
    visible: int  # GPUs seen (0 when they could not be listed at all)
    counted_by: str  # where they were counted, for the message
    problem: str = ""  # why they could not be listed (no nvidia-smi, no GPU runtime...)
    advice: str = HOST_ADVICE  # what to check




def parse_gpu_list(text: str) -> int:
    """GPUs in `nvidia-smi -L` output (pure)."""
    return len(_GPU_LINE.findall(text))


def shortfall(count: GpuCount, needed: int, source: str = "device_count", what: str = "cuda needs {n} GPU(s)") -> str | None:
    """One line saying why an accelerator sweep cannot run here, or None when enough devices are visible (pure);
    `what`: the platform and its devices (`{n}` the number needed)."""
    if count.visible >= needed:
        return None
    seen = f"{count.counted_by} lists {count.visible}" if not count.problem else f"{count.counted_by}: {count.problem}"
    return f"{source}: platform {what.format(n=needed)}, but {seen}; {count.advice}"


TPU_ADVICE = "check that this is a TPU host (`ls /dev/accel* /dev/vfio`) and TPU_VISIBLE_CHIPS"


def host_chips(chips: list[str] | None = None, environ: Mapping[str, str] = os.environ) -> GpuCount:
    """The TPU chips a process on this host sees: its device nodes, narrowed by TPU_VISIBLE_CHIPS."""
    found = tpu_chips() if chips is None else chips
    narrowed = environ.get("TPU_VISIBLE_CHIPS")
    counted_by = "/dev/accel*, /dev/vfio/N" + (f" with TPU_VISIBLE_CHIPS={narrowed!r}" if narrowed is not None else "")
    visible = len(found) if narrowed is None else min(len(found), len([c for c in narrowed.split(",") if c.strip()]))
    return GpuCount(visible, counted_by, "" if found else "no TPU device node here", TPU_ADVICE)


def within_visible_devices(listed: int, cuda_visible_devices: str | None) -> int:
    """The GPUs a process sees when CUDA_VISIBLE_DEVICES (which runs on the host inherit, and
    nvidia-smi ignores) narrows the listed ones (pure)."""
    if cuda_visible_devices is None:
        return listed
    return min(listed, len([d for d in cuda_visible_devices.split(",") if d.strip()]))


def host_gpus(nvidia_smi: str | None = None, environ: Mapping[str, str] = os.environ) -> GpuCount:
    """The GPUs a process on this host sees: `nvidia-smi -L`, narrowed by CUDA_VISIBLE_DEVICES."""
    narrowed = environ.get("CUDA_VISIBLE_DEVICES")
    counted_by = "nvidia-smi -L" + (f" with CUDA_VISIBLE_DEVICES={narrowed!r}" if narrowed is not None else "")
    smi = nvidia_smi or shutil.which("nvidia-smi")
    if not smi:
        return GpuCount(0, counted_by, "nvidia-smi is not on PATH (no NVIDIA driver here?)")
    try:
        proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return GpuCount(0, counted_by, f"could not run it ({exc})")
    if proc.returncode != 0:
        lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        return GpuCount(0, counted_by, f"exit code {proc.returncode}" + (f": {lines[-1]}" if lines else ""))
    return GpuCount(within_visible_devices(parse_gpu_list(proc.stdout), narrowed), counted_by)


def _nvidia_smi(*args: str) -> str | None:
    """nvidia-smi's answer, or None where it is absent or fails (never fails the caller)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        proc = subprocess.run([smi, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def accelerator_facts() -> dict[str, Any]:
    """The host's GPUs (name and memory), driver and the CUDA it runs, for the report (collected when a sweep
    starts; never fails one)."""
    listed = _nvidia_smi(*NVIDIA_SMI_QUERY)
    if listed is None:
        return {}
    facts = parse_nvidia_smi(listed)
    cuda = driver_cuda_version()
    return {**facts, "cuda_version": cuda} if facts and cuda else facts


@functools.cache
def driver_cuda_version() -> str | None:
    """The CUDA version this host's driver runs (`13.0`, from nvidia-smi's header); None without a driver. Asked
    once: the driver does not change under a sweep."""
    header = _nvidia_smi()
    return parse_cuda_version(header) if header is not None else None


def driver_cuda_for(platform: Platform) -> str | None:
    """The driver's CUDA where `platform`'s install depends on it (its GPUs'); None elsewhere, nothing asked."""
    return driver_cuda_version() if describe(platform).probe == DeviceProbe.GPUS else None


def gpu_memory_holders() -> list[str]:
    """The processes holding GPU memory now (`pid 1234 python, 104000 MiB`); [] where none is or nvidia-smi
    cannot say."""
    return parse_gpu_holders(_nvidia_smi(*GPU_HOLDERS_QUERY) or "")
