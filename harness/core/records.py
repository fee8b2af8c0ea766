"""How records (msgspec Structs shaped like results.json) are read from JSON's types (pure): strictly, a value
no release wrote being one line naming the file's key and what it must be (`config.platform: must be one of
cpu, cuda, auto, not 'tpu'`), never the library's message. Writing is msgspec's alone (`msgspec.to_builtins`,
`msgspec.json.encode`): the Structs say their keys (`rename`), what is left out (`omit_defaults`) and the
checks on hostile values (`msgspec.Meta`)."""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_AT = re.compile(r" - at `\$([^`]*)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[[^\]]*\]")


def convert(data: Any, kind: type[T], where: str = "") -> T:
    """`data` (JSON's types) as `kind`, strictly; ValueError (`where.key: must be ..., not '...'`) otherwise."""
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ValueError(explained(exc, kind, data, where)) from None


def explained(exc: msgspec.ValidationError, kind: Any, data: Any, where: str = "") -> str:
    """msgspec's error as one line: the file's key path, what the value must be, and the value (shortened)."""
    message = str(exc)
    at = _AT.search(message)
    prefix = f"{where}." if where else ""
    if at is None:  # a Struct's own check (__post_init__) said it in words
        return f"{where}: {message}" if where else message
    path, hint, value, found = [], kind, data, True
    for step in _STEP.finditer(at.group(1)):
        name, index = step.group(1), step.group(2)
        hint = _not_none(hint)
        if name is not None:
            path.append(name)
            fields = {f.encode_name: f for f in msgspec.structs.fields(hint)} \
                if isinstance(hint, type) and issubclass(hint, msgspec.Struct) else {}
            hint = fields[name].type if name in fields else None
            found = found and isinstance(value, dict) and name in value
            value = value.get(name) if found else None
        else:
            path[-1:] = [(path[-1] if path else "") + step.group(0)]
            args = [a for a in typing.get_args(hint) if a is not Ellipsis]
            hint = args[-1] if args else None
            found = found and index is not None and isinstance(value, list) and int(index) < len(value)
            value = value[int(index)] if found else None
    key = prefix + ".".join(path)
    if "missing required field" in message:
        return f"{key}{'.' if path else ''}{message.split('`')[1]}: missing" if at else message
    head = message[:at.start()]
    if not head.startswith(("Expected", "Invalid", "Object")):  # a Struct's own check said it in words
        return f"{key}{'.' if key else ''}{head}"
    if head.startswith("Expected `") and hint is not None and "`, got `" not in head and "`" in head[10:]:
        expected = head[len("Expected "):].replace("`", "")  # a constraint: `int` >= 1
    else:
        expected = described(hint)
    shown = "" if not found else f", not {str(value)[:40]!r}"
    return f"{key}: must be {expected}{shown}"


def _not_none(hint: Any) -> Any:
    options = [a for a in _options(hint) if a is not type(None)]
    return options[0] if len(options) == 1 else hint


def _options(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def described(hint: Any) -> str:
    """What a value of `hint` is, in words (a field's `Meta(description=...)` first)."""
    if typing.get_origin(hint) is typing.Annotated:
        meta = next((m for m in hint.__metadata__ if isinstance(m, msgspec.Meta) and m.description), None)
        return meta.description if meta is not None and meta.description else described(typing.get_args(hint)[0])
    options = [a for a in _options(hint) if a is not type(None)]
    if len(options) > 1:
        return " or ".join(described(a) for a in options)
    hint = options[0] if options else hint
    if typing.get_origin(hint) is typing.Annotated:
        return described(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(str(m.value) for m in hint)
    words = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}
    if hint in words:
        return words[hint]
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        return "a list"
    if origin is dict or (isinstance(hint, type) and issubclass(hint, msgspec.Struct)):
        return "a mapping"
    return "valid"


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
