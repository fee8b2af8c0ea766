"""Writes one results folder as a sweep goes: results.json, table.md and report.md, each rewritten
atomically after every cell, so an interrupted sweep keeps everything it measured."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from filelock import FileLock

from harness.core.files import write_atomic
from harness.core.model import CellResult
from harness.report import ReportWriter
from harness.report.evidence import with_cause
from harness.report.reproduce import summary_of
from harness.results.document import (RESULTS_FILE, TABLE_FILE, ResultsDocument, ResultsHeader, RunStatus,
                             lock_results_folder, utc_now)
from harness.report.table import render_markdown


class ResultsWriter:
    """Owns one results folder. `add()` after every cell; `finish()` at the end."""

    def __init__(self, run_dir: Path, header: ResultsHeader, cells: list[CellResult] = (),
                 lock: FileLock | None = None):
        """`cells`: those a resumed sweep keeps from its folder (the header then carries the old
        `created` and a `resumed` list). `lock`: the folder's writer lock if the caller took it
        already (before reading the folder); otherwise it is taken here."""
        self.dir = run_dir
        self._lock = lock or lock_results_folder(run_dir)
        self._report = ReportWriter(run_dir)
        if header.created is None:
            header.created = utc_now()
        self.document = ResultsDocument(header, list(cells))
        self.flush()

    @property
    def path(self) -> Path:
        return self.dir / RESULTS_FILE

    @property
    def cells(self) -> list[CellResult]:
        return list(self.document.cells)

    def add(self, cell: CellResult) -> CellResult:
        """Keep `cell` and rewrite the folder; the cell as kept is returned (the measured one is not changed):
        a reproduced cell's likely cause, from its evidence's module diff, is on it."""
        kept = with_cause(cell, self._report.gather(cell, self.document.header.options.overlapped))
        self.document.cells.append(kept)
        self.flush()
        return kept

    def set(self, key: str, value: Any) -> None:
        """A section a later stage adds (a bisection's record)."""
        self.document.sections[key] = value
        self.flush()

    def finish(self, status: RunStatus = RunStatus.COMPLETE) -> None:
        self.document.status = status
        self.document.finished = utc_now()
        try:
            self.flush()
        finally:
            self._lock.release()

    def discard(self) -> None:
        """Remove the folder this writer made (nothing was measured in it) and give up its lock."""
        self._lock.release()
        shutil.rmtree(self.dir, ignore_errors=True)

    def flush(self) -> None:
        write_files(self.dir, self.document, self._report)


def write_files(folder: Path, document: ResultsDocument, report: ReportWriter | None = None) -> None:
    """A results folder's results.json, table.md and report.md (`report`: a ReportWriter that already
    gathered some cells' evidence), each written atomically."""
    data = document.to_json()
    write_atomic(folder / RESULTS_FILE, json.dumps(data, indent=2) + "\n")
    write_atomic(folder / TABLE_FILE, render_markdown(document.cells, document,
                                                      summary_of(document.header, document.cells)))
    (report or ReportWriter(folder)).write(document, document.cells)
