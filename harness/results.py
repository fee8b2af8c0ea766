"""The results document and its folder: `results/<UTC timestamp>-<name>/results.json` (written by
`harness.writer` after every cell), read back by report, compare, merge and --resume; logs in `logs/`.

`ResultsDocument` is the file as typed data: a header (what was measured, how, where), the cells, the
status, and the sections later stages add (a bisection, a merge). `to_json`/`from_json` are the one
way in and out; a file written by an earlier release (schema_version 1) reads the same way.
"""

from __future__ import annotations

import enum
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from harness.analysis import boundaries, version_verdicts
from harness.errors import UserError
from harness.hostinfo import accelerator_facts, scheduler_facts
from harness.model import CellResult

# 2: written from ResultsDocument. Version 1 files (the release before) have the same fields: a field
# added since is optional when reading, so report, compare, merge and --resume take both.
SCHEMA_VERSION = 2
RESULTS_FILE = "results.json"
TABLE_FILE = "table.md"


class RunStatus(enum.StrEnum):
    """How a measurement ended, as results.json's `status` says."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C: what was measured is kept
    FAILED = "failed"  # a failure of the harness itself
    PROBLEM = "problem"  # a bisection whose endpoint contradicts its flag
    INCOMPLETE = "incomplete"  # a merge that lacks shards, or took one that did not complete


@dataclass
class ResultsHeader:
    """What was measured, how and where: fixed when a sweep (or a bisection) starts."""

    command: str = ""  # shell-quoted, ready to paste
    config: dict[str, Any] = field(default_factory=dict)  # Config.to_json(), as resolved
    versions: list[str] = field(default_factory=list)  # the resolved releases
    options: dict[str, Any] = field(default_factory=dict)  # runs, jobs, seeds, all_runs, backend and why...
    host: dict[str, Any] = field(default_factory=dict)  # OS, Python, GPUs, backend facts
    shard: dict[str, Any] | None = None  # Shard.to_json(): this machine's share of the cells
    created: str | None = None
    resumed: list[str] = field(default_factory=list)  # when --resume continued it

    def to_json(self) -> dict[str, Any]:
        out = {"created": self.created, "command": self.command, "config": self.config, "versions": self.versions,
               "options": self.options, "host": self.host}
        if self.shard:
            out["shard"] = self.shard
        if self.resumed:
            out["resumed"] = self.resumed
        return out


_HEADER_FIELDS = ("command", "config", "versions", "options", "host", "shard", "created", "resumed")
_DERIVED = ("summary", "summaries")  # computed from the cells on every write


@dataclass
class ResultsDocument:
    header: ResultsHeader
    cells: list[CellResult] = field(default_factory=list)
    status: RunStatus = RunStatus.RUNNING
    status_detail: str = ""  # why a merge is incomplete ("shard(s) 3 missing"), written into `status`
    finished: str | None = None
    sections: dict[str, Any] = field(default_factory=dict)  # added by later stages: bisect, merged_from...
    schema_version: int = SCHEMA_VERSION

    @property
    def status_text(self) -> str:
        return f"{self.status}: {self.status_detail}" if self.status_detail else str(self.status)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, **self.header.to_json(), "finished": self.finished,
                "status": self.status_text, "cells": [c.to_json() for c in self.cells],
                "summary": summarise(self.cells), "summaries": summaries_by_mesh(self.cells), **self.sections}

    @classmethod
    def from_json(cls, data: Any, source: Path | str) -> ResultsDocument:
        """The document of a results.json (`source` names it in errors); UserError, one line naming the
        file and the cell, when it is not one this harness can read."""
        if not isinstance(data, dict) or "schema_version" not in data:
            raise UserError(f"{source}: not a harness results file (no schema_version)")
        version = data["schema_version"]
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise UserError(f"{source}: schema_version {version} is newer than this harness "
                            f"reads ({SCHEMA_VERSION}); upgrade the harness")
        header = ResultsHeader(**{k: data[k] for k in _HEADER_FIELDS if data.get(k) is not None})
        status, _, detail = str(data.get("status") or RunStatus.RUNNING).partition(": ")
        try:
            status = RunStatus(status)
        except ValueError:
            raise UserError(f"{source}: status: {data.get('status')!r} is not a status") from None
        known = {"schema_version", "finished", "status", "cells", *_HEADER_FIELDS, *_DERIVED}
        return cls(header, _cells(data.get("cells"), source), status, detail, data.get("finished"),
                   {k: v for k, v in data.items() if k not in known}, version)


def _cells(cells: Any, source: Path | str) -> list[CellResult]:
    if cells is None:
        return []
    if not isinstance(cells, list):
        raise UserError(f"{source}: cells: must be a list of cells")
    out = []
    for i, data in enumerate(cells):
        try:
            cell = CellResult.from_json(data)
            Version(cell.spec.jax_version)  # compare and sorting need it; InvalidVersion is a ValueError
        except KeyError as exc:
            raise UserError(f"{source}: cells[{i}]: missing key {exc}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise UserError(f"{source}: cells[{i}]: {exc}") from None
        out.append(cell)
    return out


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_dir(results_root: Path, name: str) -> Path:
    """A new folder for one sweep; UserError when the results folder cannot hold it."""
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
        **scheduler_facts(),  # the Slurm job and array task; {} outside Slurm
    }
    # Backend facts never overwrite the host's own (docker's "python" is the image's, say).
    return {**{(f"backend_{k}" if k in host else k): v for k, v in backend.items()}, **host}


def summarise(cells: list[CellResult]) -> dict[str, Any]:
    return boundaries(version_verdicts(cells)).to_json()


def summaries_by_mesh(cells: list[CellResult]) -> list[dict[str, Any]]:
    groups: dict[str, list[CellResult]] = {}
    for cell in cells:
        label = cell.spec.mesh_label
        groups.setdefault(f"{label} {cell.spec.platform}", []).append(cell)
    return [{"group": g, **summarise(cs)} for g, cs in groups.items()]


def results_file(path: Path) -> Path:
    """A results folder's results.json; any other path is taken to be the file itself."""
    path = Path(path)
    return path / RESULTS_FILE if path.is_dir() else path


def results_folder(path: Path) -> Path:
    """The folder of a results.json; any other path is taken to be the folder itself."""
    path = Path(path)
    return path.parent if path.name == RESULTS_FILE else path


def load_results(path: Path) -> ResultsDocument:
    """Read a results.json (or the folder holding one); UserError when it is not one."""
    path = results_file(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such results file") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable results file ({exc})") from None
    return ResultsDocument.from_json(data, path)
