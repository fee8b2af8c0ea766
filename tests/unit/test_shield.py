"""The harness's own process is out of reach of the programs it runs (issue 49, 7): a program printed forged
`--json` summaries on the harness's stdout through /proc/<harness pid>/fd/1. As root too (these machines
run the tests as root: PR_SET_DUMPABLE alone did not hold there, CAP_SYS_PTRACE let the child through)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PARENT = textwrap.dedent("""\
    import os, subprocess, sys
    from harness.core.shield import shield_from_children
    if sys.argv[1] == "shielded":
        shield_from_children()
    subprocess.run([sys.executable, "-c", '''
    import os
    for name in ("fd/1", "mem"):
        try:
            fd = os.open(f"/proc/{os.getppid()}/{name}", os.O_WRONLY if name == "fd/1" else os.O_RDONLY)
            os.write(fd, b"FORGED\\\\n") if name == "fd/1" else None
        except OSError as exc:
            print(name, exc.strerror, file=os.sys.stderr)
    '''], stdout=subprocess.DEVNULL)
    print("REAL")
    """)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
def test_a_child_cannot_write_the_stdout_of_a_shielded_harness():
    plain = subprocess.run([sys.executable, "-c", PARENT, "plain"], capture_output=True, text=True, timeout=60, check=False)
    assert plain.stdout == "FORGED\nREAL\n", plain.stderr  # what a program could do before
    shielded = subprocess.run([sys.executable, "-c", PARENT, "shielded"], capture_output=True, text=True, timeout=60, check=False)
    assert shielded.stdout == "REAL\n", shielded.stderr
    assert shielded.stderr.splitlines() == ["fd/1 Permission denied", "mem Permission denied"]


ASKED_AFTER_MAIN = textwrap.dedent("""\
    import ctypes
    from harness.cli import commands as cli
    try:
        cli.main(["versions", "--help"])
    except SystemExit:
        pass
    libc = ctypes.CDLL(None)
    print(libc.prctl(3, 0, 0, 0, 0), libc.prctl(23, 19, 0, 0, 0))  # PR_GET_DUMPABLE, PR_CAPBSET_READ sys_ptrace
    """)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
def test_the_harness_shields_itself_before_any_command_runs():
    """`harness` (main, the console entry) is not dumpable afterwards and leaves CAP_SYS_PTRACE to no child."""
    done = subprocess.run([sys.executable, "-c", ASKED_AFTER_MAIN], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.splitlines()[-1] == "0 0", done.stdout + done.stderr
