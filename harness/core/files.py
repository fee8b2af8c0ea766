"""Writing files so that a reader never sees half of one, reading a JSON file a user hands the harness
within bounds, and finding the harness's own files (pure core: imports only harness.core.errors)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import atexit
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files
from pathlib import Path
from typing import Any
from collections.abc import Callable

from harness.core.errors import UserError

DISTRIBUTION = "jax-cache-harness"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: readers never see half a file.
    The temporary name is unique, so processes sharing a folder (shards of one sweep) never collide."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are for others to read too
        # A text read from an older results file or a program may hold lone surrogates (a file name's
        # bytes that are not UTF-8): written as \udcNN rather than failing the whole file.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a write or fsync that fails (a full disk) names no file: say which
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- A results folder's files: never written, removed or emptied through a symbolic link ------------------
#
# A results folder may come from elsewhere, and --resume writes into it: a link planted there (caches/<cell>
# to another folder, .writer.holder or reduced.py to another file) must not carry a write, a removal or an
# emptying out of it. One rule: the whole folder is checked for links before the harness writes anything
# into it (refuse_links, when a writer takes it), and what it then writes, removes or empties there goes
# through write_atomic (a link in its place is replaced, never followed), open_fresh (O_NOFOLLOW) and
# remove_path (a link is removed itself, never its target).


# How deep the harness's own parts of a folder go: its files and folders (caches/, logs/, evidence/, a
# reduction's), theirs (a cell's caches/<cell>, logs/<cell>) and theirs (a run's log, a cache entry, a
# factor's work folder). Deeper lie only what programs wrote and copies of a user's folder (--vary
# script-path keeps the project's own links), inside folders the harness removes whole (rmtree never
# follows a link) and makes afresh before it writes into them.
OWN_DEPTH = 3


def refuse_links(folder: Path) -> None:
    """UserError (one line, naming it) when one of `folder`'s own parts (OWN_DEPTH levels down) is a
    symbolic link. `folder` itself may be one: it is the folder the user named."""
    pending = [(Path(folder), 1)]
    while pending:
        parent, depth = pending.pop()
        try:
            with os.scandir(parent) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        raise UserError(f"{folder}: {Path(entry.path).relative_to(folder)} is a symbolic link; the "
                                        "harness writes nothing through a link in a results folder (remove it)")
                    if depth < OWN_DEPTH and entry.is_dir(follow_symlinks=False):
                        pending.append((Path(entry.path), depth + 1))
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone meanwhile: nothing to write through


def open_fresh(path: Path) -> int:
    """`path` created or emptied for writing, as a file descriptor; OSError (ELOOP) when it is a link."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)


_private_folders: dict[str, Path] = {}
_private_lock = threading.Lock()  # runs and the screen's servers start from threads of their own


def private_folder(prefix: str) -> Path:
    """A folder of this process's own (mode 0700, under the temporary folder), made once per prefix and removed at
    exit; made again where a cleaner of /tmp removed it."""
    with _private_lock:
        if prefix not in _private_folders:
            folder = Path(tempfile.mkdtemp(prefix=prefix))
            atexit.register(shutil.rmtree, folder, True)
            _private_folders[prefix] = folder
        folder = _private_folders[prefix]
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder


def remove_path(path: Path) -> None:
    """Remove `path`, a file or a whole folder, if it is there; a link is removed itself, its target left."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)  # rmtree never follows a link inside


def package_path(package: str, *parts: str) -> Path:
    """A file or folder shipped in `package` (package data, or a module run as a program), as a path on
    disk: through importlib.resources, so it is found in an installed wheel as in a checkout. Interpreters
    run these files and containers mount them, so they must be real files (the wheel is not zip-safe)."""
    path = Path(str(files(package).joinpath(*parts)))
    if not path.exists():
        raise FileNotFoundError(f"{package}: {'/'.join(parts)} is missing from the installed harness")
    return path


def harness_version() -> str:
    """The installed harness's version: pyproject.toml's `version`, its one source, as the installer
    recorded it (a checkout run without installing it says so rather than guess)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (not installed)"


CONFIGS_FOLDER = "configs"  # in the package: the shipped configs (a checkout's configs/ links to it)
CONFIG_SUFFIXES = (".yaml", ".yml")


def shipped_configs() -> dict[str, Path]:
    """The configs shipped in the package, by name (the file's stem): `harness run smoke` reads smoke.yaml."""
    folder = Path(str(files("harness").joinpath(CONFIGS_FOLDER)))
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


# A file name's limit on Linux filesystems (NAME_MAX); a folder's name is kept this far below it, so the
# harness's own suffixes ("-2", ".lock", a temporary file's) still fit.
NAME_MAX = 255
FOLDER_NAME_MAX = NAME_MAX - 15


def fitting_name(name: str, room: int = FOLDER_NAME_MAX) -> str:
    """`name` when it fits in `room` characters, else its start and a short hash of the whole (two long
    names that share their start stay apart)."""
    if len(name.encode()) <= room:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    start = name.encode()[: room - len(digest) - 1].decode(errors="ignore")
    return f"{start}-{digest}"


# No number the harness writes comes near this (seconds, bounds, sizes): past it a value is planted, and sums
# of such values would overflow to an infinity that strict JSON cannot write back.
MAX_FLOAT = 1e15


class OutOfRange(ValueError):
    """A number strict JSON does not have (NaN, Infinity) or one past MAX_FLOAT."""


def _no_constant(name: str) -> Any:
    raise OutOfRange(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not abs(value) <= MAX_FLOAT:
        raise OutOfRange(f"the number {text[:40]} is out of range")
    return value


def read_json_bounded(path: Path, limit: int, kind: str, precheck: Callable[[bytes], str] | None = None) -> Any:
    """The JSON document in `path`, read within bounds (a regular file, at most `limit` bytes, UTF-8, not
    nested past the parser's depth, no integer of more digits than Python converts); UserError (one line
    naming `path` and the `kind` of file it is not: "results file") otherwise. The one rule for every
    JSON file a user hands the harness (results.json, a fingerprint): `/dev/zero` is never read whole. Strict
    JSON only: NaN and Infinity are refused, and so is a number past MAX_FLOAT. `precheck` (the raw bytes ->
    why they are beyond what a reader of this kind takes, or "") runs before the document is parsed."""
    if path.exists() and not path.is_file():
        raise UserError(f"{path}: not a {kind} (not a regular file)")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {kind}") from None
    except OSError as exc:
        raise UserError(f"{path}: not a readable {kind} ({exc.strerror})") from None
    if len(raw) > limit:
        raise UserError(f"{path}: larger than {limit >> 20} MiB: not a harness {kind}")
    beyond = precheck(raw) if precheck else ""  # before the whole document is built in memory
    if beyond:
        raise UserError(f"{path}: {beyond}")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite_float)
    except OutOfRange as exc:
        raise UserError(f"{path}: not a harness {kind} ({exc})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a harness {kind} (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not a readable {kind} ({exc})") from None
    except RecursionError:
        raise UserError(f"{path}: not a harness {kind} (nested too deeply)") from None
    except ValueError:  # Python converts no integer of more than 4,300 digits
        raise UserError(f"{path}: not a harness {kind} (a number of thousands of digits)") from None


# The files that mark a folder the harness wrote results into: its writer's lock (held while it writes, left
# behind), a reduction's state, and the pair every release since the first writes.
WRITER_LOCK_FILE = ".writer.lock"
REDUCE_STATE_FILE = "reduce.json"
RESULTS_PAIR = ("results.json", "table.md")


def holds_harness_results(folder: Path) -> bool:
    """Whether the harness wrote results into `folder`: never part of what a program reads, so never copied with
    it (a reduction's candidates' working folder, a script-path factor's copy). A user's own results.json alone
    does not make one."""
    return (folder / WRITER_LOCK_FILE).is_file() or (folder / REDUCE_STATE_FILE).is_file() \
        or all((folder / name).is_file() for name in RESULTS_PAIR)
