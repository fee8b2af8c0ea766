"""Cache directory listings -> cache entries (pure).

JAX's entry names: `<module>-<64 hex>` up to 0.4.30; from 0.4.31 each entry is two files,
`<module>-<64 hex>-cache` and `<module>-<64 hex>-atime`. Anything else (temporary files while
writing, a lock file, an autotune folder on GPU) is not an entry.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_ENTRY_RE = re.compile(r"^(?P<module>.+)-(?P<digest>[0-9a-f]{64})(?:-(?P<part>cache|atime))?$")


@dataclass(frozen=True, order=True)
class Entry:
    module: str  # e.g. jit_f
    key: str  # the full cache key, `<module>-<digest>`


def parse_name(name: str) -> Entry | None:
    match = _ENTRY_RE.match(name)
    if not match:
        return None
    return Entry(match["module"], f"{match['module']}-{match['digest']}")


def entries(names: list[str] | set[str]) -> set[Entry]:
    return {e for e in map(parse_name, names) if e is not None}


def keys_by_module(all_entries: set[Entry]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entry in sorted(all_entries):
        out.setdefault(entry.module, []).append(entry.key)
    return out


def readable_name(name: str) -> str:
    """A file name as text that any file or terminal can take: a program can make names that are not
    UTF-8 (Python holds their bytes as surrogates, which no UTF-8 writer accepts); those bytes become
    `\\xNN`. No cache entry has such a name (JAX's are ASCII), so nothing a verdict reads changes."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def list_dir(path: Path) -> set[str]:
    """The plain file names directly in `path` (what `ls -1` shows, without folders), readable."""
    try:
        with os.scandir(path) as it:
            return {readable_name(e.name) for e in it if e.is_file(follow_symlinks=False)}
    except FileNotFoundError:
        return set()
