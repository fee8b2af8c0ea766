"""Resuming an interrupted sweep: the same sweep only, finished cells kept, a cut-short cell redone."""

import json

import pytest

from harness import cli
from harness.errors import UserError
from harness.header import ResultsHeader
from harness.model import CellResult, CellSpec, Platform, Verdict
from harness.resume import check_same_sweep, finished_cells, still_to_measure

HEADER = {"config": {"name": "smoke", "runs": 4, "source": "configs/smoke.yaml"},
          "versions": ["0.4.28", "0.4.29"], "options": {"runs": 4, "seeds": "chosen", "all_runs": False}}


def changed(**parts):
    out = json.loads(json.dumps(HEADER))
    for key, value in parts.items():
        section, _, name = key.partition("__")
        if name:
            out[section][name] = value
        else:
            out[section] = value
    return ResultsHeader.from_json(out)


def test_the_same_sweep_passes_even_from_a_moved_config():
    assert check_same_sweep(changed(config__source="elsewhere/smoke.yaml"), changed(), "dir") is None


@pytest.mark.parametrize("previous, fragment", [
    (changed(config__runs=8), "config.runs differs"),
    (changed(versions=["0.4.28"]), "versions differ"),
    (changed(options__seeds="random"), "option seeds differs"),
    (changed(options__all_runs=True), "option all_runs differs"),
    (changed(shard={"cells": ["a"]}), "another shard"),
])
def test_another_sweep_is_refused_naming_what_differs(previous, fragment):
    with pytest.raises(UserError, match=fragment):
        check_same_sweep(previous, changed(), "dir")


def test_finished_cells_drop_the_one_cut_short_and_the_rest_is_to_measure():
    specs = [CellSpec(v, Platform.CPU, 8, None) for v in ("0.4.28", "0.4.29", "0.4.30")]
    done = CellResult(specs[0], Verdict.REPRODUCED, {})
    cut = CellResult(specs[1], Verdict.ERROR, {}, interrupted=True)
    kept = finished_cells([done, cut])
    assert kept == [done]
    assert still_to_measure(specs, kept) == specs[1:]


@pytest.mark.integration
def test_resume_keeps_finished_cells_and_remeasures_the_interrupted_one(tmp_path, capsys):
    assert cli.main(["run", "configs/smoke.yaml", "--runs", "2", "--out", str(tmp_path), "-q"]) == 0
    (run_dir,) = tmp_path.iterdir()
    path = run_dir / "results.json"
    data = json.loads(path.read_text())
    first_seeds = [r["seed"] for r in data["cells"][0]["runs"]]
    # As Ctrl-C during the second cell leaves it: that cell partial and marked, status interrupted.
    data["cells"][1].update(interrupted=True, verdict="error", runs=data["cells"][1]["runs"][:1])
    data["status"] = "interrupted"
    path.write_text(json.dumps(data))
    capsys.readouterr()

    assert cli.main(["run", "configs/smoke.yaml", "--runs", "2", "--resume", str(run_dir), "-q"]) == 0
    out = capsys.readouterr().out
    resumed = json.loads(path.read_text())
    assert resumed["status"] == "complete" and len(resumed["resumed"]) == 1
    assert resumed["created"] == data["created"]
    assert [c["jax_version"] for c in resumed["cells"]] == ["0.4.28", "0.4.29"]
    assert [r["seed"] for r in resumed["cells"][0]["runs"]] == first_seeds  # kept, not measured again
    again = resumed["cells"][1]
    assert again["verdict"] == "clean" and len(again["runs"]) == 2 and "interrupted" not in again
    assert out.strip().splitlines()[-1].endswith("fixed in 0.4.29")
