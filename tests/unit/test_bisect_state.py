"""bisect's state.json is sealed as reduce.json is (issue 61 #8): a state edited so that every point reads
`reproduced` is refused, never replayed as measurements; a damaged state (of the wrong shape, NaN, a number of
thousands of digits, past the size bound) is one line naming --fresh (UserError, exit 2), read within a bound;
a state from before seals (versions 1 and 2) is refused the same way; a state this release wrote resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bisect import bisect_state as state_module
from harness.bisect.bisect_state import PROGRAM, STATE_FILE, BisectState, program_content, release_id
from harness.core import seal as seal_module
from harness.core.errors import UserError
from harness.inputs.config import Config, Repro
from harness.results.document import load_results

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
IDENTITY = {"test": "state", "good": "0.4.28"}


@pytest.fixture(autouse=True)
def own_key(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "KEY_FILE", tmp_path / "key" / "state.key")


def _recorded(folder: Path) -> dict:
    """A state with one point measured (the smoke run's cells), as the bisection saves it; its document."""
    state = BisectState.open(folder, IDENTITY)
    state.record(release_id("0.4.28"), load_results(FIXTURES / "smoke-run").cells[:2])
    return json.loads((folder / STATE_FILE).read_text())


def _refused(folder: Path, text: str | bytes) -> str:
    (folder / STATE_FILE).write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UserError) as raised:
        BisectState.open(folder, IDENTITY)
    said = str(raised.value)
    assert "\n" not in said and said.endswith("rerun with --fresh"), said
    return said


def test_a_state_this_release_wrote_resumes(tmp_path):
    _recorded(tmp_path)
    again = BisectState.open(tmp_path, IDENTITY)
    cells = again.cells(release_id("0.4.28"))
    assert again.resumed and cells == load_results(FIXTURES / "smoke-run").cells[:2]


def test_every_point_edited_to_reproduced_is_refused_not_replayed(tmp_path):
    data = _recorded(tmp_path)
    for cells in data["points"].values():
        for cell in cells:
            cell["verdict"], cell["reason"] = "reproduced", "FORGED"
    assert "seal does not match" in _refused(tmp_path, json.dumps(data))


def test_a_state_with_its_seal_dropped_and_an_earlier_version_is_refused(tmp_path):
    data = _recorded(tmp_path)
    del data["seal"]
    for version in (1, 2):
        said = _refused(tmp_path, json.dumps({**data, "state_version": version}))
        assert "before states were sealed" in said


@pytest.mark.parametrize("text", [
    "[]", '{"spec": 5}', '{"state_version": 3, "points": [1, 2]}', '{"state_version": NaN}',
    '{"state_version": ' + "1" * 5000 + "}", "[" * 100_000, b"\xff\xfe", '{"state_version": true}',
], ids=["[]", "spec 5", "points [1, 2]", "NaN", "5,000 digits", "100,000 deep", "not UTF-8", "version true"])
def test_a_damaged_state_is_one_line(tmp_path, text):
    _refused(tmp_path, text)


def test_a_sealed_state_with_a_cell_of_the_wrong_shape_is_one_line(tmp_path, monkeypatch):
    data = _recorded(tmp_path)
    data.pop("seal")
    data["points"][release_id("0.4.28")] = [{"spec": 5}]
    data["seal"] = seal_module.seal_of(data, seal_module.state_key(state_module.KEY_FILE))
    assert "points.release:0.4.28[0].spec" in _refused(tmp_path, json.dumps(data))
    data["points"] = [1, 2]
    data["seal"] = seal_module.seal_of(data, seal_module.state_key(state_module.KEY_FILE))
    assert "points: expected an object" in _refused(tmp_path, json.dumps(data))


def test_a_state_past_the_bound_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(state_module, "MAX_STATE_BYTES", 1 << 20)
    assert "larger than 1 MiB" in _refused(tmp_path, b" " * (2 << 20))


def test_a_state_sealed_by_another_key_is_refused(tmp_path, monkeypatch):
    _recorded(tmp_path)
    text = (tmp_path / STATE_FILE).read_text()
    monkeypatch.setattr(state_module, "KEY_FILE", tmp_path / "other" / "state.key")
    assert "seal does not match" in _refused(tmp_path, text)


def test_fresh_starts_over_whatever_the_state_holds(tmp_path):
    (tmp_path / STATE_FILE).write_text("[]")
    assert not BisectState.open(tmp_path, IDENTITY, fresh=True).resumed
    assert not BisectState.open(tmp_path, IDENTITY).resumed


def test_a_sealed_point_holding_two_cells_of_one_spec_is_one_line(tmp_path):
    data = _recorded(tmp_path)
    data.pop("seal")
    cells = data["points"][release_id("0.4.28")]
    data["points"][release_id("0.4.28")] = [{**cells[0], "verdict": "reproduced"}, *cells]
    data["seal"] = seal_module.seal_of(data, seal_module.state_key(state_module.KEY_FILE))
    assert "points.release:0.4.28[1]: a second cell of 0.4.28|cpu|8|" in _refused(tmp_path, json.dumps(data))


def test_a_state_written_before_the_identity_held_the_program_is_read_and_measured_again(tmp_path):
    """An earlier release's state (sealed, its identity without the program's content) is read, cannot tell
    whether the program changed, and so replays nothing; it says so."""
    _recorded(tmp_path)
    state = BisectState.open(tmp_path, {**IDENTITY, PROGRAM: {"digest": "d1", "what": "train's text"}})
    assert not state.resumed and "written before a bisection held its program's content" in state.restarted
    assert "1 recorded point not replayed, measured again" in state.restarted
    again = BisectState.open(tmp_path, {**IDENTITY, PROGRAM: {"digest": "d1", "what": "train's text"}})
    assert again.restarted == ""  # the new state is this program's


def test_another_bisection_is_still_refused_whatever_its_program(tmp_path):
    _recorded(tmp_path)
    assert "belongs to a different bisection" in _refused_open(tmp_path, {**IDENTITY, "good": "0.4.27"})


def _refused_open(folder: Path, identity: dict) -> str:
    with pytest.raises(UserError) as raised:
        BisectState.open(folder, identity)
    return str(raised.value)


def test_the_program_s_content_holds_its_script_and_the_files_its_arguments_name(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    config = Config("t", Repro("train", script, builtin=False), ("0.4.31",), args=("tests/test_a.py::test_a", "-x"),
                    cwd=tmp_path)
    first = program_content(config)
    assert first["what"] == "train's text and the files its arguments name (tests/test_a.py)"
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): assert 0\n")
    assert program_content(config)["digest"] != first["digest"]
    pytest_run = Config("t", Repro("pytest", tmp_path, builtin=False, module="pytest"), ("0.4.31",),
                        args=("tests",), cwd=tmp_path)
    said = program_content(pytest_run)
    (tmp_path / "tests" / "test_b.py").write_text("def test_b(): pass\n")
    assert said["what"] == "the files its arguments name (tests)" and program_content(pytest_run) != said
