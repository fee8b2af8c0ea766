"""The results document and its folder: `results/<UTC timestamp>-<name>/results.json` (written by
`harness.writer` after every cell), read back by report, compare, merge and --resume; logs in `logs/`."""

from __future__ import annotations

import enum
import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.analysis import boundaries, version_verdicts
from harness.errors import UserError
from harness.hostinfo import accelerator_facts
from harness.model import CellResult

SCHEMA_VERSION = 1
RESULTS_FILE = "results.json"
TABLE_FILE = "table.md"


class RunStatus(enum.StrEnum):
    """How a measurement ended, as results.json's `status` says."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C: what was measured is kept
    FAILED = "failed"  # a failure of the harness itself
    PROBLEM = "problem"  # a bisection whose endpoint contradicts its flag


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
