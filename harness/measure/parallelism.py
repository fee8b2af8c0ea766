"""How many runs at once (pure, but for reading the cores this process may use).

`--jobs auto` (the default) gives CPU-simulated cells one run per core: every run is a fresh
interpreter that spends its time in `import jax` and one compile on one core, so cores are the limit.
A `cuda` (or `auto`-platform) cell stays at one run at a time unless the user asks: each process would
claim most of every GPU's memory (JAX preallocates it), so a second one fails or thrashes.
A cell never uses more than the runs it can still make (the scheduler only starts pending runs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.core.kinds import Platform


@dataclass(frozen=True)
class RunsAtOnce:
    """The runs at once of a sweep, and why that number."""

    count: int
    why: str

    def line(self) -> str:
        return f"jobs: {self.count} ({self.why})"


def usable_cores() -> int:
    """The cores this process may run on (a Slurm task's or container's cpuset, not the whole node)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not every platform has affinity
        return max(1, os.cpu_count() or 1)


def choose_runs_at_once(requested: int | None, platform: Platform, cores: int) -> RunsAtOnce:
    """`requested` None is `--jobs auto`."""
    if requested is not None:
        return RunsAtOnce(requested, "--jobs")
    if platform == Platform.CPU:
        return RunsAtOnce(max(1, cores), f"auto: {cores} core(s) here, cpu cells")
    return RunsAtOnce(1, f"auto: {platform} cells run one at a time (each run would claim most of the GPU memory; "
                   f"--jobs N to overlap them)")
