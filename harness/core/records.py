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

# msgspec's words (pinned below its next major in pyproject.toml; tests/unit/test_msgspec_errors.py holds them):
# `DETAIL - at `$.PATH`` (a value), `DETAIL - at `key` in `$.PATH`` (a mapping's key), or DETAIL alone (the top).
_AT = re.compile(r"^(?P<detail>.*?)(?: - at `(?P<in_key>key` in `)?\$(?P<path>[^`]*)`)?$", re.DOTALL)
_FIELD = re.compile(r"Object (?P<how>missing required|contains unknown) field `(?P<key>.*)`")
_BOUND = re.compile(r"Expected `int` (?P<op>>=|<=) (?P<bound>\d+)")
_LENGTH = re.compile(r"Expected `str` of length <= (?P<most>\d+)")
_SAID = {"missing required": "missing",
         "contains unknown": "a key this harness does not know (written by a newer release? read it with that one)"}


@dataclasses.dataclass(frozen=True)
class Problem:
    """msgspec's ValidationError, read once: the one translator of its words, which each reader (explained,
    harness/inputs/config_errors.py) says as one line of its own."""

    detail: str  # msgspec's words for what is wrong, without where
    path: str | None  # where, after msgspec's `$`: `.spec.platform`, `[3]`, `.env[...]`; None: the top
    in_key: bool = False  # a mapping's key is wrong, not its value (`path` is the mapping's)
    missing: str | None = None  # a required field the object lacks
    unknown: str | None = None  # a field the object has and its type does not
    bound: tuple[str, int] | None = None  # an int out of its range: (">=", 2), ("<=", 64)
    longest: int | None = None  # a str longer than this

    @property
    def expected_int(self) -> bool:
        """An integer was expected (optional or not), and something else given."""
        return self.detail.startswith(("Expected `int`", "Expected `int | null`"))


def read_error(exc: msgspec.ValidationError) -> Problem:
    """msgspec's error (`Expected `int` >= 2 - at `$.runs``) as its parts."""
    found = _AT.match(str(exc))
    assert found is not None  # the pattern matches any text
    detail = found["detail"]
    field = _FIELD.fullmatch(detail)
    bound = _BOUND.match(detail)
    longest = _LENGTH.match(detail)
    return Problem(detail, found["path"], bool(found["in_key"]),
                   missing=field["key"] if field and field["how"] == "missing required" else None,
                   unknown=field["key"] if field and field["how"] == "contains unknown" else None,
                   bound=(bound["op"], int(bound["bound"])) if bound and bound.end() == len(detail) else None,
                   longest=int(longest["most"]) if longest and longest.end() == len(detail) else None)


def convert(data: Any, kind: type[T], where: str = "") -> T:
    """`data` (JSON's types) as `kind`, strictly; ValueError naming the file's key otherwise."""
    try:
        return msgspec.convert(data, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ValueError(explained(exc, where)) from None


def explained(exc: msgspec.ValidationError, where: str = "") -> str:
    """msgspec's error as one line, the file's key first (`cells[3].spec.platform: Invalid enum value 'tpu'`: msgspec
    names the path and what it expected); a key no record has is one a newer harness wrote."""
    problem = read_error(exc)
    if problem.in_key:  # a mapping's key: msgspec's words whole, where it says
        return f"{where.lstrip('.')}: {exc}" if where.lstrip(".") else str(exc)
    key = f"{where}{problem.path or ''}".lstrip(".")  # msgspec's path: `.spec.platform`, `[3].spec`
    detail = problem.detail
    if (field := problem.missing if problem.missing is not None else problem.unknown) is not None:
        how = "missing required" if problem.missing is not None else "contains unknown"
        key, detail = f"{key}{'.' if key else ''}{field}", _SAID[how]  # the field's own key, in the file's words
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
