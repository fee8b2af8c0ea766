"""A `harness` command as the integration tests run it: in the test's own process, its exit code checked
(its stderr the message), the one results folder it wrote read back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness import cli


@dataclass(frozen=True)
class Swept:
    """What one command left: its results.json and results folder (None where it was to fail), its output."""

    data: dict[str, Any] | None
    run_dir: Path | None
    out: str  # stdout
    err: str


def sweep(argv: Sequence[str], out: Path, capsys, expect: int = 0, quiet: bool = True) -> Swept:
    """`harness ARGV --out OUT --quiet` (without --quiet: its progress goes to `err`); the exit code must
    be `expect`, and only a command that succeeded has results to read."""
    code = cli.main([*argv, "--out", str(out), *(["--quiet"] if quiet else [])])
    printed, err = capsys.readouterr()
    assert code == expect, err
    if code != 0:
        return Swept(None, None, printed, err)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return Swept(json.loads((run_dir / "results.json").read_text()), run_dir, printed, err)


def check(argv: Sequence[str], out: Path, capsys, **options: Any) -> Swept:
    """`harness check ARGV ...`, as sweep()."""
    return sweep(["check", *argv], out, capsys, **options)
