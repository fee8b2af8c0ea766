"""Writes one results folder as a sweep goes: results.json, table.md and report.md, each rewritten
atomically after every cell, so an interrupted sweep keeps everything it measured."""

from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from filelock import FileLock

from harness.core.files import remove_path, write_atomic
from harness.core.kinds import Cause
from harness.core.model import CellResult
from harness.report.write import ReportWriter
from harness.report.reproduce import summary_of
from harness.results.document import (RESULTS_FILE, TABLE_FILE, ResultsDocument, SweepStatus, cell_json, document_json,
                                      lock_results_folder, utc_now)
from harness.results.header import ResultsHeader
from harness.report.table import render_markdown
from harness.verdicts.boundaries import release_boundaries


class ResultsWriter:
    """Owns one results folder. `add()` after every cell; `finish()` at the end."""

    def __init__(self, run_dir: Path, header: ResultsHeader, cells: Sequence[CellResult] = (),
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
        self._encoded = EncodedCells()
        self.flush()

    @property
    def path(self) -> Path:
        return self.dir / RESULTS_FILE

    @property
    def cells(self) -> list[CellResult]:
        return list(self.document.cells)

    def add(self, cell: CellResult) -> None:
        """Keep `cell` (finished: harness/verdicts/finish.py) and rewrite the folder."""
        self.document.add(cell)
        self.flush()

    def cause(self, cell: CellResult) -> Cause | None:
        """A cell of this folder's likely cause, read as it is finished (CellRunner.read_cause), from the evidence
        report.md shows of it."""
        return self._report.cause(cell, self.document.header.options.overlapped)

    def uncached(self, cell: CellResult) -> tuple[dict[str, str], dict[str, float]]:
        """A `not cached` cell's callback lines and untimed seconds, read from its runs' files as it is finished
        (CellRunner.read_uncached)."""
        return self._report.uncached(cell)

    def set(self, key: str, value: Any) -> None:
        """A section a later stage adds (a bisection's record)."""
        self.document.sections[key] = value
        self.flush()

    def finish(self, status: SweepStatus = SweepStatus.COMPLETE) -> None:
        self.document.status = status
        self.document.finished = utc_now()
        try:
            self.flush()
        finally:
            self._lock.release()

    def discard(self) -> None:
        """Remove the folder this writer made (nothing was measured in it) and give up its lock."""
        self._lock.release()
        remove_path(self.dir)

    def flush(self) -> None:
        write_files(self.dir, self.document, self._report, self._encoded)


def write_files(folder: Path, document: ResultsDocument, report: ReportWriter | None = None,
                encoded: EncodedCells | None = None) -> None:
    """A results folder's results.json, table.md and report.md (`report`: a ReportWriter that already
    gathered some cells' evidence; `encoded`: the cells' JSON kept from earlier writes), each written atomically."""
    write_atomic(folder / RESULTS_FILE, results_text(document, encoded or EncodedCells()))
    # The releases' boundaries once for both files: table.md's summary line, report.md's title and section.
    boundaries = release_boundaries(document.cells, document.header.releases)
    write_atomic(folder / TABLE_FILE, render_markdown(document, summary_of(document.header, document.cells, boundaries)))
    (report or ReportWriter(folder)).write(document, document.cells, boundaries)


# results.json's top-level keys are the only lines with two spaces before a key: where its cells go.
_NO_CELLS = '\n  "cells": []'


class EncodedCells:
    """Each cell's results.json text, made the first time the cell is written: a finished cell does not change,
    so a sweep's rewrite after every cell encodes only the new one (keyed by the cell object, which it holds)."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[CellResult, str]] = {}

    def text(self, cell: CellResult) -> str:
        """`cell` as json.dumps(indent=2) writes it inside results.json's `cells` (its lines indented by four)."""
        kept = self._texts.get(id(cell))
        if kept is None or kept[0] is not cell:
            kept = self._texts[id(cell)] = (cell, json.dumps(cell_json(cell), indent=2, allow_nan=False).replace("\n", "\n    "))
        return kept[1]


def results_text(document: ResultsDocument, encoded: EncodedCells) -> str:
    """results.json's text, as `json.dumps(document_json(document), indent=2, allow_nan=False)` writes it (strict
    JSON: a NaN or an infinity is a ValueError, never `NaN` in the file), with each cell's part from `encoded`."""
    text = json.dumps(document_json(document, cells=[]), indent=2, allow_nan=False) + "\n"
    if not document.cells:
        return text
    cells = ",\n    ".join(encoded.text(c) for c in document.cells)
    return text.replace(_NO_CELLS, f'\n  "cells": [\n    {cells}\n  ]', 1)
