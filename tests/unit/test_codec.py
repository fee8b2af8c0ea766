"""harness/core/codec.py and harness/core/compat.py: records converted by msgspec from their types, what older results
lack filled in by one upgrade step before a strict decode."""

import json

import pytest

from harness.core.model import CellCost, CommitInfo, GroupFacts, ProcessVerdict, RunCost, SeedRun, Verdict
from harness.core.records import convert, plain


def test_records_are_written_as_their_fields_enums_as_values_tuples_as_lists():
    facts = GroupFacts(2, (ProcessVerdict(1, Verdict.CLEAN, "same keys"),), writers=(0,), notes=("n",))
    written = plain(facts)
    assert written == {"processes": 2, "per_process": [{"rank": 1, "verdict": "clean", "reason": "same keys"}],
                       "writers": [0], "notes": ["n"]}  # what equals its default is left out
    assert convert(json.loads(json.dumps(written)), GroupFacts) == facts


def test_what_an_older_release_left_out_is_filled_in_once_nested_records_too():
    assert convert({"rank": 0, "verdict": "clean"}, ProcessVerdict).reason == ""
    facts = convert({"processes": 2, "per_process": [{"rank": 0, "verdict": "reproduced"}]}, GroupFacts)
    assert facts.per_process == (ProcessVerdict(0, Verdict.REPRODUCED, ""),)
    cost = convert({"runs": [{"run": 2}]}, CellCost)
    assert cost.starts == 0 and cost.runs == (RunCost(2, 0, 0, 0.0, 0, 0, 0.0),)
    assert convert({"sha": "abc", "ref": "main"}, CommitInfo) == CommitInfo("abc", "", "")


@pytest.mark.parametrize("record, data", [
    (SeedRun, {"seed": "3", "run": 1, "rerun_ok": True}),  # text is no whole number (int() took it before)
    (SeedRun, {"seed": 3, "run": 1, "rerun_ok": 1}),  # nor 1 a bool
    (RunCost, {"run": 1, "miss_s": "0.5"}),
    (ProcessVerdict, {"rank": 0, "verdict": "maybe"}),
])
def test_a_value_of_the_wrong_type_is_refused_not_coerced(record, data):
    with pytest.raises(ValueError):
        convert(data, record)


# --- shapes: how a record's fields are written, declared once beside them ------------------------------------

from dataclasses import dataclass, field  # noqa: E402

import jsonschema  # noqa: E402

from harness.core.codec import Form, Omit, Record, schema_components, shape, shaped, written  # noqa: E402


@dataclass(frozen=True)
class _Inner(Record):
    name: str
    size: int = field(default=1, metadata=shape(omit=Omit.DEFAULT))


@dataclass(frozen=True)
class _Item(Record):
    group: str
    label: str
    value: int


@shaped(order=("pair", "total"))
@dataclass
class _Holder(Record):
    first: int = field(metadata=shape(key="pair"))
    second: int = field(metadata=shape(key="pair"))
    inner: _Inner = field(metadata=shape(form=Form.SPLICED))
    env: tuple[tuple[str, str], ...] = field(default=(), metadata=shape(form=Form.MAPPING, omit=Omit.EMPTY))
    moved: list[tuple[str, str | None, str | None]] = field(default_factory=list,
                                                             metadata=shape(form=Form.NAMED_PAIRS))
    folders: tuple[tuple[str, str], ...] = field(default=(), metadata=shape(form=Form.OBJECTS, names=("path", "api")))
    items: list[_Item] = field(default_factory=list, metadata=shape(form=Form.KEYED, names=("group", "label")))
    mode: str | None = field(default=None, metadata=shape(key="where.mode", omit=Omit.NONE))
    why: str = field(default="", metadata=shape(key="where.why", omit=lambda h: h.mode is None))
    scratch: list[str] = field(default_factory=list, metadata=shape(omit=Omit.ALWAYS))
    extra: dict = field(default_factory=dict, metadata=shape(form=Form.EXTRA))

    @written()
    def total(self) -> int:
        return self.first + self.second


def _holder(scratch=("x",)):
    return _Holder(1, 2, _Inner("n", 3), (("A", "1"),), [("hlo", "h1", None)], (("/c", "set_cache_dir"),),
                   [_Item("g", "a", 5), _Item("g", "b", 6), _Item("h", "a", 7)], "hook", "because", list(scratch),
                   {"newer": True})


def test_each_shape_is_written_as_declared_and_read_back():
    written_out = _holder().to_json()
    assert list(written_out)[:3] == ["pair", "total", "name"]  # shared key at its first field, derived by order
    assert written_out == {"pair": [1, 2], "total": 3, "name": "n", "size": 3, "env": {"A": "1"},
                           "moved": {"hlo": ["h1", None]}, "folders": [{"path": "/c", "api": "set_cache_dir"}],
                           "items": {"g": {"a": {"value": 5}, "b": {"value": 6}}, "h": {"a": {"value": 7}}},
                           "where": {"mode": "hook", "why": "because"}, "newer": True}
    read = _Holder.from_json(json.loads(json.dumps(written_out)))
    assert read == _holder(scratch=())  # kept in memory only: not written, not read


def test_what_is_left_out_reads_as_its_default():
    plain = _Holder(1, 2, _Inner("n"))
    assert plain.to_json() == {"pair": [1, 2], "total": 3, "name": "n", "moved": {}, "folders": [], "items": {}}
    assert _Holder.from_json(plain.to_json()) == plain


def test_a_missing_key_is_a_key_error_and_a_wrong_value_names_its_enum():
    with pytest.raises(KeyError, match="name"):
        _Holder.from_json({"pair": [1, 2]})
    with pytest.raises(ValueError, match="verdict: must be one of .*, not 'maybe'"):
        convert({"rank": 0, "verdict": "maybe", "reason": ""}, ProcessVerdict)


def test_the_schema_is_the_files_shape():
    defs = schema_components((_Holder,), ref_template="#/$defs/{name}")
    validator = jsonschema.Draft202012Validator({"$defs": defs, "$ref": "#/$defs/_Holder"})
    validator.validate(json.loads(json.dumps(_holder().to_json())))
    for wrong in ({"pair": [1]}, {"env": [["A", "1"]]}, {"where": {"mode": 3}}, {"items": {"g": {"a": {"value": "5"}}}}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate({**_holder().to_json(), **wrong})
    assert "total" in defs["_Holder"]["properties"] and "scratch" not in defs["_Holder"]["properties"]


@pytest.mark.parametrize("change, said", [
    (lambda c: c["runs"][0].update(keys=[]), "runs[0].keys: expected object | null, got array"),
    (lambda c: c["seeds"].update(seeds="x"), "seeds.seeds: expected array, got str"),
    (lambda c: c.update(attribution_detail={"module": "m", "runs": ["1", "2"], "keys": ["a", "b"]}),
     "attribution_detail.runs: expected int, got str"),
])
def test_a_wrong_value_deep_in_a_cell_is_named_by_the_files_keys(change, said):
    from harness.core.model import CellResult
    from tests.records_golden import FIXTURES
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())["cells"][0]
    change(data)
    with pytest.raises(ValueError) as raised:
        CellResult.from_json(data)
    assert str(raised.value) == said
