"""The one way typed records become JSON and back: msgspec converts, this module holds the rules results.json's
shapes add on top (pure).

msgspec (docs/architecture.md: Serialisation) does the conversion both ways, from the types themselves: enums as
their values, tuples as lists, nested records, and a strict check of every value on the way in (a bool is no
whole number, text is no list). What it cannot know is written here once:

* a *recorded* part (results.json's `config`, `options`, `host`): a key that is absent or null reads as None
  and is not written back; a key this release does not know is kept (`extra`) and written after the known ones;
  a part read from a file is written back in the order it was read (`order`);
* a value no release wrote is one line naming the key and what it must be (`platform: must be one of cpu,
  cuda, auto, not 'tpu'`), never the library's message.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from harness.core.compat import upgrade

T = TypeVar("T")

# The field metadata that says what a value must be, where the type alone says it less well ("a list of GPUs").
WHAT = "what"
_PATH = re.compile(r" - at `\$\.?([^`]*)`$")


def what(description: str) -> dict[str, str]:
    """`field(metadata=what("a list of versions"))`: how a wrong value's error names what was expected."""
    return {WHAT: description}


def to_builtins(value: Any) -> Any:
    """`value` (records, enums, tuples, nested) as JSON's types: dicts, lists, text, numbers, null (a NaN stays
    a float, written `NaN` by json.dumps as before)."""
    return _listed(msgspec.to_builtins(value))


def _listed(value: Any) -> Any:
    """Tuples as lists, as JSON reads them back (msgspec.to_builtins keeps them tuples)."""
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_listed(v) for v in value]
    return value


def convert(data: Any, kind: type[T]) -> T:
    """`data` (JSON's types) as `kind`, strictly: msgspec.ValidationError for a value of the wrong type."""
    return msgspec.convert(data, kind, strict=True)


def decode(kind: type[T], data: Any) -> T:
    """A record as results.json holds it, any release's: harness/core/compat.py's upgrade, then a strict decode."""
    return convert(upgrade(kind.__name__, data), kind)


def read_recorded(kind: type[T], data: Mapping[str, Any], *, extra: str | None = "extra",
                  order: str | None = "order", known: tuple[str, ...] | None = None) -> T:
    """A recorded part as `kind`: null and absent keys None, unknown keys in the field `extra`, the keys' order
    in the field `order` (None: `kind` keeps none); ValueError (`key: must be ..., not '...'`) for a value no
    release wrote."""
    names = known if known is not None else recorded_keys(kind, extra, order)
    present = {k: v for k, v in data.items() if k in names and v is not None}
    try:
        record = convert(present, kind)
    except msgspec.ValidationError as exc:
        key = _failed_key(str(exc))
        raise ValueError(f"{key}: must be {_expected(kind, key)}, not {str(data.get(key))[:40]!r}") from None
    kept = {extra: {k: v for k, v in data.items() if k not in names}, order: tuple(data)}
    return dataclasses.replace(record, **{k: v for k, v in kept.items() if k is not None})  # type: ignore[type-var]


def write_recorded(record: Any, *, extra: str = "extra", order: str = "order") -> dict[str, Any]:
    """A recorded part as JSON: its known keys that are not None, then `extra`, in the order it was read."""
    skipped = (extra, order)
    known = to_builtins({f.name: getattr(record, f.name) for f in dataclasses.fields(record)
                         if f.name not in skipped and getattr(record, f.name) is not None})
    return in_order({**known, **getattr(record, extra)}, getattr(record, order))


def recorded_keys(kind: type, *skipped: str | None) -> tuple[str, ...]:
    """The keys of a recorded part, in its fields' order."""
    return tuple(f.name for f in dataclasses.fields(kind) if f.name not in skipped)


def in_order(out: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """`out` with the keys a file had in the order it had them (then any others): what is read is written
    back as it was, whatever order an older release wrote."""
    return {**{k: out[k] for k in order if k in out}, **out}


def _failed_key(message: str) -> str:
    match = _PATH.search(message)
    path = match.group(1) if match else ""
    return re.split(r"[.\[]", path, maxsplit=1)[0] if path else "?"


def _expected(kind: type, key: str) -> str:
    field = next((f for f in dataclasses.fields(kind) if f.name == key), None)
    if field is None:
        return "valid"
    if WHAT in field.metadata:
        return field.metadata[WHAT]
    return _described(typing.get_type_hints(kind)[key])


def _described(hint: Any) -> str:
    """What a value of `hint` is, in words: the default of an error's `must be ...`."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return _described(args[0]) if len(args) == 1 else " or ".join(_described(a) for a in args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in hint)
    if hint is bool:
        return "true or false"
    if hint is int:
        return "a whole number"
    if hint is float:
        return "a number"
    if hint is str:
        return "text"
    return "valid"
