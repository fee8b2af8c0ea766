"""results.json's upgrade validates the parts it walks before it transforms them (issue 61 #7): a cell with
`key_components` and `runs`, `ranks` or `moved_folder.factors` of the wrong type, or `ranks` nested hundreds deep,
is one clear line (UserError, exit 2), never a TypeError or a RecursionError from the upgrade."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import UserError
from harness.results.document import load_results, read_document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _with(change: Any) -> dict[str, Any]:
    document = json.loads((FIXTURES / "smoke-run" / "results.json").read_text())
    cell = document["cells"][0]
    cell["key_components"] = {"jit_f-" + "a" * 64: {"hlo": "b" * 64}}
    change(cell)
    return document


def _nested_ranks(depth: int) -> dict[str, Any]:
    run: dict[str, Any] = {}
    here = run
    for _ in range(depth):
        here["ranks"] = [{}]
        here = here["ranks"][0]
    return run


@pytest.mark.parametrize("change, said", [
    (lambda c: c.update(runs=5), "cells[0].runs: expected an array, got an integer"),
    (lambda c: c.update(runs=[{**c["runs"][0], "ranks": 7}]), "cells[0].runs[0].ranks: expected an array, got an integer"),
    (lambda c: c.update(moved_folder={"factors": 7}), "cells[0].moved_folder.factors: expected an array, got an integer"),
    (lambda c: c.update(runs=[_nested_ranks(400)]), "cells[0].runs[0].ranks[0].ranks: a job's process holds no processes"),
])
def test_a_cell_of_the_wrong_shape_is_one_line_before_the_upgrade(change, said):
    with pytest.raises(UserError) as raised:
        read_document(_with(change), "results.json")
    assert str(raised.value) == f"results.json: {said}"


def test_deep_nesting_elsewhere_in_a_cell_with_key_components_is_named_not_a_recursion_error():
    deep: list[Any] = []
    for _ in range(900):
        deep = [deep]
    with pytest.raises(UserError, match=r"cells\[0\]\.reason: Expected `str`"):
        read_document(_with(lambda c: c.update(reason=deep)), "results.json")


def test_the_upgrade_leaves_the_callers_cell_as_it_was():
    document = _with(lambda c: None)
    before = copy.deepcopy(document)
    read_document(document, "results.json")
    assert document == before


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in FIXTURES.glob("*/results.json")))
def test_every_fixture_still_loads(folder):
    assert load_results(FIXTURES / folder).cells
