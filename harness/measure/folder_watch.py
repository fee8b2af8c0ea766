"""A run's cache folder watched from outside the program while it goes (Linux's inotify, through `inotify-simple`).

A program can print any line JAX prints and write any record the hook writes, and it can delete the entries it
wrote before its run ends; the kernel's account of the folder it cannot rewrite. The watch keeps, per file name,
whether it was created, written or moved in, opened and read, deleted or moved out (RunRecord.seen), and
harness/evidence/keys.py weighs the runs' own accounts against it: a key the folder saw written is a key the run
computed, deleted or not; a hit needs the folder to have seen the entry read.

What it cannot see (docs/design/faults.md): a read through a descriptor opened before the run or through `mmap` (no read
event), which process did what (inotify does not say; each run has its folder of its own where it can, so that
this matters only where runs share one: FolderSeen.shared), and events past the kernel's queue (FolderSeen.lost).
Where inotify is missing (not Linux, or the package not installed), runs go unwatched (`seen` None) and are
judged as before from their listings and accounts."""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from harness.core.runs import FolderSeen

AVAILABLE = True
try:
    import inotify_simple
    from inotify_simple import flags as _flags
except ImportError:  # not Linux, or an install without the package: runs go unwatched
    AVAILABLE = False


if AVAILABLE:
    _CREATED = _flags.CREATE | _flags.MOVED_TO
    _WRITTEN = _flags.MODIFY | _flags.CLOSE_WRITE
    _READ = _flags.ACCESS | _flags.CLOSE_NOWRITE
    _GONE = _flags.DELETE | _flags.MOVED_FROM
    _FOLDER_GONE = _flags.DELETE_SELF | _flags.MOVE_SELF | _flags.UNMOUNT | _flags.Q_OVERFLOW
    _MASK = _CREATED | _WRITTEN | _READ | _GONE | _flags.DELETE_SELF | _flags.MOVE_SELF


def watch_problem() -> str:
    """Why runs cannot be watched here, or "" when they can."""
    return "" if AVAILABLE else "inotify is not available here (Linux only; the inotify-simple package)"


class FolderWatch:
    """The events in one folder from `start()` to `stop()`, read by a thread of its own as they come (the kernel's
    queue holds 16,384 by default: a suite's run makes tens of thousands)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._written: set[str] = set()
        self._read: set[str] = set()
        self._deleted: set[str] = set()
        self._lost = False
        self._wake_r, self._wake_w = -1, -1  # stop() wakes the thread through this pipe
        self._thread: threading.Thread | None = None
        self._inotify: inotify_simple.INotify | None = None

    def start(self) -> bool:
        """Begin watching; False (nothing watched) where inotify is missing or refuses the folder."""
        if not AVAILABLE:
            return False
        try:
            inotify = inotify_simple.INotify()
        except OSError:
            return False
        try:
            inotify.add_watch(os.fspath(self.folder), _MASK)
        except OSError:
            inotify.close()
            return False
        self._inotify = inotify
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._drain, args=(inotify,), name="folder-watch", daemon=True)
        self._thread.start()
        return True

    def _drain(self, inotify: inotify_simple.INotify) -> None:
        while True:
            ready, _, _ = select.select([inotify.fileno(), self._wake_r], [], [])
            self._take(inotify.read(timeout=0))
            if self._wake_r in ready:  # stop(): the process has ended, and what it did is read above
                return

    def _take(self, events: list[inotify_simple.Event]) -> None:
        for event in events:
            mask, name = int(event.mask), str(event.name)
            if mask & _FOLDER_GONE:  # the history is not whole from here on
                self._lost = True
                continue
            if event.wd == -1 or not name or mask & (_flags.ISDIR | _flags.IGNORED):
                continue
            if mask & (_CREATED | _WRITTEN):
                self._written.add(name)
            if mask & _READ:
                self._read.add(name)
            if mask & _GONE:
                self._deleted.add(name)

    def stop(self, shared: bool = False) -> FolderSeen | None:
        """The folder's history since `start()` (None where nothing was watched); `shared`: another run used the
        same folder meanwhile."""
        if self._thread is None or self._inotify is None:
            return None
        os.write(self._wake_w, b"x")
        self._thread.join()
        self._inotify.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        self._thread = None
        return FolderSeen(written=sorted(self._written), read=sorted(self._read), deleted=sorted(self._deleted),
                          lost=self._lost, shared=shared)


T = TypeVar("T")


def watched(folder: Path, run: Callable[[], T]) -> tuple[T, FolderSeen | None]:
    """`run()`'s result, and what the folder saw meanwhile (None where it could not be watched)."""
    watch = FolderWatch(folder)
    watch.start()
    try:
        result = run()
    finally:
        seen = watch.stop()
    return result, seen
