"""Environments: where one JAX version runs.

One interface (`base.Environment`, `base.Backend`) and its backends, registered by name: venv (a uv
virtualenv per version), local (an interpreter that already has JAX), docker (an image per version),
and auto (docker when a daemon answers, else venv). Processes and containers live here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.tags import platform_tags

from harness.inputs.dependencies import Requirements, Sources
from harness.environments.base import Backend, BackendOptions
from harness.environments.local import LocalBackend
from harness.environments.package_index import PyPIIndex
from harness.environments.venv import VenvBackend, own_python_only
from harness.core.errors import UserError
from harness.core.kinds import DEFAULT_BACKEND, BackendName
from harness.inputs.pythons import PythonChooser, PythonVersion

if TYPE_CHECKING:  # (named here, so that the layers contract sees the import that `_docker` makes late)
    from harness.environments.docker import DockerBackend, docker_available  # noqa: F401


NAMES = tuple(n.value for n in BackendName)


@dataclass
class BackendChoice:
    backend: Backend
    why: str
    sources: Sources = Sources()  # where its packages come from besides the public index


def dated_venv_backend(requirements: Requirements = Requirements()) -> VenvBackend:
    """A venv backend at the default root whose releases get their dependencies as of their release date, as the
    commands' own do: for a caller outside the commands (a test, a bench script). One made without the date makes a
    venv that the commands then rebuild (harness/environments/venv.py's resolved_otherwise)."""
    return VenvBackend(release_date=PyPIIndex().release_date, requirements=requirements)


def host_wheel_platforms() -> tuple[str, ...]:
    """The wheel platform tags this machine installs (a venv's wheels are the host's)."""
    return tuple(platform_tags())


def python_chooser(options: BackendOptions, wheel_platforms: tuple[str, ...], own: PythonVersion,
                   pinned: PythonVersion | None, own_interpreter: str | None = None,
                   provided: frozenset[PythonVersion] = frozenset()) -> PythonChooser:
    """A chooser over the interpreters found here (searched only when needed) and the wheels the
    index lists for `platforms`."""
    wheel_pythons = options.wheel_pythons(wheel_platforms) if options.wheel_pythons else (lambda _version: None)
    return PythonChooser(own, wheel_pythons, find=options.interpreters or list, own_interpreter=own_interpreter,
                         pinned=pinned, provided=provided, install=options.install_python)


def _venv(options: BackendOptions) -> VenvBackend:
    own = own_python_only()
    pythons = python_chooser(options, host_wheel_platforms(), own.own, options.python_pin,
                             own_interpreter=own.own_interpreter) if options.interpreters else None
    return VenvBackend(pythons=pythons, release_date=options.release_date, rebuild=options.rebuild,
                       requirements=options.requirements, sources=options.sources)


def _local(options: BackendOptions) -> LocalBackend:
    if options.sources.editables:
        raise UserError("--with-editable: --backend local installs nothing; install your package into that "
                        "interpreter (pip install -e PATH), or use --backend venv")
    return LocalBackend(options.python, options.requirements)


def _docker(options: BackendOptions) -> DockerBackend:
    # An index from the environment stays as before (the wheelhouse's uv reads UV_INDEX_URL itself).
    # Your own package is built as a wheel on the host, its dependencies resolved with each release into
    # the wheelhouse, and installed in the image after jax (docker/backend.py, wheelhouse.local_wheel).
    if options.sources.index_variable is None and (options.sources.index_url or options.sources.extra_index_urls):
        raise UserError("--index-url/--extra-index-url: --backend docker's images install from the public index "
                        "only; measure from your index with --backend venv (the default): drop --backend docker")
    # Late: the Docker SDK (requests under it) costs 0.07 s of CPU at the start of every command that makes
    # no docker backend, before its first run (measured: importing the CLI, 0.37 s -> 0.29 s).
    from harness.environments.docker import DockerBackend  # noqa: PLC0415

    return DockerBackend.from_options(options)


# Each backend by its --backend name: how to make it from the options.
BACKENDS: dict[BackendName, Callable[[BackendOptions], Backend]] = {
    BackendName.VENV: _venv,
    BackendName.LOCAL: _local,
    BackendName.DOCKER: _docker,
}


def make_backend(name: str, options: BackendOptions) -> BackendChoice:
    try:
        name = BackendName(name)
    except ValueError:
        raise UserError(f"--backend: unknown backend {name!r} (choose from {', '.join(NAMES)})") from None
    if name == DEFAULT_BACKEND:  # whether typed or not: the words say only what is true either way
        return BackendChoice(BACKENDS[name](options), f"--backend {name}, the default")
    if name != BackendName.AUTO:
        return BackendChoice(BACKENDS[name](options), f"asked for with --backend {name}")
    from harness.environments.docker import docker_available  # noqa: PLC0415 - late, as in _docker

    available, reason = docker_available()
    if available:
        return BackendChoice(BACKENDS[BackendName.DOCKER](options), f"auto: a Docker daemon answers ({reason})")
    return BackendChoice(BACKENDS[BackendName.VENV](options), f"auto: {reason}; using uv virtualenvs")


__all__ = ["BACKENDS", "BackendChoice", "NAMES", "host_wheel_platforms", "make_backend", "python_chooser"]
