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
