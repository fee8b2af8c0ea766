"""What a reduction has found so far, in its folder (`reduce.json`, rewritten atomically after every
candidate): the original and its signature, the seeds, the best program, every candidate's answer by
digest. `--resume` reads it back and goes on from the best program, the memo answering what was tried.

`--resume` runs the best program, so it must be one this reducer wrote: the state is sealed (an HMAC of its
whole text, keyed by a secret the harness keeps in the user's cache folder, never in the reduction's), and a
state whose seal does not match is refused, as is any field of the wrong type or range. A state written
before seals (version 1 or 2) resumes from the original, its memo kept: its best program is never run."""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import UserError
from harness.core.factors import Factor
from harness.core.files import read_json_bounded, write_atomic
from harness.core.kinds import FolderMode
from harness.reduce.search import Tried
import msgspec

from harness.core.records import convert, plain
from harness.results.reduction import Signature

STATE_FILE = "reduce.json"
BEST_FILE = "best.py"  # the best program so far (the search's form), for a look while it works
# 2: vary, processes and a job's launches as seeds (1 reads as a plain cell's); 3: sealed.
STATE_VERSION = 3
SEALED_FROM = 3
MAX_STATE_BYTES = 64 << 20
# The seal's key: the user's, outside every reduction folder (a folder copied from elsewhere, or edited, has no
# seal this key makes).
KEY_FILE = Path(os.environ.get("HARNESS_STATE_KEY", Path.home() / ".cache" / "jax-cache-harness" / "reduce-state.key"))
SEAL = "seal"
STATUSES = ("running", "interrupted", "complete")
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_SEED = 2 ** 32 - 1
MAX_PROCESSES = 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass
class ReduceState:
    script: str  # the original, as given
    original_digest: str  # of its text: a resumed reduction must reduce the same program
    bad: str
    good: str | None
    signature: Signature
    bad_seeds: list[int | tuple[int, ...]]  # a job's launches: a seed per process
    timeout_s: float
    best: str
    memo: dict[str, Tried] = field(default_factory=dict)
    measured: int = 0
    seconds: float = 0.0  # spent in the search, over all resumptions
    check_seconds: float = 0.0  # the original's check on the bad release (its cell's runs)
    status: str = "running"  # running | interrupted | complete
    folder: FolderMode | None = None  # how the original's runs got the cache folder (candidates get it so)
    vary: tuple[str, ...] = ()  # --vary's factors as given (a resumed reduction must be given the same)
    processes: int = 1  # --processes
    tolerated: tuple[str, ...] = ()  # how the original's disagreeing processes died (measure.own_failures)
    # Where the original wrote outside its folders (sandbox.write_places): a candidate may write there too, to
    # a stand-in of its own under bubblewrap. Sealed: a planted place would be a place candidates may write.
    places: tuple[str, ...] = ()
    run_seconds: float = 0.0  # the original's mean run there: what a candidate's run costs (0: not recorded)
    unsealed: bool = field(default=False, compare=False)  # read from before seals: its best was set aside

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "script": self.script, "original_digest": self.original_digest,
                "bad": self.bad, "good": self.good, "signature": plain(self.signature),
                "bad_seeds": self.bad_seeds, "timeout_s": self.timeout_s, "best": self.best,
                "memo": {k: plain(msgspec.structs.replace(v, measured=True)) for k, v in self.memo.items()}, "measured": self.measured,
                "seconds": round(self.seconds, 3), "check_seconds": round(self.check_seconds, 3),
                "run_seconds": round(self.run_seconds, 3),
                "status": self.status, "folder": str(self.folder) if self.folder else None,
                "vary": list(self.vary), "processes": self.processes, "tolerated_failures": list(self.tolerated),
                "write_places": list(self.places)}

    @classmethod
    def from_json(cls, data: Any) -> ReduceState:
        """The state in `data`; StateProblem naming the first field of the wrong type or range."""
        fields = _Fields(data)
        version = fields.integer("version", 1, STATE_VERSION, default=1)
        signature = fields.get("signature", dict)
        try:
            sig = convert(signature, Signature)
        except ValueError as exc:
            raise StateProblem(f"signature: not a signature ({exc.__class__.__name__}: {exc})") from None
        best = fields.text("best")
        try:
            ast.parse(best)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise StateProblem("best: not Python this harness can parse") from None
        memo = fields.get("memo", dict, default={})
        tried = {}
        for key, value in memo.items():
            if not _DIGEST.fullmatch(key) or not isinstance(value, dict) or not isinstance(value.get("kept"), bool) \
                    or not isinstance(value.get("why", ""), str):
                raise StateProblem(f"memo: {key[:70]!r}: not a digest and an answer ({{'kept': bool, 'why': text}})")
            tried[key] = msgspec.structs.replace(convert(value, Tried), measured=False)  # remembered, not measured now
        folder = fields.get("folder", str, default=None, optional=True)
        try:
            folder_mode = FolderMode(folder) if folder else None
            vary = tuple(str(Factor(v)) for v in fields.texts("vary"))
        except ValueError as exc:
            raise StateProblem(str(exc)) from None
        state = cls(fields.text("script"), fields.digest("original_digest"), fields.text("bad"),
                    fields.get("good", str, default=None, optional=True), sig,
                    fields.seeds("bad_seeds"), fields.number("timeout_s", MAX_TIMEOUT_S, positive=True), best,
                    tried, fields.integer("measured", 0, 1 << 40, default=0),
                    fields.number("seconds", float("inf"), default=0.0),
                    fields.number("check_seconds", float("inf"), default=0.0),
                    fields.choice("status", STATUSES, default="running"), folder_mode, vary,
                    fields.integer("processes", 1, MAX_PROCESSES, default=1), tuple(fields.texts("tolerated_failures")),
                    fields.places("write_places"))
        state.version = version
        state.run_seconds = fields.number("run_seconds", float("inf"), default=0.0)  # older files: none
        return state

    version: int = field(default=STATE_VERSION, compare=False)  # as read; a new state's is STATE_VERSION

    def save(self, folder: Path) -> None:
        document = self.to_json()
        document[SEAL] = seal(document)
        write_atomic(folder / STATE_FILE, json.dumps(document, indent=1) + "\n")
        write_atomic(folder / BEST_FILE, self.best)


class StateProblem(ValueError):
    """A field of reduce.json of the wrong type or range (the message names it)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Fields:
    """Typed, range-checked reads of a state document's fields; StateProblem names the field."""

    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise StateProblem(f"not a reduce state (a JSON object), but {type(data).__name__}")
        self.data = data

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ..., optional: bool = False) -> Any:
        if name not in self.data:
            if default is ...:
                raise StateProblem(f"{name}: missing")
            return default
        value = self.data[name]
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            kinds = "number" if isinstance(kind, tuple) else kind.__name__
            raise StateProblem(f"{name}: must be {kinds}, not {type(value).__name__} {str(value)[:40]!r}")
        return value

    def text(self, name: str) -> str:
        return self.get(name, str)

    def digest(self, name: str) -> str:
        value = self.text(name)
        if not _DIGEST.fullmatch(value):
            raise StateProblem(f"{name}: not a sha256 digest ({value[:70]!r})")
        return value

    def texts(self, name: str) -> list[str]:
        values = self.get(name, list, default=[])
        if not all(isinstance(v, str) for v in values):
            raise StateProblem(f"{name}: must be a list of text")
        return values

    def places(self, name: str) -> tuple[str, ...]:
        values = self.texts(name)
        if not all(v.startswith("/") and "\0" not in v for v in values):
            raise StateProblem(f"{name}: must be a list of absolute paths")
        return tuple(values)

    def integer(self, name: str, low: int, high: int, default: Any = ...) -> int:
        value = self.get(name, int, default)
        if not low <= value <= high:
            raise StateProblem(f"{name}: {value} is not from {low} to {high}")
        return value

    def number(self, name: str, high: float, default: Any = ..., positive: bool = False) -> float:
        value = self.get(name, (int, float), default)
        if isinstance(value, bool) or not math.isfinite(value) or value < 0 or (positive and value == 0) \
                or value > high:
            raise StateProblem(f"{name}: {value!r} is not a {'positive' if positive else 'non-negative'} "
                               f"finite number of at most {high:g}")
        return float(value)

    def choice(self, name: str, choices: tuple[str, ...], default: Any = ...) -> str:
        value = self.get(name, str, default)
        if value not in choices:
            raise StateProblem(f"{name}: {value[:40]!r} is not one of {', '.join(choices)}")
        return value

    def seeds(self, name: str) -> list[int | tuple[int, ...]]:
        values = self.get(name, list)
        if not values:
            raise StateProblem(f"{name}: no seeds")
        seeds: list[int | tuple[int, ...]] = []
        for value in values:
            if _is_int(value) and 0 <= value <= MAX_SEED:
                seeds.append(value)
            elif isinstance(value, list) and value and all(_is_int(v) and 0 <= v <= MAX_SEED for v in value) \
                    and len(value) <= MAX_PROCESSES:
                seeds.append(tuple(value))
            else:
                raise StateProblem(f"{name}: {str(value)[:40]!r} is not a seed (a whole number from 0 to "
                                   f"{MAX_SEED}) nor a job's seeds (a list of them)")
        return seeds


KEY_BYTES = 32


def _key() -> bytes:
    """The seal's key, made on first use (readable by the user only). Written whole or not at all (a temporary
    file linked into place), and its length checked on every read: a key cut short (made on a full disk,
    truncated) is made anew, so every seal made with it is refused, never one made with an empty key trusted."""
    try:
        key = KEY_FILE.read_bytes()
    except FileNotFoundError:
        key = b""
    else:
        if len(key) == KEY_BYTES:
            return key
    KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=KEY_FILE.parent, prefix=f".{KEY_FILE.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
            out.flush()
            os.fsync(out.fileno())
        if key or KEY_FILE.exists():  # one cut short: replaced
            os.replace(temporary, KEY_FILE)
        else:
            try:
                os.link(temporary, KEY_FILE)  # first use: another reduction that made it meanwhile wins
            except FileExistsError:
                pass
    finally:
        Path(temporary).unlink(missing_ok=True)
    key = KEY_FILE.read_bytes()
    if len(key) != KEY_BYTES:
        raise OSError(f"the reduce state's key {KEY_FILE} could not be written whole ({len(key)} bytes)")
    return key


def seal(document: dict[str, Any]) -> str:
    """The HMAC of a state document (without its seal), canonically serialised."""
    body = json.dumps({k: v for k, v in document.items() if k != SEAL}, sort_keys=True, separators=(",", ":"))
    return hmac.new(_key(), body.encode(), hashlib.sha256).hexdigest()


def load_state(folder: Path, original: str) -> ReduceState:
    """The state of the reduction in `folder`, of the program `original`; UserError (one line, exit 2) for
    a state of the wrong type or range, or a sealed one whose seal this user's key did not make. A state
    from before seals resumes from `original` (its best program is never run)."""
    path = folder / STATE_FILE
    if not path.exists():
        raise UserError(f"--resume {folder}: no {STATE_FILE} there (not a harness reduce folder)")
    data = read_json_bounded(path, MAX_STATE_BYTES, "reduce state file")
    try:
        state = ReduceState.from_json(data)
    except StateProblem as exc:
        raise UserError(f"--resume {folder}: {STATE_FILE} is not a reduce state: {exc}") from None
    if state.version >= SEALED_FROM:
        given = data.get(SEAL)
        # A seal is 64 hex digits: anything else (non-ASCII text, which compare_digest refuses with a
        # TypeError) does not match.
        if not isinstance(given, str) or not _DIGEST.fullmatch(given) or not hmac.compare_digest(given, seal(data)):
            raise UserError(f"--resume {folder}: {STATE_FILE} was not written by this reducer as it stands (its "
                            "seal does not match: edited, or made by another user or machine); its programs are "
                            "not run: reduce again without --resume")
    elif state.best != original:
        state.best = original  # unsealed: nothing it holds is run; its memo only answers what was tried
        state.unsealed = True
    return state
