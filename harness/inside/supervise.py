"""Run one command as a harness run, and take down everything it started when it ends.

Usage: python -I -S supervise.py HARNESS_PID MAX_LOG_BYTES COMMAND [ARGS...]

A run's script may leave processes behind: a `setsid` grandchild escapes the process group a timeout
kills, and a background child can outlive a script that exits 0 and write into the next run's cache.
This supervisor stands between the harness and the script. It makes itself a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`), so every orphan the script leaves (however it detached) becomes its
child instead of init's; when the script has exited (or the harness stops the run with SIGTERM) it
kills its children until none is left, and only then exits, with the script's exit status (a death by
signal is passed on as the same signal). It also asks the kernel for SIGTERM when the harness dies
(`PR_SET_PDEATHSIG`), so a SIGKILLed harness leaves no run behind.

Why a separate process and not the harness itself as subreaper: orphans then come to a process that
serves one run only, so nothing has to guess which run an orphan belonged to with `--jobs N`, and
reaping them cannot race with the harness's own `subprocess` waits.

It also relays the script's output (stdout and stderr, as one stream) into the run's log, keeping
the first and the last MAX_LOG_BYTES / 2 and saying how much it cut between: a script that prints
without end cannot fill the disk. Every line of JAX's cache log from between is kept (CappedLog).

When the harness names the run's temporary folder (HARNESS_RUN_TMPDIR, the folder TMPDIR, TEMP and TMP
point at), the supervisor removes it once everything is killed: the harness removes it too after the run,
but a SIGKILLed harness cannot, and a supervisor told by PR_SET_PDEATHSIG still does. The script does not
see the variable. Nor HARNESS_SIGNAL_EXIT: set when the command is bubblewrap's, whose exit code 128 + N (its
child died by signal N) is passed on as that signal.

Linux only (prctl); elsewhere the harness runs the script directly. Standard library only.
"""

from __future__ import annotations

import collections
import ctypes
import os
import resource
import select
import shutil
import signal
import sys
from types import FrameType
from collections.abc import Callable
from typing import Any, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
EXIT_CANNOT_START = 127  # as a shell reports a command it cannot run
RUN_TMPDIR_VAR = "HARNESS_RUN_TMPDIR"  # harness/environments/process.py's (a test says so)
# Set (to 1) when the command is bubblewrap's (the seal key's hider, a folder bound): bwrap ends with 128 + N
# when its child died by signal N, and that is passed on as the signal, as docker's exit codes are read.
SIGNAL_EXIT_VAR = "HARNESS_SIGNAL_EXIT"
MAX_SIGNAL = 64
CLEANUP_ROUNDS = 100  # each round kills the current children; their orphans arrive for the next


class StopSignal(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def on_stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise StopSignal(signum)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# JAX's cache log (harness/core/jaxlog.py reads it): a line holding one of these is kept however much output
# is cut around it, as the verdict and the attribution read it. The same list as jaxlog's _MARKERS (a
# test says so); copied, as this file runs alone on the standard library.
CACHE_LINE_MARKERS = (b"get_cache_key", b"ompilation cache", b"COMPILATION CACHE MISS", b"persistent cache entry",
                      b"to compile", b"XLA flag in cache key", b"get_compile_options:", b"Device(id=")
NOTE_PREFIX = b"[harness: "  # how the harness's own notes in a log begin (jaxlog.capped keeps them too)
MAX_LINE = 1 << 16  # of a line without end in the cut part, only its last this many bytes are looked at


class CappedLog:
    """Writes the first `limit - limit // 2` bytes of a stream to `fd` as they come, keeps the last
    `limit // 2` in memory, and on close() says how many bytes it cut between the two, then the tail.

    Of the part it cuts, every line of JAX's cache log (CACHE_LINE_MARKERS) is written as it goes, up
    to `cache_limit` bytes (by default `limit`): a script that prints without end loses its own output,
    not JAX's account of the keys. Past that the note says JAX's cache lines were cut too."""

    def __init__(self, fd: int, limit: int, cache_limit: int | None = None) -> None:
        self.fd = fd
        self.head = self.head_left = limit - limit // 2
        self.tail_limit = limit // 2
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_size = 0
        self.cut = 0
        self.cache_left = limit if cache_limit is None else cache_limit
        self.cache_kept = 0
        self.cache_cut = 0
        self.line = bytearray()  # the cut part's line being put together
        self.at_line_start = True  # whether the last byte written to fd ended a line

    def _out(self, data: bytes) -> None:
        write_all(self.fd, data)
        self.at_line_start = data.endswith(b"\n")

    def _new_line(self) -> None:
        if not self.at_line_start:
            self._out(b"\n")

    def write(self, data: bytes) -> None:
        if self.head_left > 0:
            part = data[:self.head_left]
            self._out(part)
            self.head_left -= len(part)
            data = data[len(part):]
        if data:
            self.tail.append(data)
            self.tail_size += len(data)
            while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
                dropped = self.tail.popleft()
                self.tail_size -= len(dropped)
                self._cut(dropped)

    def _cut(self, data: bytes) -> None:
        """Bytes that fall between the head and the tail: its cache lines kept, the rest counted."""
        self.line += data
        *lines, rest = self.line.split(b"\n")
        for line in lines:
            self._consider(bytes(line) + b"\n")
        if len(rest) > MAX_LINE:  # a line without end: only its end can hold a line of JAX's after it
            self.cut += len(rest) - MAX_LINE
            rest = rest[-MAX_LINE:]
        self.line = bytearray(rest)

    def _consider(self, line: bytes) -> None:
        if not any(marker in line for marker in CACHE_LINE_MARKERS):
            self.cut += len(line)
        elif len(line) > self.cache_left:
            self.cache_cut += len(line)
            self.cut += len(line)
            self.cache_left = 0
        else:
            if self.cache_kept == 0:
                self._new_line()
            self._out(line)
            self.cache_kept += len(line)
            self.cache_left -= len(line)

    def close(self) -> None:
        data = b"".join(self.tail)
        if len(data) > self.tail_limit:
            self._cut(data[:len(data) - self.tail_limit])
            data = data[len(data) - self.tail_limit:]
        if self.line:  # the cut part ends inside a line the tail finishes
            self._consider(bytes(self.line))
            self.line = bytearray()
        if self.cut:
            kept = (f"and {self.cache_kept} bytes of JAX's cache lines from between"
                    if not self.cache_cut else
                    f"and the first {self.cache_kept} bytes of JAX's cache lines from between: "
                    f"{self.cache_cut} bytes of them were cut too, JAX's log of this run is incomplete")
            self._new_line()
            self._out(NOTE_PREFIX + f"{self.cut} bytes of output cut here; the log keeps the first {self.head} "
                                    f"and the last {self.tail_limit} bytes, {kept}]\n".encode())
        self._out(data)
        self.tail.clear()


def children() -> list[int]:
    """Our children (including zombies): from /proc/self/task/*/children, or by scanning /proc."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def kill_everything_left() -> None:
    """SIGKILL every child we have, round after round (each round's orphans are ours in the next),
    reaping as we go."""
    for _ in range(CLEANUP_ROUNDS):
        left = children()
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in left:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def unwrapped(status: int) -> int:
    """The wait status of a script whose wrapper (bubblewrap) reported its death by signal N as exit 128 + N."""
    if os.WIFEXITED(status) and 128 < os.WEXITSTATUS(status) <= 128 + MAX_SIGNAL:
        return os.WEXITSTATUS(status) - 128  # the wait status of a death by that signal, no core
    return status


def exit_like(status: int) -> NoReturn:
    """End this process the way the script ended: its exit code, or death by its signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the script's core, if any, is enough
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal that does not kill (never expected): report it anyway
    os._exit(os.waitstatus_to_exitcode(status))


def drain(read_end: int, log: CappedLog, seconds: float = 5.0) -> None:
    """The rest of the output, once every writer is gone (or after `seconds` of silence)."""
    while True:
        ready, _, _ = select.select([read_end], [], [], seconds)
        if not ready:
            return
        data = os.read(read_end, 1 << 16)
        if not data:
            return
        log.write(data)


def remove_run_tmp(folder: str | os.PathLike[str] | None) -> None:
    """A run's temporary folder and whatever the script left in it (a folder it made read-only too, made writable
    where it must be): by this supervisor once everything is killed, and by the harness after the run
    (harness/environments/process.py imports it: one function for both)."""
    if not folder or not os.path.exists(folder):
        return  # (gone already: rmtree's error handler would make its parent writable for nothing)

    def writable_then_again(function: Callable[[str], object], path: str, exc_info: Any) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            function(path)
        except OSError:
            pass  # what cannot be removed even so stays (a mount inside it)
    shutil.rmtree(folder, onerror=writable_then_again)  # onerror: Python 3.11 has no onexc


def relay(read_end: int, wake_read: int, script_pid: int, log: CappedLog) -> int:
    """The script's output into `log` until the script has exited (woken by its SIGCHLD through `wake_read`, no
    polling); its wait status."""
    status: int | None = None
    watched = [read_end, wake_read]
    while status is None:
        ready, _, _ = select.select(watched, [], [])
        if read_end in ready:
            data = os.read(read_end, 1 << 16)
            if data:
                log.write(data)
            else:
                watched.remove(read_end)  # every writer closed its end; the script may still run
        if wake_read in ready:
            os.read(wake_read, 512)
        while True:  # reap the script, and orphans that ended on their own meanwhile
            try:
                pid, ended = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == script_pid:
                status = ended
    return status


def main(argv: list[str]) -> None:
    harness_pid, log_limit, command = int(argv[1]), int(argv[2]), argv[3:]
    run_tmp = os.environ.pop(RUN_TMPDIR_VAR, None)
    signal_exit = os.environ.pop(SIGNAL_EXIT_VAR, None) == "1"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_stop)
    if os.getppid() != harness_pid:  # the harness died before PDEATHSIG was set
        os._exit(128 + signal.SIGTERM)
    log = CappedLog(1, log_limit)
    read_end, write_end = os.pipe()
    # A child's exit wakes the select below through this pipe (no polling, no latency added to a run).
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_write)
    try:
        try:
            # In this process group, so the harness's last resort (killing the group) reaches it; with
            # the signal dispositions a fresh process would have; stdout and stderr into the relay.
            script_pid = os.posix_spawnp(
                command[0], command, os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_DUP2, write_end, 2)],
                setsigdef=[signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD])
        except OSError as exc:
            write_all(1, f"harness: cannot start {command[0]}: {exc.strerror}\n".encode())
            remove_run_tmp(run_tmp)
            os._exit(EXIT_CANNOT_START)
        os.close(write_end)
        status = relay(read_end, wake_read, script_pid, log)
    except StopSignal as stop:
        kill_everything_left()
        remove_run_tmp(run_tmp)
        drain(read_end, log)
        log.close()
        os._exit(128 + stop.signum)
    # The script is done: nothing it started may go on (and write into the next run's cache).
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # finish the clean-up even if told to stop now
    kill_everything_left()
    remove_run_tmp(run_tmp)
    drain(read_end, log)
    log.close()
    exit_like(unwrapped(status) if signal_exit else status)


if __name__ == "__main__":
    main(sys.argv)
