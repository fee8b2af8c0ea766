"""A planned run's folder of its own at the cell folder's path, where runs overlap (--jobs N>1).

Runs that share one folder cannot be told apart by what happens in it: an entry that appeared while two ran, and
that no run's account names (a child process started with a minimal environment, or `python -I`, has no hook), was
charged to neither, so the same program read `clean` beside other runs and `reproduced` alone. So each overlapping
planned run gets a folder of its own, bound at the cell folder's path (from JAX 0.4.36 until 0.11.0 the path is in
every key; harness/environments/same_path.py, as for run 2 beside run 1): it holds the cell folder's entries as the
run starts (hard links, a copy where a link cannot be made), its process and every child of it see only that folder
there, and what the run changed is put back into the cell's folder once it has ended (`merge_back`): what it added
or replaced, and what it deleted of what it was given. Every entry, read and write in it is that run's."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from harness.core.files import remove_path
from harness.core.listing import list_dir
from harness.core.runs import Program, RunRecord
from harness.environments.base import Environment

OWN_RUN_SUFFIX = ".own-run-"

Snapshot = dict[str, tuple[int, int, int, int]]  # file name -> (device, inode, mtime ns, size) as the run got it


def own_folder_path(cell_folder: Path, index: int) -> Path:
    return cell_folder.with_name(f"{cell_folder.name}{OWN_RUN_SUFFIX}{index:02d}")


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def prepare(cell_folder: Path, own: Path) -> Snapshot:
    """`own` made afresh holding the cell folder's plain files (hard links, or copies), and what it was given."""
    remove_path(own)
    own.mkdir(parents=True)
    given: Snapshot = {}
    for name in sorted(list_dir(cell_folder)):
        source, target = cell_folder / name, own / name
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError:
            try:
                shutil.copy2(source, target, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile, or unreadable: not given
        identity = _identity(target)
        if identity is not None:
            given[name] = identity
    return given


def merge_back(own: Path, cell_folder: Path, given: Snapshot) -> list[str]:
    """What the run changed, put into the cell's folder, and `own` removed; the names it added (sorted). A file it
    added goes in unless another run put one there meanwhile; one it replaced (another file under the name) replaces
    the cell's; one it deleted is deleted there where it is still the file it was given."""
    now = {name: _identity(own / name) for name in list_dir(own)}
    added = sorted(name for name in now if name not in given)
    for name, identity in sorted(now.items()):
        if identity is None or given.get(name) == identity:
            continue  # as given
        target = cell_folder / name
        if name not in given and target.exists():
            continue
        try:  # (a file written in place through its hard link is the cell's already: replacing it does nothing)
            if (own / name).is_file() and not (own / name).is_symlink():
                os.replace(own / name, target)
        except OSError:
            continue
    for name, identity in given.items():
        there = _identity(cell_folder / name)
        if name not in now and there is not None and there[:2] == identity[:2]:
            (cell_folder / name).unlink(missing_ok=True)
    remove_path(own)
    return added


def in_own_folder(cell_folder: Path, index: int, environment: Environment, program: Program,
                  measure: Callable[[Path, Program, Path], RunRecord]) -> RunRecord:
    """Run `index` measured by `measure(own folder, program, folder it is told)` in a folder of its own holding the
    cell folder's entries, bound at the cell folder's path; what it changed put back once it has ended, its
    `new_entries` what it added."""
    own = own_folder_path(cell_folder, index)
    given = prepare(cell_folder, own)
    try:
        bound, told = environment.own_folder_run(program, cell_folder, own)
        record = measure(own, bound, told)
    finally:
        added = merge_back(own, cell_folder, given)
    record.new_entries = added
    return record


class SharedFolders:
    """This harness's runs going now in a folder another run may use too (a cell's folder itself: run 1, the seed
    control, a job, a planned run without a folder of its own), each with whether another ran in the same folder at
    any moment. Such a run is `overlapped` (RunRecord.overlapped) and what its watch saw `shared`: an entry that
    appeared meanwhile and that no run's own account computed could be either's, and is charged to neither
    (harness/evidence/keys.py)."""

    def __init__(self) -> None:
        self._live: dict[int, tuple[Path, list[bool]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def using(self, folder: Path | None) -> Iterator[list[bool]]:
        """While a run uses `folder` (None: one of its own, shared with no run): [whether another used it too]."""
        beside = [False]
        with self._lock:
            if folder is not None:
                for other_folder, other in self._live.values():
                    if other_folder == folder:
                        beside[0] = other[0] = True
                self._live[id(beside)] = (folder, beside)
        try:
            yield beside
        finally:
            with self._lock:
                self._live.pop(id(beside), None)


SHARED = SharedFolders()


def mark_overlapped(record: RunRecord) -> RunRecord:
    record.overlapped = True
    if record.seen is not None:
        record.seen = msgspec.structs.replace(record.seen, shared=True)
    return record
