"""One sweep identity (pure): what must be equal for measurements to belong in one table.

`--resume` continues a folder only with the sweep that made it, `merge` joins only shards of one sweep,
and a bisection finds its recorded state only under the same identity. All three ask this one rule.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

# The config's `source` is the file's path, which differs between machines and may move.
_IGNORED_CONFIG_KEYS = ("source",)


@dataclass(frozen=True)
class SweepIdentity:
    config: dict[str, Any]  # as resolved, without its source
    versions: tuple[str, ...]
    runs: int | None  # the most runs per cell
    seeds: str | None  # how the hash seeds are chosen
    all_runs: bool | None  # whether a cell stops at the first later run with a new key

    @classmethod
    def of(cls, document: dict[str, Any]) -> SweepIdentity:
        """The identity of a results document (or of the header of one about to be written)."""
        config = document.get("config") or {}
        options = document.get("options") or {}
        return cls(config={k: v for k, v in config.items() if k not in _IGNORED_CONFIG_KEYS},
                   versions=tuple(document.get("versions") or ()), runs=options.get("runs"),
                   seeds=options.get("seeds"), all_runs=options.get("all_runs"))

    def differences(self, other: SweepIdentity) -> list[str]:
        """What differs, each named as the results file names it: `config.runs`, `versions`, `seeds`..."""
        out = [f"config.{k}" for k in sorted(set(self.config) | set(other.config))
               if self.config.get(k) != other.config.get(k)]
        return out + [name for name in ("versions", "runs", "seeds", "all_runs")
                      if getattr(self, name) != getattr(other, name)]

    def key(self, **more: Any) -> str:
        """A short stable hash of the identity and `more` (what else names a folder), for folder names."""
        text = json.dumps({**asdict(self), **more}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:10]
