"""How many runs at once (pure, but for reading the cores this process may use), and which devices each gets.

`--jobs auto` (the default) gives CPU-simulated cells one run per core: every run is a fresh
interpreter that spends its time in `import jax` and one compile on one core, so cores are the limit.
On an accelerator each run must have its own devices (harness/core/platforms.py: Sharing): a TPU chip admits one
process at a time (a second fails on libtpu's lockfile), and a process claims most of every GPU's memory it sees
(JAX preallocates it). When the host has n devices and a cell needs k, n//k runs go at once, each told its own
(TPU_VISIBLE_CHIPS and the process bounds, or CUDA_VISIBLE_DEVICES); otherwise one at a time, and on a TPU
`--jobs N` is capped at that too: the harness never puts two processes on one chip. An `auto`-platform cell
stays at one run at a time unless the user asks. A cell never uses more than the runs it can still make.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from harness.core.kinds import Platform
from harness.core.platforms import Sharing, describe, share_env

@dataclass(frozen=True)
class RunsAtOnce:
    """The runs at once of a sweep, and why that number."""

    count: int
    why: str
    # Each slot's own devices (device indices), slot i the i-th run thread's; () when runs need not be told.
    shares: tuple[tuple[int, ...], ...] = ()

    def unshared(self) -> RunsAtOnce:
        """For a command that does not give each run its own devices (bisect, reduce): one at a time wherever
        the runs would need them."""
        if not self.shares:
            return self
        return RunsAtOnce(1, f"{self.why}; one at a time: this command does not give each run its own devices")

    def line(self) -> str:
        return f"jobs: {self.count} ({self.why})"


def usable_cores() -> int:
    """The cores this process may run on (a Slurm task's or container's cpuset, not the whole node)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not every platform has affinity
        return max(1, os.cpu_count() or 1)


# JAX's GPU memory settings (docs/gpu_memory_allocation in JAX): each process preallocates this share of every GPU
# it sees at its first operation, unless preallocation is off or the platform allocator allocates on demand.
GPU_PREALLOCATED = 0.75


def gpu_runs_per_device(environ: dict[str, str] | None = None) -> int | None:
    """How many processes fit on one GPU with the memory settings the runs inherit: 1 with JAX's default (75%),
    `1 // XLA_PYTHON_CLIENT_MEM_FRACTION` when that is set, None (no bound the harness can know) where
    XLA_PYTHON_CLIENT_PREALLOCATE=false or XLA_PYTHON_CLIENT_ALLOCATOR=platform."""
    env = os.environ if environ is None else environ
    if env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").strip().lower() in ("false", "0") or \
            env.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").strip().lower() == "platform":
        return None
    try:
        fraction = float(env.get("XLA_PYTHON_CLIENT_MEM_FRACTION", GPU_PREALLOCATED))
    except ValueError:
        fraction = GPU_PREALLOCATED
    return max(1, int(1 // fraction)) if fraction > 0 else 1


def choose_runs_at_once(requested: int | None, platform: Platform, cores: int, devices_here: int = 0,
                        devices_per_run: int = 1, runs_per_device: int | None = 1) -> RunsAtOnce:
    """`requested` None is `--jobs auto`; `devices_here`: the devices the platform's probe counted on this host
    (0: not counted), `devices_per_run` the cell's device_count; `runs_per_device`: the processes that fit on
    one device at once (None: no bound known: the user's --jobs is kept), where the platform's devices admit
    one process (exclusive)."""
    spec = describe(platform)
    sharing = spec.devices.sharing
    if sharing == Sharing.CORES:
        if requested is not None:
            return RunsAtOnce(requested, "--jobs")
        return RunsAtOnce(max(1, cores), f"auto: {cores} core(s) here, {platform} cells")
    fit = devices_here // devices_per_run if sharing == Sharing.SPLIT and devices_per_run > 0 else 0
    shares = tuple(tuple(range(i * devices_per_run, (i + 1) * devices_per_run)) for i in range(fit))
    here = f"{devices_here} {spec.devices.unit} here, {devices_per_run} a run"
    if requested is not None:
        if spec.devices.exclusive and runs_per_device is not None and requested > max(1, fit) * runs_per_device:
            # Never two processes on one device unless they fit: the second's failure would be blamed on the program.
            capped = max(1, fit) * runs_per_device
            fits = f"; {runs_per_device} fit on one by the memory settings" if runs_per_device > 1 else ""
            return RunsAtOnce(capped, f"--jobs {requested} capped: {spec.devices.alone_because}; {here}{fits}",
                              shares if capped <= fit else ())
        return RunsAtOnce(requested, "--jobs", shares if requested <= fit else ())
    if fit >= 2:
        return RunsAtOnce(fit, f"auto: {here}, each run its own ({spec.devices.visible_var})", shares)
    counted = f"; {here}" if devices_here else ""
    return RunsAtOnce(1, f"auto: {platform} cells run one at a time ({spec.devices.alone_because}{counted}; "
                         f"--jobs N to overlap them)" if not spec.devices.exclusive else
                      f"auto: {platform} cells run one at a time ({spec.devices.alone_because}{counted})")


def slot_env(platform: Platform, shares: tuple[tuple[int, ...], ...]) -> dict[str, str]:
    """The variables that give the run on this thread its slot's devices: a slot is a run thread
    (harness/measure/cell_schedule.py's pool names them `run_<i>`), which runs one process at a time."""
    if not shares:
        return {}
    number = threading.current_thread().name.rpartition("_")[2]
    slot = int(number) % len(shares) if number.isdigit() else 0
    return share_env(platform, shares[slot], slot, os.environ.get(describe(platform).devices.visible_var))
