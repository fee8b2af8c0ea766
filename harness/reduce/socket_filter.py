"""The seccomp filter a reduce candidate's bubblewrap runs under (harness/reduce/sandbox.py): no unix socket of the
machine is reachable from a candidate."""

from __future__ import annotations

import atexit
import os
import platform
import shutil
import struct
import tempfile
import threading
from pathlib import Path

# No unix socket of the machine is reachable from a candidate, whatever the path (a socket deep in /tmp, one made
# after the sandbox started, an agent's in HOME, /var/lib/...): hiding them by path cannot keep up with a file
# system that changes while candidates run. A seccomp filter (bubblewrap's --seccomp) refuses the socket() call
# for AF_UNIX (EACCES) to every process of the sandbox, which also shuts out abstract sockets, and io_uring_setup
# (whose requests make and connect sockets past the filter). socketpair() stays: a pair reaches nothing outside.
# By machine: its audit architecture and the socket() call's number (x86_64's x32 calls are refused outright).
SOCKET_ARCH = {"x86_64": (0xC000003E, 41, True), "aarch64": (0xC00000B7, 198, False)}
_IO_URING_SETUP = 425  # the same on both
_AF_UNIX = 1
SECCOMP_FD = 9  # bubblewrap reads the filter from this descriptor (opened by the launcher's sh)


def unix_socket_filter(machine: str | None = None) -> bytes:
    """The classic-BPF seccomp program for `machine` (this one's by default): refuse socket(AF_UNIX, ...),
    io_uring_setup and any call of another architecture with EACCES, allow the rest."""
    arch, socket_nr, x32 = SOCKET_ARCH[machine or platform.machine()]
    ld_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, ...|BPF_JGE, BPF_RET
    allow, deny = 0x7FFF0000, 0x00050000 | 13  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES

    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    # seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low half on these little-endian machines).
    head = [op(ld_abs, 0, 0, 4), op(jeq, 1, 0, arch), op(ret, 0, 0, deny), op(ld_abs, 0, 0, 0)]
    x32_check = [op(jge, 5, 0, 0x40000000)] if x32 else []
    tail = [op(jeq, 4, 0, _IO_URING_SETUP), op(jeq, 0, 2, socket_nr), op(ld_abs, 0, 0, 16), op(jeq, 1, 0, _AF_UNIX),
            op(ret, 0, 0, allow), op(ret, 0, 0, deny)]
    return b"".join(head + x32_check + tail)


_filter_folder: list[Path] = []
_filter_lock = threading.Lock()  # the screen's servers start from threads of their own


def filter_file() -> Path:
    """The filter as a file of this process's own (a private folder made once, removed at exit), written anew
    when gone (a cleaner of /tmp): candidates cannot write there (the machine's /tmp is read-only to them)."""
    with _filter_lock:
        if not _filter_folder:
            folder = Path(tempfile.mkdtemp(prefix="harness-sandbox-"))  # mode 0700
            atexit.register(shutil.rmtree, folder, True)
            _filter_folder.append(folder)
    path = _filter_folder[0] / "no-unix-sockets.bpf"
    wanted = unix_socket_filter()
    try:
        if path.read_bytes() == wanted:
            return path
    except OSError:
        pass
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as out:
        out.write(wanted)
    os.replace(temporary, path)  # whole or not at all: a launch never reads half a filter
    return path
