"""Backends by name: venv, local, docker, and auto (docker when a daemon answers, else venv)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from harness.environments.base import Backend, Environment
from harness.errors import UserError

NAMES = ("auto", "venv", "local", "docker")


@dataclass
class BackendChoice:
    backend: Backend
    why: str


@dataclass
class BackendOptions:
    rebuild: bool = False
    python: str | None = None  # local: the interpreter that has JAX
    docker: dict[str, Any] = field(default_factory=dict)  # the config's docker: section
    release_date: Callable | None = None  # venv/docker: version -> release datetime


def make_backend(name: str, options: BackendOptions) -> BackendChoice:
    if name == "venv":
        from harness.environments.venv import VenvBackend

        return BackendChoice(VenvBackend(release_date=options.release_date, rebuild=options.rebuild),
                             "asked for with --backend venv")
    if name == "local":
        from harness.environments.local import LocalBackend

        return BackendChoice(LocalBackend(options.python), "asked for with --backend local")
    if name == "docker":
        return BackendChoice(_docker(options), "asked for with --backend docker")
    if name == "auto":
        try:
            from harness.environments.docker import docker_available
        except ImportError:
            available, reason = False, "the docker backend is not installed"
        else:
            available, reason = docker_available()
        if available:
            return BackendChoice(_docker(options), f"auto: a Docker daemon answers ({reason})")
        chosen = make_backend("venv", options).backend
        return BackendChoice(chosen, f"auto: {reason}; using uv virtualenvs")
    raise UserError(f"--backend: unknown backend {name!r} (choose from {', '.join(NAMES)})")


def _docker(options: BackendOptions) -> Backend:
    from harness.environments.docker import DockerBackend

    return DockerBackend.from_options(options)


__all__ = ["Backend", "BackendChoice", "BackendOptions", "Environment", "NAMES", "make_backend"]
