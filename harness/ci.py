"""What a CI reads of a sweep: JUnit XML (each cell a test case), the GitHub job summary, and which cells
fail the job (`--fail-on`).

JUnit through junitparser (a maintained library that knows the format's elements and counts), not by hand:
reproduced and error cells are failures with the cell's reason as the message, unsupported cells are
skipped with theirs, clean cells pass. The file validates against the schema pytest's own tests use
(tests/fixtures/junit-10.xsd).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Sequence

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from harness.cost import cost_of, cost_phrase
from harness.errors import UserError
from harness.files import write_atomic
from harness.model import FAILABLE, CellResult, Verdict  # FAILABLE: in the core, as the options registry reads --fail-on
from harness import markdown
from harness.table import cell_label, detail, in_version_order, render_markdown_table, summary_line

STEP_SUMMARY_VAR = "GITHUB_STEP_SUMMARY"
MAX_MESSAGE = 500  # a failure's message attribute: the reason, not a log


def suite_name(folder: Path) -> str:
    """A results folder's name without its UTC stamp (`check-train`): the same test suite night after night."""
    return re.sub(r"^\d{8}T\d{6}Z-", "", folder.name) or folder.name


def failing(cells: Iterable[CellResult], fail_on: frozenset[Verdict]) -> list[CellResult]:
    """The cells whose verdict is one `fail_on` names, in version order."""
    return [c for c in in_version_order(list(cells)) if c.verdict in fail_on]


def fail_line(cells: Sequence[CellResult], fail_on: frozenset[Verdict]) -> str:
    """One line for stderr: which cells failed the job, and why."""
    words = ",".join(str(v) for v in FAILABLE if v in fail_on)
    return (f"--fail-on {words}: {len(cells)} cell(s) failed: "
            + "; ".join(f"{cell_label(c)} {c.spec.mesh_label} {c.verdict}" for c in cells))


def _case_name(cell: CellResult) -> str:
    return f"jax {cell_label(cell)} {cell.spec.mesh_label} {cell.spec.devices_label}"


def _seconds(value: float) -> float:
    return round(value, 3)  # the schema's time: at most three decimals


def junit_xml(cells: Sequence[CellResult], suite_name: str) -> JUnitXml:
    """One test suite, one test case per cell (the time: its runs' wall seconds)."""
    suite = TestSuite(suite_name)
    for cell in in_version_order(list(cells)):
        case = TestCase(_case_name(cell), classname=suite_name,
                        time=_seconds(sum(r.duration_s for r in cell.runs)))
        message = detail(cell)[:MAX_MESSAGE]
        if cell.verdict in (Verdict.REPRODUCED, Verdict.ERROR):
            failure = Failure(message, str(cell.verdict))
            failure.text = _failure_text(cell)
            case.result = [failure]
        elif cell.verdict == Verdict.UNSUPPORTED:
            case.result = [Skipped(message, str(cell.verdict))]
        case.system_out = _case_output(cell)
        suite.add_testcase(case)
    suite.update_statistics()
    suite.time = _seconds(suite.time or 0.0)  # a sum of floats: back to three decimals
    xml = JUnitXml(suite_name)  # the root carries only its name, as pytest's does (the schema has no
    xml.add_testsuite(suite)     # `skipped` on <testsuites>); the counts are the suite's
    return xml


def _failure_text(cell: CellResult) -> str:
    lines = [f"verdict: {cell.verdict}", f"reason: {cell.reason}"]
    phrase = cost_phrase(cost_of(cell))
    if phrase:
        lines.append(f"cost: {phrase}")
    return "\n".join(lines)


def _case_output(cell: CellResult) -> str:
    runs = ", ".join(f"run {r.index} (PYTHONHASHSEED={r.seed}): "
                     + ("ok" if r.ok else f"failed{': ' + r.reason if r.reason else ''}") for r in cell.runs)
    return f"{cell.verdict}: {detail(cell)}\nruns: {runs or 'none'}"


def write_junit(path: Path, cells: Sequence[CellResult], suite_name: str) -> None:
    """The JUnit file at `path`, written atomically (its folder made); UserError when it cannot be."""
    text = junit_xml(cells, suite_name).tostring().decode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text if text.startswith("<?xml") else '<?xml version="1.0" encoding="utf-8"?>\n' + text)
    except OSError as exc:
        raise UserError(f"--junit-xml {path}: cannot write it ({exc.strerror})") from None


def merged_suite_name(name: str, folder: Path) -> str:
    """A merge's suite: the sweep's name (its config's), as the unsharded sweep's suite is named, so a CI
    sees the same test suite whether the sweep ran on one machine or in shards."""
    return name or suite_name(folder)


def step_summary(cells: Sequence[CellResult], title: str, status: str = "") -> str:
    """Markdown for GitHub's job summary: the table and the boundary line, escaped as report.md's are (a
    reason or a module name from the program can add no column, HTML or mention). `status`, when given,
    says first what the cells are not (a merge's `incomplete: shard 3 missing`)."""
    said = f"**{markdown.text(status)}**\n\n" if status else ""
    return (f"### {markdown.text(title)}\n\n{said}{render_markdown_table(list(cells))}\n\n"
            f"**{markdown.text(summary_line(list(cells)))}**\n")


def append_step_summary(cells: Sequence[CellResult], title: str, environ: dict[str, str] | None = None,
                        status: str = "") -> Path | None:
    """Append the summary to the file GITHUB_STEP_SUMMARY names, when it is set; the path, or None."""
    target = (os.environ if environ is None else environ).get(STEP_SUMMARY_VAR)
    if not target:
        return None
    path = Path(target)
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(step_summary(cells, title, status) + "\n")
    except OSError as exc:
        raise UserError(f"{STEP_SUMMARY_VAR}={target}: cannot append the summary ({exc.strerror})") from None
    return path
