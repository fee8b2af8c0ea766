"""One source for every output (issue 47.5): the line printed, --json's `summary` and `boundaries`, the JUnit
suite and the GitHub job summary are all made from the one Boundaries object a sweep made; where every
release measured reproduced (no boundary), no output names a release the regression "appears in"."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from harness.core.records import plain
from harness.cli import commands as cli
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.report.reproduce import narrowing
from harness.results.document import SweepStatus
from harness.results.header import RecordedConfig, ResultsHeader
from harness.service.outcomes import SweepOutcome
from harness.verdicts.boundaries import release_boundaries

RELEASES = ("0.4.28", "0.4.29", "0.4.30", "0.4.31")


def cells_of(rows: dict[str, Verdict]) -> list[CellResult]:
    return [CellResult(CellSpec(v, Platform.CPU, 8, None), verdict, {}) for v, verdict in rows.items()]


def test_no_boundary_writes_no_release_it_appears_in():
    found = release_boundaries(cells_of({"0.4.31": Verdict.REPRODUCED, "0.10.2": Verdict.REPRODUCED}))
    written = plain(found.recorded())
    assert "shows no boundary" in written["line"] and found.no_boundary
    assert (written["appears_in"], written["last_clean_before"], written["fixed_in"]) == (None, None, None)
    assert "fails_from" not in written


def test_a_range_that_ends_failing_writes_where_it_fails_from():
    cells = [*cells_of({"0.4.28": Verdict.REPRODUCED}),
             CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.ERROR, {}, reason="exit code 1: boom")]
    assert plain(release_boundaries(cells).recorded())["fails_from"] == "0.4.31"


def test_every_output_of_a_sweep_says_the_line_it_printed(tmp_path, capsys, monkeypatch):
    # A fix between two measured releases with others between them: the printed line (the header's releases)
    # says a range; --json, JUnit and the job summary used to say "fixed in 0.4.31" from the cells alone.
    cells = cells_of({"0.4.28": Verdict.REPRODUCED, "0.4.31": Verdict.CLEAN})
    header = ResultsHeader(command="harness check p.py", config=RecordedConfig(name="p"), versions=["0.4.28", "0.4.31"],
                           releases=list(RELEASES))
    boundaries = release_boundaries(cells, header.releases)
    printed_line = boundaries.line(narrowing(header))
    swept = SweepOutcome(tmp_path, cells, SweepStatus.COMPLETE, None, printed_line, boundaries)
    summary_file = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary_file))
    cli._show_sweep(swept, tmp_path / "junit.xml", frozenset(), as_json=True)
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert "fixed after 0.4.28, by 0.4.31, with 0.4.29-0.4.30 not measured" in printed_line
    assert printed_line in err.splitlines() and printed_line == data["summary"]
    assert data["boundaries"]["fixed_in"] == "0.4.31" and "not measured" in data["boundaries"]["line"]
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite.find("properties/property[@name='summary']").get("value") == printed_line
    assert "fixed in 0.4.31" not in summary_file.read_text() and "0.4.29-0.4.30 not measured" in summary_file.read_text()


def test_report_md_says_where_the_program_fails_from_as_the_line_does(tmp_path):
    from harness.core.runs import RunRecord
    from harness.report.render import render_report
    from harness.results.document import ResultsDocument

    failed_run = RunRecord(1, 7, 1, 0.1, [], reason="exit code 1: AttributeError: gone")
    cells = [*cells_of({"0.4.28": Verdict.REPRODUCED}),
             CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.ERROR, {}, runs=[failed_run],
                        reason="1 of 1 runs failed (run 1: exit code 1: AttributeError: gone)")]
    header = ResultsHeader(command="harness check p.py", config=RecordedConfig(name="p"), versions=["0.4.28", "0.4.31"])
    report = render_report(ResultsDocument(header, cells, SweepStatus.COMPLETE), cells, {})
    assert "the program fails from 0.4.31 (exit code 1: AttributeError: gone), so no release here fixes it" in report
    assert "- Fails from: 0.4.31 (exit code 1: AttributeError: gone)" in report
    assert "_Stepped over (failed): 0.4.31._" in report and "nothing measured): 0.4.31" not in report
