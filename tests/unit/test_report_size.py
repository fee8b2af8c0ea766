"""Issue 60, item 5: report.md stays under 20 KB for a public library's suite (thousands of keys, hundreds of tests,
many functions missing in every category): every list on its first screen and in its table is cut and counted."""

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Platform
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.report.write import ReportWriter
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.header import RecordedConfig, ResultsHeader
from harness.verdicts.verdict import judge

MAX_REPORT_BYTES = 20_000


def _key(n: int, test: str, computation: str, types: str, tag: int = 0) -> LoggedKey:
    comps = {"computation": (computation * 64)[:64], "devices": "b" * 64}
    module = f"jit_function_of_a_library_{n % 700}"
    return LoggedKey(module, f"{module}-{n + tag:064x}", Outcome.WRITTEN, components=comps, tests=(test,),
                     arg_types=(types,), compile_time_s=0.5)


def test_a_suite_of_thousands_of_keys_gets_a_report_under_20_kb(tmp_path):
    tests = [f"library/tests/some_module_of_the_library_test.py::TestClass::test_case_number_{n}" for n in range(400)]
    first = [_key(n, tests[n % 400], "c", f"float32[{n}]") for n in range(3000)]
    later = []
    for n, k in enumerate(first):
        if n % 5 == 0:  # moved at the same types
            later.append(_key(n, k.tests[0], "d", k.arg_types[0], tag=10_000))
        elif n % 5 == 1:  # new input
            later.append(_key(n, k.tests[0], "c", f"float32[{n + 9000}]", tag=20_000))
        else:
            later.append(LoggedKey(k.module, k.key, Outcome.HIT, components=k.components, tests=k.tests,
                                   arg_types=k.arg_types))
    outcomes = dict.fromkeys(tests, "passed")
    runs = [RunRecord(1, 1, 0, 60.0, [k.key for k in first], keys=RunLog(first), tests=outcomes, log="logs/run-01.log"),
            RunRecord(2, 2, 0, 60.0, [k.key for k in later if k.outcome == Outcome.WRITTEN], keys=RunLog(later),
                      tests=outcomes, log="logs/run-02.log")]
    j = judge(runs)
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason,
                      attribution=j.attribution)
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    assert report.startswith("# suite:") and "## What to do" in report
    size = len(report.encode())
    assert size < MAX_REPORT_BYTES, (size, [(line[:80], len(line)) for line in report.splitlines() if len(line) > 600])


CALLBACK = "it uses host callbacks (e.g. from jax.debug.print or breakpoint)"


def _suite_cell(version: str, runs_n: int = 4) -> CellResult:
    """A lineax-like cell: 46 long parametrised test ids, keys that move and new shapes in every later run, and a
    never-written `jit_linear_solve` in 26 tests (each compiled at its own types)."""
    tests = [f"test/test_solve.py::test_small_singular[{n}-make_matrix_operator-LU-float64-{'x' * 120}]"
             for n in range(46)]
    runs = []
    for r in range(1, runs_n + 1):
        keys = []
        for n in range(300):
            if n % 11 == 0 and r > 1:
                keys.append(_key(n, tests[n % 46], "d", f"float32[{n}]", tag=10_000 * r))
            elif n % 13 == 1 and r > 1:
                keys.append(_key(n, tests[n % 46], "c", f"float32[{n + 900 * r}]", tag=20_000 * r))
            else:
                k = _key(n, tests[n % 46], "c", f"float32[{n}]")
                keys.append(k if r == 1 else LoggedKey(k.module, k.key, Outcome.HIT, components=k.components,
                                                       tests=k.tests, arg_types=k.arg_types))
        keys += [LoggedKey("jit_linear_solve", f"jit_linear_solve-{5000 + n + 100 * r:064x}", Outcome.NOT_WRITTEN,
                           reason=CALLBACK, tests=(tests[n],), arg_types=(f"float64[{n}]",)) for n in range(26)]
        runs.append(RunRecord(r, r, 0, 60.0, [k.key for k in keys if k.outcome == Outcome.WRITTEN], keys=RunLog(keys),
                              tests=dict.fromkeys(tests, "passed"), log=f"logs/run-0{r}.log"))
    j = judge(runs)
    return CellResult(CellSpec(version, Platform.CPU, 8, None), j.verdict, j.keys, runs, j.reason,
                      attribution=j.attribution)


def test_a_suite_measured_on_four_releases_gets_a_report_under_20_kb_with_its_answer_first(tmp_path):
    """lineax's own tests on two releases made 29 KB: every cell's table, function lines and modules were cut at the
    same count whatever the number of cells. Past the budget they shrink; the answer and the first screen stay."""
    versions = ["0.4.31", "0.5.0", "0.6.0", "0.10.2"]
    cells = [_suite_cell(v) for v in versions]
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=versions), cells,
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, cells).read_text()
    size = len(report.encode())
    assert size < MAX_REPORT_BYTES, size
    assert report.startswith("# suite: fresh processes miss the cache on every release measured")
    assert "## What to do" in report and "## What missed, per test and function" in report
    # cache statistics count processes, not compiles
    assert "`jit_linear_solve` in 4 of 4 runs (104 compiles)" in report and "run(s)" not in report
