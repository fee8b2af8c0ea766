"""The harness's own process kept out of reach of the programs it runs (Linux; pure core, no harness imports).

A program runs as the harness's user, so by default it may open `/proc/<harness pid>/fd/1` and write
into the harness's stdout (forged `--json` summaries were printed so), or read its memory. The kernel
lets a process at another's /proc files (fd/, mem, ...) only when it may trace it: a process that is
not dumpable is out of reach of every process of the same user, except one holding CAP_SYS_PTRACE; and
a process without CAP_SYS_PTRACE cannot reach one whose capabilities exceed its own. The harness run as
root keeps that capability for itself but drops it from its bounding set, so no program it starts
(as root, they would have every capability in that set) has it, and they cannot regain it.
Measured as root here: without either, a child opened and wrote /proc/<parent>/fd/1; with only
PR_SET_DUMPABLE 0 too; with the capability dropped, Permission denied (fd/1 and mem).
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_DUMPABLE = 4  # <linux/prctl.h>
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
CAP_SYS_PTRACE = 19  # <linux/capability.h>


def shield_from_children() -> None:
    """Make this process unreadable and unwritable through /proc for the programs it starts from now on.
    Nothing on other systems; a refusal of the kernel's (no CAP_SETPCAP: not root, no CAP_SYS_PTRACE
    to give away either) changes nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if libc.prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) == 1:
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)
