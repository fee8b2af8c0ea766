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
import platform
import shutil
import subprocess
from collections.abc import Hashable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

from harness.core import seal
from harness.core.errors import HarnessFailure, UserError
from harness.core.files import holds_harness_results
from harness.core.factors import Factor, RunVariation
from harness.core.kinds import Platform
from harness.core.runs import ProcessOutcome, Program
from harness.environments.base import Backend, Environment, Say
from harness.environments.gpus import GpuCount
from harness.environments.key_hiding import cover_argv
from harness.reduce.socket_filter import SECCOMP_FD, SOCKET_ARCH, filter_file
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
# Never copied: version control, environments, caches (the reduction's own folder is left out by path), and any
# folder the harness wrote results into (holds_harness_results): earlier --out folders beside the script were copied
# for every candidate, 30 MB and 1,716 files each time, more CPU than the candidates' own.
_SKIPPED = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache",
                      ".pytest_cache", ".tox", ".nox"})


@cache
def bwrap_problem() -> str:
    """Why candidates cannot run under bubblewrap here, or "" (probed once per process, with every option
    a candidate's command line uses)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    if platform.machine() not in SOCKET_ARCH:
        return f"no filter of unix sockets for this machine's architecture ({platform.machine()})"
    try:
        probe = subprocess.run([*bwrap_launcher(Confines()), "true"], capture_output=True, text=True, timeout=30,
                               check=False)  # its exit status is read below
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run here ({exc})"
    if probe.returncode != 0:
        return f"bwrap cannot make a namespace here ({probe.stderr.strip()[:200] or probe.returncode})"
    return ""


# Private to each candidate under bubblewrap: an empty tmpfs showing the machine's entries read-only (what a run
# reads there: an interpreter, a data file); a socket among them (an ssh agent, X11, tmux) is refused by the
# seccomp filter, as every unix socket is.
PRIVATE_TMP = (Path("/tmp"), Path("/var/tmp"))
# Hidden outright by an empty tmpfs: where the container engine's socket (root on the host), containerd's,
# podman's and each user's session sockets (/run/user/UID) live. /var/run is a link to /run on Debian.
RUNTIME_DIRS = (Path("/run"), Path("/var/run"))
# Engine sockets that may live elsewhere (Docker Desktop, rootless setups): a /dev/null is bound over each.
ENGINE_SOCKET_VARS = ("DOCKER_HOST", "CONTAINER_HOST")
ENGINE_SOCKETS_UNDER_HOME = (".docker/run/docker.sock", ".docker/desktop/docker.sock")
# Where a private tmp shows the machine's own, read-only, its entries linked to from the private tmp's top.
HOST_VIEW = ".harness-host-tmp"
OUTSIDE_DIR = "outside"  # under a candidate's folder: the scratch bound at each place the original wrote


@dataclass(frozen=True)
class Confines:
    """What one candidate's bubblewrap binds: `writable` (its folder, its cache), `readable` (folders under a
    private or hidden root a run must read: its interpreter, PYTHONPATH, the script's folder) and `scratch`
    ((place the original wrote, the candidate's own empty stand-in for it)); `network`: the machine's network
    shared (a job's processes reach their coordinator over it), else a network namespace of its own."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    scratch: tuple[tuple[Path, Path], ...] = ()
    network: bool = False


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _engine_sockets() -> list[Path]:
    found = []
    for var in ENGINE_SOCKET_VARS:
        value = os.environ.get(var, "")
        if value.startswith("unix://"):
            found.append(Path(value.removeprefix("unix://")))
    found += [Path.home() / name for name in ENGINE_SOCKETS_UNDER_HOME]
    return [p for p in found if p.is_absolute() and p.exists()
            and not any(p.resolve().is_relative_to(r.resolve()) for r in RUNTIME_DIRS if r.exists())]


def _under(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _host_tmp_argv(private: tuple[Path, ...], places: set[Path], deeper: set[Path]) -> list[str]:
    """Each private tmp's view of the machine's: bound once, read-only, its entries linked to from the top."""
    argv: list[str] = []
    for tmp in private:
        try:
            entries = sorted(e for e in tmp.iterdir() if e.name != HOST_VIEW)
        except OSError:
            entries = []
        # The machine's tmp once, read-only, inside the private one; each entry a link into it. A bind per entry
        # cost each sandboxed process about 0.25 s of CPU with 600 entries in /tmp, growing with their square.
        view = tmp / HOST_VIEW
        argv += ["--ro-bind", str(tmp), str(view)]
        for entry in entries:
            if entry in places:
                continue  # the original wrote it: the tmpfs's own (a stand-in is bound over deeper places)
            # A socket in the view (at any depth, made at any time: it is the machine's tmp, live) is shown but
            # unreachable: the seccomp filter refuses every unix socket (no scan of the machine's tmp per start).
            if entry.is_symlink():
                argv += ["--symlink", os.readlink(entry), str(entry)]
            elif any(path.is_relative_to(entry) for path in deeper):
                # A folder is bound deeper (a stand-in, the candidate's own, its interpreter): bubblewrap makes
                # those mounts before its new root is entered, so through a real mount, not a link
                # (-try: it may be gone meanwhile).
                argv += ["--ro-bind-try", str(entry), str(entry)]
            else:
                argv += ["--symlink", str(view / entry.name), str(entry)]
    return argv


def bwrap_argv(confines: Confines) -> list[str]:
    """bubblewrap's options for one candidate: no capability, no mount; the file system read-only, the harness's
    seal key hidden; its own PID namespace with a fresh
    /proc (no /proc/<pid>/root or /cwd of a process outside), its own session (no terminal to inject into),
    ended with the harness; no unix socket (the seccomp filter: the launcher opens it) and no network but a job's
    (`confines.network`); no runtime sockets (/run hidden); a private /tmp and /var/tmp; its folders writable; a
    scratch of its own at each place the original wrote outside its folder."""
    # No capabilities, as root too: bwrap run by root keeps them all (a candidate's shell remounted / read-write
    # and unmounted /run); in a user namespace of its own with none, the mounts bwrap made are locked to it.
    argv = ["--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc",
            "/proc", "--die-with-parent", "--new-session", "--seccomp", str(SECCOMP_FD)]
    if not confines.network:
        argv.append("--unshare-net")
    for runtime in RUNTIME_DIRS:
        if _is_real_dir(runtime):
            argv += ["--tmpfs", str(runtime)]
    for socket in _engine_sockets():
        argv += ["--ro-bind", "/dev/null", str(socket)]

    places = {place for place, _ in confines.scratch}
    deeper = places | {p.resolve() for p in (*confines.writable, *confines.readable)}
    private = tuple(p.resolve() for p in PRIVATE_TMP if _is_real_dir(p))
    for tmp in private:
        argv += ["--perms", "1777", "--tmpfs", str(tmp)]
    argv += _host_tmp_argv(private, places, deeper)
    hidden = private + tuple(r.resolve() for r in RUNTIME_DIRS if r.exists())
    for folder in confines.readable:
        folder = folder.resolve()
        if folder.exists() and _under(folder, hidden):
            argv += ["--ro-bind-try", str(folder), str(folder)]
    for place, stand_in in confines.scratch:
        # A place right in a private tmp is the tmpfs's own (a file there can be replaced, as a checkpoint
        # writer does); elsewhere the stand-in is bound over it, as a folder or a file as the place is.
        # A place gone since (the original removed it) has nothing to stand in for: a write there fails, and the
        # watch refuses the candidate.
        if place.parent in private or not place.exists():
            continue
        argv += ["--bind", str(stand_in.resolve()), str(place)]
    for folder in confines.writable:
        folder = folder.resolve()
        argv += ["--bind", str(folder), str(folder)]
    # Last, over whatever showed it: the harness's seal key, made now if there is none yet (one made while a
    # candidate runs would show). No candidate may seal a state (harness/environments/key_hiding.py).
    key = seal.KEY_FILE.absolute()
    seal.state_key(key)
    key = key.resolve()
    for shown in (key, *(tmp / HOST_VIEW / key.relative_to(tmp) for tmp in private if key.is_relative_to(tmp))):
        argv += cover_argv(shown)
    return argv


def empty(stand_in: Path) -> None:
    """A stand-in as it was made (Workspace.stand_ins): an empty folder, or an empty file."""
    if stand_in.is_dir() and not stand_in.is_symlink():
        for entry in list(stand_in.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    elif stand_in.is_file():
        stand_in.write_bytes(b"")


def bwrap_launcher(confines: Confines) -> tuple[str, ...]:
    """bwrap's command line (bwrap_argv), ending in `--`: the program's own command follows. Started by sh, which
    opens the unix-socket filter on the descriptor bwrap reads it from, then becomes bwrap (exec: the same pid)."""
    return ("/bin/sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(filter_file()),
            shutil.which("bwrap") or "bwrap", *bwrap_argv(confines), "--")


def bwrap_said(log_path: Path) -> str:
    """bubblewrap's own error at the head of a run's log ("bwrap: Can't find source path ..."), or ""."""
    try:
        with open(log_path, errors="replace") as log:
            head = [log.readline() for _ in range(3)]
    except OSError:
        return ""
    return next((line.strip()[:200] for line in head if line.startswith("bwrap: ")), "")


def write_places(paths: list[str], own: tuple[Path, ...], limit: int = 32) -> tuple[str, ...]:
    """Where the original wrote outside `own` folders (its working folder, the reduction's, its run's TMPDIR):
    the outermost of the written paths (a folder it made covers what it wrote in it), at most `limit`."""
    chosen: list[Path] = []
    for text in sorted(set(paths), key=lambda t: (len(Path(t).parts), t)):
        path = Path(text)
        if not path.is_absolute() or _under(path, own) or any(path.is_relative_to(c) for c in chosen):
            continue
        chosen.append(path)
    return tuple(str(p) for p in chosen[:limit])


class Confinement(enum.StrEnum):
    """What keeps a candidate's writes in its own folder."""

    BWRAP = "bwrap"  # bubblewrap: the file system read-only but its folder; the write watch besides
    CONTAINER = "container"  # the docker backend: the container mounts the candidate's folders only
    WATCH = "watch"  # its own folders and the audit hook's write watch, nothing stopping a write


class Sandbox(msgspec.Struct, frozen=True, omit_defaults=True):
    """How this reduction's candidates are confined, and why not more where bubblewrap is missing; `places`:
    where the original wrote outside its own folders (its check tells), where a candidate may write too."""

    confinement: Confinement
    why_not: str = ""
    places: tuple[str, ...] = ()
    network: bool = False  # the original's run connected over the network: candidates keep the machine's

    @classmethod
    def here(cls, backend: str, places: tuple[str, ...] = (), network: bool = False) -> Sandbox:
        if backend == "docker":
            return cls(Confinement.CONTAINER)
        problem = bwrap_problem()
        return cls(Confinement.WATCH, problem, places) if problem else cls(Confinement.BWRAP, places=places,
                                                                           network=network)

    @property
    def bwrap(self) -> bool:
        return self.confinement == Confinement.BWRAP

    @property
    def watched(self) -> bool:
        """Whether the write watch's paths are this host's (a container's are not)."""
        return self.confinement != Confinement.CONTAINER

    def _places(self) -> str:
        shown = ", ".join(self.places[:3]) + (f" and {len(self.places) - 3} more" if len(self.places) > 3 else "")
        return shown

    def describe(self) -> str:
        if self.confinement == Confinement.BWRAP:
            own = (f"; where the original wrote ({self._places()}) each gets a private stand-in" if self.places
                   else "")
            return ("candidates run under bubblewrap: no capability, no mount, the file system read-only but "
                    "their own folder (a copy of "
                    "the working folder, HOME, TMPDIR, cache), a private /tmp and /var/tmp, no /run, no unix "
                    "socket (a seccomp filter), "
                    + ("the machine's network (the original's run connected over it)" if self.network
                       else "no network but a job's")
                    + f", their own PID namespace{own}; a write elsewhere is refused")
        if self.confinement == Confinement.CONTAINER:
            return ("candidates run in containers that mount the script's folder read-only and their own copy of "
                    "the working folder, cache and logs")
        where = (f"; not contained: their writes where the original wrote ({self._places()}) go to those real "
                 "places" if self.places else "")
        return (f"candidates are not confined ({self.why_not}): each runs in a copy of the working folder with "
                "its own HOME and TMPDIR, and one the harness sees write outside them is refused (Python's own "
                f"writes only){where}")


def copy_plan(workdir: Path, left_out: list[Path]) -> list[tuple[Path, Path]]:
    """The files of `workdir` each candidate's copy holds (relative, absolute): `left_out` (the reduction's
    folders), version control, environments and caches aside, symbolic links not followed; UserError past
    the bounds."""
    chosen, total = [], 0
    skipped = {p.resolve() for p in left_out}
    for root, dirs, files in os.walk(workdir):
        here = Path(root)
        dirs[:] = [d for d in dirs if d not in _SKIPPED and (here / d).resolve() not in skipped
                   and not (here / d).is_symlink() and not holds_harness_results(here / d)]
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

    def env(self, places: tuple[str, ...] = ()) -> dict[str, str]:
        return {"HOME": str(self.folder / HOME_DIR), "TMPDIR": str(self.folder / TMP_DIR),
                WRITE_ROOTS_VAR: os.pathsep.join((str(self.folder), *places)),
                WRITES_RECORD_VAR: str(self.folder / WRITES_FILE)}

    def stand_ins(self, places: tuple[str, ...]) -> tuple[tuple[Path, Path], ...]:
        """An empty folder or file of its own for each place the original wrote (as the place is on this
        machine: a file, else a folder), made in this folder: bubblewrap binds it over the place."""
        made = []
        for i, text in enumerate(places):
            place = Path(text)
            stand_in = self.folder / OUTSIDE_DIR / str(i)
            stand_in.parent.mkdir(exist_ok=True)
            if place.is_file():
                stand_in.touch()
            else:
                stand_in.mkdir(exist_ok=True)
            made.append((place, stand_in))
        return tuple(made)

    def connected(self, record: str = WRITES_FILE) -> bool:
        """Whether a run recorded a connection over the network (the write watch's `socket.connect`)."""
        try:
            lines = (self.folder / record).read_text().splitlines()
        except OSError:
            return False
        for line in lines:
            try:
                if json.loads(line).get("network") is True:
                    return True
            except (ValueError, AttributeError):
                continue
        return False

    def writes_outside(self, record: str = WRITES_FILE) -> list[str]:
        """The paths a run of the candidate wrote (or tried to write) outside its folder."""
        try:
            lines = (self.folder / record).read_text().splitlines()
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
    under bubblewrap when the sandbox has it. Everything else is the environment's own. `roots`: more folders
    the watch allows (the reduced program's check: the reduction's and the working folder); `readable`:
    folders a run reads that a private /tmp would hide (the script's folder)."""

    def __init__(self, inner: Environment, space: Workspace, sandbox: Sandbox, roots: tuple[Path, ...] = (),
                 readable: tuple[Path, ...] = ()) -> None:
        self.inner, self.space, self.sandbox, self.roots, self.readable = inner, space, sandbox, roots, readable
        self.jax_version = inner.jax_version

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _program(self, program: Program, cache_dir: Path, env: dict[str, str], other_prefix: bool = False,
                 network: bool = False) -> Program:
        if not self.sandbox.bwrap:
            return program
        writable = (self.space.folder,) + ((cache_dir,) if not _inside(cache_dir, self.space.folder) else ())
        python = getattr(self.inner, "python", None)
        interpreter: tuple[Path, ...] = \
            (Path(python).parent.parent, Path(python).resolve().parent.parent) if python else ()
        if other_prefix:  # --vary prefix: the environment's copy at another path runs too
            interpreter += (self.inner.prefix_copy().parent.parent,)
        path = tuple(Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isabs(p))
        readable = (*interpreter, *path, *self.readable)
        confines = Confines(writable, readable, self.space.stand_ins(self.sandbox.places),
                            network or self.sandbox.network)
        return replace(program, launcher=bwrap_launcher(confines), key_hidden=True)

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        if not self.sandbox.watched:
            return env
        extra = self.space.env(self.sandbox.places)
        if self.roots:
            extra[WRITE_ROOTS_VAR] = os.pathsep.join(str(r) for r in (self.space.folder, *self.roots,
                                                                       *self.sandbox.places))
        return {**env, **extra}

    def run(self, program: Program, env: dict[str, str], cache_dir: Path, log_path: Path, timeout_s: float,
            variation: RunVariation | None = None) -> ProcessOutcome:
        extra = {"variation": variation} if variation is not None else {}
        other_prefix = variation is not None and variation.other_prefix
        outcome = self.inner.run(self._program(program, cache_dir, env, other_prefix), self._env(env), cache_dir,
                                 log_path, timeout_s, **extra)
        self._check_sandbox(outcome, log_path)
        return outcome

    def run_group(self, program: Program, envs: list[dict[str, str]], cache_dir: Path, log_paths: list[Path],
                  timeout_s: float) -> list[ProcessOutcome]:
        # A job's processes reach their coordinator over the network: theirs is the machine's (docs/reduce.md).
        outcomes = self.inner.run_group(self._program(program, cache_dir, envs[0] if envs else {}, network=True),
                                        [self._env(e) for e in envs], cache_dir, log_paths, timeout_s)
        for outcome, log_path in zip(outcomes, log_paths):
            self._check_sandbox(outcome, log_path)
        return outcomes

    def _check_sandbox(self, outcome: ProcessOutcome, log_path: Path) -> None:
        """bubblewrap itself failed (before the program started): the harness's setup, never the candidate's
        answer, so the reduction stops (exit 3) rather than rejecting every candidate for it."""
        if not self.sandbox.bwrap or outcome.ok:
            return
        said = bwrap_said(log_path)
        if said:
            raise HarnessFailure(f"bubblewrap could not start a candidate ({said}): the sandbox's setup, not "
                                 "your script; run from another folder or give --out an absolute path, and report "
                                 "it if that does not help (docs/reduce.md)")

    def cannot_vary(self, factor: Factor) -> str:
        return self.inner.cannot_vary(factor)

    def prefix_copy(self) -> Path:
        return self.inner.prefix_copy()

    def compression_folder(self, work: Path) -> tuple[Path, str]:
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

    def prepare(self, jax_version: str, platform: Platform, say: Say = lambda _: None) -> Environment:
        watch_only = msgspec.structs.replace(self.sandbox, confinement=Confinement.WATCH) if self.sandbox.watched else self.sandbox
        return ConfinedEnvironment(self.inner.prepare(jax_version, platform, say), self.space, watch_only,
                                   self.roots)

    def check(self, platform: Platform, say: Say = lambda _: None) -> None:
        self.inner.check(platform, say)

    def installed_version(self) -> str | None:
        return self.inner.installed_version()

    def check_gpus(self, platform: Platform, device_count: int, source: str = "device_count",
                   say: Say = lambda _: None) -> None:
        self.inner.check_gpus(platform, device_count, source, say)

    def visible_gpus(self, say: Say = lambda _: None) -> GpuCount:
        return self.inner.visible_gpus(say)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


class RecordedEnvironment(ConfinedEnvironment):
    """The original's own runs, as they are (its HOME, TMPDIR, no bubblewrap), with the write watch recording
    where they write outside `roots` into `record`: the places a candidate may write too (write_places)."""

    def __init__(self, inner: Environment, record: Path, roots: tuple[Path, ...]) -> None:
        super().__init__(inner, Workspace(record.parent), Sandbox(Confinement.WATCH, "the original"), roots)
        self.record = record

    def _program(self, program: Program, cache_dir: Path, env: dict[str, str], other_prefix: bool = False,
                 network: bool = False) -> Program:
        return program

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, WRITE_ROOTS_VAR: os.pathsep.join(str(r) for r in self.roots),
                WRITES_RECORD_VAR: str(self.record)}


class WriteRecordingBackend(WatchedBackend):
    """A backend whose environments' runs record where they write outside `roots` (RecordedEnvironment)."""

    def __init__(self, inner: Backend, record: Path, roots: tuple[Path, ...]) -> None:
        self.inner, self.record, self.roots = inner, record, roots
        self.name, self.pythons = inner.name, inner.pythons

    def prepare(self, jax_version: str, platform: Platform, say: Say = lambda _: None) -> Environment:
        return RecordedEnvironment(self.inner.prepare(jax_version, platform, say), self.record, self.roots)

    def recorded(self) -> list[str]:
        """The paths the original's runs wrote outside `roots`."""
        return Workspace(self.record.parent).writes_outside(self.record.name)

    def connected(self) -> bool:
        """Whether the original's runs connected over the network (a Python process's `socket.connect`)."""
        return Workspace(self.record.parent).connected(self.record.name)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False

