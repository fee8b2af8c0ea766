"""Which Python each JAX release runs in (pure: no processes; discovery lives in environments/).

A release runs in the Pythons its jaxlib has wheels for. The choice, per release: the pinned
Python when the config pins one; else the harness's own Python when the release has wheels for it
(so results made before this choice existed stay as they were); else the newest Python this
machine can run that the release has wheels for. A release with none is `NoPython`, which says
what it needs.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec
from packaging.version import Version
from collections.abc import Callable, Iterable

AUTO = "auto"  # the config's `python:` default
_VERSION = re.compile(r"^3\.(\d{1,2})$")


class PythonVersion(Version):
    """A CPython feature release, e.g. 3.12 (patch levels do not change which wheels install): a packaging
    Version (its order, equality and text), made of its two numbers. Not a dataclass, so that msgspec writes it
    as its text through `enc_hook=str` (a dataclass it would write as a mapping)."""

    def __init__(self, major: int, minor: int):
        super().__init__(f"{major}.{minor}")

    @classmethod
    def parse(cls, text: str) -> PythonVersion:
        """"3.12" -> PythonVersion(3, 12); ValueError for anything else."""
        match = _VERSION.match(text.strip())
        if not match:
            raise ValueError(f"{text!r} is not a Python 3 version such as \"3.12\"")
        return cls(3, int(match.group(1)))


class Found(enum.StrEnum):
    """Where an interpreter was found, in the order a version's interpreter is preferred."""

    HARNESS = "the harness's own"
    SEARCH = "--python-search"
    PATH = "PATH"
    UV = "uv's managed Pythons"
    PYENV = "pyenv's versions folder"


@dataclass(frozen=True)
class Interpreter:
    version: PythonVersion
    path: str
    found: Found


class Why(enum.StrEnum):
    PINNED = "pinned"  # the config's `python:` (or docker.python) names it
    HARNESS = "harness"  # the harness's own Python has wheels for this release
    NEWEST = "newest"  # the harness's has none: the newest Python here that has
    INSTALLED = "installed"  # none here had one: installed on request (uv python install)


class PythonChoice(msgspec.Struct, frozen=True):
    """The Python one release runs in, where it came from, and why; an environment's facts record it as
    `recorded` writes it."""

    version: PythonVersion
    interpreter: str | None  # None where the backend provides its own (a Docker base image)
    why: Why
    reason: str  # one line for people

    def recorded(self) -> dict[str, Any]:
        """The choice as an environment's facts hold it: {"version": "3.12", "interpreter", "why", "reason"}."""
        return msgspec.to_builtins(self, enc_hook=str)  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return f"Python {self.version} ({self.reason})"


class NoPython(Exception):
    """No Python here can run the release; the message says which Python it needs."""

    def __init__(self, message: str, jax_version: str, needs: frozenset[PythonVersion]):
        super().__init__(message)
        self.jax_version, self.needs = jax_version, needs


def describe_versions(versions: Iterable[PythonVersion]) -> str:
    """"3.12, 3.13 or 3.14"."""
    ordered = [str(v) for v in sorted(set(versions))]
    if len(ordered) < 2:
        return ordered[0] if ordered else "none"
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


# Which Pythons a release has jaxlib wheels for; None when the index does not say (any will do).
WheelPythons = Callable[[str], "frozenset[PythonVersion] | None"]


@dataclass
class PythonChooser:
    """Chooses the Python of each release among what this machine has. The machine is searched
    (`find`) only when a release needs another Python than the harness's own, so a sweep of releases
    that the harness's Python runs costs nothing more than before."""

    own: PythonVersion  # preferred whenever the release has wheels for it
    wheel_pythons: WheelPythons
    find: Callable[[], list[Interpreter]] = list  # the machine's Pythons, in order of preference
    own_interpreter: str | None = None  # the harness's interpreter, where the backend runs one (venv)
    pinned: PythonVersion | None = None
    provided: frozenset[PythonVersion] = frozenset()  # Pythons the backend brings (base images)
    # Asked for a missing Python only when the user opted in (it downloads); None: never.
    install: Callable[[PythonVersion], Interpreter | None] | None = None
    _found: list[Interpreter] | None = None
    _not_installable: set[PythonVersion] = field(default_factory=set)

    @property
    def interpreters(self) -> list[Interpreter]:
        if self._found is None:
            self._found = list(self.find())
        return self._found

    def available(self) -> list[PythonVersion]:
        return sorted({i.version for i in self.interpreters} | self.provided | self._own_set())

    def _own_set(self) -> set[PythonVersion]:
        """The harness's Python, when the backend can use it without searching."""
        return {self.own} if self.own_interpreter or self.own in self.provided else set()

    def interpreter_for(self, version: PythonVersion) -> str | None:
        if version == self.own and self.own_interpreter:
            return self.own_interpreter
        if version in self.provided and version not in {i.version for i in self._found or []}:
            return None  # the backend brings it: no need to search the machine
        return next((i.path for i in self.interpreters if i.version == version), None)

    def choose(self, jax_version: str) -> PythonChoice:
        """The Python `jax_version` runs in; NoPython when there is none it can use."""
        supported = self.wheel_pythons(jax_version)
        if self.pinned is not None:
            if supported is not None and self.pinned not in supported:
                raise NoPython(f"jax {jax_version} has no jaxlib wheel for the pinned Python {self.pinned} "
                               f"(it needs CPython {describe_versions(supported)})", jax_version, supported)
            if self.pinned not in self._own_set() | self.provided and self.pinned not in self.available():
                raise NoPython(f"the pinned Python {self.pinned} is not on this machine (found "
                               f"{describe_versions(self.available())}; add one with --python-search PATH)",
                               jax_version, frozenset({self.pinned}))
            return self._choice(self.pinned, Why.PINNED, "pinned")
        if (supported is None or self.own in supported) and self.own in self._own_set():
            # A backend that runs no interpreter of the harness's (docker) preferred its base image's own.
            return self._choice(self.own, Why.HARNESS, "the harness's own Python" if self.own_interpreter
                                else "the base image's default Python")
        have = self.available()
        runnable = [v for v in have if supported is None or v in supported]
        if not runnable and supported and self.install is not None:
            installed = self._install(supported)
            if installed is not None:
                return self._choice(installed, Why.INSTALLED, f"installed with uv: none here had a jaxlib "
                                                              f"wheel for {describe_versions(supported)}")
        if not runnable or supported is None:
            needs = supported if supported is not None else frozenset({self.own})
            raise NoPython(f"jax {jax_version} needs CPython {describe_versions(needs)}; this machine has "
                           f"{describe_versions(have)} (add one with --python-search PATH)", jax_version, needs)
        return self._choice(runnable[-1], Why.NEWEST,
                            f"jaxlib has wheels for {describe_versions(supported)}, not {self.own}: "
                            f"the newest of those here")

    def _install(self, supported: frozenset[PythonVersion]) -> PythonVersion | None:
        for version in sorted(supported - self._not_installable, reverse=True):
            interpreter = self.install(version) if self.install else None
            if interpreter is not None:
                self.interpreters.append(interpreter)
                return version
            self._not_installable.add(version)
        return None

    def _choice(self, version: PythonVersion, why: Why, reason: str) -> PythonChoice:
        return PythonChoice(version, self.interpreter_for(version), why, reason)
