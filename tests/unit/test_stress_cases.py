"""docs/design/faults.md names every `make stress` case (issue 32: "docs/design/faults.md lists them"): the names come from
stress/stress.py itself (`--list`, docker and Slurm cases included, nothing run), so a case added there
without its line on the page fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stress_case_names() -> list[str]:
    listed = subprocess.run([sys.executable, str(ROOT / "stress" / "stress.py"), "--list"], capture_output=True,
                            text=True, timeout=120, check=True)
    return listed.stdout.splitlines()


def test_the_faults_page_names_every_stress_case():
    names = stress_case_names()
    assert len(names) == len(set(names)) and len(names) > 60, names  # docker, Slurm and bad-input cases listed
    page = " ".join((ROOT / "docs" / "design" / "faults.md").read_text().split())  # a name may wrap across lines
    missing = [name for name in names if f"`{name}`" not in page]
    assert not missing, f"docs/design/faults.md does not name these `make stress` cases: {missing}"


# A process started with SIGINT ignored (a background job of a shell without job control: `make stress > log &` in a
# script), which then starts a Python program, and asks it what Ctrl-C does there.
CHILD_SIGINT = f"""
import signal, subprocess, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
sys.path.insert(0, {str(ROOT / "stress")!r})
import stress
if sys.argv[1] == "restored":
    stress.ctrl_c_reaches_children()
asked = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
print(subprocess.run([sys.executable, "-c", asked], capture_output=True, text=True, check=True).stdout.strip())
"""


def test_the_commands_make_stress_starts_take_ctrl_c_where_it_was_started_with_ctrl_c_ignored():
    def child_takes_ctrl_c(how: str) -> str:
        return subprocess.run([sys.executable, "-c", CHILD_SIGINT, how], capture_output=True, text=True, timeout=60,
                              check=True).stdout.strip()

    assert child_takes_ctrl_c("inherited") == "False"  # what the harness saw: the SIGINT case's sweep ran on
    assert child_takes_ctrl_c("restored") == "True"
