"""results.json's bytes do not move when the records' conversion does: every fixture folder's cells round-trip,
and what today's code writes for them and for cells with every optional part (tests/records_golden.py) is what
the hand-written to_json wrote (tests/fixtures/records-golden.json, generated with that code), key order included."""

import json

import pytest

from harness.core.model import CellResult
from tests import records_golden
from tests.records_golden import FIXTURES, FOLDERS, GOLDEN, dumped


def test_today_writes_the_cells_the_golden_file_holds():
    """The cells as before; the documents' headers are written as schema_version 3 now (old folders read, they
    are not rewritten byte for byte: tests/unit/test_header.py checks what their headers mean)."""
    golden = json.loads(GOLDEN.read_text())
    now = json.loads(dumped(records_golden.current()))
    assert dumped(now["built"]) == dumped(golden["built"])
    for folder, document in golden["folders"].items():
        assert dumped(now["folders"][folder]["cells"]) == dumped(document["cells"]), folder


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_fixture_cell_round_trips(folder):
    for data in json.loads((FIXTURES / folder / "results.json").read_text())["cells"]:
        assert json.dumps(CellResult.from_json(data).to_json()) == json.dumps(data)


def test_every_built_cell_round_trips():
    for cell in records_golden.rich_cells():
        written = cell.to_json()
        assert json.dumps(CellResult.from_json(written).to_json()) == json.dumps(written)
