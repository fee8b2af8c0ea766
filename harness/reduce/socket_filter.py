"""The seccomp filter a reduce candidate's bubblewrap runs under (harness/reduce/sandbox.py): no unix socket of the
machine is reachable from a candidate, and nothing of the file system's shape can be changed."""

from __future__ import annotations

import os
import platform
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.core.files import private_folder

# No unix socket of the machine is reachable from a candidate, whatever the path (a socket deep in /tmp, one made
# after the sandbox started, an agent's in HOME, /var/lib/...), by any socket type: hiding them by path cannot keep
# up with a file system that changes while candidates run, and seccomp cannot read the address behind connect(),
# sendto() or sendmsg()'s pointer. So the sockets that could name an address are never made: socket() for AF_UNIX
# is refused (EACCES, abstract sockets too), and socketpair() for AF_UNIX of any type but SOCK_STREAM. A stream
# pair is connected from birth and for good: connect() on it is EISCONN, and sendto()/sendmsg() with an address
# EISCONN (the kernel's unix_stream_sendmsg), so it reaches nothing but its peer; a datagram pair's sendto(path)
# reached the machine's datagram sockets (issue 73). multiprocessing's Pipe and asyncio's wake-up use stream pairs.
# io_uring_setup is refused too (its requests make and connect sockets past the filter).
#
# Nothing of the mount table changes either: a candidate runs with no capabilities (bwrap --unshare-user
# --cap-drop ALL), and mount, umount2, pivot_root, chroot, the new mount API (open_tree, move_mount, fsopen,
# fsconfig, fsmount, fspick, mount_setattr, open_tree_attr), unshare, setns, open_by_handle_at and clone() with a
# CLONE_NEW* flag are refused (EPERM): no user namespace of its own in which it would hold them again. clone3's
# flags sit behind a pointer too, so it is refused with ENOSYS, which makes glibc fall back to clone().
@dataclass(frozen=True)
class Calls:
    """One architecture's audit value and the numbers of the calls the filter looks at."""

    arch: int
    x32: bool  # x86_64: x32's calls (numbers from 0x40000000) are refused outright
    socket: int
    socketpair: int
    clone: int
    refused: tuple[int, ...]  # always EPERM


_NEW_MOUNT_API = (428, 429, 430, 431, 432, 433, 442, 467)  # open_tree .. fspick, mount_setattr, open_tree_attr
SOCKET_ARCH = {
    # mount, umount2, pivot_root, chroot, unshare, setns, open_by_handle_at, then the new mount API
    "x86_64": Calls(0xC000003E, True, 41, 53, 56, (165, 166, 155, 161, 272, 308, 304, *_NEW_MOUNT_API)),
    "aarch64": Calls(0xC00000B7, False, 198, 199, 220, (40, 39, 41, 51, 97, 268, 265, *_NEW_MOUNT_API)),
}
_IO_URING_SETUP = 425  # the same on both
_CLONE3 = 435
_AF_UNIX = 1
_SOCK_STREAM, _SOCK_TYPE_MASK = 1, 0xF  # socket types carry SOCK_NONBLOCK / SOCK_CLOEXEC above the mask
# CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET
_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
SECCOMP_FD = 9  # bubblewrap reads the filter from this descriptor (opened by the launcher's sh)
EACCES, EPERM, ENOSYS = 13, 1, 38
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO
_LD_ABS, _ALU_AND, _JA, _JEQ, _JGE, _JSET, _RET = 0x20, 0x54, 0x05, 0x15, 0x35, 0x45, 0x06


def unix_socket_filter(machine: str | None = None) -> bytes:
    """The classic-BPF seccomp program for `machine` (this one's by default): the refusals above, any call of
    another architecture refused with EACCES, the rest allowed."""
    calls = SOCKET_ARCH[machine or platform.machine()]
    # seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (their low halves on these little-endian machines).
    # Each instruction: (code, jump-if-true label, jump-if-false label, k); a label is where the jump goes ("" is
    # the next instruction), resolved into offsets below.
    program: list[tuple[str, int, str, str, int]] = []  # (own label, code, true, false, k)

    def op(code: int, k: int = 0, true: str = "", false: str = "", label: str = "") -> None:
        program.append((label, code, true, false, k))

    op(_LD_ABS, 4)
    op(_JEQ, calls.arch, false="eacces")
    op(_LD_ABS, 0)
    if calls.x32:
        op(_JGE, 0x40000000, true="eacces")
    op(_JEQ, _IO_URING_SETUP, true="eacces")
    op(_JEQ, _CLONE3, true="enosys")
    for number in calls.refused:
        op(_JEQ, number, true="eperm")
    op(_JEQ, calls.clone, true="clone")
    op(_JEQ, calls.socket, true="socket")
    op(_JEQ, calls.socketpair, true="socketpair")
    op(_RET, _ALLOW)
    op(_LD_ABS, 16, label="clone")
    op(_JSET, _CLONE_NEW, true="eperm", false="allow")
    op(_LD_ABS, 16, label="socket")
    op(_JEQ, _AF_UNIX, true="eacces", false="allow")
    op(_LD_ABS, 16, label="socketpair")
    op(_JEQ, _AF_UNIX, false="allow")
    op(_LD_ABS, 24)
    op(_ALU_AND, _SOCK_TYPE_MASK)
    op(_JEQ, _SOCK_STREAM, true="allow", false="eacces")
    op(_RET, _ALLOW, label="allow")
    op(_RET, _ERRNO | EACCES, label="eacces")
    op(_RET, _ERRNO | EPERM, label="eperm")
    op(_RET, _ERRNO | ENOSYS, label="enosys")
    where = {label: i for i, (label, *_) in enumerate(program) if label}

    def offset(at: int, label: str) -> int:
        return where[label] - at - 1 if label else 0

    return b"".join(struct.pack("=HBBI", code, offset(i, true), offset(i, false), k)
                    for i, (_, code, true, false, k) in enumerate(program))


def filter_file() -> Path:
    """The filter as a file of this process's own (a private folder made once, removed at exit), written anew
    when gone (a cleaner of /tmp): candidates cannot write there (the machine's /tmp is read-only to them)."""
    path = private_folder("harness-sandbox-") / "no-unix-sockets.bpf"
    wanted = unix_socket_filter()
    try:
        if path.read_bytes() == wanted:
            return path
    except OSError:
        pass
    fd, temporary = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as out:
        out.write(wanted)
    os.replace(temporary, path)  # whole or not at all: a launch never reads half a filter
    return path
