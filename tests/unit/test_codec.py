"""harness/core/codec.py and harness/core/compat.py: records converted by msgspec from their types, what older results
lack filled in by one upgrade step before a strict decode."""

import json

import pytest

from harness.core.compat import upgrade
from harness.core.model import CellCost, CommitInfo, GroupFacts, ProcessVerdict, RunCost, SeedRun, Verdict


def test_records_are_written_as_their_fields_enums_as_values_tuples_as_lists():
    facts = GroupFacts(2, (ProcessVerdict(1, Verdict.CLEAN, "same keys"),), writers=(0,), notes=("n",))
    written = facts.to_json()
    assert written == {"processes": 2, "per_process": [{"rank": 1, "verdict": "clean", "reason": "same keys"}],
                       "writers": [0], "host_components": [], "notes": ["n"]}
    assert GroupFacts.from_json(json.loads(json.dumps(written))) == facts


def test_what_an_older_release_left_out_is_filled_in_once_nested_records_too():
    assert upgrade("ProcessVerdict", {"rank": 0, "verdict": "clean"})["reason"] == ""
    facts = GroupFacts.from_json({"processes": 2, "per_process": [{"rank": 0, "verdict": "reproduced"}]})
    assert facts.per_process == (ProcessVerdict(0, Verdict.REPRODUCED, ""),)
    cost = CellCost.from_json({"runs": [{"run": 2}]})
    assert cost.starts == 0 and cost.runs == (RunCost(2, 0, 0, 0.0, 0, 0, 0.0),)
    assert CommitInfo.from_json({"sha": "abc", "ref": "main"}) == CommitInfo("abc", "", "")


@pytest.mark.parametrize("record, data", [
    (SeedRun, {"seed": "3", "run": 1, "rerun_ok": True}),  # text is no whole number (int() took it before)
    (SeedRun, {"seed": 3, "run": 1, "rerun_ok": 1}),  # nor 1 a bool
    (RunCost, {"run": 1, "miss_s": "0.5"}),
    (ProcessVerdict, {"rank": 0, "verdict": "maybe"}),
])
def test_a_value_of_the_wrong_type_is_refused_not_coerced(record, data):
    with pytest.raises(ValueError):
        record.from_json(data)
