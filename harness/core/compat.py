"""What results written by earlier releases lack, filled in before the library decodes them (pure, dict to dict).

Every rule for an older shape is here, by the record it applies to: a key an earlier release did not write
gets the value that release meant by leaving it out; a null some release wrote where the record now keeps an
empty value reads as that value. harness/core/codec.py then decodes strictly: anything else missing or of the
wrong type is an error, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Record -> the keys earlier releases may lack, with what their absence meant.
MISSING: dict[str, dict[str, Any]] = {
    "Attribution": {"hashes": {}},
    "RankSplit": {"hashes": {}},
    "RunCommand": {"argv": [], "env": {}, "cwd": ""},
    "RankRecord": {"exit_code": None, "duration_s": 0.0},
    "CellResult": {"keys": {}},
    "SeedPlan": {"seeds": []},
    "LoggedKey": {"outcome": "miss"},
    "Signature": {"components": [], "cause": None},
    "FingerprintCell": {"platform": "", "device_count": 0, "seed": None},
    "Row": {"miss_bound": None, "detail": ""},
}
# Record -> keys some release wrote null where the record keeps an empty value.
NULL_AS_EMPTY: dict[str, dict[str, Any]] = {
    "ScriptCache": {"final": {}},
    "RunCommand": {"env": {}},
    "FingerprintCell": {"modules": {}, "facts": {}},
}

# Record -> keys some release wrote as something other than the record they hold now: read as absent.
ABSENT_UNLESS_MAPPING: dict[str, tuple[str, ...]] = {
    "CellResult": ("cost",),
}

def upgrade(record: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` as today's `record` reads it: missing keys filled, nulls that meant empty made empty (the records
    it holds are upgraded as harness/core/codec.py reads each of them)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{record}: must be a mapping, not {type(data).__name__}")
    out = {**MISSING.get(record, {}), **data}
    for key, empty in NULL_AS_EMPTY.get(record, {}).items():
        if out.get(key) is None:
            out[key] = empty
    for key in ABSENT_UNLESS_MAPPING.get(record, ()):
        if key in out and not isinstance(out[key], Mapping):
            del out[key]
    return out
