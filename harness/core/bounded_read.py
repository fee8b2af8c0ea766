"""Reading a file a run could have touched, within bounds (pure core: imports nothing of the harness).

A run's program can replace any file in its own folder (its recorder file, its cache-settings record, its IR
dump, its log) with a named pipe, a folder, a device or a link, or make it huge. The one rule for every such
read: open with O_NOFOLLOW | O_NONBLOCK (a pipe never blocks the open, a link is never followed), take only a
regular file (fstat), and read at most a bound. What was not read, and why, is one line the run's row says.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CHUNK = 64 << 10  # a streamed read takes the file this much at a time (a chunk of 2-byte lines: 32,768 of them)
# A streamed read's longest line: a record of JAX's messages is a few KiB (a module's compile options at most some
# hundred); a line past this was not written by the harness's hook, is skipped as it is read (never held whole),
# and counted in the read's note.
LINE_MAX_BYTES = 4 << 20
# A run's log: the supervisor stops writing it at 32 MiB (harness/environments/process.py MAX_LOG_BYTES); a file
# past this in its place was put there by the program, and only its start is read.
LOG_MAX_BYTES = 64 << 20


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def size_words(n: int) -> str:
    """`2.0 MiB`, `512 KiB`, `300 bytes`: a size in a sentence."""
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.0f} KiB"
    return f"{n} bytes"


@dataclass(frozen=True)
class Bounded:
    """What a bounded read found. `problem`: why nothing was read (a pipe, a folder, a link, unreadable), ""
    when it was; `capped`: the file is longer than the bound, and `data` is its first `limit` bytes."""

    data: bytes = b""
    missing: bool = False  # no such file: nothing to say
    problem: str = ""
    capped: bool = False
    size: int = 0  # the file's size, as fstat said when it was opened
    long_lines: int = 0  # a streamed read's lines past its line bound, skipped
    line_limit: int = 0

    @property
    def read(self) -> bool:
        return not self.missing and not self.problem

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def note(self, what: str, limit: int) -> str:
        """One line for the run's row: why `what` was not read or read in part; "" when it was read whole."""
        if self.problem:
            return f"{what} {self.problem}: not read"
        said = []
        if self.capped:
            said.append(f"{what} is {size_words(self.size)}, past the harness's bound of {size_words(limit)}: its "
                        f"first {size_words(limit)} read")
        if self.long_lines:
            said.append(f"{'it' if said else what} holds {self.long_lines} line{'s' if self.long_lines > 1 else ''} "
                        f"longer than {size_words(self.line_limit)}: not read")
        return "; ".join(said)


def _open(path: Path) -> tuple[int | None, Bounded | None, int]:
    """(fd, None, size) of a regular file opened for reading, or (None, why not, 0)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, Bounded(missing=True), 0
    except OSError as exc:
        if os.path.islink(path):
            return None, Bounded(problem="is a symbolic link"), 0
        return None, Bounded(problem=f"could not be opened ({exc.strerror})"), 0
    try:
        mode = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return None, Bounded(problem=f"could not be read ({exc.strerror})"), 0
    if not stat.S_ISREG(mode.st_mode):
        os.close(fd)
        return None, Bounded(problem=f"is {_kind(mode.st_mode)}, not a regular file"), 0
    return fd, None, mode.st_size


def read_bounded(path: Path, limit: int) -> Bounded:
    """At most `limit` bytes of `path`, read only when it is a regular file reached without a link."""
    fd, refused, size = _open(path)
    if fd is None:
        assert refused is not None
        return refused
    chunks: list[bytes] = []
    got = 0
    try:
        while got <= limit:  # one byte past the bound tells a file that grew after fstat
            chunk = os.read(fd, min(CHUNK, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        return Bounded(problem=f"could not be read ({exc.strerror})")
    finally:
        os.close(fd)
    if got > limit:  # the byte past the bound dropped before the join: the data is never copied again
        chunks[-1] = chunks[-1][:len(chunks[-1]) - (got - limit)]
        return Bounded(b"".join(chunks), capped=True, size=max(size, got))
    return Bounded(b"".join(chunks), size=max(size, got))


def read_text_bounded(path: Path, limit: int) -> str | None:
    """The text of `path` (at most `limit` bytes of it); None when it is absent or not a regular file."""
    found = read_bounded(path, limit)
    return found.text() if found.read else None


@dataclass
class Lines:
    """A streamed read: its lines one at a time (`lines()`), then what the read found (`outcome`)."""

    path: Path
    limit: int
    outcome: Bounded = Bounded()
    line_limit: int = LINE_MAX_BYTES

    def lines(self) -> Iterator[bytes]:
        """Each line of the file's first `limit` bytes (without its newline), never the whole file in memory: a
        small multiple of CHUNK and the longest line kept (`line_limit`; a longer one is skipped as it is read, and
        counted). Linear in the bytes read: each byte is looked at once, and a line's parts are joined once, when
        its newline comes. `outcome` says afterwards what was not read."""
        fd, refused, size = _open(self.path)
        if fd is None:
            assert refused is not None
            self.outcome = refused
            return
        got, capped, long_lines = 0, False, 0
        pending: list[bytes] = []  # the parts of a line whose newline has not come yet
        pending_bytes = 0
        skipping = False  # the current line is past line_limit: its bytes are dropped until its newline
        try:
            while True:
                want = min(CHUNK, self.limit - got)
                if want <= 0:
                    capped = bool(os.read(fd, 1))
                    break
                chunk = os.read(fd, want)
                if not chunk:
                    break
                got += len(chunk)
                if b"\n" not in chunk:  # the middle of a line: kept (or dropped, past the bound) as a part
                    if not skipping:
                        pending.append(chunk)
                        pending_bytes += len(chunk)
                        if pending_bytes > self.line_limit:  # dropped now: memory stays within the line bound
                            long_lines += 1
                            pending, pending_bytes, skipping = [], 0, True
                    continue
                first, *whole, last = chunk.split(b"\n")  # (a chunk's own lines split at C's speed)
                if skipping:
                    skipping = False
                elif pending_bytes + len(first) > self.line_limit:
                    long_lines += 1
                else:
                    yield b"".join((*pending, first)) if pending else first
                for line in whole:
                    if len(line) > self.line_limit:
                        long_lines += 1
                    else:
                        yield line
                pending, pending_bytes = ([last], len(last)) if last else ([], 0)
        except OSError as exc:
            self.outcome = Bounded(problem=f"could not be read ({exc.strerror})")
            return
        finally:
            os.close(fd)
        if pending and not capped:
            yield b"".join(pending)  # a last line without its newline (a cut write); a capped file's is cut by the bound
        self.outcome = Bounded(capped=capped, size=max(size, got), long_lines=long_lines, line_limit=self.line_limit)


def irregular_entries(folder: Path, what: str) -> str:
    """One line naming what in `folder` (a run's IR dump) is no regular file and so is not read (a pipe, a folder,
    a link, a device put there), or that `folder` itself is none; "" when all is regular or it is absent. Each
    entry is looked at with lstat alone: nothing is opened."""
    try:
        mode = os.lstat(folder).st_mode
    except OSError:
        return ""
    if not stat.S_ISDIR(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else _kind(mode)
        return f"{what} is {kind}, not a folder: not read"
    odd: list[str] = []
    count = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    entry_mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISREG(entry_mode):
                    continue
                count += 1
                if len(odd) < 3:
                    kind = "a symbolic link" if stat.S_ISLNK(entry_mode) else _kind(entry_mode)
                    odd.append(f"{entry.name!r} ({kind})")
    except OSError:
        return ""
    if not count:
        return ""
    more = f" and {count - len(odd)} more" if count > len(odd) else ""
    return f"{what} holds what is no regular file, not read: {', '.join(odd)}{more}"
