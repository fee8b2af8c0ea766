"""A config key's problem, as msgspec's error found it (read by harness/core/records.py's read_error), said as
the one line a user fixes it by: the key, then what its values must be in the file's words (each key's Meta says
them: `description`, `extra={"why": ...}`). Pure."""

from __future__ import annotations

import re
import types
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
import msgspec.structs
from msgspec import Meta

from harness.core.records import Problem

_STEPS = re.compile(r"\.(\w+)|\[(\d+)\]|\[\.\.\.\]")


def struct_problem(problem: Problem, data: Any, kind: Any) -> tuple[str | None, str]:
    """msgspec's error (`Expected `int` >= 2 - at `$.runs``) on `data` read as `kind` (a config file's
    ConfigFile) as the key it is about and the one line about it."""
    top, value, key, depth = kind, data, "", 0
    described: tuple[str, str, Any] | None = None  # the deepest level that says what its values must be
    for step in _STEPS.finditer(problem.path or ""):
        name, index = step[1], step[2]
        if name is not None:
            kind, value, key = _field_type(kind, name), value.get(name), f"{key}.{name}" if key else name
        elif index is not None:
            kind, value, key = _member(kind, list).__args__[0], value[int(index)], f"{key}[{index}]"
        else:  # a mapping's value: the first that does not fit names the key
            kind = _member(kind, dict).__args__[1]
            name = next(k for k, v in value.items() if not _fits(v, kind))
            value, key = value[name], f"{key}.{name}"
        depth += 1
        metas = _metas(kind)
        description = next((m.description for m in metas if m.description), None)
        if description:
            described = (key, description, value)
    metas = _metas(kind) if depth else []
    why = next((f" ({m.extra['why']})" for m in metas if m.extra and "why" in m.extra), "")
    known_keys = ", ".join(sorted(top.__struct_fields__))
    if problem.unknown:
        if not depth:
            return problem.unknown, f"unknown key (known keys: {known_keys})"
        known = ", ".join(_member(kind, msgspec.Struct).__struct_fields__)
        return f"{key}.{problem.unknown}", f"unknown key (known: {known})"
    if problem.missing:
        return (f"{key}.{problem.missing}" if key else problem.missing), "required key is missing"
    if problem.in_key and not depth:  # a key that is no word (`3: 4`)
        return str(next(k for k in data if not isinstance(k, str))), f"unknown key (known keys: {known_keys})"
    if problem.in_key:
        return key, described[1].format(value=short(value)) if described else "a key must be a string"
    if problem.bound is not None and depth == 1 and not described:
        how, bound = problem.bound
        return key, f"must be at least {bound}{why}" if how == ">=" else f"must be at most {bound}"
    if problem.longest is not None and isinstance(value, str):
        return key, f"is {len(value)} characters long; at most {problem.longest}{why}"
    if described:
        return described[0], described[1].format(value=short(described[2]))
    if problem.expected_int:
        return key, f"must be an integer, not {short(value)}"
    return key or None, problem.detail


def _metas(kind: Any) -> list[Meta]:
    """The Meta of a type (Annotated), of its Optional's one member too."""
    metas: list[Meta] = []
    while True:
        if get_origin(kind) is Annotated:
            metas += [m for m in kind.__metadata__ if isinstance(m, Meta)]
            kind = kind.__origin__
        elif get_origin(kind) in (Union, types.UnionType) and len(members := _not_none(kind)) == 1:
            kind = members[0]
        else:
            return metas


def _member(kind: Any, shape: type) -> Any:
    """The part of a type (through Annotated and unions) that is a list, a dict or a Struct."""
    if get_origin(kind) is Annotated:
        return _member(kind.__origin__, shape)
    if get_origin(kind) in (Union, types.UnionType):
        return next(m for m in (_member(k, shape) for k in _not_none(kind)) if m is not None)
    found = get_origin(kind) or kind
    return kind if isinstance(found, type) and issubclass(found, shape) else None


def _field_type(kind: Any, name: str) -> Any:
    struct = _member(kind, msgspec.Struct)
    return {f.name: f.type for f in msgspec.structs.fields(struct)}[name]


def _not_none(kind: Any) -> list[Any]:
    return [k for k in get_args(kind) if k is not type(None)]


def _fits(value: Any, kind: Any) -> bool:
    try:
        msgspec.convert(value, kind)
        return True
    except msgspec.ValidationError:
        return False


def short(value: Any, limit: int = 60) -> str:
    """repr() of a value for an error line, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
