"""How records (msgspec Structs shaped like results.json) are read from JSON's types (pure): strictly, a value
no release wrote being one line naming the file's key, then msgspec's words for what is wrong with it
(`config.platform: Invalid enum value 'tpu'`). Writing is msgspec's alone (`msgspec.to_builtins`,
`msgspec.json.encode`): the Structs say their keys (`rename`), what is left out (`omit_defaults`) and the
checks on hostile values (`msgspec.Meta`)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_AT = re.compile(r"^(?P<detail>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_FIELD = re.compile(r"Object (?P<how>missing required|contains unknown) field `(?P<key>.*)`")
_SAID = {"missing required": "missing",
         "contains unknown": "a key this harness does not know (written by a newer release? read it with that one)"}


def convert(data: Any, kind: type[T], where: str = "") -> T:
    """`data` (JSON's types) as `kind`, strictly; ValueError naming the file's key otherwise."""
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ValueError(explained(exc, where)) from None


def explained(exc: msgspec.ValidationError, where: str = "") -> str:
    """msgspec's error as one line, the file's key first (`cells[3].spec.platform: Invalid enum value 'tpu'`: msgspec
    names the path and what it expected); a key no record has is one a newer harness wrote."""
    found = _AT.match(str(exc))
    assert found is not None  # the pattern matches any text
    key = f"{where}{found['path'] or ''}".lstrip(".")  # msgspec's path: `.spec.platform`, `[3].spec`
    detail = found["detail"]
    if field := _FIELD.fullmatch(detail):  # the field's own key, in the file's words
        key, detail = f"{key}{'.' if key else ''}{field['key']}", _SAID[field["how"]]
    return f"{key}: {detail}" if key else detail


def plain(record: Any) -> Any:
    """`record` as JSON's types read back (lists, not tuples): what results.json holds of it."""
    return msgspec.json.decode(msgspec.json.encode(record))


R = TypeVar("R")


def replace(record: R, **changes: Any) -> R:
    """`record` with `changes`: a Struct's (msgspec.structs.replace) or a dataclass's (dataclasses.replace)."""
    if isinstance(record, msgspec.Struct):
        out = msgspec.structs.replace(record, **changes)
        if getattr(record, "__dict__", None):  # what a Struct keeps in memory only (a cell's comparison)
            out.__dict__.update(record.__dict__)
        return out
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]
