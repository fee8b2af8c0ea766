"""The cell's records as msgspec Structs: written as their fields (what equals its default left out), read strictly,
an older cell mapped by harness/results/document.py's upgrade first; a wrong value is one line naming the file's key.
(Was tests/unit/test_codec.py, whose tests of codec's own markers went with it.)"""

import json

import pytest

from harness.core.findings import CellCost, JobFacts, ProcessVerdict, RunCost, SeedRun
from harness.core.model import CommitInfo
from harness.core.kinds import Verdict
from harness.core.records import convert, plain
from harness.results.document import read_cell
from tests.records_golden import FIXTURES


def test_records_are_written_as_their_fields_enums_as_values_tuples_as_lists():
    facts = JobFacts(2, (ProcessVerdict(1, Verdict.CLEAN, "same keys"),), writers=(0,), notes=("n",))
    written = plain(facts)
    assert written == {"processes": 2, "per_process": [{"rank": 1, "verdict": "clean", "reason": "same keys"}],
                       "writers": [0], "notes": ["n"]}  # what equals its default is left out
    assert convert(json.loads(json.dumps(written)), JobFacts) == facts


def test_what_an_older_release_left_out_is_filled_in_once_nested_records_too():
    assert convert({"rank": 0, "verdict": "clean"}, ProcessVerdict).reason == ""
    facts = convert({"processes": 2, "per_process": [{"rank": 0, "verdict": "reproduced"}]}, JobFacts)
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


@pytest.mark.parametrize("change, said", [
    (lambda c: c["runs"][0].update(keys=[]), "runs[0].keys: Expected `object | null`, got `array`"),
    (lambda c: c["seeds"].update(seeds="x"), "seeds.seeds: Expected `array`, got `str`"),
    (lambda c: c.update(attribution_detail={"module": "m", "runs": ["1", "2"], "keys": ["a", "b"]}),
     "attribution_detail.run_a: Expected `int`, got `str`"),
    (lambda c: c.update(platform="gpu"), "spec.platform: Invalid enum value 'gpu'"),
])
def test_a_wrong_value_deep_in_a_cell_is_named_by_the_files_keys(change, said):
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())["cells"][0]
    change(data)
    with pytest.raises(ValueError) as raised:
        read_cell(data)
    assert str(raised.value) == said
