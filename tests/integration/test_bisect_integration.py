"""Release bisection on real releases (creates venvs, runs real JAX): `pytest -m integration`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.commands import main

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "shard_map_grad.yaml"


@pytest.mark.integration
def test_release_bisection_finds_both_boundaries_and_resumes(tmp_path, capsys):
    # Three runs a point, not the config's 8: a reproducing point stops at run 2 (its chosen seeds), and a clean
    # one's bound is asserted as a bound, not as a number of runs (three clean points made 15 runs more).
    argv = ["bisect", str(CONFIG), "--good", "0.4.26", "--bad", "0.4.28", "--versions", ">=0.4.26,<=0.4.30",
            "--runs", "3", "--out", str(tmp_path), "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "regression appears in 0.4.27 (last clean 0.4.26); fixed in 0.4.29" in out
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith("bisect-")]
    data = json.loads((folder / "results.json").read_text())
    bisect = data["bisect"]
    assert bisect["appears"] == {"last": "0.4.26", "first": "0.4.27", "skipped": [], "resolved": True}
    assert bisect["fixed"]["last"] == "0.4.28" and bisect["fixed"]["first"] == "0.4.29"
    tested = [s["point"] for s in bisect["steps"]]
    # endpoints first (good, bad, the far end for the fix), then one step for each boundary
    assert tested == ["0.4.26", "0.4.28", "0.4.30", "0.4.27", "0.4.29"]
    for step in bisect["steps"]:
        if step["verdict"] == "reproduced":
            assert step["runs"] == 2, "a cell stops at its second key"
        if step["verdict"] == "clean":  # the residual's names in the mesh's order, whatever the seed: a bound
            assert 0 < step["miss_bound"] < 1  # from the seeds predicted for the other orders, not 0 (issue 47)
    for cell in data["cells"]:
        assert cell["seeds"]["strategy"] == "chosen" and cell["seeds"]["covers"]

    # The same command again replays the record: same answer, nothing measured.
    assert main(argv) == 0
    again = json.loads((folder / "results.json").read_text())["bisect"]
    assert again["steps"] == bisect["steps"]
