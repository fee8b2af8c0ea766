"""Results on disk: `results/<UTC timestamp>-<name>/results.json`, rewritten atomically after every
cell so an interrupted sweep keeps everything it measured; `table.md` beside it; logs in `logs/`."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.analysis import boundaries, version_verdicts
from harness.hostinfo import accelerator_facts
from harness.model import CellResult

SCHEMA_VERSION = 1
RESULTS_FILE = "results.json"
TABLE_FILE = "table.md"


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; results are for others to read too
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_dir(results_root: Path, name: str) -> Path:
    """A new folder for one sweep; UserError when the results folder cannot hold it."""
    from harness.errors import UserError

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = results_root / f"{stamp}-{name}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = results_root / f"{stamp}-{name}-{suffix}"
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise UserError(f"--out {results_root}: cannot create a results folder there ({exc.strerror})") from None
    return path


def host_facts(backend: dict[str, Any]) -> dict[str, Any]:
    host = {
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "harness_python": sys.executable,
        **accelerator_facts(),  # GPUs and driver, for the report; {} without nvidia-smi
    }
    # Backend facts never overwrite the host's own (docker's "python" is the image's, say).
    return {**{(f"backend_{k}" if k in host else k): v for k, v in backend.items()}, **host}


def summarise(cells: list[CellResult]) -> dict[str, Any]:
    return boundaries(version_verdicts(cells)).to_json()


def summaries_by_mesh(cells: list[CellResult]) -> list[dict[str, Any]]:
    groups: dict[str, list[CellResult]] = {}
    for cell in cells:
        label = cell.spec.mesh.label if cell.spec.mesh else "script"
        groups.setdefault(f"{label} {cell.spec.platform}", []).append(cell)
    return [{"group": g, **summarise(cs)} for g, cs in groups.items()]


class ResultsWriter:
    """Owns one results folder. `add()` after every cell; `finish()` at the end."""

    def __init__(self, run_dir: Path, document: dict[str, Any], cells: list[CellResult] = ()):
        """`cells`: those a resumed sweep keeps from its folder (the document then carries the old
        `created` and a `resumed` list)."""
        from harness.report import ReportWriter  # imports results: import here, not at the top

        self.dir = run_dir
        self._report = ReportWriter(run_dir)
        self.document = {"schema_version": SCHEMA_VERSION, "created": utc_now(), **document,
                         "finished": None, "status": "running", "cells": [], "summary": None}
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

    def finish(self, status: str = "complete") -> None:
        self.document["status"] = status
        self.document["finished"] = utc_now()
        self.flush()

    def flush(self) -> None:
        self.document["cells"] = [c.to_json() for c in self._cells]
        self.document["summary"] = summarise(self._cells)
        self.document["summaries"] = summaries_by_mesh(self._cells)
        write_files(self.dir, self.document, self._cells, self._report)


def write_files(folder: Path, document: dict[str, Any], cells: list[CellResult], report=None) -> None:
    """A results folder's results.json, table.md and report.md (`report`: a ReportWriter that already
    gathered some cells' evidence), each written atomically."""
    from harness.report import ReportWriter  # imports results: import here, not at the top
    from harness.table import render_markdown

    write_atomic(folder / RESULTS_FILE, json.dumps(document, indent=2) + "\n")
    write_atomic(folder / TABLE_FILE, render_markdown(cells, document))
    (report or ReportWriter(folder)).write(document, cells)


def results_file(path: Path) -> Path:
    """A results folder's results.json; any other path is taken to be the file itself."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def results_folder(path: Path) -> Path:
    """The folder of a results.json; any other path is taken to be the folder itself."""
    path = Path(path)
    return path.parent if path.name == RESULTS_FILE else path


def load_results(path: Path) -> dict[str, Any]:
    """Read a results.json (or the folder holding one); UserError when it is not one."""
    from harness.errors import UserError

    path = results_file(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such results file") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable results file ({exc})") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UserError(f"{path}: not a harness results file (no schema_version)")
    if data["schema_version"] > SCHEMA_VERSION:
        raise UserError(f"{path}: schema_version {data['schema_version']} is newer than this harness "
                        f"reads ({SCHEMA_VERSION}); upgrade the harness")
    return data
