"""What each process of a multi-process run (a job) gets (pure): its rank, its hash seed, its share of the
devices and where the job's coordinator listens.

How a user's unmodified script joins the job: it calls `jax.distributed.initialize()` as it would on a
cluster, and the harness's start-up hook (harness/inside/startup) fills in what the call leaves out from
HARNESS_JOB_* variables. Chosen over faking a cluster's variables (SLURM_*, OMPI_*) for JAX's own
auto-detection: those would collide with a real allocation when the harness itself runs under Slurm
(`harness submit`), each release detects clusters a little differently, and the Slurm port is derived from
the job id (two jobs at once would need two fake ids). The hook wraps one function that every release
since 0.4.26 has with the same three leading parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.core.model import CellSpec
from harness.core.kinds import ThresholdMode
from harness.core.platforms import describe
from harness.inputs.process_variables import process_env
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR

# Collectives between processes on the CPU: gloo. JAX's default before 0.5.0 is none (a cross-process
# collective then fails); the option is ignored by releases that lack it.
CPU_COLLECTIVES = {"JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo"}


@dataclass(frozen=True)
class GroupPlan:
    """One launch of a job: the seeds by rank and the coordinator's address."""

    seeds: tuple[int, ...]
    coordinator: str  # host:port

    @property
    def processes(self) -> int:
        return len(self.seeds)


def devices_per_process(spec: CellSpec) -> int:
    assert spec.device_count % spec.processes == 0, spec
    return spec.device_count // spec.processes


def rank_env(spec: CellSpec, plan: GroupPlan, rank: int,
             thresholds: ThresholdMode = ThresholdMode.HARNESS) -> dict[str, str]:
    """The variables of process `rank`: a run's own (its seed), its share of the simulated devices, the job."""
    env = process_env(spec, plan.seeds[rank], thresholds)
    if describe(spec.platform).simulated:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices_per_process(spec)}"
        env.update(CPU_COLLECTIVES)
    env.update({JOB_COORDINATOR_VAR: plan.coordinator, JOB_PROCESSES_VAR: str(plan.processes),
                JOB_RANK_VAR: str(rank)})
    return env


def group_hook_env() -> dict[str, str]:
    """The start-up hook's folder on PYTHONPATH, for a run that has no other reason to load it."""
    return {"PYTHONPATH": str(startup_dir())}


def rank_log(log: Path, rank: int) -> Path:
    """Process `rank`'s own log beside the job's: `run-01-seed-11.log` -> `run-01-seed-11.rank1.log`."""
    return log.with_name(f"{log.stem}.rank{rank}{log.suffix}")
