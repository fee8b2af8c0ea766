"""What a person sees while a sweep runs: the `Progress` protocol the measurement layer talks to (the
CLI's `ConsoleProgress`, harness/cli/console.py, is the one that prints; nothing below the CLI prints)."""

from __future__ import annotations

from typing import Protocol

from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord


class Progress(Protocol):
    """What sweeps and bisections report as they go."""

    def say(self, message: str) -> None: ...

    def cell_started(self, spec: CellSpec, number: int, total: int) -> None: ...

    def run_finished(self, spec: CellSpec, run: RunRecord, planned: int) -> None: ...

    def cell_finished(self, cell: CellResult) -> None: ...
