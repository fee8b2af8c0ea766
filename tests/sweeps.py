"""A `harness` command as the integration tests run it: in the test's own process, its exit code checked
(its stderr the message), the one results folder it wrote read back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.cli import commands as cli


@dataclass(frozen=True)
class Swept:
    """What one command left: its results.json and results folder (None where it was to fail), its output."""

    data: dict[str, Any] | None
    run_dir: Path | None
    out: str  # stdout
    err: str


def sweep(argv: Sequence[str], out: Path, capsys, expect: int | None = 0, quiet: bool = True) -> Swept:
    """`harness ARGV --out OUT --quiet` (without --quiet: its progress goes to `err`); the exit code must
    be `expect`, and only a command that succeeded has results to read. `expect=None`: the exit code
    `harness check` gives by default, 1 where a cell is reproduced or error (it failed, as a test does), else 0."""
    if argv[0] == "check" and expect == 0:
        expect = None  # a check passes or fails by its cells (its own rule, checked below)
    argv = list(argv)
    at = argv.index("--") if "--" in argv else len(argv)  # the program's own arguments stay last
    code = cli.main([*argv[:at], "--out", str(out), *(["--quiet"] if quiet else []), *argv[at:]])
    printed, err = capsys.readouterr()
    if expect is not None:
        assert code == expect, err
    if code not in (0, 1) or (expect is not None and code != 0):
        assert expect is not None, err
        return Swept(None, None, printed, err)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    data = json.loads((run_dir / "results.json").read_text())
    if expect is None:
        failed = any(c["verdict"] in ("reproduced", "error") for c in data["cells"])
        assert code == int(failed), err
    return Swept(data, run_dir, printed, err)


def check(argv: Sequence[str], out: Path, capsys, **options: Any) -> Swept:
    """`harness check ARGV ...`, as sweep() (its exit code by check's own rule unless `expect` says)."""
    return sweep(["check", *argv], out, capsys, **options)
