"""The resumable record of a bisection: every measured point's cells, saved atomically after each.

A bisection is identified by what determines its path (its `SweepIdentity`, the endpoints, the backend,
the repository) and by its program's content (`program_content`: the script's text, the files its arguments
name); the same command finds the same folder and replays the recorded verdicts, so the search retraces
its steps without measuring them again and reaches the same answer. A point interrupted half-way
was never recorded and is measured again from scratch. A program edited since (or a state written before the
identity held its content) is measured again, and `restarted` says why.

A replayed verdict is never measured again, so the state is sealed as reduce.json is (harness/core/seal.py: an
HMAC keyed by the user's secret): an edited or forged state, a damaged one (of the wrong shape, past
MAX_STATE_BYTES) and one written before seals (versions 1 and 2: unsealed, so a forged state could claim to be
one) are refused in one line naming --fresh, before anything is replayed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.bounded_read import read_bounded
from harness.core.errors import UserError
from harness.inputs.config import Config
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
# The identity's key for the program's content (absent in the states of earlier releases).
PROGRAM = "program"
# What program_content reads: a program's files past these were not written by hand.
_CONTENT_FILES = 2_000
_CONTENT_BYTES = 256 << 20
_FILE_BYTES = 64 << 20


def program_content(config: Config) -> dict[str, str]:
    """What the program is, beyond its path and its arguments (which the identity's config holds): a digest of the
    script's text (a module's file, the built-in repro's) and of the files its arguments name (a test folder's .py
    files, a data file), and the words saying what was read. Bounded: at most _CONTENT_FILES files and
    _CONTENT_BYTES in all, each read within _FILE_BYTES, no link followed; a module installed in the release's
    environment (pytest) has no file of its own here, and then only the files its arguments name count."""
    repro = config.repro
    base = config.cwd or (repro.path if repro.path.is_dir() else repro.path.parent)
    files: list[Path] = [repro.path] if repro.path.is_file() else []
    named: list[str] = []
    for arg in config.args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else base / path
        if path.is_symlink() or not path.exists():
            continue
        named.append(arg.split("::")[0])
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for root, folders, names in os.walk(path):
                folders[:] = sorted(f for f in folders if not f.startswith("."))
                files += [Path(root) / n for n in sorted(names) if n.endswith(".py")]
                if len(files) > _CONTENT_FILES:
                    break
    digest = hashlib.sha256()
    left = _CONTENT_BYTES
    for path in dict.fromkeys(files[:_CONTENT_FILES]):
        found = read_bounded(path, min(_FILE_BYTES, max(left, 0)))
        digest.update(f"{path}\0{len(found.data)}\0".encode() + found.data)
        left -= len(found.data)
    what = [f"{repro.name}'s text"] if repro.path.is_file() else []
    what += [f"the files its arguments name ({', '.join(named[:3])}{', ...' if len(named) > 3 else ''})"] if named else []
    return {"digest": digest.hexdigest(), "what": " and ".join(what) or "no file of its own (an installed module)"}


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
    restarted: str = ""  # why the recorded points were not replayed (the program changed), "" when they were

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
        points = _checked(path, data, identity)
        why = _program_changed(data["identity"], identity, len(points))
        if why:  # the same bisection of another program: measured again (the old points are not this program's)
            state = cls(path, identity, restarted=why)
            state.save()
            return state
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
    recorded, wanted = data.get("identity"), json.loads(json.dumps(identity, default=str))
    if not isinstance(recorded, dict) or _without_program(recorded) != _without_program(wanted):
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


def _without_program(identity: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in identity.items() if k != PROGRAM}


def _program_changed(recorded: dict[str, Any], identity: dict[str, Any], points: int) -> str:
    """Why a state of this bisection holds another program's points ("" when it is this program's): its content
    changed since, or the state was written before the identity held it (then it cannot tell, and measures again)."""
    now = json.loads(json.dumps(identity.get(PROGRAM), default=str))
    before = recorded.get(PROGRAM)
    if before == now or now is None:
        return ""
    said = f"{points} recorded point{'s' if points != 1 else ''} not replayed, measured again"
    if not isinstance(before, dict):
        return (f"the state was written before a bisection held its program's content, so it cannot tell whether "
                f"the program changed since: {said}")
    return f"the program changed since its points were recorded ({now.get('what', 'its content')} differs): {said}"
