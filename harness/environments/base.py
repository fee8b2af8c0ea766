"""The Environment interface: a prepared JAX version that runs a script as one fresh process.

Backends (venv, local, docker) differ only in how they make an environment and start a process;
the runner, the bisector and the reports never ask which one they have.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.core.errors import BackendUnavailable, GroupUnsupported
from harness.core.kinds import Platform
from harness.core.runs import ProcessOutcome, Program
from harness.core.factors import Factor, RunVariation
from harness.environments.gpus import GpuCount, host_chips, host_gpus, shortfall
from harness.core.platforms import DeviceProbe, describe
from harness.environments.factor_runs import CannotVary
from harness.inputs.dependencies import Requirements, Sources
from harness.inputs.pythons import Interpreter, PythonChooser, PythonVersion, WheelPythons

# Progress lines from long preparation steps (environment builds); the CLI decides where they go.
Say = Callable[[str], None]


@dataclass
class BackendOptions:
    """How `make_backend` (harness/environments/__init__.py) makes a backend: what the CLI and the config say."""

    rebuild: bool = False
    python: str | None = None  # local: the interpreter that has JAX
    docker: dict[str, Any] = field(default_factory=dict)  # the config's docker: section
    release_date: Callable[[str], datetime | None] | None = None  # venv/docker: version -> release datetime
    # venv/docker: which Python each release runs in (see harness/inputs/pythons.py)
    python_pin: PythonVersion | None = None  # the config's python: (None: auto)
    interpreters: Callable[[], list[Interpreter]] | None = None  # discovery, run only when needed
    wheel_pythons: Callable[[tuple[str, ...]], WheelPythons] | None = None  # wheel platforms -> lookup
    install_python: Callable[[PythonVersion], Interpreter | None] | None = None  # opted in: uv installs
    requirements: Requirements = Requirements()  # the script's own, installed beside each jax
    sources: Sources = Sources()  # venv: another index, the user's own packages (editable)


def _quiet(_: str) -> None:
    pass


class Environment(abc.ABC):
    """One JAX version, ready to run."""

    jax_version: str

    @abc.abstractmethod
    def run(
        self,
        program: Program,
        env: dict[str, str],
        cache_dir: Path,
        log_path: Path,
        timeout_s: float,
        variation: RunVariation | None = None,
    ) -> ProcessOutcome:
        """Run `program` (`python SCRIPT ARGS` or `python -m MODULE ARGS` in its folder) as a fresh
        process with `env` added to a clean environment.

        The backend points JAX_COMPILATION_CACHE_DIR at `cache_dir` (as the process sees it),
        writes stdout and stderr to `log_path`, and kills the process after `timeout_s`. A factor's
        run (--vary) also gets `variation`: what this backend must change besides. Only an environment
        whose `cannot_vary` allows a factor is given one, so one that varies nothing may leave it out.
        """

    def run_group(self, program: Program, envs: list[dict[str, str]], cache_dir: Path, log_paths: list[Path],
                timeout_s: float) -> list[ProcessOutcome]:
        """Run one job: a process of `program` per entry of `envs` (by rank), all at once, sharing
        `cache_dir`, each with its own log; every process stopped by `timeout_s` (sooner once one of them
        has failed). One outcome per process. JobUnsupported when this backend cannot."""
        raise GroupUnsupported(f"the {self.describe().get('backend', 'this')} backend cannot run a multi-process job")

    def same_as(self) -> Hashable:
        """What makes two environments the same for a once-per-environment check (can it run a job here?):
        the object itself; a wrapper that changes only where its runs write says whom it wraps."""
        return id(self)

    def cannot_vary(self, factor: Factor) -> str:
        """Why this environment cannot make `factor`'s change (--vary), or "" when it can."""
        return "this environment takes no variations"

    def own_folder_problem(self) -> str:
        """Why a run of this environment cannot have a cache folder of its own at the path where its runs see
        the cell's folder (`own_folder_run`), or "" when it can."""
        return "this backend cannot give a run a folder of its own at the cell folder's path"

    def own_folder_run(self, program: Program, cell_folder: Path, own: Path) -> tuple[Program, Path]:
        """`program` and the cache folder to give `run` so that the process sees the folder `own` at the path
        where this environment's runs see `cell_folder` (only where `own_folder_problem` is "")."""
        raise NotImplementedError(self.own_folder_problem())

    def prefix_copy(self) -> Path:
        """The interpreter of this environment's packages at another path (--vary prefix)."""
        raise CannotVary(self.cannot_vary(Factor.PREFIX) or "no copy of this environment")

    def compression_folder(self, work: Path) -> tuple[Path, str]:
        """A folder that, first on PYTHONPATH, flips whether zstandard imports (--vary compression),
        and what it does in words."""
        raise CannotVary(self.cannot_vary(Factor.COMPRESSION) or "zstandard cannot be flipped here")

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """Facts for the results: backend, interpreter, jax/jaxlib versions, image."""

    def interrupt(self) -> None:
        """Stop every run of this environment still going (Ctrl-C during parallel runs)."""


class Backend(abc.ABC):
    """Makes environments, one per JAX version (and platform)."""

    # Its runs are processes of this host and see its devices as they are (not a container, which is given only
    # its platform's devices: auto's gets none).
    runs_on_host: bool = True

    name: str
    # Chooses the Python each release is installed in, so that version resolution keeps only the
    # releases some Python here can run; None when the backend installs nothing (local).
    pythons: PythonChooser | None = None

    @abc.abstractmethod
    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> Environment:
        """Return a ready environment, building or reusing it; raise EnvironmentUnavailable."""

    def check(self, platform: Platform, say: Say = _quiet) -> None:
        """Raise BackendUnavailable now, before a sweep writes anything, if this backend cannot work
        here at all (no daemon, no base image). Per-version problems surface later, in prepare()."""

    def installed_version(self) -> str | None:
        """The one JAX version this backend has when it installs nothing (local); None when it makes
        an environment for whichever version is asked."""
        return None

    def check_gpus(self, platform: Platform, device_count: int, source: str = "device_count",
                   say: Say = _quiet) -> None:
        """Before an accelerator sweep: BackendUnavailable (one line) when its runs would see fewer than
        `device_count` devices (what the platform's probe counts: GPUs, TPU chips), instead of every run failing."""
        probe = describe(platform).probe
        if probe == DeviceProbe.NONE:
            return
        if probe == DeviceProbe.GPUS:
            count, what = self.visible_gpus(say), "cuda needs {n} GPU(s)"
        else:
            count, what = self.visible_chips(), f"{platform} needs {{n}} chip(s)"
        problem = shortfall(count, device_count, source, what)
        if problem:
            raise BackendUnavailable(problem)
        say(f"{'GPUs' if probe == DeviceProbe.GPUS else 'TPU chips'}: {count.visible} visible ({count.counted_by}), "
            f"{device_count} needed")

    def devices_here(self, platform: Platform) -> int:
        """The devices the platform's probe counts for this backend's runs (0: it counts none)."""
        probe = describe(platform).probe
        if probe == DeviceProbe.GPUS:
            return self.visible_gpus().visible
        return self.visible_chips().visible if probe == DeviceProbe.CHIPS else 0

    def visible_chips(self) -> GpuCount:
        """The TPU chips this backend's runs see; the host's by default."""
        return host_chips()

    def visible_gpus(self, say: Say = _quiet) -> GpuCount:
        """The GPUs this backend's runs see; on the host by default."""
        return host_gpus()

    def describe(self) -> dict[str, Any]:
        """Host-level facts about this backend (for example the Docker version)."""
        return {"backend": self.name}
