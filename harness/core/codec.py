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
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from harness.core.compat import ABSENT_UNLESS_MAPPING, MISSING, NULL_AS_EMPTY, upgrade

T = TypeVar("T")

def to_builtins(value: Any) -> Any:
    """`value` (records, enums, tuples, nested) as JSON's types: dicts, lists, text, numbers, null (a NaN stays
    a float, written `NaN` by json.dumps as before)."""
    return _listed(msgspec.to_builtins(value))


def _listed(value: Any) -> Any:
    """Tuples as lists, as JSON reads them back (msgspec.to_builtins keeps them tuples)."""
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else _listed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _SCALARS else _listed(v) for v in value]
    return value


_SCALARS = frozenset((str, int, float, bool, type(None)))


def convert(data: Any, kind: type[T]) -> T:
    """`data` (JSON's types) as `kind`, strictly: msgspec.ValidationError for a value of the wrong type."""
    return msgspec.convert(data, kind, strict=True)


def in_order(out: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """`out` with the keys a file had in the order it had them (then any others): what is read is written
    back as it was, whatever order an older release wrote."""
    return {**{k: out[k] for k in order if k in out}, **out}


# --- How a record is written: its fields' shapes in the file, declared once beside the fields ---------------


class Omit(enum.Enum):
    """When a field is left out of the file (a reader fills in its default)."""

    NEVER = "never"  # always written, None as null
    EMPTY = "empty"  # not written when None, false, or an empty text, list or mapping
    NONE = "none"  # not written when None
    DEFAULT = "default"  # not written when it equals the field's default
    ALWAYS = "always"  # kept in memory only, never written (read back as its default)


class Form(enum.Enum):
    """How a field's value is written when the file does not hold it as its type says."""

    VALUE = "value"  # as its type: msgspec's builtins, a record by its own shapes
    MAPPING = "mapping"  # (name, value) pairs in memory, an object in the file
    NAMED_PAIRS = "named pairs"  # (name, a, b) in memory, {name: [a, b]} in the file
    OBJECTS = "objects"  # tuples in memory, objects with the keys `names` in the file
    SPLICED = "spliced"  # a nested record whose keys are written among the holder's (null each when None)
    KEYED = "keyed"  # a list of records written as mappings nested by the fields `names`, the rest inside
    EXTRA = "extra"  # the keys this release does not know, as read, written after the known ones


@dataclasses.dataclass(frozen=True)
class Shape:
    """One field in the file: its key ("a.b": inside the object `a`; fields sharing one key: a list of
    their values, in field order), when it is left out and in what form."""

    key: str | None = None
    omit: Omit | Callable[[Any], bool] = Omit.NEVER  # a callable: left out when it says so of the record
    form: Form = Form.VALUE
    names: tuple[str, ...] = ()


SHAPE = "shape"


def shape(*, key: str | None = None, omit: Omit | Callable[[Any], bool] = Omit.NEVER, form: Form = Form.VALUE,
          names: tuple[str, ...] = ()) -> dict[str, Any]:
    """`field(metadata=shape(...))`: how the field is written."""
    return {SHAPE: Shape(key, omit, form, names)}


class derived(property):  # noqa: N801 - lower case, as `property` is: it is used as one
    """A property the file holds too (written for readers of the file, ignored when read back: the record
    derives it again)."""

    def __init__(self, fget: Callable[[Any], Any], *, key: str | None = None,
                 omit: Omit | Callable[[Any], bool] = Omit.NEVER) -> None:
        super().__init__(fget)
        self.shape = Shape(key or fget.__name__, omit)


def written(*, key: str | None = None, omit: Omit | Callable[[Any], bool] = Omit.NEVER) -> Callable[..., derived]:
    """`@written()` above a method: a derived property the file holds under `key` (default its name)."""
    return lambda fget: derived(fget, key=key, omit=omit)


@dataclasses.dataclass(frozen=True)
class RecordShape:
    """A record's own rules: the file's key order where it is not the fields' (derived keys included), or
    the one field whose value is the record in the file."""

    order: tuple[str, ...] = ()
    unwrapped: str | None = None


def shaped(*, order: tuple[str, ...] = (), unwrapped: str | None = None) -> Callable[[type[T]], type[T]]:
    """Class decorator: the record's `RecordShape`."""
    def apply(kind: type[T]) -> type[T]:
        kind.__record_shape__ = RecordShape(order, unwrapped)  # type: ignore[attr-defined]
        return kind
    return apply


class Record:
    """A dataclass written and read by this module: `to_json()` and `from_json(data)` from its fields' shapes,
    once for every record."""

    __slots__ = ()

    def to_json(self) -> Any:
        return encode(self)

    @classmethod
    def from_json(cls, data: Any) -> Any:
        return decode(cls, data)


_DEFAULT_SHAPE = Shape()


@functools.cache
def _plan(kind: type) -> tuple[RecordShape, tuple[tuple[dataclasses.Field[Any], Shape, Any], ...],
                                tuple[tuple[str, derived], ...]]:
    """A record's fields with their shapes and type hints, and its derived properties (cached per type)."""
    hints = typing.get_type_hints(kind)
    fields = tuple((f, f.metadata.get(SHAPE, _DEFAULT_SHAPE), hints[f.name]) for f in dataclasses.fields(kind))
    props = tuple((name, attr) for klass in reversed(kind.__mro__) for name, attr in vars(klass).items()
                  if isinstance(attr, derived))
    return getattr(kind, "__record_shape__", RecordShape()), fields, props


def _options(hint: Any) -> tuple[Any, ...]:
    """The types a hint allows: a union's members, or the hint itself."""
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _not_none(hint: Any) -> Any:
    """The one type an optional hint holds besides None (the hint itself when it is no union)."""
    return next((o for o in _options(hint) if o is not type(None)), None)


def is_record(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind) and issubclass(kind, Record)


@functools.cache
def _holds_record(hint: Any) -> bool:
    """Whether a value of `hint` may hold a record (else msgspec writes it whole, and it is read as it is)."""
    return is_record(hint) or any(_holds_record(a) for a in typing.get_args(hint))


def _leaf(value: Any) -> Any:
    """A value that holds no record, as JSON's types."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    return to_builtins(value)


def _left_out(rule: Omit | Callable[[Any], bool], value: Any, record: Any, f: dataclasses.Field[Any] | None) -> bool:
    if callable(rule):
        return bool(rule(record))
    if rule is Omit.ALWAYS:
        return True
    if rule is Omit.NONE:
        return value is None
    if rule is Omit.EMPTY:
        return value is None or value is False or (isinstance(value, (str, list, tuple, dict)) and not value)
    if rule is Omit.DEFAULT:
        return f is not None and value == _field_default(f)
    return False


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _value(value: Any) -> Any:
    """A value as JSON's types: a record by its shapes, lists of them, the rest by msgspec."""
    if isinstance(value, Record):
        return encode(value)
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return to_builtins(value)


def _place(out: dict[str, Any], key: str, value: Any, shared: set[str]) -> None:
    head, _, rest = key.partition(".")
    if rest:
        _place(out.setdefault(head, {}), rest, value, shared)
    elif key in shared:
        out.setdefault(key, []).append(value)
    else:
        out[key] = value


@functools.cache
def _shared_keys(kind: type) -> frozenset[str]:
    """The keys several of `kind`'s fields share (written as one list)."""
    fields = _plan(kind)[1]
    keys = [s.key or f.name for f, s, _ in fields if s.form is not Form.SPLICED and "." not in (s.key or f.name)]
    return frozenset(k for k in keys if keys.count(k) > 1)


def encode(record: Any) -> Any:
    """`record` as the file holds it, by its fields' shapes."""
    kind = type(record)
    rules, fields, props = _plan(kind)
    if rules.unwrapped is not None:
        f, s, _ = next(item for item in fields if item[0].name == rules.unwrapped)
        return _formed(s, getattr(record, f.name))
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    shared = _shared_keys(kind)
    for f, s, hint in fields:
        value = getattr(record, f.name)
        if s.omit is not Omit.NEVER and _left_out(s.omit, value, record, f):
            continue
        if s.form is Form.EXTRA:
            extra = dict(value)
        elif s.form is Form.SPLICED:
            inner = encode(value) if value is not None else {
                (fs.key or ff.name): None for ff, fs, _ in _plan(_record_in(hint))[1]}
            out.update(inner)
        else:
            _place(out, s.key or f.name, _formed(s, value) if s.form is not Form.VALUE or _holds_record(hint)
                   else _leaf(value), shared)
    for name, prop in props:
        value = getattr(record, name)
        if prop.shape.omit is Omit.NEVER or not _left_out(prop.shape.omit, value, record, None):
            out[prop.shape.key or name] = _value(value)
    if rules.order:
        out = in_order(out, rules.order)
    return {**out, **extra}


def _record_in(hint: Any) -> type:
    """The record type a field holds (its hint, or the record of an optional one)."""
    return next(a for a in (hint, *typing.get_args(hint)) if is_record(a))


def _formed(s: Shape, value: Any) -> Any:
    if s.form is Form.MAPPING:
        return {k: _value(v) for k, v in value}
    if s.form is Form.NAMED_PAIRS:
        return {name: [_value(a), _value(b)] for name, a, b in value}
    if s.form is Form.OBJECTS:
        return [dict(zip(s.names, map(_value, item))) for item in value]
    if s.form is Form.KEYED:
        nested: dict[str, Any] = {}
        for item in value:
            data = encode(item)
            node = nested
            for name in s.names[:-1]:
                node = node.setdefault(data.pop(name), {})
            node[data.pop(s.names[-1])] = data
        return nested
    return _value(value)


def _unformed(s: Shape, value: Any, hint: Any) -> Any:
    """The file's value of one field as its type reads it (field names, lists for tuples)."""
    if s.form is Form.MAPPING:
        return list(value.items()) if isinstance(value, Mapping) else value
    if s.form is Form.NAMED_PAIRS:
        return [[name, *pair] for name, pair in value.items()] if isinstance(value, Mapping) else value
    if s.form is Form.OBJECTS:
        return [[item.get(n) for n in s.names] if isinstance(item, Mapping) else item for item in value] \
            if isinstance(value, list) else value
    if s.form is Form.KEYED:
        inner = _item_kind(hint)
        return [_reshaped(inner, item) for item in _flattened(value, s.names)] if isinstance(value, Mapping) else value
    return _read_value(value, hint) if _holds_record(hint) else value


def _flattened(nested: Mapping[str, Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    if len(names) == 1:
        return [{**(info if isinstance(info, Mapping) else {}), names[0]: k} for k, info in nested.items()]
    return [{**item, names[0]: k} for k, inner in nested.items() if isinstance(inner, Mapping)
            for item in _flattened(inner, names[1:])]


def _item_kind(hint: Any) -> Any:
    args = typing.get_args(hint)
    return args[0] if args else Any


def _read_value(value: Any, hint: Any) -> Any:
    """Records inside `value` reshaped by their own rules, by the type hint that holds them."""
    if value is None:
        return None
    for option in _options(hint):
        if is_record(option) and isinstance(value, Mapping):
            return _reshaped(option, value)
        origin = typing.get_origin(option)
        if origin in (list, tuple) and isinstance(value, list):
            args = [a for a in typing.get_args(option) if a is not Ellipsis]
            if len(args) == 1 and is_record(args[0]):
                return [_reshaped(args[0], v) if isinstance(v, Mapping) else v for v in value]
        if origin is dict and isinstance(value, Mapping):
            args = typing.get_args(option)
            if len(args) == 2 and is_record(args[1]):
                return {k: _reshaped(args[1], v) if isinstance(v, Mapping) else v for k, v in value.items()}
    return value


def _get(data: Mapping[str, Any], key: str) -> Any:
    head, _, rest = key.partition(".")
    if head not in data:
        return dataclasses.MISSING
    value = data[head]
    if not rest:
        return value
    return _get(value, rest) if isinstance(value, Mapping) else dataclasses.MISSING


def _reshaped(kind: type, data: Any) -> Any:
    """The file's `data` as a mapping of `kind`'s field names (records inside reshaped too), after
    harness/core/compat.py's upgrade: what msgspec then converts strictly."""
    rules, fields, props = _plan(kind)
    if rules.unwrapped is not None:
        f, s, hint = next(item for item in fields if item[0].name == rules.unwrapped)
        return {f.name: _unformed(s, data, hint)}
    data = upgrade(kind.__name__, data)
    out: dict[str, Any] = {}
    used = {prop.shape.key or name for name, prop in props}
    shared = _shared_keys(kind)
    position: dict[str, int] = {}
    extra_field = None
    for f, s, hint in fields:
        key = s.key or f.name
        if s.form is Form.EXTRA:
            extra_field = f.name
            continue
        if s.form is Form.SPLICED:
            inner = _record_in(hint)
            inner_keys = [(fs.key or ff.name) for ff, fs, _ in _plan(inner)[1]]
            used.update(inner_keys)
            first = data.get(inner_keys[0])
            if first is not None or len(_options(hint)) == 1:
                out[f.name] = _reshaped(inner, {k: data[k] for k in inner_keys if k in data})
            continue
        used.add(key.partition(".")[0])
        if s.omit is Omit.ALWAYS:
            continue
        value = _get(data, key)
        if value is dataclasses.MISSING:
            continue
        if key in shared:
            at = position.get(key, 0)
            position[key] = at + 1
            if not isinstance(value, list) or at >= len(value):
                raise ValueError(f"{key}: must be a list of {sum(1 for g, t, _ in fields if (t.key or g.name) == key)}")
            value = value[at]
        out[f.name] = _unformed(s, value, hint)
    if extra_field is not None:
        out[extra_field] = {k: v for k, v in data.items() if k not in used}
    return out


_MISSING_FIELD = re.compile(r"Object missing required field `([^`]*)`")


def decode(kind: type[T], data: Any) -> T:
    """A record as results.json holds it, any release's: harness/core/compat.py's upgrade, the file's shapes
    undone, then a strict conversion; KeyError for a key the record needs that is not there."""
    if not isinstance(data, Mapping) and _plan(kind)[0].unwrapped is None:
        raise TypeError(f"{kind.__name__}: must be a mapping, not {type(data).__name__}")
    try:
        return convert(_reshaped(kind, data), kind)
    except msgspec.ValidationError as exc:
        missing = _MISSING_FIELD.match(str(exc))
        if missing:
            raise KeyError(missing.group(1)) from None
        where = _AT.search(str(exc))
        if where is None:
            raise
        path, hint = _walk(kind, where.group(1))
        wrong = _BAD_ENUM.match(str(exc))
        if wrong and isinstance(hint, type) and issubclass(hint, enum.Enum):
            raise ValueError(f"{wrong.group(1)} is not a valid {hint.__name__}") from None
        # `runs[0].keys: expected object | null, got array`, the file's keys in the path
        what_went_wrong = str(exc)[:where.start()].strip()
        raise ValueError(f"{path}: {what_went_wrong[:1].lower()}{what_went_wrong[1:]}".replace("`", "")) from None


_AT = re.compile(r" - at `\$([^`]*)`$")


def _walk(kind: Any, path: str) -> tuple[str, Any]:
    """A msgspec error's path through `kind`'s fields (`.spec.platform`, `.attribution.run_a`) as the file's
    keys (`platform`, `attribution_detail.runs`), and the type found at its end (None where it is lost)."""
    out: list[str] = []
    hint: Any = kind
    for step in _STEP.finditer(path):
        hint = _not_none(hint)
        if step.group(1) is not None:
            name = step.group(1)
            found = next(((s, h) for f, s, h in _plan(hint)[1] if f.name == name), None) if is_record(hint) else None
            if found is None:
                out.append(name)
                hint = typing.get_type_hints(hint).get(name) if dataclasses.is_dataclass(hint) else None
                continue
            s, hint = found
            if s.form is not Form.SPLICED:
                out.append(s.key or name)
        else:
            out.append(step.group(0))
            args = [a for a in typing.get_args(hint) if a is not Ellipsis]
            index = int(step.group(2)) if step.group(2) is not None else 0
            hint = (args[-1] if typing.get_origin(hint) is dict or len(args) == 1 else args[min(index, len(args) - 1)]) \
                if args else None
    return ".".join(out).replace(".[", "[") or "?", _not_none(hint)


_BAD_ENUM = re.compile(r"Invalid enum value (.*) - at `\$([^`]*)`$")
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[.*?\]")


# --- JSON Schemas of the file's shapes, from the same declarations -------------------------------------------


def schema_components(kinds: tuple[type, ...], ref_template: str) -> dict[str, Any]:
    """`$defs` for `kinds` and every type they hold, as the file holds them: msgspec's schemas of the types,
    then each record's shapes applied (keys, forms, derived keys, what may be left out)."""
    _, defs = msgspec.json.schema_components(kinds, ref_template=ref_template)
    records = {k.__name__: k for k in _records_within(kinds)}
    done: dict[str, dict[str, Any]] = {}
    for name in list(defs):
        if name in records:
            _file_schema(records[name], defs, done)
    defs.update(done)
    return defs


def _records_within(kinds: tuple[type, ...]) -> list[type]:
    seen: list[type] = []

    def visit(hint: Any) -> None:
        if is_record(hint):
            if hint in seen:
                return
            seen.append(hint)
            for _, _, inner in _plan(hint)[1]:
                visit(inner)
        for arg in typing.get_args(hint):
            visit(arg)

    for kind in kinds:
        visit(kind)
    return seen


def _nullable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _file_schema(kind: type, defs: dict[str, Any], done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`kind`'s schema as the file holds it (memoised in `done`, keyed like `defs`)."""
    name = kind.__name__
    if name in done:
        return done[name]
    rules, fields, props = _plan(kind)
    base = defs[name]
    if rules.unwrapped is not None:
        f, s, hint = next(item for item in fields if item[0].name == rules.unwrapped)
        done[name] = {"title": name, **_described_as(base),
                      **_formed_schema(s, base["properties"][f.name], hint, defs, done)}
        return done[name]
    out: dict[str, Any] = {}
    required: list[str] = []
    open_keys = False
    shared = _shared_keys(kind)
    for f, s, hint in fields:
        if s.omit is Omit.ALWAYS:
            continue
        if s.form is Form.EXTRA:
            open_keys = True
            continue
        optional = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING \
            or s.omit is not Omit.NEVER
        if s.form is Form.SPLICED:
            inner = _file_schema(_record_in(hint), defs, done)
            nullable = len(_options(hint)) > 1
            for key, schema in inner["properties"].items():
                out[key] = _nullable_schema(schema) if nullable else schema
            if not (optional or nullable):
                required += inner.get("required", [])
            continue
        key = s.key or f.name
        schema = _formed_schema(s, base["properties"][f.name], hint, defs, done)
        head, _, rest = key.partition(".")
        if rest:
            holder = out.setdefault(head, {"type": "object", "properties": {}})
            holder["properties"][rest] = schema
            if not optional:
                holder.setdefault("required", []).append(rest)
        elif key in shared:
            pair = out.setdefault(key, {"type": "array", "prefixItems": [], "items": False})
            pair["prefixItems"].append(schema)
            pair["minItems"] = pair["maxItems"] = len(pair["prefixItems"])
        else:
            out[key] = schema
        if not optional and key not in required and not rest:
            required.append(key)
    for attr, prop in props:
        returned = typing.get_type_hints(prop.fget).get("return", Any)
        schema = msgspec.json.schema(returned)
        schema.pop("$defs", None)
        schema["description"] = "derived: written for readers, not read back"
        out[prop.shape.key or attr] = schema
        if prop.shape.omit is Omit.NEVER:
            required.append(prop.shape.key or attr)
    if rules.order:
        out = in_order(out, rules.order)
    # What harness/core/compat.py makes of older results reads too: a key it fills in may be absent, a null
    # it reads as empty may be there, a key it drops unless a mapping may be anything else.
    required = [k for k in required if k not in MISSING.get(name, {})]
    for key in NULL_AS_EMPTY.get(name, {}):
        out[key] = _nullable_schema(out[key])
    for key in ABSENT_UNLESS_MAPPING.get(name, ()):
        out[key] = {"anyOf": [out[key], {"not": {"type": "object"}}]}
    schema = {"title": name, **_described_as(base), "type": "object", "properties": out}
    if required:
        schema["required"] = required
    if not open_keys and "additionalProperties" in base:
        schema["additionalProperties"] = base["additionalProperties"]
    done[name] = schema
    return schema


def _described_as(base: dict[str, Any]) -> dict[str, str]:
    return {"description": base["description"]} if base.get("description") else {}


def _formed_schema(s: Shape, schema: dict[str, Any], hint: Any, defs: dict[str, Any],
                   done: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def item_parts() -> list[dict[str, Any]]:
        return schema["items"]["prefixItems"]

    if s.form is Form.MAPPING:
        return {"type": "object", "additionalProperties": item_parts()[1]}
    if s.form is Form.NAMED_PAIRS:
        pair = item_parts()[1:]
        return {"type": "object", "additionalProperties": {"type": "array", "prefixItems": pair, "items": False,
                                                           "minItems": len(pair), "maxItems": len(pair)}}
    if s.form is Form.OBJECTS:
        return {"type": "array", "items": {"type": "object", "properties": dict(zip(s.names, item_parts())),
                                           "required": list(s.names)}}
    if s.form is Form.KEYED:
        inner = dict(_file_schema(_item_kind(hint), defs, done))
        inner["properties"] = {k: v for k, v in inner["properties"].items() if k not in s.names}
        inner["required"] = [k for k in inner.get("required", []) if k not in s.names]
        if not inner["required"]:
            del inner["required"]
        nested: dict[str, Any] = inner
        for _ in s.names:
            nested = {"type": "object", "additionalProperties": nested}
        return nested
    return {k: v for k, v in schema.items() if k != "default"}
