"""A results folder of any shape is read whole or refused in one line (issue 73, breaks 6 and 8): every value of
a rich results.json replaced in turn by a value of another shape, and every command that reads a folder (report,
compare, merge, --resume) either works or says one line (UserError), never a KeyError or TypeError from a reader
that trusted a part typed Any; and a second cell of one spec is refused, never compared in place of the first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import msgspec
import pytest

from harness.core.errors import UserError
from harness.nightly.compare import compare
from harness.report.write import ReportWriter
from harness.results.document import ResultsDocument, cell_json, document_json, load_results, read_document
from harness.results.merge import merge_documents
from tests.records_golden import FIXTURES, rich_cells

# A value of each JSON shape (and one record of the wrong shape): what a hostile or damaged folder may hold.
OTHER_SHAPES: tuple[Any, ...] = ({}, [], "x", 7, None, [{}], {"x": 1})


def _rich() -> dict[str, Any]:
    """A results.json of today's shape whose cells set every optional record."""
    header = read_document(json.loads((FIXTURES / "smoke-run" / "results.json").read_text()), "fixture").header
    cells = rich_cells()
    data = json.loads(json.dumps(document_json(ResultsDocument(header, cells), [cell_json(c) for c in cells])))
    data["host"] |= {"docker_version": "24.0", "image": "jch:0.4.31"}  # the backend's facts, kept as they were said
    # Every fact a reader takes from a cell's environment (the report's tables, Reproduce with, the bisection).
    data["cells"][0]["environment"] = {
        "backend": "venv", "path": "/envs/jax-0.4.31", "python": "3.11.7", "jax": "0.4.31", "jaxlib": "0.4.31",
        "numpy": "1.26.4", "distributions": {"flax": "0.8.5", "jax": "0.4.31"}, "requirements": ["flax"],
        "index_urls": ["https://pypi.org/simple"], "editables": ["/src/mine"], "exclude_newer": "2024-08-01T00:00:00Z",
        "reused": True, "image": "", "jaxlib_release": "0.4.31", "kept_environment": ["PATH"]}
    return data


def _places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in `value` (its keys and indexes), containers before what they hold."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k)
            yield from _places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:1]):  # a list's first item: the rest are of its shape
            yield (*path, i)
            yield from _places(v, (*path, i))


def _replaced(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(document))
    here = out
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value
    return out


def _every_reader(data: dict[str, Any], tmp_path: Path) -> None:
    """What report, compare and merge do with a folder's document (the folder read once, as each reads it)."""
    document = read_document(data, "results.json")
    compare(document.cells, document.cells)
    merge_documents([("a", document)], "harness merge a")
    ReportWriter(tmp_path).write(document, document.cells)


def test_every_place_of_a_rich_folder_holding_another_shape_is_read_or_refused_in_one_line(tmp_path):
    rich = _rich()
    rich["cells"] = rich["cells"][:1]  # the cell with every optional record
    _every_reader(rich, tmp_path)  # as written: read whole
    crashed = []
    places = list(_places(rich["cells"][0], ("cells", 0)))
    assert len(places) > 250  # the walk reaches the runs' logged keys, the seeds' covers, the environment
    places += [p for p in _places({k: v for k, v in rich.items() if k not in ("cells", "summary", "summaries")})
               if p[0] != "schema_version"]  # and the header: config, options, host and its facts
    for path in places:
        for value in OTHER_SHAPES:
            try:
                _every_reader(_replaced(rich, path, value), tmp_path)
            except UserError as exc:
                assert "\n" not in str(exc)
            except Exception as exc:  # noqa: BLE001 - what the test is about
                crashed.append(f"{'.'.join(map(str, path))} = {value!r}: {type(exc).__name__}: {exc}"[:200])
    assert not crashed, f"{len(crashed)} crashed, e.g.:\n" + "\n".join(crashed[:15])


@pytest.mark.parametrize("cover", [{"names": ["a", "b"]}, {"names": "ab", "pairs_in_both_orders": True},
                                   {"pairs_in_both_orders": True, "names": ["a"], "lowered": "yes"}, [1, 2], 5])
def test_a_clean_cell_whose_covers_are_of_another_shape_is_one_line(tmp_path, cover):
    rich = _rich()
    rich["cells"][0]["seeds"]["covers"] = [cover]
    (tmp_path / "results.json").write_text(json.dumps(rich))
    with pytest.raises(UserError, match=r"^\S*results.json: cells\[0\]\.seeds\.covers\[0\]"):
        load_results(tmp_path)


def test_a_second_cell_of_one_spec_ahead_of_the_first_is_refused_not_compared(tmp_path):
    rich = _rich()
    second = json.loads(json.dumps(rich["cells"][0]))
    second["verdict"] = "clean" if second["verdict"] == "reproduced" else "reproduced"
    rich["cells"].insert(0, second)
    (tmp_path / "results.json").write_text(json.dumps(rich))
    with pytest.raises(UserError) as raised:
        load_results(tmp_path)
    assert "cells[1]: a second cell of 0.4.31|cpu|8|2x1 (a,b)|2p (cells[0] is the first)" in str(raised.value)


def test_the_fixture_folders_of_earlier_releases_still_load():
    for folder in sorted(p.parent for p in FIXTURES.glob("*/results.json")):
        assert load_results(folder).cells, folder
    assert msgspec  # (imported for the records' types)
