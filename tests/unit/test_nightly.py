"""The nightly comparison: exit 1 exactly when a cell went from clean to reproduced, error or new input."""

import json

import pytest

from harness.results.document import read_cell
from harness.core.records import plain
from harness import service
from harness.cli import commands as cli
from harness.core.model import CellResult, CellSpec, MeasuredCommit, Mesh
from harness.core.kinds import Platform, Verdict
from harness.nightly.compare import Change, classify, compare, exit_code, render_changes
from harness.report.table import render, summary_line
from harness.results.document import SweepStatus

MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))


def cell(version, verdict, mesh=MESH):
    return CellResult(CellSpec(version, Platform.CPU, 8, mesh), verdict, {}, [])


@pytest.mark.parametrize("before, after, change, code", [
    (Verdict.CLEAN, Verdict.REPRODUCED, Change.REGRESSED, 1),
    (Verdict.CLEAN, Verdict.ERROR, Change.BROKE, 1),
    (Verdict.CLEAN, Verdict.NEW_INPUT, Change.NEW_INPUT, 1),  # a suite that began compiling new shapes
    (Verdict.NEW_INPUT, Verdict.NEW_INPUT, Change.SAME, 0),
    (Verdict.NEW_INPUT, Verdict.CLEAN, Change.CHANGED, 0),
    (Verdict.CLEAN, Verdict.CLEAN, Change.SAME, 0),
    (Verdict.REPRODUCED, Verdict.REPRODUCED, Change.SAME, 0),
    (Verdict.REPRODUCED, Verdict.CLEAN, Change.FIXED, 0),
    (Verdict.REPRODUCED, Verdict.ERROR, Change.CHANGED, 0),
    (Verdict.ERROR, Verdict.REPRODUCED, Change.CHANGED, 0),
    (Verdict.UNSUPPORTED, Verdict.REPRODUCED, Change.CHANGED, 0),
    (Verdict.CLEAN, Verdict.UNSUPPORTED, Change.CHANGED, 0),
    (None, Verdict.REPRODUCED, Change.NEW, 0),
])
def test_each_kind_of_difference(before, after, change, code):
    assert classify(before, after) == change
    baseline = [cell("0.4.29", before)] if before else []
    changes = compare([cell("0.4.29", after)], baseline)
    assert [c.change for c in changes] == [change]
    assert exit_code(changes) == code


def test_a_new_release_is_compared_with_the_newest_earlier_one_on_the_same_mesh():
    other_mesh = Mesh((4, 2, 1, 1), ("a", "b", "c", "d"))
    baseline = [cell("0.10.1", Verdict.REPRODUCED), cell("0.10.2", Verdict.CLEAN),
                cell("0.10.3", Verdict.CLEAN, other_mesh), cell("0.10.9", Verdict.REPRODUCED)]
    (change,) = compare([cell("0.10.3", Verdict.REPRODUCED)], baseline)
    assert change.baseline_version == "0.10.2" and change.change == Change.REGRESSED
    # 0.10.9 is newer, not earlier: never the comparison for 0.10.3.
    (change,) = compare([cell("0.10.3", Verdict.CLEAN)], [cell("0.10.9", Verdict.REPRODUCED)])
    assert change.change == Change.NEW


def test_render_names_the_alarm():
    changes = compare([cell("0.4.28", Verdict.REPRODUCED), cell("0.4.29", Verdict.CLEAN)],
                      [cell("0.4.28", Verdict.CLEAN), cell("0.4.29", Verdict.CLEAN)])
    text = render_changes(changes)
    assert "ALARM: 1 cell(s) went from clean to reproduced: jax 0.4.28" in text
    assert "REGRESSED" in text and "clean (0.4.28)" in text
    text = render_changes(compare([cell("0.10.2", Verdict.NEW_INPUT)], [cell("0.10.2", Verdict.CLEAN)]))
    assert "ALARM: 1 cell(s) went from clean to new input: jax 0.10.2; new input: a later run compiled" in text
    assert "NEW INPUT" in text
    assert "no change" in render_changes(compare([cell("0.4.29", Verdict.CLEAN)], [cell("0.4.29", Verdict.CLEAN)]))


def write_results(folder, cells, repro=None):
    folder.mkdir(parents=True, exist_ok=True)
    config = {"name": "n", **({"repro": repro} if repro else {})}
    (folder / "results.json").write_text(json.dumps(
        {"schema_version": 1, "status": "complete", "config": config,
         "cells": [c if isinstance(c, dict) else plain(c) for c in cells]}))
    return folder


@pytest.mark.parametrize("now, code", [(Verdict.CLEAN, 0), (Verdict.REPRODUCED, 1), (Verdict.ERROR, 1)])
def test_compare_command_exit_codes(tmp_path, capsys, now, code):
    baseline = write_results(tmp_path / "base", [cell("0.4.29", Verdict.CLEAN)])
    current = write_results(tmp_path / "now", [cell("0.4.29", now)])
    assert cli.main(["compare", str(current), "--baseline", str(baseline)]) == code
    assert f"compared with {baseline}" in capsys.readouterr().out


def test_bad_baseline_is_bad_input(tmp_path, capsys):
    current = write_results(tmp_path / "now", [cell("0.4.29", Verdict.CLEAN)])
    assert cli.main(["compare", str(current), "--baseline", str(tmp_path / "missing")]) == 2
    assert "no such results file" in capsys.readouterr().err


def test_a_baseline_that_holds_run_folders_names_the_one_to_give(tmp_path, capsys):
    """`--out base` writes base/TIME-NAME/; `--baseline base` is refused with the folder to name instead."""
    current = write_results(tmp_path / "now", [cell("0.4.29", Verdict.CLEAN)])
    write_results(tmp_path / "base" / "20261207T010000Z-nightly", [cell("0.4.29", Verdict.CLEAN)])
    newest = write_results(tmp_path / "base" / "20261207T020000Z-nightly", [cell("0.4.29", Verdict.CLEAN)])
    assert cli.main(["compare", str(current), "--baseline", str(tmp_path / "base")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds 2 runs' results folders, the newest" in err and str(newest) in err
    assert cli.main(["compare", str(current), "--baseline", str(newest)]) == 0  # the folder it names works


@pytest.fixture
def fake_sweep(monkeypatch, tmp_path):
    """The service's sweep replaced: records the versions nightly asked for; 0.4.30 'reproduces'."""
    seen = {}

    def sweep(config, options, progress, more=None):
        seen["versions"] = options.versions
        cells = [cell("0.4.30", Verdict.REPRODUCED)]
        return service.SweepOutcome(write_results(tmp_path / "swept", cells), cells, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.watching, "sweep", sweep)
    return seen


def test_nightly_sweeps_latest_by_default_and_alarms(tmp_path, fake_sweep, capsys):
    baseline = write_results(tmp_path / "base", [cell("0.4.29", Verdict.CLEAN)])
    code = cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline)])
    assert fake_sweep["versions"] == ("latest",)
    assert code == 1 and "ALARM" in capsys.readouterr().out


def test_nightly_versions_are_configurable(tmp_path, fake_sweep):
    baseline = write_results(tmp_path / "base", [cell("0.4.29", Verdict.REPRODUCED)])
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline), "--versions", "0.4.30"]) == 0
    assert fake_sweep["versions"] == ("0.4.30",)
    cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline), "--config-versions"])
    assert fake_sweep["versions"] is None  # the sweep then reads the config's jax_versions


def test_nightly_checks_the_baseline_before_sweeping(tmp_path, fake_sweep):
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(tmp_path / "none")]) == 2
    assert "versions" not in fake_sweep


def _malformed(change):
    data = plain(cell("0.4.28", Verdict.CLEAN))
    change(data)
    return data


@pytest.mark.parametrize("change, says", [
    (lambda c: c["spec"].pop("platform"), "cells[1].spec.platform: missing"),
    (lambda c: c.update(verdict="weird"), "cells[1].verdict: Invalid enum value 'weird'"),
    (lambda c: c["spec"].update(jax_version="tomorrow"), "cells[1].spec.jax_version: Invalid version: 'tomorrow'"),
])
@pytest.mark.parametrize("side", ["results", "baseline"])
def test_a_malformed_cell_is_one_line_naming_file_and_cell(tmp_path, capsys, change, says, side):
    good = [cell("0.4.29", Verdict.CLEAN), cell("0.4.30", Verdict.CLEAN)]
    bad = [cell("0.4.29", Verdict.CLEAN), _malformed(change)]
    current = write_results(tmp_path / "now", bad if side == "results" else good)
    baseline = write_results(tmp_path / "base", bad if side == "baseline" else good)
    assert cli.main(["compare", str(current), "--baseline", str(baseline)]) == 2
    broken = current if side == "results" else baseline
    err = capsys.readouterr().err
    assert err.startswith(f"harness: error: {broken / 'results.json'}: {says}")
    assert err.count("\n") == 1


def test_nightly_checks_baseline_cells_before_sweeping(tmp_path, fake_sweep, capsys):
    baseline = write_results(tmp_path / "base", [_malformed(lambda c: c["spec"].pop("platform"))])
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline)]) == 2
    assert "versions" not in fake_sweep and "cells[0].spec.platform: missing" in capsys.readouterr().err


def test_compare_refuses_a_baseline_of_another_repro(tmp_path, capsys):
    scripts = [cell("0.4.29", Verdict.CLEAN, mesh=None)]  # user scripts: nothing but the repro tells them apart
    current = write_results(tmp_path / "now", scripts, repro="/src/a/step.py")
    baseline = write_results(tmp_path / "base", scripts, repro="/src/b/train.py")
    assert cli.main(["compare", str(current), "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert "'step.py'" in err and "'train.py'" in err and err.count("\n") == 1
    # The same script checked out elsewhere (another machine) is the same repro.
    same = write_results(tmp_path / "same", scripts, repro="/home/ci/checkout/train.py")
    assert cli.main(["compare", str(same), "--baseline", str(baseline)]) == 0


def test_nightly_refuses_a_baseline_of_another_repro_before_sweeping(tmp_path, fake_sweep, capsys):
    baseline = write_results(tmp_path / "base", [cell("0.4.29", Verdict.CLEAN)], repro="/src/b/train.py")
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline)]) == 2
    assert "versions" not in fake_sweep
    err = capsys.readouterr().err
    assert "'shard_map_grad'" in err and "'train.py'" in err
    same = write_results(tmp_path / "same", [cell("0.4.29", Verdict.CLEAN)], repro="shard_map_grad")
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(same)]) == 1  # 0.4.30 reproduces


def commit_cell(sha, verdict, mesh=MESH):
    """A jax commit's cell as `nightly --jax-repo` records it: a PEP 440 label, the commit in `commit`."""
    result = cell(f"0.10.3.dev0+g{sha[:10]}", verdict, mesh)
    result.commit = MeasuredCommit(sha, "2026-11-29T22:10:00+00:00", "s", "main", "origin", "0.10.2")
    return result


SHA = "c0cfc7ae9ff9" + "0" * 28


@pytest.mark.parametrize("now, change, code", [
    (Verdict.REPRODUCED, Change.REGRESSED, 1), (Verdict.ERROR, Change.BROKE, 1), (Verdict.CLEAN, Change.SAME, 0)])
def test_a_commit_is_compared_with_the_baseline_s_newest_release(now, change, code):
    other_mesh = Mesh((4, 2, 1, 1), ("a", "b", "c", "d"))
    baseline = [cell("0.10.1", Verdict.REPRODUCED), cell("0.10.2", Verdict.CLEAN),
                cell("0.10.9", Verdict.REPRODUCED, other_mesh),
                commit_cell("f" * 40, Verdict.REPRODUCED)]  # last night's commit: never the reference
    (result,) = compare([commit_cell(SHA, now)], baseline)
    assert (result.baseline_version, result.before, result.change) == ("0.10.2", Verdict.CLEAN, change)
    assert result.label == "jax@c0cfc7ae9ff9" and exit_code([result]) == code
    text = render_changes([result])
    assert "jax@c0cfc7ae9ff9" in text and "clean (0.10.2)" in text
    if code:
        assert f"ALARM: 1 cell(s) went from clean to {now}: jax@c0cfc7ae9ff9" in text


def test_an_older_commit_still_meets_the_newest_release_and_releases_ignore_commits():
    # The seed's culprit (a 0.4.27 dev commit) against a baseline of 0.4.26 and 0.4.31: the newest.
    (result,) = compare([commit_cell(SHA, Verdict.REPRODUCED)],
                        [cell("0.4.26", Verdict.CLEAN), cell("0.4.31", Verdict.CLEAN)])
    assert result.baseline_version == "0.4.31" and result.change == Change.REGRESSED
    # A release is never matched with a commit's cell of the baseline, even a lower-sorting one.
    (result,) = compare([cell("0.10.3", Verdict.CLEAN)], [commit_cell(SHA, Verdict.REPRODUCED)])
    assert result.change == Change.NEW


def test_a_commit_cell_reads_back_and_is_labelled_in_the_table():
    back = read_cell(json.loads(json.dumps(plain(commit_cell(SHA, Verdict.REPRODUCED)))))
    assert back.commit.info.sha == SHA and back.commit.jaxlib == "0.10.2" and back.label == "jax@c0cfc7ae9ff9"
    table = render([cell("0.10.2", Verdict.CLEAN), back])
    assert "| jax@c0cfc7ae9ff9 (2026-11-29) |" in table
    # The release summary stays about releases.
    assert summary_line([cell("0.10.2", Verdict.CLEAN), back]) == "not reproduced in this range"
    # A cell of an older results file has no commit.
    assert read_cell(plain(cell("0.10.2", Verdict.CLEAN))).commit is None


def _clean_with(plan):
    from harness.measure.seeds import record_plan
    out = cell("0.4.28", Verdict.CLEAN, mesh=None)
    record_plan(out, plan)
    return out


def test_a_baseline_whose_clean_was_weak_is_said_instead_of_a_regression(tmp_path, capsys):
    """3 random runs read clean (a regression of two orders is missed one time in 4): reproduced now is not
    called REGRESSED, and the text says the baseline was weak; a strong baseline still raises the alarm."""
    from harness.measure.seeds import random_plan
    weak = write_results(tmp_path / "weak", [_clean_with(random_plan(3))])
    strong = write_results(tmp_path / "strong", [_clean_with(random_plan(11))])
    now = write_results(tmp_path / "now", [cell("0.4.28", Verdict.REPRODUCED, mesh=None)])
    assert cli.main(["compare", str(now), "--baseline", str(weak)]) == 0
    out = capsys.readouterr().out
    assert "REGRESSED" not in out and "weak baseline" in out
    assert ("1 cell(s) reproduce where the baseline read clean but its miss bound was weak, so no regression is "
            "claimed: jax 0.4.28 (baseline 0.4.28 weak: a regression would read clean with chance up to 0.25 "
            "(above 0.05); --runs 6 would make it at most 0.031)") in out
    assert cli.main(["compare", str(now), "--baseline", str(strong)]) == 1
    assert "REGRESSED" in capsys.readouterr().out


def test_a_weak_clean_cell_says_so_in_its_row_and_the_summary():
    from harness.measure.seeds import random_plan
    cells = [_clean_with(random_plan(4))]
    table = render(cells)
    assert "weak: a regression would read clean with chance up to 0.12 (above 0.05); --runs 6" in table
    assert summary_line(cells) == ("not reproduced in this range; clean on 0.4.28 is weak (a regression would "
                                   "read clean with chance up to 0.12): measure with --runs 6")
    assert "weak" not in summary_line([_clean_with(random_plan(6))])


def test_a_clean_cell_above_the_target_says_its_bound_and_the_runs_for_it_in_its_row_and_the_summary():
    """A test suite's default 6 runs (0.031: not weak, above 1e-3): the row and the summary say the bound and
    that --runs 11 gives 1e-3; 11 runs say nothing more."""
    from harness.measure.seeds import random_plan
    cells = [_clean_with(random_plan(6))]
    assert ("a regression would read clean with chance up to 0.031; --runs 11 would make it at most 0.00098"
            in render(cells))
    assert summary_line(cells) == ("not reproduced in this range; clean on 0.4.28: a regression would read clean "
                                   "with chance up to 0.031 (--runs 11 would make it at most 0.00098)")
    assert summary_line([_clean_with(random_plan(11))]) == "not reproduced in this range"
    assert "--runs 11" not in render([_clean_with(random_plan(11))])


@pytest.mark.parametrize("after", list(Verdict))
def test_from_clean_every_verdict_that_compiles_again_or_fails_raises_the_alarm(after):
    """Total over the verdicts (issue 60.2): a verdict that compiles again in a fresh process (Verdict.compiles_again:
    reproduced, new input, not cached) or an error, after a clean baseline, is the alarm, named by its own word; any
    other is not."""
    changes = compare([cell("0.10.2", after)], [cell("0.10.2", Verdict.CLEAN)])
    assert changes[0].alarm == (after.compiles_again or after == Verdict.ERROR)
    assert exit_code(changes) == (1 if changes[0].alarm else 0)
    if after.compiles_again and after != Verdict.REPRODUCED:
        assert changes[0].change == Change(after.value)
        assert f"went from clean to {after}: jax 0.10.2; {after}: " in render_changes(changes)
