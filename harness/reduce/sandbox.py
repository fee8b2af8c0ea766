"""Where a candidate runs: mutated programs must not touch what the original never touched.

pysource-minimize shortens literals and drops statements; a path in a mutated program can name another
place (`'/tmp/x/canary/out/cfg_'` made `'/tmp/x/canary'`), and the program writes there. So each candidate
runs in a folder of its own (`Workspace`): a throwaway copy of the original's working folder with the
candidate in place of the script, its own HOME and TMPDIR, its cache and logs. Where bubblewrap can make a
mount namespace, the whole file system is read-only to the candidate but that folder (its TMPDIR is in it);
everywhere, the harness's audit hook records each write a Python process of the run makes
outside the folder (harness/inside/startup/, HARNESS_WRITE_ROOTS), and such a candidate is refused, whatever
it measured: under bubblewrap the write failed, so what it measured is not the original's program either.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import subprocess
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from harness.core.codec import Omit, Record, shape
from harness.core.errors import UserError
from harness.core.model import ProcessOutcome, Program
from harness.environments.base import Backend, Environment
from harness.inside.startup.jax_cache_harness_hook import (
    WRITE_ROOTS_VAR,
    WRITES_RECORD_VAR,
)

WORK_DIR = "work"  # the copy of the original's working folder, the candidate in it
HOME_DIR = "home"
TMP_DIR = "tmp"
WRITES_FILE = "writes.jsonl"
# The original's working folder is copied for every candidate: past this it is too large to copy.
MAX_COPY_BYTES = 256 << 20
MAX_COPY_FILES = 10_000
# Never copied: version control, environments, caches (the reduction's own folder is left out by path).
_SKIPPED = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache",
                      ".pytest_cache", ".tox", ".nox"})


@cache
def bwrap_problem() -> str:
    """Why candidates cannot run under bubblewrap here, or "" (probed once per process)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run([bwrap, *_binds([]), "--", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run here ({exc})"
    if probe.returncode != 0:
        return f"bwrap cannot make a namespace here ({probe.stderr.strip()[:200] or probe.returncode})"
    return ""


def _binds(writable: list[Path]) -> list[str]:
    # /tmp stays the host's, read-only: a user's folder, an interpreter or a cache may live there.
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]
    for folder in writable:
        argv += ["--bind", str(folder), str(folder)]
    return argv


def bwrap_launcher(writable: list[Path]) -> tuple[str, ...]:
    """bwrap's command line: / read-only, a /dev and /proc of its own, `writable` bound writable."""
    return (shutil.which("bwrap") or "bwrap", *_binds(writable), "--")


class Confinement(enum.StrEnum):
    """What keeps a candidate's writes in its own folder."""

    BWRAP = "bwrap"  # bubblewrap: the file system read-only but its folder; the write watch besides
    CONTAINER = "container"  # the docker backend: the container mounts the candidate's folders only
    WATCH = "watch"  # its own folders and the audit hook's write watch, nothing stopping a write


@dataclass(frozen=True)
class Sandbox(Record):
    """How this reduction's candidates are confined, and why not more where bubblewrap is missing."""

    confinement: Confinement
    why_not: str = field(default="", metadata=shape(omit=Omit.EMPTY))

    @classmethod
    def here(cls, backend: str) -> Sandbox:
        if backend == "docker":
            return cls(Confinement.CONTAINER)
        problem = bwrap_problem()
        return cls(Confinement.WATCH, problem) if problem else cls(Confinement.BWRAP)

    @property
    def bwrap(self) -> bool:
        return self.confinement == Confinement.BWRAP

    @property
    def watched(self) -> bool:
        """Whether the write watch's paths are this host's (a container's are not)."""
        return self.confinement != Confinement.CONTAINER

    def describe(self) -> str:
        if self.confinement == Confinement.BWRAP:
            return ("candidates run under bubblewrap: the file system read-only but their own folder (a copy of "
                    "the working folder, HOME, TMPDIR, cache); a write elsewhere is refused")
        if self.confinement == Confinement.CONTAINER:
            return ("candidates run in containers that mount the script's folder read-only and their own copy of "
                    "the working folder, cache and logs")
        return (f"candidates are not confined ({self.why_not}): each runs in a copy of the working folder with "
                "its own HOME and TMPDIR, and one the harness sees write outside them is refused (Python's own "
                "writes only)")



def copy_plan(workdir: Path, left_out: list[Path]) -> list[tuple[Path, Path]]:
    """The files of `workdir` each candidate's copy holds (relative, absolute): `left_out` (the reduction's
    folders), version control, environments and caches aside, symbolic links not followed; UserError past
    the bounds."""
    chosen, total = [], 0
    skipped = {p.resolve() for p in left_out}
    for root, dirs, files in os.walk(workdir):
        here = Path(root)
        dirs[:] = [d for d in dirs if d not in _SKIPPED and (here / d).resolve() not in skipped
                   and not (here / d).is_symlink()]
        for name in files:
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            total += path.stat().st_size
            chosen.append((path.relative_to(workdir), path))
            if total > MAX_COPY_BYTES or len(chosen) > MAX_COPY_FILES:
                raise UserError(f"{workdir}: more than {MAX_COPY_BYTES >> 20} MiB or {MAX_COPY_FILES} files to copy "
                                "for each candidate (each runs in a copy of the working folder): put the script in a "
                                "folder of its own with what it reads")
    return chosen


@dataclass(frozen=True)
class Workspace:
    """One candidate's folder: `work/` (the working folder's copy, the candidate at the script's place),
    `home/`, `tmp/`, and the record of writes outside it."""

    folder: Path

    @classmethod
    def make(cls, folder: Path, workdir: Path, script: Path, source: str, files: list[tuple[Path, Path]]) -> Workspace:
        space = cls(folder)
        for relative, path in files:
            target = space.work / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        space.work.mkdir(exist_ok=True)
        space.script_for(workdir, script).parent.mkdir(parents=True, exist_ok=True)
        space.script_for(workdir, script).write_text(source)
        for sub in (HOME_DIR, TMP_DIR):
            (folder / sub).mkdir()
        return space

    @property
    def work(self) -> Path:
        return self.folder / WORK_DIR

    def script_for(self, workdir: Path, script: Path) -> Path:
        """Where the candidate sits: the script's place in the copy (its own name beside it otherwise)."""
        try:
            return self.work / script.resolve().relative_to(workdir.resolve())
        except ValueError:
            return self.work / script.name

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.folder / HOME_DIR), "TMPDIR": str(self.folder / TMP_DIR),
                WRITE_ROOTS_VAR: str(self.folder), WRITES_RECORD_VAR: str(self.folder / WRITES_FILE)}

    def writes_outside(self) -> list[str]:
        """The paths a run of the candidate wrote (or tried to write) outside its folder."""
        try:
            lines = (self.folder / WRITES_FILE).read_text().splitlines()
        except OSError:
            return []
        paths = []
        for line in lines:
            try:
                paths.append(str(json.loads(line)["path"]))
            except (ValueError, KeyError, TypeError):
                continue
        return list(dict.fromkeys(paths))


class ConfinedEnvironment(Environment):
    """An environment whose runs are one candidate's: in its workspace, its HOME, TMPDIR and write watch set,
    under bubblewrap when the sandbox has it. Everything else is the environment's own."""

    def __init__(self, inner: Environment, space: Workspace, sandbox: Sandbox, roots: tuple[Path, ...] = ()) -> None:
        self.inner, self.space, self.sandbox, self.roots = inner, space, sandbox, roots
        self.jax_version = inner.jax_version

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _program(self, program: Program, cache_dir: Path) -> Program:
        if not self.sandbox.bwrap:
            return program
        writable = [self.space.folder] + ([cache_dir] if not _inside(cache_dir, self.space.folder) else [])
        return replace(program, launcher=bwrap_launcher(writable))

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        if not self.sandbox.watched:
            return env
        extra = self.space.env()
        if self.roots:
            extra[WRITE_ROOTS_VAR] = os.pathsep.join(str(r) for r in (self.space.folder, *self.roots))
        return {**env, **extra}

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None) -> ProcessOutcome:
        extra = {"variation": variation} if variation is not None else {}
        return self.inner.run(self._program(program, cache_dir), self._env(env), cache_dir, log_path, timeout_s,
                              **extra)

    def run_group(self, program, envs, cache_dir, log_paths, timeout_s) -> list[ProcessOutcome]:
        return self.inner.run_group(self._program(program, cache_dir), [self._env(e) for e in envs], cache_dir,
                                  log_paths, timeout_s)

    def cannot_vary(self, factor):
        return self.inner.cannot_vary(factor)

    def prefix_copy(self) -> Path:
        return self.inner.prefix_copy()

    def compression_folder(self, work):
        return self.inner.compression_folder(work)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def same_as(self) -> Hashable:
        # Every candidate gets a wrapper of its own; whether a job runs here depends on the environment and on
        # how candidates are confined, not on which candidate's folder it is (the job probe runs once, not per
        # candidate).
        return (self.inner.same_as(), self.sandbox.confinement)

    def interrupt(self) -> None:
        self.inner.interrupt()


class WatchedBackend(Backend):
    """A backend whose environments' runs get a workspace's HOME, TMPDIR and write watch (writes allowed in
    it and `roots`), not bubblewrap: the reduced program's own check, run where the original ran."""

    def __init__(self, inner: Backend, space: Workspace, sandbox: Sandbox, roots: tuple[Path, ...]) -> None:
        self.inner, self.space, self.sandbox, self.roots = inner, space, sandbox, roots
        self.name, self.pythons = inner.name, inner.pythons

    def prepare(self, jax_version, platform, say=lambda _: None) -> Environment:
        watch_only = replace(self.sandbox, confinement=Confinement.WATCH) if self.sandbox.watched else self.sandbox
        return ConfinedEnvironment(self.inner.prepare(jax_version, platform, say), self.space, watch_only,
                                   self.roots)

    def check(self, platform, say=lambda _: None) -> None:
        self.inner.check(platform, say)

    def installed_version(self) -> str | None:
        return self.inner.installed_version()

    def check_gpus(self, platform, device_count, source="device_count", say=lambda _: None) -> None:
        self.inner.check_gpus(platform, device_count, source, say)

    def visible_gpus(self, say=lambda _: None):
        return self.inner.visible_gpus(say)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False

