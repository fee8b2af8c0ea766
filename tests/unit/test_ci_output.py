"""What a CI reads: JUnit XML valid against the schema pytest's own tests use, GitHub's job summary,
--fail-on, the exit codes that tell a regression (1) from a failure of the harness (3), and nightly's
alarm on seconds lost per start."""

import json
import os
from pathlib import Path

import pytest

from harness.core.records import plain
from harness import service
from harness.cli import commands as cli
from harness.core import errors
from harness.output.ci import (
    MAX_MESSAGE,
    append_step_summary,
    failing,
    junit_xml,
    step_summary,
    suite_name,
    write_junit,
)
from harness.core.errors import ExitCode
from harness.core.kinds import parse_fail_on
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.nightly.compare import Change, compare, exit_code, render_changes
from harness.results.document import SweepStatus
from harness.report.table import render_markdown_table, summary_line
from harness.verdicts.cell_facts import cells_facts
from tests.cells import CELLS, MESH, SCHEMA, SCHEMA_WITH_ERROR, cell, junit_cases, shard_folders

def test_the_step_summary_escapes_what_a_program_wrote_as_report_md_does():
    """A reason holds what a crash printed: in the job summary it adds no column, no HTML, no mention."""
    reason = "ValueError: <img src=x> | cc @someone about #12"
    text = step_summary([cell("0.4.30", Verdict.ERROR, reason)], "check-@team")
    assert text.startswith("### check-@\u200bteam\n")
    assert "ValueError: &lt;img src=x&gt; \\| cc @\u200bsomeone about #\u200b12" in text
    assert "<img" not in text and "@someone" not in text


def test_junit_xml_validates_against_pytests_schema_and_says_each_cells_verdict(tmp_path):
    path = tmp_path / "deep" / "junit.xml"
    write_junit(path, CELLS, "shard-map-grad")
    text = path.read_text()
    SCHEMA.validate(text)  # raises on any departure from the schema
    tree = SCHEMA.to_dict(text)
    (suite,) = tree["testsuite"]
    assert (suite["@tests"], suite["@failures"], suite["@errors"], suite["@skipped"]) == ("4", "2", "0", "1")
    cases = {c["@name"]: c for c in suite["testcase"]}
    assert list(cases) == [f"jax {v} 8x1x1x1 (a,b,c,d) cpux8" for v in ("0.4.25", "0.4.28", "0.4.29", "0.4.30")]
    reproduced = cases["jax 0.4.28 8x1x1x1 (a,b,c,d) cpux8"]
    (failure,) = reproduced["failure"]
    assert failure["@type"] == "reproduced" and failure["@message"].startswith("jit_f: a new key in run 2; ")
    assert "0.80 s lost per start" in failure["@message"]
    assert cases["jax 0.4.30 8x1x1x1 (a,b,c,d) cpux8"]["failure"][0]["@message"].endswith('& "quoted"')
    assert cases["jax 0.4.25 8x1x1x1 (a,b,c,d) cpux8"]["skipped"][0]["@message"] == "nothing was cached"
    assert "failure" not in cases["jax 0.4.29 8x1x1x1 (a,b,c,d) cpux8"]
    assert reproduced["@time"] == "2.469" and reproduced["@classname"] == "shard-map-grad"


def test_an_empty_sweep_is_a_valid_suite_of_no_cases():
    SCHEMA.validate(junit_xml([], "none").tostring().decode())


def test_the_step_summary_appends_the_table_and_the_boundary_line(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    assert append_step_summary(CELLS, "sweep", {"GITHUB_STEP_SUMMARY": str(summary)}) == summary
    text = summary.read_text()
    assert text.startswith("earlier step\n") and render_markdown_table(cells_facts(CELLS)) in text
    assert f"**{summary_line(CELLS)}**" in text
    assert step_summary(CELLS, "sweep") in text
    assert append_step_summary(CELLS, "sweep", {}) is None  # not on GitHub: nothing written


def test_the_suite_is_named_after_the_sweep_not_its_timestamp():
    assert suite_name(Path("results/20261201T144931Z-check-train")) == "check-train"
    assert suite_name(Path("results/20261201T144931Z-shard-map-grad-2")) == "shard-map-grad-2"
    assert suite_name(Path("results/mine")) == "mine"


def test_fail_on_names_verdicts():
    assert parse_fail_on("reproduced,error") == {Verdict.REPRODUCED, Verdict.ERROR}
    assert [c.spec.jax_version for c in failing(CELLS, parse_fail_on("reproduced"))] == ["0.4.28"]
    for bad in ("clean", "reproduced,nope", ""):
        with pytest.raises(ValueError):
            parse_fail_on(bad)


@pytest.fixture
def swept(monkeypatch, tmp_path):
    """The service's sweep replaced by one that returns CELLS (written as a results folder)."""
    def sweep(config, options, progress, more=None):
        folder = write_results(tmp_path / "swept", CELLS)
        return service.SweepOutcome(folder, CELLS, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.sweeping, "sweep", sweep)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.mark.parametrize("flags, code, said", [([], 0, ""), (["--fail-on", "reproduced"], 1, "reproduced"),
                                               (["--fail-on", "unsupported,error"], 1, "error,unsupported")])
def test_run_exits_1_only_when_fail_on_names_a_cells_verdict(swept, tmp_path, capsys, monkeypatch, flags, code,
                                                             said):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "junit.xml"
    assert cli.main(["run", "configs/smoke.yaml", "--junit-xml", str(junit), *flags]) == code
    err = capsys.readouterr().err
    SCHEMA.validate(junit.read_text())
    assert summary_line(CELLS) in summary.read_text()
    if code:
        assert f"harness: --fail-on {said}: " in err


def test_fail_on_a_word_that_is_no_verdict_is_bad_input(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", "examples/stable_script.py", "--fail-on", "clean"])
    assert info.value.code == ExitCode.BAD_INPUT and "--fail-on" in capsys.readouterr().err


def test_junit_xml_at_a_folder_is_bad_input_before_measuring(swept, tmp_path, capsys):
    assert cli.main(["run", "configs/smoke.yaml", "--junit-xml", str(tmp_path)]) == ExitCode.BAD_INPUT
    assert "--junit-xml" in capsys.readouterr().err


def write_results(folder, cells):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(
        {"schema_version": 2, "status": "complete", "config": {"name": "n"}, "cells": [plain(c) for c in cells]}))
    return folder


# ---- exit codes: a regression is 1, the harness's own failure 3 ----------------------------------

def test_the_exit_codes_are_pinned():
    assert [(c.name, int(c)) for c in ExitCode] == [("OK", 0), ("REGRESSION", 1), ("BAD_INPUT", 2), ("FAILURE", 3),
                                                    ("INTERRUPTED", 130)]


@pytest.mark.parametrize("code, title", [(1, "Regression"), (2, "Bad input"), (3, "The harness itself failed"),
                                         (143, "Interrupted")])
def test_a_ci_is_told_which_failure_an_exit_code_is(capsys, code, title):
    """`python -m harness.core.errors CODE WHAT`: the nightly workflow's and the action's annotation."""
    assert errors.main([str(code), "compare"]) == 0
    assert capsys.readouterr().out.startswith(f"::error title=compare: {title}::")
    errors.main(["0", "compare"])
    assert capsys.readouterr().out == ""


def test_nightly_exits_3_when_the_harness_crashes_and_1_on_a_regression(monkeypatch, tmp_path, capsys):
    baseline = write_results(tmp_path / "base", [cell("0.4.29", Verdict.CLEAN)])

    def crashes(config, options, progress, more=None):
        raise RuntimeError("a bug in the harness")
    monkeypatch.setattr(service.watching, "sweep", crashes)
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline)]) == ExitCode.FAILURE == 3
    assert "RuntimeError: a bug in the harness" in capsys.readouterr().err

    def regresses(config, options, progress, more=None):
        cells = [cell("0.4.30", Verdict.REPRODUCED)]
        return service.SweepOutcome(write_results(tmp_path / "now", cells), cells, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.watching, "sweep", regresses)
    assert cli.main(["nightly", "configs/smoke.yaml", "--baseline", str(baseline)]) == ExitCode.REGRESSION == 1


def test_a_broken_baseline_file_is_bad_input_not_a_harness_failure(tmp_path, capsys):
    (tmp_path / "results.json").write_text("{not json")
    assert cli.main(["compare", str(tmp_path), "--baseline", str(tmp_path)]) == 2


# ---- nightly/compare: seconds lost per start ---------------------------------------------------

@pytest.mark.parametrize("before, after, threshold, change", [
    (0.1, 0.9, 0.5, Change.COSTLIER),  # still reproduced, but each start now loses 0.8 s more
    (0.1, 0.5, 0.5, Change.SAME),  # grew by 0.4 s: under the threshold
    (0.1, 0.9, None, Change.SAME),  # no threshold: verdicts only
    (None, 0.9, 0.5, Change.SAME),  # a baseline without seconds says nothing of them
])
def test_seconds_lost_per_start_growing_past_the_threshold_alarms(before, after, threshold, change):
    base = [cell("0.4.28", Verdict.REPRODUCED, lost=before)]
    (found,) = compare([cell("0.4.28", Verdict.REPRODUCED, lost=after)], base, max_lost_growth=threshold)
    assert found.change == change
    assert exit_code([found]) == (1 if change == Change.COSTLIER else 0)
    if change == Change.COSTLIER:
        text = render_changes([found])
        assert "lose more seconds per fresh process than the threshold allows: jax 0.4.28" in text
        assert "0.10 s -> 0.90 s" in text and "COSTLIER" in text


def test_compare_command_takes_the_threshold(tmp_path, capsys):
    baseline = write_results(tmp_path / "base", [cell("0.4.28", Verdict.REPRODUCED, lost=0.1)])
    current = write_results(tmp_path / "now", [cell("0.4.28", Verdict.REPRODUCED, lost=2.0)])
    assert cli.main(["compare", str(current), "--baseline", str(baseline)]) == 0
    assert cli.main(["compare", str(current), "--baseline", str(baseline), "--max-lost-growth", "1"]) == 1
    assert "ALARM" in capsys.readouterr().out


# ---- merge and submit --wait: the CI outputs of the merged cells -----------------------------------

def ci_files(tmp_path, monkeypatch):
    summary, junit = tmp_path / "summary.md", tmp_path / "out" / "junit.xml"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary, junit


@pytest.mark.parametrize("flags, code", [([], 0), (["--fail-on", "reproduced"], 1), (["--fail-on", "error"], 0)])
def test_merge_writes_the_junit_and_summary_of_the_merged_cells(tmp_path, capsys, monkeypatch, flags, code):
    summary, junit = ci_files(tmp_path, monkeypatch)
    args = ["merge", *shard_folders(tmp_path), "--out", str(tmp_path / "m"), "--junit-xml", str(junit), *flags]
    assert cli.main(args) == code
    err = capsys.readouterr().err
    suite = junit_cases(junit)
    # The suite of the sweep the shards cut (its config's name, as the unsharded sweep's folder is named).
    assert suite["@name"] == "s" and (suite["@tests"], suite["@failures"]) == ("10", "4")
    (merged,) = (tmp_path / "m").iterdir()
    cells = service.reading.load_results(merged).cells
    assert summary.read_text() == step_summary(cells, "s") + "\n"
    assert ("harness: --fail-on reproduced: 4 cell(s) failed: 0.4.27 4x2x1x1" in err) == (code == 1)


@pytest.mark.parametrize("flags, code", [([], 3), (["--fail-on", "error"], 3), (["--fail-on", "reproduced"], 1)])
def test_an_incomplete_merge_exits_3_unless_a_cell_it_has_fails_the_job(tmp_path, capsys, monkeypatch, flags, code):
    """A shard missing: nothing was decided for its cells (3, as the harness's failure); a reproduced cell
    among those merged was measured all the same (1)."""
    summary, junit = ci_files(tmp_path, monkeypatch)
    args = ["merge", *shard_folders(tmp_path, keep=(1,)), "--out", str(tmp_path / "m"), "--junit-xml", str(junit),
            *flags]
    assert cli.main(args) == code
    err = capsys.readouterr().err
    assert "harness: incomplete: shard 2 missing" in err
    assert junit_cases(junit)["@tests"] == "5"  # shard 1's cells
    text = summary.read_text()
    assert text.startswith("### s\n\n**incomplete: shard 2 missing**\n\n")


def test_merge_junit_xml_at_a_folder_is_bad_input_before_anything_is_written(tmp_path, capsys):
    folders = shard_folders(tmp_path)
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "m"), "--junit-xml", str(tmp_path)]) == 2
    assert "--junit-xml" in capsys.readouterr().err and not (tmp_path / "m").exists()


# ---- issue 32.1-3: output paths checked before the first run; late failures; hostile text ---------

HOSTILE = "ValueError: \x1b[31mred\x1b[0m \x00 bell\x07 back\x08 del\x7f c1\x85\x9b odd\udcff end"


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """The service's sweep replaced by one that counts its calls and returns CELLS."""
    calls = []

    def sweep(config, options, progress, more=None):
        calls.append(config)
        folder = write_results(tmp_path / "swept", CELLS)
        return service.SweepOutcome(folder, CELLS, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.sweeping, "sweep", sweep)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return calls


def a_file(tmp_path):
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "B").write_text("a file, not a folder")
    return tmp_path / "A" / "B"


@pytest.mark.parametrize("what", ["summary at a folder", "junit under a file", "out at a file",
                                  "junit at a pipe"])
def test_every_output_path_is_checked_before_the_first_run(counted, tmp_path, capsys, monkeypatch, what):
    """Bad input: one line, exit 2, and the sweep never started (before, a bad GITHUB_STEP_SUMMARY or a
    --junit-xml under a file was found after every run, and turned a regression's exit 1 into 2)."""
    args = ["run", "configs/smoke.yaml", "--fail-on", "reproduced", "--out", str(tmp_path / "out")]
    if what == "summary at a folder":
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))
        said = "GITHUB_STEP_SUMMARY"
    elif what == "junit under a file":
        args += ["--junit-xml", str(a_file(tmp_path) / "j.xml")]
        said = "--junit-xml"
    elif what == "out at a file":
        args[-1] = str(a_file(tmp_path))
        said = "--out"
    else:  # as /dev/null would be (never that one here: a harness without the check replaces it with a file)
        os.mkfifo(tmp_path / "pipe")
        args += ["--junit-xml", str(tmp_path / "pipe")]
        said = "is not a regular file"
    assert cli.main(args) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and err[0].startswith("harness: error: ")
    assert counted == [] and not (tmp_path / "out").exists()


def test_merge_and_submit_wait_check_their_output_paths_first(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))
    folders = shard_folders(tmp_path)
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "m")]) == ExitCode.BAD_INPUT
    assert "GITHUB_STEP_SUMMARY" in capsys.readouterr().err and not (tmp_path / "m").exists()
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    monkeypatch.setattr(service, "submit", lambda *a, **k: pytest.fail("submitted despite a bad output path"))
    junit = a_file(tmp_path) / "j.xml"
    assert cli.main(["submit", "configs/smoke.yaml", "--shards", "2", "--wait", "--junit-xml", str(junit),
                     "--out", str(tmp_path / "s")]) == ExitCode.BAD_INPUT
    assert "--junit-xml" in capsys.readouterr().err


@pytest.mark.parametrize("flags, code", [(["--fail-on", "reproduced"], ExitCode.REGRESSION), ([], ExitCode.FAILURE)])
def test_an_output_that_fails_after_the_sweep_is_said_and_the_verdict_still_decides(tmp_path, capsys, monkeypatch,
                                                                                    flags, code):
    """The paths were fine before the sweep; meanwhile the summary became a folder and the JUnit file's folder
    a file. Both are said; a regression stays 1 (before: 2, and --fail-on skipped); otherwise 3, not 2."""
    summary, junit_dir = tmp_path / "summary.md", tmp_path / "ci"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    def sweep(config, options, progress, more=None):
        summary.mkdir()
        junit_dir.write_text("now a file")
        return service.SweepOutcome(write_results(tmp_path / "swept", CELLS), CELLS, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.sweeping, "sweep", sweep)
    assert cli.main(["run", "configs/smoke.yaml", "--junit-xml", str(junit_dir / "j.xml"), *flags]) == code
    err = capsys.readouterr().err
    assert "harness: error: --junit-xml" in err and "harness: error: GITHUB_STEP_SUMMARY" in err
    assert ("harness: --fail-on reproduced: 1 cell(s) failed" in err) == bool(flags)


def test_junit_xml_is_well_formed_whatever_a_crash_printed(tmp_path):
    """ESC, NUL, BEL, BS, DEL, C1 and a lone surrogate in a crash line: shown as escapes, so a strict XML
    parser (expat) reads the file and the schema holds (before, they were written raw into message=)."""
    import xml.etree.ElementTree as ElementTree

    path = tmp_path / "junit.xml"
    write_junit(path, [cell("0.4.30", Verdict.ERROR, HOSTILE)], "check-\x1b[2Jx")
    text = path.read_text()
    ElementTree.fromstring(text.encode())  # expat: raises on any character XML 1.0 forbids
    SCHEMA.validate(text)
    (suite,) = SCHEMA.to_dict(text)["testsuite"]
    (failure,) = suite["testcase"][0]["failure"]
    assert failure["@message"].startswith("ValueError: \\x1b[31mred\\x1b[0m \\x00 bell\\x07 back\\x08 del\\x7f "
                                          "c1\\x85\\x9b odd\\udcff end")
    assert not any(ord(ch) < 32 and ch not in "\n\t" or 0x7f <= ord(ch) <= 0x9f for ch in text)
    assert suite["@name"] == "check-\\x1b[2Jx"


def test_the_junit_message_is_the_first_sentence_cut_at_a_word_and_the_body_keeps_all(tmp_path):
    long_reason = "jit_f: a new key in run 2 " + " ".join(f"word{i}" for i in range(80)) + ". Second sentence."
    xml = junit_xml([cell("0.4.28", Verdict.REPRODUCED, long_reason)], "s").tostring().decode()
    (suite,) = SCHEMA.to_dict(xml)["testsuite"]
    (failure,) = suite["testcase"][0]["failure"]
    message = failure["@message"]
    assert len(message) <= MAX_MESSAGE and message.endswith("\u2026")
    assert long_reason.startswith(message[:-1]) and message[:-1].split()[-1] in long_reason.split()  # a whole word
    assert long_reason in failure["$"]  # the whole text stays in the body
    two = junit_xml([cell("0.4.28", Verdict.REPRODUCED, "jit_f: moved in 0.4.28. See the report.")], "s")
    (suite,) = SCHEMA.to_dict(two.tostring().decode())["testsuite"]
    assert suite["testcase"][0]["failure"][0]["@message"] == "jit_f: moved in 0.4.28."


def test_an_error_cell_that_never_ran_the_program_is_a_junit_error_not_a_failure():
    never = CellResult(CellSpec("0.4.31", Platform.CPU, 8, MESH), Verdict.ERROR, {}, [],
                       reason="the environment could not be made: no wheel for this Python")
    not_started = RunRecord(index=1, seed=1, exit_code=None, duration_s=0.0, new_entries=[],
                            reason="could not start the run's process: [Errno 2] No such file")
    unstarted = CellResult(CellSpec("0.4.32", Platform.CPU, 8, MESH), Verdict.ERROR, {}, [not_started],
                           reason="could not start")
    crashed = cell("0.4.30", Verdict.ERROR, "1 of 2 runs failed")
    text = junit_xml([never, unstarted, crashed], "s").tostring().decode()
    SCHEMA_WITH_ERROR.validate(text)
    (suite,) = SCHEMA_WITH_ERROR.to_dict(text)["testsuite"]
    assert (suite["@errors"], suite["@failures"]) == ("2", "1")
    kinds = {c["@name"].split()[1]: [k for k in ("error", "failure") if k in c] for c in suite["testcase"]}
    assert kinds == {"0.4.30": ["failure"], "0.4.31": ["error"], "0.4.32": ["error"]}


def test_the_terminal_gets_no_raw_escape_from_a_programs_text(counted, capsys, monkeypatch):
    """The table, the summary, --fail-on's line and the progress: a reason's ESC and C1 are shown as escapes."""
    hostile = [cell("0.4.30", Verdict.ERROR, HOSTILE)]

    def sweep(config, options, progress, more=None):
        progress.say(f"  => error: {HOSTILE}")
        return service.SweepOutcome(Path("/nonexistent"), hostile, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.sweeping, "sweep", sweep)
    assert cli.main(["run", "configs/smoke.yaml", "--fail-on", "error"]) == ExitCode.REGRESSION
    out, err = capsys.readouterr()
    for text in (out, err):
        assert not any(ord(ch) < 32 and ch not in "\n\t" or 0x7f <= ord(ch) <= 0x9f for ch in text)
    assert "\\x1b[31mred" in err
