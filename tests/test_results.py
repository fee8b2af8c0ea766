"""Result files: atomic, readable by others, host facts not overwritten, tables in version order."""

import json
import os
import stat
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.files import write_atomic
from harness.model import CellResult, CellSpec, Platform, Verdict
from harness.results import ResultsDocument, RunStatus, host_facts
from harness.table import render


def test_write_atomic_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "results.json"
        write_atomic(path, "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left


def test_backend_facts_do_not_overwrite_the_hosts():
    facts = host_facts({"backend": "docker", "python": "3.11", "docker_version": "20.10"})
    assert facts["python"].count(".") == 2  # the host's full version, e.g. 3.11.7
    assert facts["backend_python"] == "3.11" and facts["docker_version"] == "20.10"


def test_table_rows_in_version_order():
    cells = [CellResult(CellSpec(v, Platform.CPU, 8, None), Verdict.CLEAN, {})
             for v in ("0.4.9", "0.4.31", "0.4.10", "0.4.27")]
    text = render(cells)
    order = [line.split("|")[1].strip() for line in text.splitlines()[2:]]
    assert order == ["0.4.9", "0.4.10", "0.4.27", "0.4.31"]


V1 = Path(__file__).parent / "fixtures" / "v1-release-run" / "results.json"


def test_fields_this_release_does_not_know_are_kept_when_rewritten():
    data = json.loads(V1.read_text())
    data["cells"][0]["attribution"] = {"jit_f": "mesh axis order"}
    data["slurm"] = {"job": 7}
    document = ResultsDocument.from_json(data, "newer")
    assert document.cells[0].extra == {"attribution": {"jit_f": "mesh axis order"}}
    assert document.sections == {"slurm": {"job": 7}}
    assert document.to_json() == data


def test_a_newer_schema_or_an_unknown_status_is_one_clear_error():
    data = json.loads(V1.read_text())
    with pytest.raises(UserError, match="schema_version 3 is newer than this harness reads"):
        ResultsDocument.from_json({**data, "schema_version": 3}, "f")
    with pytest.raises(UserError, match="f: status: 'paused' is not a status"):
        ResultsDocument.from_json({**data, "status": "paused"}, "f")


def test_a_merge_status_keeps_its_detail():
    data = {**json.loads(V1.read_text()), "status": "incomplete: shard(s) 3 missing"}
    document = ResultsDocument.from_json(data, "merged")
    assert document.status == RunStatus.INCOMPLETE and document.status_detail == "shard(s) 3 missing"
    assert document.to_json()["status"] == "incomplete: shard(s) 3 missing"
