"""Environments: where one JAX version runs (layer 2, above the pure core).

One interface (`base.Environment`, `base.Backend`) and its backends, registered by name: venv (a uv
virtualenv per version), local (an interpreter that already has JAX), docker (an image per version),
and auto (docker when a daemon answers, else venv). Processes and containers live here and nowhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.environments.base import Backend, Environment
from harness.environments.docker import DockerBackend, docker_available
from harness.environments.local import LocalBackend
from harness.environments.venv import VenvBackend
from harness.errors import UserError


class BackendName(enum.StrEnum):
    AUTO = "auto"  # docker when a daemon answers, else venv
    VENV = "venv"
    LOCAL = "local"
    DOCKER = "docker"


NAMES = tuple(n.value for n in BackendName)


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


# Each backend by its --backend name: how to make it from the options.
BACKENDS: dict[BackendName, Callable[[BackendOptions], Backend]] = {
    BackendName.VENV: lambda o: VenvBackend(release_date=o.release_date, rebuild=o.rebuild),
    BackendName.LOCAL: lambda o: LocalBackend(o.python),
    BackendName.DOCKER: DockerBackend.from_options,
}


def make_backend(name: str, options: BackendOptions) -> BackendChoice:
    try:
        name = BackendName(name)
    except ValueError:
        raise UserError(f"--backend: unknown backend {name!r} (choose from {', '.join(NAMES)})") from None
    if name != BackendName.AUTO:
        return BackendChoice(BACKENDS[name](options), f"asked for with --backend {name}")
    available, reason = docker_available()
    if available:
        return BackendChoice(BACKENDS[BackendName.DOCKER](options), f"auto: a Docker daemon answers ({reason})")
    return BackendChoice(BACKENDS[BackendName.VENV](options), f"auto: {reason}; using uv virtualenvs")


__all__ = ["BACKENDS", "Backend", "BackendChoice", "BackendName", "BackendOptions", "Environment", "NAMES",
           "make_backend"]
