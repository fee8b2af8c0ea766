"""What a reduction has found so far, in its folder (`reduce.json`, rewritten atomically after every
candidate): the original and its signature, the seeds, the best program, every candidate's answer by
digest. `--resume` reads it back and goes on from the best program, the memo answering what was tried."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.files import write_atomic
from harness.model import FolderMode
from harness.reduce.search import Tried
from harness.reduce.signature import Signature

STATE_FILE = "reduce.json"
BEST_FILE = "best.py"  # the best program so far (the search's form), for a look while it works
STATE_VERSION = 2  # 2: vary, processes and a job's launches as seeds (1 reads as a plain cell's)


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

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "script": self.script, "original_digest": self.original_digest,
                "bad": self.bad, "good": self.good, "signature": self.signature.to_json(),
                "bad_seeds": self.bad_seeds, "timeout_s": self.timeout_s, "best": self.best,
                "memo": {k: v.to_json() for k, v in self.memo.items()}, "measured": self.measured,
                "seconds": round(self.seconds, 3), "check_seconds": round(self.check_seconds, 3),
                "status": self.status, "folder": str(self.folder) if self.folder else None,
                "vary": list(self.vary), "processes": self.processes, "tolerated_failures": list(self.tolerated)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReduceState:
        return cls(data["script"], data["original_digest"], data["bad"], data.get("good"),
                   Signature.from_json(data["signature"]),
                   [tuple(s) if isinstance(s, list) else s for s in data["bad_seeds"]], float(data["timeout_s"]),
                   data["best"], {k: Tried.from_json(v) for k, v in data.get("memo", {}).items()},
                   int(data.get("measured", 0)), float(data.get("seconds", 0.0)),
                   float(data.get("check_seconds", 0.0)), data.get("status", "running"),
                   FolderMode(data["folder"]) if data.get("folder") else None, tuple(data.get("vary", ())),
                   int(data.get("processes", 1)), tuple(data.get("tolerated_failures", ())))

    def save(self, folder: Path) -> None:
        write_atomic(folder / STATE_FILE, json.dumps(self.to_json(), indent=1) + "\n")
        write_atomic(folder / BEST_FILE, self.best)


def load_state(folder: Path) -> ReduceState:
    path = folder / STATE_FILE
    try:
        data = json.loads(path.read_text())
        return ReduceState.from_json(data)
    except FileNotFoundError:
        raise UserError(f"--resume {folder}: no {STATE_FILE} there (not a harness reduce folder)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--resume {folder}: {STATE_FILE} is unreadable ({exc.__class__.__name__}: {exc})") from None
