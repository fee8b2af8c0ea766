"""--json (issue 33.6): a sweep's summary as one JSON object on stdout, the table and summary line on
stderr. The object's shape from cells (pure), and a real `harness check` on a real JAX release."""

from __future__ import annotations

import json

import pytest

from harness.cli import commands as cli
from harness.results.document import SweepStatus
from harness.report.table import SUMMARY_FORMAT, summary_json, summary_line
from tests.cells import CELLS


def test_the_summary_object_has_every_cell_its_verdict_and_seconds_and_the_boundaries():
    data = summary_json(CELLS, SweepStatus.COMPLETE, "r/results.json", "r/report.md")
    assert json.loads(json.dumps(data)) == data  # plain JSON all through
    assert data["format"] == SUMMARY_FORMAT and data["status"] == "complete"
    assert (data["results"], data["report"]) == ("r/results.json", "r/report.md")
    assert data["summary"] == summary_line(CELLS) == data["boundaries"]["line"]
    assert data["verdicts"] == {"reproduced": 1, "clean": 1, "unsupported": 1, "error": 1, "new input": 0,
                                "not cached": 0}
    assert [c["jax_version"] for c in data["cells"]] == ["0.4.25", "0.4.28", "0.4.29", "0.4.30"]  # in order
    reproduced = data["cells"][1]
    assert reproduced["verdict"] == "reproduced" and reproduced["reason"] == "jit_f: a new key in run 2"
    assert (reproduced["runs"], reproduced["runs_ok"]) == (2, 2)
    assert reproduced["seconds"] == {"runs": 2.469, "lost_per_start": 0.8, "saved_per_start": 0.0,
                                     "first_run_compile": 0.1}
    assert data["cells"][0]["seconds"]["lost_per_start"] is None  # no cost recorded: not a zero
    assert data["boundaries"]["appears_in"] == "0.4.28" and data["boundaries"]["fixed_in"] == "0.4.29"


def test_fingerprint_and_nightly_take_no_json_flag(capsys):
    for command in (["fingerprint", "x.py"], ["nightly", "c.yaml", "--baseline", "b"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--json"])
        assert "unrecognized arguments: --json" in capsys.readouterr().err
