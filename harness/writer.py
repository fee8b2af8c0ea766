"""Writes one results folder as a sweep goes: results.json, table.md and report.md, each rewritten
atomically after every cell, so an interrupted sweep keeps everything it measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.files import write_atomic
from harness.model import CellResult
from harness.report import ReportWriter
from harness.results import RESULTS_FILE, SCHEMA_VERSION, RunStatus, TABLE_FILE, summaries_by_mesh, summarise, utc_now
from harness.table import render_markdown


class ResultsWriter:
    """Owns one results folder. `add()` after every cell; `finish()` at the end."""

    def __init__(self, run_dir: Path, document: dict[str, Any], cells: list[CellResult] = ()):
        """`cells`: those a resumed sweep keeps from its folder (the document then carries the old
        `created` and a `resumed` list)."""
        self.dir = run_dir
        self._report = ReportWriter(run_dir)
        self.document = {"schema_version": SCHEMA_VERSION, "created": utc_now(), **document,
                         "finished": None, "status": RunStatus.RUNNING, "cells": [], "summary": None}
        self._cells: list[CellResult] = list(cells)
        self.flush()

    @property
    def path(self) -> Path:
        return self.dir / RESULTS_FILE

    @property
    def cells(self) -> list[CellResult]:
        return list(self._cells)

    def add(self, cell: CellResult) -> None:
        self._cells.append(cell)
        self.flush()

    def set(self, key: str, value: Any) -> None:
        self.document[key] = value
        self.flush()

    def finish(self, status: RunStatus = RunStatus.COMPLETE) -> None:
        self.document["status"] = status
        self.document["finished"] = utc_now()
        self.flush()

    def flush(self) -> None:
        self.document["cells"] = [c.to_json() for c in self._cells]
        self.document["summary"] = summarise(self._cells)
        self.document["summaries"] = summaries_by_mesh(self._cells)
        write_files(self.dir, self.document, self._cells, self._report)


def write_files(folder: Path, document: dict[str, Any], cells: list[CellResult], report: ReportWriter | None = None) -> None:
    """A results folder's results.json, table.md and report.md (`report`: a ReportWriter that already
    gathered some cells' evidence), each written atomically."""
    write_atomic(folder / RESULTS_FILE, json.dumps(document, indent=2) + "\n")
    write_atomic(folder / TABLE_FILE, render_markdown(cells, document))
    (report or ReportWriter(folder)).write(document, cells)
