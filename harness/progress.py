"""What a person sees while a sweep runs: the `Progress` protocol the measurement layer talks to, and
`ConsoleProgress`, the one that prints. Printing lives here, never in the algorithms."""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from harness.listing import parse_name
from harness.model import NO_MESH, CellResult, CellSpec, RunRecord


class Progress(Protocol):
    """What sweeps and bisections report as they go."""

    def say(self, message: str) -> None: ...

    def cell_started(self, spec: CellSpec, number: int, total: int) -> None: ...

    def run_finished(self, spec: CellSpec, run: RunRecord, planned: int) -> None: ...

    def cell_finished(self, cell: CellResult) -> None: ...


class ConsoleProgress:
    """Progress as timestamped lines on stderr (nothing with `quiet`)."""

    def __init__(self, stream: TextIO = sys.stderr, quiet: bool = False):
        self.stream, self.quiet = stream, quiet
        self._start = time.monotonic()

    def say(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.monotonic() - self._start
            print(f"[{elapsed:6.1f}s] {message}", file=self.stream, flush=True)

    def cell_started(self, spec: CellSpec, number: int, total: int) -> None:
        mesh = spec.mesh.label if spec.mesh else f"user {NO_MESH}"
        self.say(f"cell {number}/{total}: jax {spec.jax_version}, {mesh}, {spec.platform} x{spec.device_count}")

    def run_finished(self, spec: CellSpec, run: RunRecord, planned: int) -> None:
        status = "ok" if run.ok else f"FAILED ({run.reason or run.exit_code})"
        new = sorted({e.key for e in map(parse_name, run.new_entries) if e})  # -cache/-atime pairs once
        shown = ", ".join(k[: k.rfind("-") + 9] + "…" for k in new if k.startswith("jit_f")) or \
            (f"{len(new)} new" if new else "no new entry")
        # Cells overlap (a cell's last runs beside the next one's first): each line names its cell.
        self.say(f"  jax {spec.jax_version} {spec.mesh_label} run {run.index}/{planned} seed {run.seed}: "
                 f"{status} in {run.duration_s:.1f}s, {shown}")

    def cell_finished(self, cell: CellResult) -> None:
        self.say(f"  => {cell.verdict}: {cell.detail}")
