"""--json (issue 33.6) on a real `harness check` of a real JAX release: one JSON object on stdout, the
table and summary line on stderr (the object's shape from cells: tests/unit/test_json_output.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import commands as cli


@pytest.mark.integration
def test_check_json_prints_one_object_on_stdout_and_the_table_on_stderr(tmp_path, capsys):
    script = Path("examples/flax_mlp_step.py")
    code = cli.main(["check", str(script), "--versions", "0.4.31", "--runs", "2", "--json", "--quiet",
                     "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)  # the whole of stdout, one object
    assert out.count("\n") == 1
    (cell,) = data["cells"]
    assert cell["jax_version"] == "0.4.31" and cell["verdict"] == "clean" and cell["runs_ok"] == 2
    assert cell["seconds"]["runs"] > 0 and cell["seconds"]["lost_per_start"] is not None
    assert Path(data["results"]).is_file() and data["verdicts"]["clean"] == 1
    assert data["summary"] in err and "| jax " in err  # the table and the line, where a human looks
