"""One sweep identity (pure): what must be equal for measurements to belong in one table.

`--resume` continues a folder only with the sweep that made it, `merge` joins only shards of one sweep,
and a bisection finds its recorded state only under the same identity. All three ask this one rule.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from collections.abc import Sequence
from typing import Any

from harness.core.records import plain
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
    # Where the packages came from (--index-url, --extra-index-url, --with-editable): None or () for PyPI
    # alone, as folders written before these options read. Each editable is (folder, content digest); the
    # digest is None in folders written before it was recorded, and then only the folder is compared.
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    with_editable: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def of(cls, header: ResultsHeader) -> SweepIdentity:
        """The identity of a results document's header (or of one about to be written). The config is
        compared as it is recorded, key by key, so that a key an older release did not write (its
        default) and one it wrote agree only where they are equal."""
        options = header.options
        return cls(config={k: v for k, v in plain(header.config).items() if k not in _IGNORED_CONFIG_KEYS},
                   versions=tuple(header.versions), runs=options.runs,
                   seeds=None if options.seeds is None else str(options.seeds), all_runs=options.all_runs,
                   index_url=options.index_url, extra_index_urls=tuple(options.extra_index_urls or ()),
                   with_editable=_editables(options.editables or (), options.editable_digests))

    def differences(self, other: SweepIdentity) -> list[str]:
        """What differs, each named as the results file names it: `config.runs`, `versions`, `seeds`..."""
        out = [f"config.{k}" for k in sorted(set(self.config) | set(other.config))
               if self.config.get(k) != other.config.get(k)]
        out += [name for name in ("versions", "runs", "seeds", "all_runs", "index_url", "extra_index_urls")
                if getattr(self, name) != getattr(other, name)]
        # The editables as results.json names them (options.editables, options.editable_digests).
        return out + (["editables"] if not _same_editables(self.with_editable, other.with_editable) else [])

    def describe(self, name: str) -> str:
        """One difference's value here, as a user reads it (an editable: its folder and content digest)."""
        if name == "editables":
            return ", ".join(f"{folder} (content {digest or 'not recorded'})"
                             for folder, digest in self.with_editable) or "none"
        value = getattr(self, name)
        if name == "extra_index_urls":
            return ", ".join(value) or "none"
        return "none" if value is None else str(value)

    def key(self, **naming: Any) -> str:
        """A short stable hash of the identity and `more` (what else names a folder), for folder names."""
        # The sources only when given, so that a sweep from PyPI alone keeps the key it had before them.
        own = {k: v for k, v in asdict(self).items() if k not in _SOURCES or v}
        text = json.dumps({**own, **naming}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:10]


_SOURCES = ("index_url", "extra_index_urls", "with_editable")


def _editables(folders: Sequence[str], digests: Sequence[str] | None) -> tuple[tuple[str, str | None], ...]:
    found = tuple(digests or ())
    return tuple((folder, found[i] if i < len(found) else None) for i, folder in enumerate(folders))


def _same_editables(a: tuple[tuple[str, str | None], ...], b: tuple[tuple[str, str | None], ...]) -> bool:
    """The same folders, and the same content wherever both sweeps recorded it."""
    return len(a) == len(b) and all(fa == fb and (da is None or db is None or da == db)
                                    for (fa, da), (fb, db) in zip(a, b))
