"""What a CI reads of a sweep: JUnit XML (each cell a test case), the GitHub job summary, and which cells
fail the job (`--fail-on`).

JUnit through junitparser (a maintained library that knows the format's elements and counts), not by hand:
reproduced and error cells are failures with the detail's first sentence as the message (the whole text in
the body), an error cell that never ran the program is an error, unsupported cells are skipped, clean, `new input`
and `not cached` cells pass (their detail in the case's output; `--fail-on` fails the job on them). What a program printed is in it with the characters XML 1.0 forbids shown as escapes, so the file is
well-formed whatever a crash printed, and validates against the schema pytest's own tests use
(tests/fixtures/junit-10.xsd).

Every output path is checked before the first run (`output_problems`: bad input, exit 2, nothing run); one
that fails after the sweep raises `OutputFailed`, which the CLI reports while the verdict's exit code stands.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from collections.abc import Iterable, Sequence

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from harness.evidence.keys import cell_comparison
from harness.evidence.cost import cost_of, cost_phrase
from harness.core.files import write_atomic
from harness.core.kinds import FAILABLE, Verdict  # FAILABLE: in the core, as the options registry reads --fail-on
from harness.core.model import CellResult
from harness.core import markdown
from harness.core.markdown import visible
from harness.evidence.misses import Category
from harness.verdicts.factor_verdicts import moved_folder_finding
from harness.report.misses_screen import cell_findings, jax_label, not_cached_why
from harness.report.table import in_version_order, render_markdown_table, summary_line
from harness.verdicts.cell_facts import cell_label, cells_facts, detail, factor_cost_phrase

STEP_SUMMARY_VAR = "GITHUB_STEP_SUMMARY"
MAX_MESSAGE = 200  # a failure's message attribute: one sentence a CI shows in a list, not a log
ELLIPSIS = "\u2026"


class OutputFailed(Exception):
    """A CI output (the JUnit file, the job summary) could not be written after the sweep: reported, and
    the verdict's exit code still wins (a regression stays 1)."""


def file_problem(path: Path, regular_only: bool = True) -> str:
    """Why a file could not be written at `path`, or "": a folder there, a parent that is a file, a folder
    that cannot be written (checked without writing anything). `regular_only`: a device or a pipe there is
    refused too (a file replaced atomically would replace it)."""
    if path.is_dir():
        return "is a folder; give the file to write"
    if path.exists() or path.is_symlink():
        if regular_only and not path.is_file():
            return "is not a regular file"
        return "" if os.access(path, os.W_OK) else "cannot be written (no permission)"
    parent = path.parent
    while not (parent.exists() or parent.is_symlink()) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be made in {parent} (no permission)"
    return ""


def folder_problem(path: Path) -> str:
    """Why a folder of results could not be made at or under `path`, or "" (nothing is made here)."""
    if path.is_dir():
        return "" if os.access(path, os.W_OK | os.X_OK) else "cannot be written (no permission)"
    if path.exists():
        return "is not a folder"
    return file_problem(path)


def output_problems(junit_xml: Path | None, environ: dict[str, str] | None = None) -> list[str]:
    """What is wrong with the CI outputs a command will write (--junit-xml, GITHUB_STEP_SUMMARY), each one
    line that names it; checked before the first run, so a bad path costs no measurement."""
    problems = []
    if junit_xml is not None:
        problem = file_problem(junit_xml)
        if problem:
            problems.append(f"--junit-xml {junit_xml}: {problem}")
    target = (os.environ if environ is None else environ).get(STEP_SUMMARY_VAR)
    if target:
        problem = file_problem(Path(target), regular_only=False)  # appended to: /dev/stdout will do
        if problem:
            problems.append(f"{STEP_SUMMARY_VAR}={target}: {problem}")
    return problems


def suite_name(folder: Path) -> str:
    """A results folder's name without its UTC stamp (`check-train`): the same test suite night after night."""
    return re.sub(r"^\d{8}T\d{6}Z-", "", folder.name) or folder.name


def failing(cells: Iterable[CellResult], fail_on: frozenset[Verdict]) -> list[CellResult]:
    """The cells whose verdict is one `fail_on` names, in version order."""
    return [c for c in in_version_order(list(cells)) if c.verdict in fail_on]


def fail_line(cells: Sequence[CellResult], fail_on: frozenset[Verdict], report: Path | None = None) -> str:
    """One line for stderr: which cells failed the job, which module missed in each (or why nothing was
    measured), and where report.md says why. It names no culprit: a miss can be JAX's, the program's own
    (a set's order) or a module JAX never caches."""
    words = ",".join(str(v).replace(" ", "-") for v in FAILABLE if v in fail_on)
    where = f"; why, in {report}" if report is not None else ""
    return (f"--fail-on {words}: {len(cells)} cell(s) failed: "
            + "; ".join(f"{cell_label(c)} {c.spec.mesh_label} {c.verdict} ({_what_failed(c)})" for c in cells) + where)


def _what_failed(cell: CellResult) -> str:
    """`jit_f missed the cache in a fresh process`, or the start of the reason of a cell that measured nothing."""
    if cell.verdict == Verdict.REPRODUCED:
        module = cell.rank_split.module if cell.rank_split is not None else cell_comparison(cell).moved_module()
        if module is not None:
            return f"{module} missed the cache in a fresh process"
    reason = cell.reason.split(";", 1)[0]
    return reason if len(reason) <= 100 else reason[:99] + "…"


def _case_name(cell: CellResult) -> str:
    return visible(f"jax {cell_label(cell)} {cell.spec.mesh_label} {cell.spec.devices_label}", keep="")


def _seconds(value: float) -> float:
    return round(value, 3)  # the schema's time: at most three decimals


def junit_xml(cells: Sequence[CellResult], suite_name: str, line: str | None = None) -> JUnitXml:
    """One test suite, one test case per cell (the time: its runs' wall seconds); the suite's `summary`
    property is the sweep's summary line (`line`, as printed; without it, of the cells alone)."""
    suite_name = visible(suite_name, keep="")
    suite = TestSuite(suite_name)
    suite.add_property("summary", visible(line if line is not None else summary_line(list(cells))))
    for cell in in_version_order(list(cells)):
        case = TestCase(_case_name(cell), classname=suite_name,
                        time=_seconds(sum(r.duration_s for r in cell.runs)))
        text = visible(detail(cell))
        message = first_sentence(text)
        if cell.verdict.fails_check:
            result = (Error if never_ran(cell) else Failure)(message, str(cell.verdict))
            result.text = _failure_text(cell, text)
            case.result = [result]
        elif cell.verdict == Verdict.UNSUPPORTED:
            skipped = Skipped(message, str(cell.verdict))
            skipped.text = text
            case.result = [skipped]
        case.system_out = visible(_case_output(cell))
        suite.add_testcase(case)
        for test_case in _test_cases(cell, suite_name):
            suite.add_testcase(test_case)
    suite.update_statistics()
    suite.time = _seconds(suite.time or 0.0)  # a sum of floats: back to three decimals
    xml = JUnitXml(suite_name)  # the root carries only its name, as pytest's does (the schema has no
    xml.add_testsuite(suite)     # `skipped` on <testsuites>); the counts are the suite's
    return xml


def _test_cases(cell: CellResult, suite_name: str) -> list[TestCase]:
    """A --pytest program's tests, one case each (named `<test id> [jax <release>]`, so CI shows the test that
    missed by name): a test that compiled a function whose key moved (or was not served) fails; one that only
    compiled new argument types (`new input`) or a module JAX never writes (`not cached`) passes, said in its output
    (--fail-on new-input or not-cached fails the job); one
    that ran differently between runs is skipped, with its outcomes; the rest pass."""
    found = cell_findings(cell)
    out = []
    for test in found.tests:
        case = TestCase(visible(f"{test.id} [{jax_label(cell)}]", keep=""), classname=suite_name,
                        time=test_seconds(cell, test.id))
        mine = [m for m in found.misses if test.id in m.tests]
        lines = [f"{m.module}: {m.category}" + (f" ({m.follows})" if m.follows else "")
                 + (f" ({not_cached_why(m)})" if m.category == Category.NOT_CACHED else "")
                 + (f" ({', '.join(m.components)})" if m.components else "")
                 + (f" at {m.test_types_label(test.id)}" if m.arg_types else "")
                 + f", runs {', '.join(map(str, m.runs_by_test.get(test.id, m.runs)))}"
                 for m in mine]
        # new input and not cached fail only the job, with --fail-on (the program's own shapes, a module JAX never
        # writes): the test itself passes, said in its output
        failing = [line for m, line in zip(mine, lines) if m.category not in (Category.NEW_INPUT, Category.NOT_CACHED)]
        if test.status == "failing":  # the program's own failure, in every run: not measured
            case.result = [Skipped("failed in every run: the program's own failure, not a cache miss", "failing")]
        elif test.status == "changed":
            change = next(c for c in found.changed if c.id == test.id)
            skipped = Skipped(first_sentence("ran differently between runs: " + ", ".join(
                f"run {r}: {o}" for r, o in change.outcomes.items())), "changed")
            case.result = [skipped]
        elif failing:
            failure = Failure(first_sentence(visible("; ".join(failing))), str(Verdict.REPRODUCED))
            failure.text = visible("\n".join(lines))
            case.result = [failure]
        if lines:
            case.system_out = visible("\n".join(lines))
        out.append(case)
    return out


def test_seconds(cell: CellResult, test: str) -> float:
    """A test's seconds per run (the mean of pytest's own durations over the runs that recorded it); 0 when none
    did (a results folder of an earlier release)."""
    seen = [r.test_seconds[test] for r in cell.runs if test in r.test_seconds]
    return _seconds(sum(seen) / len(seen)) if seen else 0.0


def missing_tests_lines(cells: Sequence[CellResult]) -> list[str]:
    """The job summary's list of the tests that missed (each with its functions and category)."""
    lines = []
    for cell in in_version_order(list(cells)):
        found = cell_findings(cell)
        for test in found.tests:
            if test.status in ("missed", "not cached"):
                lines.append(f"- {markdown.code(test.id)} ({markdown.text(jax_label(cell))}): "
                             + ", ".join(f"{markdown.code(m)}" for m in test.modules)
                             + f" ({markdown.text(', '.join(test.categories))})")
            elif test.status == "changed":
                lines.append(f"- {markdown.code(test.id)} ({markdown.text(jax_label(cell))}): ran differently "
                             "between runs (not a cache miss)")
    return lines


def never_ran(cell: CellResult) -> bool:
    """An error cell none of whose runs started the program (its environment could not be made, or its
    process could not start): JUnit's `<error>`, the test's machinery failing, not the test."""
    return cell.verdict == Verdict.ERROR and all(r.exit_code is None and not r.timed_out for r in cell.runs)


def first_sentence(text: str, limit: int = MAX_MESSAGE) -> str:
    """The text's first sentence (up to a full stop followed by a space: a version's dots are not one),
    cut at a word with an ellipsis when longer than `limit`; on one line."""
    sentence = re.split(r"(?<=\.)\s", " ".join(text.split()), maxsplit=1)[0]
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit - 1]
    at_word = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return at_word.rstrip(" ,;:") + ELLIPSIS


def _failure_text(cell: CellResult, text: str) -> str:
    lines = [text, f"verdict: {cell.verdict}", f"reason: {visible(cell.reason)}"]
    phrase = factor_cost_phrase(cell) or cost_phrase(cost_of(cell), cell.spec.processes)
    if phrase:
        lines.append(f"cost: {phrase}")
    moved = moved_folder_finding(cell.moved_folder)
    if moved:
        lines.append(visible(moved))
    return "\n".join(lines)


def _case_output(cell: CellResult) -> str:
    runs = ", ".join(f"run {r.index} (PYTHONHASHSEED={r.seed}): "
                     + ("ok" if r.ok else f"failed{': ' + r.reason if r.reason else ''}") for r in cell.runs)
    moved = moved_folder_finding(cell.moved_folder)  # a clean cell's too: it passes, and says it beside
    return f"{cell.verdict}: {detail(cell)}\nruns: {runs or 'none'}" + (f"\n{moved}" if moved else "")


def write_junit(path: Path, cells: Sequence[CellResult], suite_name: str, line: str | None = None) -> None:
    """The JUnit file at `path`, written atomically (its folder made); OutputFailed when it cannot be."""
    text = junit_xml(cells, suite_name, line).tostring().decode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text if text.startswith("<?xml") else '<?xml version="1.0" encoding="utf-8"?>\n' + text)
    except OSError as exc:
        raise OutputFailed(f"--junit-xml {path}: cannot write it ({exc.strerror})") from None


def merged_suite_name(name: str, folder: Path) -> str:
    """A merge's suite: the sweep's name (its config's), as the unsharded sweep's suite is named, so a CI
    sees the same test suite whether the sweep ran on one machine or in shards."""
    return name or suite_name(folder)


def step_summary(cells: Sequence[CellResult], title: str, status: str = "", line: str | None = None) -> str:
    """Markdown for GitHub's job summary: the table and the boundary line, escaped as report.md's are (a
    reason or a module name from the program can add no column, HTML or mention). `status`, when given,
    says first what the cells are not (a merge's `incomplete: shard 3 missing`)."""
    said = f"**{markdown.text(status)}**\n\n" if status else ""
    missing = missing_tests_lines(cells)
    tests = ("\n**Tests that missed:**\n\n" + "\n".join(missing[:50])
             + (f"\n- ... and {len(missing) - 50} more (report.md)" if len(missing) > 50 else "") + "\n") if missing else ""
    return (f"### {markdown.text(title)}\n\n{said}{render_markdown_table(cells_facts(cells))}\n\n"
            f"**{markdown.text(line if line is not None else summary_line(list(cells)))}**\n{tests}")


def append_step_summary(cells: Sequence[CellResult], title: str, environ: dict[str, str] | None = None,
                        status: str = "", line: str | None = None) -> Path | None:
    """Append the summary to the file GITHUB_STEP_SUMMARY names, when it is set; the path, or None."""
    target = (os.environ if environ is None else environ).get(STEP_SUMMARY_VAR)
    if not target:
        return None
    path = Path(target)
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(step_summary(cells, title, status, line) + "\n")
    except OSError as exc:
        raise OutputFailed(f"{STEP_SUMMARY_VAR}={target}: cannot append the summary ({exc.strerror})") from None
    return path
