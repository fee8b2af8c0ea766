"""The resumable record of a bisection: every measured point's cells, saved atomically after each.

A bisection is identified by what determines its path (its `SweepIdentity`, the endpoints, the backend,
the repository);
the same command finds the same folder and replays the recorded verdicts, so the search retraces
its steps without measuring them again and reaches the same answer. A point interrupted half-way
was never recorded and is measured again from scratch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import UserError
from harness.core.model import CellResult
from harness.core.files import write_atomic
from harness.results.document import cell_json, read_cell, upgrade_cell

STATE_FILE = "state.json"
STATE_VERSION = 2  # 2: the points' cells as results.json of schema 3 holds them (1: of schema 2, upgraded)


_RELEASE, _COMMIT = "release:", "commit:"  # what a point id starts with


def release_id(version: str) -> str:
    return f"{_RELEASE}{version}"


def commit_id(sha: str) -> str:
    return f"{_COMMIT}{sha}"


def is_release(point: str) -> bool:
    return point.startswith(_RELEASE)


@dataclass
class BisectState:
    path: Path
    identity: dict[str, Any]
    points: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # point id -> cell JSONs

    @classmethod
    def open(cls, folder: Path, identity: dict[str, Any], fresh: bool = False) -> BisectState:
        path = folder / STATE_FILE
        if fresh or not path.exists():
            state = cls(path, identity)
            state.save()
            return state
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{path}: unreadable bisection state ({exc}); rerun with --fresh") from None
        if data.get("state_version") not in (1, STATE_VERSION):
            raise UserError(f"{path}: state version {data.get('state_version')} is not "
                            f"{STATE_VERSION}; rerun with --fresh")
        if data.get("identity") != json.loads(json.dumps(identity, default=str)):
            raise UserError(f"{path}: belongs to a different bisection; rerun with --fresh")
        points = data.get("points", {})
        if data["state_version"] == 1 and isinstance(points, dict):
            points = {p: [upgrade_cell(c) for c in cells] if isinstance(cells, list) else cells
                      for p, cells in points.items()}
        return cls(path, identity, points)

    @property
    def resumed(self) -> bool:
        return bool(self.points)

    def cells(self, point: str) -> list[CellResult] | None:
        recorded = self.points.get(point)
        return None if recorded is None else [read_cell(c) for c in recorded]

    def record(self, point: str, cells: list[CellResult]) -> None:
        self.points[point] = [cell_json(c) for c in cells]
        self.save()

    def save(self) -> None:
        document = {"state_version": STATE_VERSION, "identity": self.identity, "points": self.points}
        write_atomic(self.path, json.dumps(document, indent=1, default=str) + "\n")
