"""The project's vocabulary: platforms, verdicts, runs and cells, as plain data.

An *Environment* is where one JAX version runs; a *run* is one fresh process; a *cell* is one
(JAX version, mesh, platform) measured by several runs; a *verdict* is what a cell says.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.confidence import MissBounds, SeedPlan


class Platform(enum.StrEnum):
    CPU = "cpu"  # simulated devices on the host CPU
    CUDA = "cuda"
    AUTO = "auto"  # whatever JAX picks in the environment


class Verdict(enum.StrEnum):
    REPRODUCED = "reproduced"  # a later run computed a key the first run did not: a miss
    CLEAN = "clean"  # every run succeeded, entries written, later runs computed only keys already seen
    UNSUPPORTED = "unsupported"  # nothing was cached, or runs compiled different things: nothing measured
    ERROR = "error"  # environment could not be made, or a run crashed or timed out


@dataclass(frozen=True)
class Mesh:
    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape)) + " (" + ",".join(self.axis_names) + ")"

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "axis_names": list(self.axis_names)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Mesh:
        return cls(tuple(data["shape"]), tuple(data["axis_names"]))


# In place of a mesh: a user's script builds its own, which the harness does not know.
NO_MESH = "script"


@dataclass(frozen=True)
class CellSpec:
    """What one cell measures; the unit the runner, the bisector and sharding work with."""

    jax_version: str
    platform: Platform
    device_count: int
    mesh: Mesh | None  # None for a user's script, which builds its own mesh

    @property
    def key(self) -> str:
        return f"{self.jax_version}|{self.platform}|{self.device_count}|{self.mesh_label}"

    @property
    def mesh_label(self) -> str:
        """The mesh as keys, tables and summaries name it."""
        return self.mesh.label if self.mesh else NO_MESH

    @property
    def slug(self) -> str:
        """The cell's folder name under logs/, caches/ and evidence/."""
        mesh = "-".join(map(str, self.mesh.shape)) + "-" + "".join(self.mesh.axis_names) if self.mesh else NO_MESH
        return re.sub(r"[^A-Za-z0-9._-]", "_", f"jax-{self.jax_version}-{self.platform}{self.device_count}-{mesh}")


@dataclass
class ProcessOutcome:
    """How one process ended, whatever ran it (a venv interpreter or a container)."""

    exit_code: int | None  # None when it was killed for running past its timeout
    duration_s: float
    timed_out: bool = False
    reason: str = ""  # why it failed, when the backend knows (OOM-killed, image missing, ...)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass
class RunRecord:
    index: int
    seed: int  # the PYTHONHASHSEED this run had
    exit_code: int | None
    duration_s: float
    new_entries: list[str]  # cache file names that appeared during this run
    timed_out: bool = False
    reason: str = ""
    log: str = ""  # path of this run's stdout/stderr, relative to the results folder

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        return cls(**data)


@dataclass
class CellResult:
    spec: CellSpec
    verdict: Verdict
    keys: dict[str, list[str]]  # module name -> distinct keys written by successful runs
    runs: list[RunRecord] = field(default_factory=list)
    reason: str = ""  # one line: why error/unsupported, or which module reproduced
    listing: list[str] = field(default_factory=list)  # the cache folder after the last run (`ls -1`)
    environment: dict[str, Any] = field(default_factory=dict)  # backend facts (python, jaxlib, image...)
    seeds: SeedPlan | None = None  # how the runs' hash seeds were chosen (None: no run was planned)
    miss_bounds: MissBounds | None = None  # a clean cell's confidence (None for any other verdict)
    interrupted: bool = False  # cut short by Ctrl-C: --resume measures it again
    log_tail: str = ""  # the end of the environment's log when it could not be made
    earlier_attempts: list[str] = field(default_factory=list)  # bisect: why preferred environments failed
    extra: dict[str, Any] = field(default_factory=dict)  # fields this release does not know, kept as read

    def to_json(self) -> dict[str, Any]:
        out = {
            "jax_version": self.spec.jax_version,
            "platform": str(self.spec.platform),
            "device_count": self.spec.device_count,
            "mesh": self.spec.mesh.to_json() if self.spec.mesh else None,
            "verdict": str(self.verdict),
            "reason": self.reason,
            "keys": self.keys,
            "runs": [r.to_json() for r in self.runs],
            "listing": self.listing,
            "environment": self.environment,
        }
        if self.seeds is not None:
            bounds = self.miss_bounds
            out.update(seeds=self.seeds.to_json(), miss_bound=bounds.set_order if bounds else None,
                       miss_bound_other_mechanisms=bounds.other if bounds else None)
        if self.interrupted:
            out["interrupted"] = True
        if self.log_tail:
            out["log_tail"] = self.log_tail
        if self.earlier_attempts:
            out["earlier_attempts"] = self.earlier_attempts
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        """A cell as results.json holds it; fields added since an older release are optional."""
        spec = CellSpec(
            jax_version=data["jax_version"],
            platform=Platform(data["platform"]),
            device_count=data["device_count"],
            mesh=Mesh.from_json(data["mesh"]) if data.get("mesh") else None,
        )
        bound = data.get("miss_bound")
        return cls(
            spec=spec,
            verdict=Verdict(data["verdict"]),
            keys=data.get("keys", {}),
            runs=[RunRecord.from_json(r) for r in data.get("runs", [])],
            reason=data.get("reason", ""),
            listing=data.get("listing", []),
            environment=data.get("environment", {}),
            seeds=SeedPlan.from_json(data["seeds"]) if data.get("seeds") else None,
            miss_bounds=MissBounds(bound, data.get("miss_bound_other_mechanisms")) if bound is not None else None,
            interrupted=bool(data.get("interrupted", False)),
            log_tail=data.get("log_tail", ""),
            earlier_attempts=list(data.get("earlier_attempts", [])),
            extra={k: v for k, v in data.items() if k not in _CELL_FIELDS},
        )


_CELL_FIELDS = {"jax_version", "platform", "device_count", "mesh", "verdict", "reason", "keys", "runs", "listing",
                "environment", "seeds", "miss_bound", "miss_bound_other_mechanisms", "interrupted", "log_tail",
                "earlier_attempts"}
