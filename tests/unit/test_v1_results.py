"""Results folders written by an earlier release still load: `report`, `compare`, `merge` and `--resume`.

`fixtures/v1-release-run` is a real sweep (configs/smoke.yaml, --runs 3: 0.4.28 reproduced, 0.4.29
clean) written by the release before the typed results document, logs and evidence included.
"""

import json
import shutil
from pathlib import Path

import pytest

from harness import service
from harness.cli import commands as cli
from harness.core.confidence import MissBounds, SeedStrategy
from harness.results.document import read_document, document_json, SCHEMA_VERSION, SweepStatus
from tests.fakes import INDEX

V1 = Path(__file__).parents[1] / "fixtures" / "v1-release-run"
SUMMARY = "regression present from the first measured release, 0.4.28 (no clean release before it); fixed in 0.4.29"
# Its clean cell's 3 chosen seeds showed both orders of the mesh's names; any other hash-order dependence is
# bounded by those seeds alone, and the summary says so.
OTHER_BOUND = ("clean on 0.4.29: a regression would read clean with chance up to 0.5 (--runs 11 would make it at "
               "most 0.00098)")


@pytest.fixture
def v1(tmp_path):
    folder = tmp_path / "v1"
    shutil.copytree(V1, folder)
    return folder


def test_the_fixture_is_a_version_1_folder():
    data = json.loads((V1 / "results.json").read_text())
    assert data["schema_version"] == 1 and data["status"] == "complete"
    assert [c["verdict"] for c in data["cells"]] == ["reproduced", "clean"]


def test_a_v1_document_reads_into_types_and_its_rewrite_means_the_same():
    data = json.loads((V1 / "results.json").read_text())
    document = read_document(data, "v1")
    assert document.schema_version == 1 and document.status == SweepStatus.COMPLETE
    assert document.header.versions == ["0.4.28", "0.4.29"] and document.header.options.runs == 3
    reproduced, clean = document.cells
    assert clean.miss_bounds == MissBounds(0.0, 0.5) and reproduced.miss_bounds is None
    assert clean.seeds.strategy == SeedStrategy.CHOSEN and clean.seeds.chosen == [1, 2]
    assert not clean.interrupted
    # written as schema_version 3 (not byte for byte as the v1 file was): nothing lost, it reads as the same document
    again = read_document(json.loads(json.dumps(document_json(document))), "v3")
    assert (again.header, again.cells, again.status, again.finished, again.sections) == \
        (document.header, document.cells, document.status, document.finished, document.sections)


def test_a_new_document_says_version_3_and_reads_back_the_same():
    data = json.loads((V1 / "results.json").read_text())
    written = json.loads(json.dumps(document_json(read_document(data, "v1"))))
    assert SCHEMA_VERSION == 3 and written["schema_version"] == 3
    assert json.loads(json.dumps(document_json(read_document(written, "v3")))) == written


def test_report_rewrites_the_report_of_a_v1_folder(v1, capsys):
    (v1 / "report.md").unlink()
    assert cli.main(["report", str(v1)]) == 0
    report = (v1 / "report.md").read_text()
    assert SUMMARY in report
    assert "jax.result_info" in report  # the evidence diff, read from the v1 run logs
    assert "PYTHONHASHSEED=$seed" in report  # the reproduce commands


def test_compare_reads_v1_folders_on_both_sides(v1, capsys):
    assert cli.main(["compare", str(v1), "--baseline", str(V1)]) == 0
    assert "no change against the baseline" in capsys.readouterr().out


def test_merge_takes_a_v1_folder(v1, tmp_path, capsys):
    assert cli.main(["merge", str(v1), "--out", str(tmp_path / "merged")]) == 0
    out = capsys.readouterr().out
    assert SUMMARY in out
    (merged,) = (tmp_path / "merged").iterdir()
    data = json.loads((merged / "results.json").read_text())
    assert data["status"] == "complete" and len(data["cells"]) == 2
    assert (merged / "logs").is_dir()


def test_resume_of_a_finished_v1_folder_measures_nothing_and_keeps_its_cells(v1, monkeypatch, capfd):
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    before = json.loads((v1 / "results.json").read_text())
    assert cli.main(["run", "configs/smoke.yaml", "--runs", "3", "--resume", str(v1)]) == 0
    assert capfd.readouterr().out.strip().splitlines()[-1] == f"{SUMMARY}; {OTHER_BOUND}"
    after = json.loads((v1 / "results.json").read_text())
    assert after["status"] == "complete" and len(after["resumed"]) == 1
    assert after["created"] == before["created"]
    # the runs as measured (written now in version 3's shape: they read as the v1 file's did)
    assert [c.runs for c in read_document(after, "after").cells] == [c.runs for c in read_document(before, "v1").cells]
