"""The local backend: an interpreter that already has the JAX under test; nothing is installed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.inputs.dependencies import Requirements, unmet
from harness.environments.base import Backend, Environment, Say, _quiet
from harness.environments.process import (InterpreterEnvironment, clean_environment, kept_line, probe_interpreter,
                                          users_environment)
from harness.environments.venv import compression_folder
from harness.core.hostinfo import jax_cuda_plugin
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable
from harness.core.kinds import Platform


LIBTPU_DISTRIBUTIONS = ("libtpu", "libtpu-nightly")


class LocalEnvironment(InterpreterEnvironment):
    def __init__(self, python: str, facts: dict[str, Any], kept: dict[str, str] | None = None):
        self.python, self.facts, self.jax_version = python, facts, facts["jax"]
        self.kept = kept or {}

    def describe(self) -> dict[str, Any]:
        kept = {"kept_environment": sorted(self.kept)} if self.kept else {}
        return {"backend": "local", "interpreter": self.python, **self.facts, **kept}

    def compression_folder(self, work: Path) -> tuple[Path, str]:
        return compression_folder(self.python, work)


class LocalBackend(Backend):
    name = "local"

    def __init__(self, python: str | None = None, requirements: Requirements = Requirements(),
                 kept: dict[str, str] | None = None):
        self.python = python or sys.executable
        self.requirements = requirements  # nothing is installed: they must already be there
        self._facts: dict[str, Any] | None = None
        # JAX as its user runs it here: their PYTHONPATH, libraries and accelerator variables (process.py)
        self.kept = users_environment() if kept is None else kept

    def installed_version(self) -> str:
        """The JAX version the interpreter has; BackendUnavailable when it has none."""
        if self._facts is None:
            try:
                self._facts = probe_interpreter(Path(self.python), clean_environment({}, self.kept))
            except EnvironmentUnavailable as exc:
                raise BackendUnavailable(f"--backend local: {self.python} cannot import jax "
                                         f"({exc}), with {kept_line(self.kept)} kept from your environment; "
                                         f"install jax there or use --backend venv") from None
        version: str = self._facts["jax"]
        return version

    def check(self, platform: Platform, say: Say = _quiet) -> None:
        """The script's requirements must be satisfied by the interpreter: one line naming what is
        missing, before any run (every run would otherwise fail on its import)."""
        self.installed_version()
        say(f"local: {self.python}, jax {self._facts and self._facts['jax']}; kept from your environment: "
            f"{kept_line(self.kept)}")
        facts = self._facts or {}
        missing = unmet(self.requirements, facts.get("distributions", {}), facts.get("python", ""))
        if missing:
            raise BackendUnavailable(f"--backend local: {self.python} does not satisfy the script's "
                                     f"requirements: {'; '.join(missing)} (install them there, or use "
                                     f"--backend venv)")

    def describe(self) -> dict[str, Any]:
        """The libtpu or JAX CUDA plugin the interpreter has (a TPU image's on PYTHONPATH, a GPU venv's), where it
        has one."""
        dists = (self._facts or {}).get("distributions") or {}
        libtpu = next((dists[name] for name in LIBTPU_DISTRIBUTIONS if name in dists), None)
        plugin = jax_cuda_plugin(dists)
        return {"backend": self.name, **({"libtpu_version": libtpu} if libtpu else {}),
                **({"jax_cuda_plugin": plugin} if plugin else {})}

    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> Environment:
        installed = self.installed_version()
        if installed != jax_version:
            raise EnvironmentUnavailable(f"the local interpreter has jax {installed}, not {jax_version}")
        return LocalEnvironment(self.python, dict(self._facts or {}), self.kept)


