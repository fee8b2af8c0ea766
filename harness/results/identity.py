"""One sweep identity (pure): what must be equal for measurements to belong in one table.

`--resume` continues a folder only with the sweep that made it, `merge` joins only shards of one sweep,
and a bisection finds its recorded state only under the same identity. All three ask this one rule.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from harness.results.header import ResultsHeader

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
    def of(cls, header: ResultsHeader) -> SweepIdentity:
        """The identity of a results document's header (or of one about to be written). The config is
        compared as it is recorded, key by key, so that a key an older release did not write (its
        default) and one it wrote agree only where they are equal."""
        options = header.options
        return cls(config={k: v for k, v in header.config.to_json().items() if k not in _IGNORED_CONFIG_KEYS},
                   versions=tuple(header.versions), runs=options.runs,
                   seeds=None if options.seeds is None else str(options.seeds), all_runs=options.all_runs)

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
