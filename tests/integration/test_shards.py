"""--shard I/N and merge on real releases: the shards of a sweep, merged, equal the unsharded sweep."""

import json

import pytest

from harness.cli import commands as cli
from harness.output.ci import step_summary
from harness.results.document import load_results
from tests.cells import SCHEMA


@pytest.mark.integration
def test_real_sharded_sweep_merges_to_the_unsharded_cells(tmp_path, capsys, write, monkeypatch):
    config = write("two.yaml", "name: two\nrepro: shard_map_grad\njax_versions: ['0.4.28', '0.4.29']\n"
                               "device_count: 8\nmeshes: [{shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}]\nruns: 2\n")
    folders = []
    for i in (1, 2):
        assert cli.main(["run", str(config), "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}"), "-q"]) == 0
        (folder,) = (tmp_path / f"s{i}").iterdir()
        folders.append(str(folder))
        assert json.loads((folder / "results.json").read_text())["shard"]["index"] == i
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    (merged,) = (tmp_path / "m").iterdir()
    data = json.loads((merged / "results.json").read_text())
    assert [(c["spec"]["jax_version"], c["verdict"]) for c in data["cells"]] == [("0.4.28", "reproduced"), ("0.4.29", "clean")]
    assert data["summary"]["fixed_in"] == "0.4.29" and data["status"] == "complete"
    report = (merged / "report.md").read_text()
    assert "Merged from 2 shard result(s)" in report and "jax.result_info" in report  # logs travelled

    # In CI: the same shards merged again with the JUnit file, the job summary and --fail-on.
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "ci"), "--junit-xml", str(junit),
                     "--fail-on", "reproduced"]) == 1
    assert "harness: --fail-on reproduced: 1 cell(s) failed: 0.4.28 8x1x1x1 (a,b,c,d) reproduced" in \
        capsys.readouterr().err
    text = junit.read_text()
    SCHEMA.validate(text)
    (suite,) = SCHEMA.to_dict(text)["testsuite"]
    assert (suite["@name"], suite["@tests"], suite["@failures"], suite["@skipped"]) == ("two", "2", "1", "0")
    cases = {c["@name"]: c for c in suite["testcase"]}
    assert list(cases) == ["jax 0.4.28 8x1x1x1 (a,b,c,d) cpux8", "jax 0.4.29 8x1x1x1 (a,b,c,d) cpux8"]
    (failure,) = cases["jax 0.4.28 8x1x1x1 (a,b,c,d) cpux8"]["failure"]
    assert failure["@type"] == "reproduced" and "jit_f" in failure["@message"]
    assert "failure" not in cases["jax 0.4.29 8x1x1x1 (a,b,c,d) cpux8"]
    assert float(cases["jax 0.4.29 8x1x1x1 (a,b,c,d) cpux8"]["@time"]) > 0  # the runs' wall seconds
    cells = load_results(merged).cells
    assert summary.read_text() == step_summary(cells, "two") + "\n"  # the table and the boundary line
    assert "0.4.28" in summary.read_text() and "reproduced" in summary.read_text()
