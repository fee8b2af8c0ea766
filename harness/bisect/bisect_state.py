"""The resumable record of a bisection: every measured point's cells, saved atomically after each.

A bisection is identified by what determines its path (its `SweepIdentity`, the endpoints, the backend,
the repository);
the same command finds the same folder and replays the recorded verdicts, so the search retraces
its steps without measuring them again and reaches the same answer. A point interrupted half-way
was never recorded and is measured again from scratch.

A replayed verdict is never measured again, so the state is sealed as reduce.json is (harness/core/seal.py: an
HMAC keyed by the user's secret): an edited or forged state, a damaged one (of the wrong shape, past
MAX_STATE_BYTES) and one written before seals (versions 1 and 2: unsealed, so a forged state could claim to be
one) are refused in one line naming --fresh, before anything is replayed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import UserError
from harness.core.model import CellResult
from harness.core.files import read_json_bounded, write_atomic
from harness.core.seal import KEY_FILE, SEAL, seal_matches, seal_of, state_key
from harness.results.document import cell_json, read_cell

STATE_FILE = "state.json"
# 2: the points' cells as results.json of schema 3 holds them (1: of schema 2); 3: sealed. 1 and 2 are refused.
STATE_VERSION = 3
# A bisection records a few dozen points of a few cells each: past this a state is not one this harness wrote, and
# is refused before it is parsed (it was read whole: a 300 MB file).
MAX_STATE_BYTES = 64 << 20


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
            data = read_json_bounded(path, MAX_STATE_BYTES, "bisection state")
        except UserError as exc:
            raise UserError(f"{exc}; rerun with --fresh") from None
        return cls(path, identity, _checked(path, data, identity))

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
        # As JSON reads it back (the identity's values as text where JSON has no type), so the seal is of that.
        document = json.loads(json.dumps({"state_version": STATE_VERSION, "identity": self.identity,
                                          "points": self.points}, default=str))
        document[SEAL] = seal_of(document, state_key(KEY_FILE))
        write_atomic(self.path, json.dumps(document, indent=1) + "\n")


def _checked(path: Path, data: Any, identity: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The recorded points of a state file's document; UserError (one line, ending "rerun with --fresh") for one
    this harness did not write as it stands: not of a state's shape, of another version, unsealed, its seal not
    this user's key's, of another bisection, or a point's cell not one results.json could hold."""
    def refused(why: str) -> UserError:
        return UserError(f"{path}: {why}; rerun with --fresh")

    if not isinstance(data, dict):
        raise refused("not a bisection state (not a JSON object)")
    version = data.get("state_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise refused(f"state_version {str(version)[:20]} is not a state version")
    if version in (1, 2):
        raise refused(f"written by an earlier release (state version {version}, before states were sealed): its "
                      "points are not replayed")
    if version != STATE_VERSION:
        raise refused(f"state version {str(version)[:20]} is not {STATE_VERSION}")
    if not seal_matches(data, state_key(KEY_FILE)):
        raise refused("not written by this harness as it stands (its seal does not match: edited, or made by "
                      "another user or machine); its points are not replayed")
    if data.get("identity") != json.loads(json.dumps(identity, default=str)):
        raise refused("belongs to a different bisection")
    points = data.get("points")
    if not isinstance(points, dict):
        raise refused("points: expected an object")
    for point, cells in points.items():
        if not isinstance(cells, list):
            raise refused(f"points.{point[:80]}: expected an array")
        first: dict[str, int] = {}  # a cell's spec key -> where it is: a point measures each spec once
        for i, cell in enumerate(cells):
            try:
                key = read_cell(cell).spec.key
            except ValueError as exc:
                raise refused(f"points.{point[:80]}[{i}].{exc}") from None
            if (at := first.setdefault(key, i)) != i:
                raise refused(f"points.{point[:80]}[{i}]: a second cell of {key} ([{at}] is the first)")
    return points
