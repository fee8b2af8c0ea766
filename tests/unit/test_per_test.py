"""A suite's misses per test and per function (harness/evidence/misses.py), and `new input` as its own verdict:
runs built by hand as the recorder reads them (each key with its tests and argument types), no JAX needed."""

from xml.etree import ElementTree

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict, parse_fail_on
from harness.core.records import replace
from harness.core.runs import RunRecord
from harness.output.ci import step_summary, write_junit
from harness.report.misses_screen import per_test_section
from harness.report.render import render_listings, render_report
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.header import RecordedConfig, ResultsHeader
from harness.verdicts.judge import Tally
from harness.evidence.keys import comparison_of
from harness.evidence.misses import Category, Follows, suite_findings
from harness.verdicts.verdict import judge

from tests.cells import SCHEMA


def key(module: str, tag: str, test: str, types: tuple[str, ...], outcome: Outcome = Outcome.WRITTEN,
        computation: str = "c") -> LoggedKey:
    digest = (tag * 64)[:64]
    comps = {"computation": (computation * 64)[:64], "jax_lib version": "a" * 64, "devices": "b" * 64}
    return LoggedKey(module, f"{module}-{digest}", outcome, components=comps, tests=(test,), arg_types=types)


def run(index: int, keys: list[LoggedKey], tests: dict[str, str] | None = None) -> RunRecord:
    written = [k.key for k in keys if k.outcome == Outcome.WRITTEN]
    return RunRecord(index, index, 0, 1.0, written, keys=RunLog(keys), tests=tests or {})


def hit(k: LoggedKey) -> LoggedKey:
    return LoggedKey(k.module, k.key, Outcome.HIT, components=k.components, tests=k.tests, arg_types=k.arg_types)


T_MSE, T_SET, T_OK = "t.py::test_random_shapes", "t.py::test_set_order", "t.py::test_stable"
PASSED = {T_MSE: "passed", T_SET: "passed", T_OK: "passed"}
MSE2, MSE4 = key("jit_mse", "1", T_MSE, ("float32[2]",)), key("jit_mse", "2", T_MSE, ("float32[4]",))
STABLE = key("jit_stable", "3", T_OK, ("float32[8]",))
SET = key("jit_by_names", "4", T_SET, ("float32[3]",))


def test_a_later_run_at_new_argument_types_is_new_input_not_a_moved_key():
    later = [hit(MSE4), key("jit_mse", "5", T_MSE, ("float32[6]",)), hit(STABLE), hit(SET)]
    runs = [run(1, [MSE2, MSE4, STABLE, SET], PASSED), run(2, later, PASSED)]
    j = judge(runs)
    assert j.verdict == Verdict.NEW_INPUT
    assert j.reason.startswith("jit_mse at float32[6] (run 2, t.py::test_random_shapes); "
                               "run 1 compiled it at float32[2] and float32[4]")
    assert j.comparison is not None and j.comparison.new == {} and j.comparison.moved_module() is None
    assert j.attribution is None
    # it is not `reproduced`: a check goes on to its later runs
    tally = Tally(planned=3, stop_when_reproduced=True, records=runs)
    assert not tally.stop_now()


def test_a_moved_key_beside_new_input_is_reproduced_and_both_are_named_per_test():
    moved = key("jit_by_names", "6", T_SET, ("float32[3]",), computation="d")
    runs = [run(1, [MSE2, MSE4, STABLE, SET], PASSED),
            run(2, [hit(MSE2), key("jit_mse", "5", T_MSE, ("float32[6]",)), hit(STABLE), moved], PASSED)]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED and j.reason.startswith("jit_by_names: a new key in run 2")
    found = suite_findings(runs, comparison_of(runs))
    assert [(m.module, m.category, m.tests, m.components) for m in found.misses] == [
        ("jit_by_names", Category.MOVED_KEY, [T_SET], ["computation"]),
        ("jit_mse", Category.NEW_INPUT, [T_MSE], [])]
    assert found.misses[1].types_label == "float32[6]"
    assert found.misses[1].first_types_label == "float32[2] and float32[4]"
    assert {t.id: t.status for t in found.tests} == {T_MSE: "missed", T_SET: "missed", T_OK: "clean"}
    assert found.missing_tests == [T_MSE, T_SET]


def test_a_test_that_ran_differently_is_named_as_such_not_as_a_miss():
    runs = [run(1, [MSE2, STABLE], PASSED),
            run(2, [hit(MSE2), hit(STABLE)], {T_MSE: "passed", T_SET: "skipped", T_OK: "passed"})]
    found = suite_findings(runs, comparison_of(runs))
    assert found.misses == []
    assert [(c.id, c.outcomes) for c in found.changed] == [(T_SET, {"1": "passed", "2": "skipped"})]
    assert {t.id: t.status for t in found.tests} == {T_MSE: "clean", T_SET: "changed", T_OK: "clean"}


def test_new_input_fails_only_when_asked():
    assert Verdict.NEW_INPUT in parse_fail_on("reproduced,new-input")
    assert parse_fail_on("new input") == frozenset({Verdict.NEW_INPUT})


def _cell(runs: list[RunRecord]) -> CellResult:
    j = judge(runs)
    return CellResult(CellSpec("0.4.31", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason,
                      listing=[f"{k.key}-cache" for k in runs[0].keys.keys] if runs[0].keys else [])


def _mixed() -> CellResult:
    moved = key("jit_by_names", "6", T_SET, ("float32[3]",), computation="d")
    return _cell([run(1, [MSE2, MSE4, STABLE, SET], PASSED),
                  run(2, [hit(MSE2), key("jit_mse", "5", T_MSE, ("float32[6]",)), hit(STABLE), moved],
                      {**PASSED, "t.py::test_flaky": "failed"})])


def test_junit_has_one_case_per_test_and_validates(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(path, [_mixed()], "check-suite")
    SCHEMA.validate(str(path))
    cases = {c.get("name"): c for c in ElementTree.parse(path).getroot().iter("testcase")}
    assert f"{T_SET} [jax 0.4.31]" in cases and f"{T_OK} [jax 0.4.31]" in cases
    assert cases[f"{T_SET} [jax 0.4.31]"].find("failure") is not None  # a moved key fails the test
    assert cases[f"{T_MSE} [jax 0.4.31]"].find("failure") is None  # new input passes (said in its output)
    assert "new input" in cases[f"{T_MSE} [jax 0.4.31]"].find("system-out").text
    assert cases[f"{T_OK} [jax 0.4.31]"].find("failure") is None
    assert cases["t.py::test_flaky [jax 0.4.31]"].find("skipped") is not None  # ran differently: not a miss
    summary = step_summary([_mixed()], "check")
    assert f"`{T_SET}` (jax 0.4.31): `jit_by_names` (moved key)" in summary


def test_the_report_opens_with_what_missed_and_keeps_the_listing_beside_it():
    section = "\n".join(per_test_section([_mixed()]))
    assert "| `t.py::test_set_order` | `jit_by_names` | moved key | computation" in section
    assert "| `t.py::test_random_shapes` | `jit_mse` | new input | -" in section
    assert "- `jit_mse` (new input, `t.py::test_random_shapes`): float32\\[6\\]; run 1 compiled it at float32\\[2\\] and " \
           "float32\\[4\\]" in section
    assert "`t.py::test_flaky` (run 1: not run, run 2: failed)" in section
    assert "1 of 4 tests are clean" in section
    assert "jit_stable-" in render_listings([_mixed()])


def test_a_suite_of_600_keys_gives_a_report_under_20_kb(tmp_path):
    keys = [key(f"jit_f{i}", f"{i:x}", f"t{i % 75}.py::test_{i}", ("float32[4]",)) for i in range(600)]
    tests = {k.tests[0]: "passed" for k in keys}
    moved = [key("jit_f1", "z", keys[1].tests[0], ("float32[4]",), computation="e"),
             key("jit_f2", "y", keys[2].tests[0], ("float32[9]",))]
    cell = _cell([run(1, keys, tests), run(2, [hit(k) for k in keys[3:]] + moved, tests)])
    assert cell.verdict == Verdict.REPRODUCED
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = render_report(document, [cell], {})
    assert len(report.encode()) < 20_000, len(report.encode())
    assert report.index("## What missed, per test and function") < report.index("## Results")


def test_the_reason_names_every_function_that_missed_and_a_flaky_test_as_such():
    assert _mixed().reason.startswith("jit_by_names: a new key in run 2")
    assert _mixed().reason.endswith("; also missed: jit_mse (new input)")
    flaky = run(2, [hit(MSE2), hit(STABLE)], {T_MSE: "passed", T_OK: "failed"})
    flaky.exit_code = 1  # pytest's: its session ran to its end, a test failed
    j = judge([run(1, [MSE2, STABLE], {T_MSE: "passed", T_OK: "passed"}), flaky])
    # a flaky test is named as such; the run it failed still counts (its keys all hit): clean, not error
    assert j.verdict == Verdict.CLEAN, j.reason
    assert j.reason.endswith("; flaky tests, failing in some runs (not cache misses): "
                             f"{T_OK} (run 1: passed, run 2: failed) (run 2 counted: pytest ran to its end; judged on "
                             "the tests that passed)"), j.reason
    # a test that fails in every run is named failing, with pytest's own line; the cell is judged on the tests that
    # passed (issue 60, item 6): clean here, not error
    broken = [run(i, [MSE2, STABLE] if i == 1 else [hit(MSE2), hit(STABLE)], {T_MSE: "passed", T_OK: "failed"})
              for i in (1, 2)]
    for r in broken:
        r.exit_code = 1
        r.reason = f"exit code 1: 1 failed, 1 passed in 0.5s; FAILED {T_OK} - assert 1 == 2"
    j = judge(broken)
    assert j.verdict == Verdict.CLEAN, j.reason
    assert j.reason.endswith(f"; failing in every run (not cache misses): {T_OK} (pytest: 1 failed, 1 passed in 0.5s; "
                             f"FAILED {T_OK} - assert 1 == 2) (runs 1-2 counted: pytest ran to its end; judged on "
                             "the tests that passed)"), j.reason
    tests = {t.id: t.status for t in suite_findings(broken, j.comparison).tests}
    assert tests == {T_MSE: "clean", T_OK: "failing"}
    # every test failing in every run: nothing passed to judge on, the cell is an error
    dead = [run(i, [MSE2], {T_MSE: "failed", T_OK: "failed"}) for i in (1, 2)]
    for r in dead:
        r.exit_code = 1
    assert judge(dead).verdict == Verdict.ERROR
    # nor is a run that crashed (another exit status) beside a flaky test
    crashed = run(2, [hit(MSE2)], {T_MSE: "passed", T_OK: "failed"})
    crashed.exit_code = 3
    assert judge([run(1, [MSE2, STABLE], {T_MSE: "passed", T_OK: "passed"}), crashed]).verdict == Verdict.ERROR


def test_the_cause_controls_tell_the_hash_seed_from_the_program():
    """A suite with a set-ordered test and a noisy one: run 1's seed again brings the set's key back and moves the
    noise again; only a later run's seed again, with its own key back, lets the set's key be the hash seed's (one
    control of run 1's seed alone bounds nothing)."""
    noise = key("jit_noise", "7", "t.py::test_noise", ("float32[3]",))
    moved_set = key("jit_by_names", "8", T_SET, ("float32[3]",), computation="d")
    first = run(1, [SET, noise], PASSED)
    later = run(2, [moved_set, key("jit_noise", "9", "t.py::test_noise", ("float32[3]",), computation="e")], PASSED)
    runs = [first, later]

    def control(of: RunRecord, keys: list[LoggedKey]) -> RunRecord:
        return RunRecord(of.index, of.seed, 0, 1.0, [], keys=RunLog(keys), tests=PASSED)
    again = lambda tag: key("jit_noise", tag, "t.py::test_noise", ("float32[3]",), computation=tag)  # noqa: E731
    controls = [control(first, [hit(SET), again("a")])]
    found = suite_findings(runs, comparison_of(runs, controls))
    # the noise moved again under run 1's own seed: new input, certain; the set's key not decided yet
    assert {(m.module, m.category, m.follows) for m in found.misses} == {
        ("jit_by_names", Category.MOVED_KEY, None), ("jit_noise", Category.NEW_INPUT, None)}
    controls += [control(later, [hit(moved_set), again("b")]), control(first, [hit(SET), again("c")]),
                 control(later, [hit(moved_set), again("d")]), control(first, [hit(SET), again("e")])]
    found = suite_findings(runs, comparison_of(runs, controls))
    (moved,) = [m for m in found.misses if m.category == Category.MOVED_KEY]
    assert (moved.module, moved.follows, moved.controls) == ("jit_by_names", Follows.HASH_SEED, 5)
    assert moved.bound is not None and abs(moved.bound - 108 / 3125) < 1e-12  # (3/5)^3 (2/5)^2
    assert {m.module: m.follows for m in suite_findings(runs, comparison_of(runs)).misses} == {
        "jit_by_names": None, "jit_noise": None}  # no control made: not said


def test_a_run_whose_random_shapes_an_earlier_run_had_did_not_compile_fewer_things():
    """optax 0.2.8's masked cosine test on 0.10.2: run 2 compiles new random shapes, run 3 draws shapes run 2
    already had (all hits) and so computes neither run 1's random shape nor a new one: it ran the same test,
    not fewer things."""
    mse9 = key("jit_mse", "9", T_MSE, ("float32[9]",))
    runs = [run(1, [MSE2, MSE4, STABLE], PASSED), run(2, [hit(MSE2), mse9, hit(STABLE)], PASSED),
            run(3, [hit(MSE2), hit(mse9), hit(STABLE)], PASSED)]
    j = judge(runs)
    assert j.comparison is not None and j.comparison.fewer == {}
    assert j.verdict == Verdict.NEW_INPUT, j.reason
    # run 2 draws only shapes run 1 had (4 twice, not 2): its test ran to the same end, not fewer things
    again = [run(1, [MSE2, MSE4, STABLE], PASSED), run(2, [hit(MSE4), hit(STABLE)], PASSED)]
    assert judge(again).verdict == Verdict.CLEAN, judge(again).reason
    # a run whose test that computed run 1's key did not run (or ended otherwise) compiled fewer things
    stopped = [run(1, [MSE2, MSE4, STABLE], PASSED), run(2, [hit(STABLE)], {T_OK: "passed", T_MSE: "not run"})]
    assert judge(stopped).verdict == Verdict.UNSUPPORTED, judge(stopped).reason
    plain = [run(1, [MSE2, MSE4, STABLE]), run(2, [hit(MSE2), hit(STABLE)])]  # a script: no test says so
    assert judge(plain).verdict == Verdict.UNSUPPORTED


def test_a_miss_names_the_test_that_compiled_it_and_its_own_runs_not_the_ones_that_hit_it_after():
    """optax's masked cosine tests: test_mask_distance0 compiles a new shape, test_mask_distance1 (same run) loads
    the entry it just wrote; in run 3 only test_mask_distance1 draws a new shape. A by-hand count of each run's
    CACHE MISS messages names test 0 in run 2 and test 1 in run 3, nothing else."""
    t0, t1 = "lib/c_test.py::T::test_mask0", "lib/c_test.py::T::test_mask1"
    both = {t0: "passed", t1: "passed"}
    first = key("jit_sum", "1", t0, ("float32[2]",))
    in_2 = LoggedKey("jit_sum", key("jit_sum", "5", t0, ()).key, Outcome.WRITTEN, tests=(t0, t1),
                     arg_types=("float32[6]",))
    in_3 = key("jit_sum", "6", t1, ("float32[7]",))
    runs = [run(1, [first], both), run(2, [hit(first), in_2], both), run(3, [hit(first), in_3], both)]
    (miss,) = suite_findings(runs, comparison_of(runs)).misses
    assert miss.tests == [t0, t1] and miss.runs_by_test == {t0: [2], t1: [3]}
    section = "\n".join(per_test_section([_cell(runs)]))
    assert "| `lib/c_test.py::T::test_mask0` (2) and 1 more | `jit_sum` | new input | - | 2, 3 |" in section, section
    assert miss.types_by_test == {t0: [["float32[6]"]], t1: [["float32[7]"]]}


def test_argument_types_past_a_few_are_counted_not_listed():
    from harness.evidence.misses import types_label
    many = [[f"float32[{n}]"] for n in range(1, 10)]
    assert types_label(many, 4) == "float32[1], float32[2], float32[3], float32[4] and 5 more"
    assert types_label(many[:2], 4) == "float32[1] and float32[2]"


def test_a_clean_suite_says_how_many_tests_keys_and_functions_not_one_helpers_count():
    """optax's tests on 0.4.31: `pmap_log_cosh: 4 keys per run` said nothing of a clean suite of 36 tests."""
    runs = [run(1, [MSE2, MSE4, STABLE, SET], PASSED), run(2, [hit(k) for k in (MSE2, MSE4, STABLE, SET)], PASSED)]
    j = judge(runs)
    assert j.verdict == Verdict.CLEAN
    assert j.reason == "3 tests: 4 keys of 3 functions per run, the same in all 2 runs", j.reason
    from harness.verdicts.cell_facts import keys_column as _keys_column
    assert _keys_column(_cell(runs)) == "4 keys of 3 functions per run"


def test_a_new_input_reason_details_one_function_and_names_the_others():
    """optax's masked tests on 0.10.2 compile four helpers at new shapes: the reason (the table's detail, one line)
    was 2 KB of argument types; it details the first and names the rest, report.md's table has them all."""
    later = [hit(MSE2)] + [key(f"jit_h{i}", f"{i}", T_MSE, (f"float32[{i}]",)) for i in range(1, 5)]
    first = [MSE2] + [key(f"jit_h{i}", f"{i + 5}", T_MSE, ("float32[9]",)) for i in range(1, 5)]
    j = judge([run(1, first, PASSED), run(2, later, PASSED)])
    assert j.verdict == Verdict.NEW_INPUT
    assert j.reason == (f"jit_h1 at float32[1] (run 2, {T_MSE}); run 1 compiled it at float32[9]; also new input: "
                        "jit_h2, jit_h3, jit_h4: the program computed something new, not a key that moved"), j.reason


def test_each_tests_junit_time_is_its_mean_seconds_over_the_runs(tmp_path):
    runs = [run(1, [MSE2, STABLE], PASSED), run(2, [hit(MSE2), hit(STABLE)], PASSED)]
    runs[0].test_seconds = {T_MSE: 0.25, T_OK: 1.0}
    runs[1].test_seconds = {T_MSE: 0.75, T_OK: 2.0}
    path = tmp_path / "junit.xml"
    write_junit(path, [_cell(runs)], "check-suite")
    SCHEMA.validate(str(path))
    times = {c.get("name"): c.get("time") for c in ElementTree.parse(path).getroot().iter("testcase")}
    assert times[f"{T_MSE} [jax 0.4.31]"] == "0.5" and times[f"{T_OK} [jax 0.4.31]"] == "1.5", times
    assert times[f"{T_SET} [jax 0.4.31]"] == "0.0"  # no run recorded it


def test_tests_that_missed_the_same_functions_share_one_row():
    """Issue 51, item 6: a row per test and function filled the first screen when many tests share helpers; the
    tests that missed the same functions in the same category are one row, named up to three and counted."""
    ids = [f"lib/a_test.py::T::test_{n}" for n in range(30)]
    first = [key("jit_add", f"{n:02x}", t, (f"float32[{n + 1}]",)) for n, t in enumerate(ids)]
    first += [key("jit_mul", f"{n + 40:02x}", t, (f"float32[{n + 1}]",)) for n, t in enumerate(ids)]
    later = [key(k.module, f"{n + 80:02x}", k.tests[0], k.arg_types, computation="e") for n, k in enumerate(first)]
    outcomes = dict.fromkeys(ids, "passed")
    section = "\n".join(per_test_section([_cell([run(1, first, outcomes), run(2, later, outcomes)])]))
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{ids[0]}` and 29 more | `jit_add`, `jit_mul` | moved key | computation | 2 |"], rows
    assert len(section.encode()) < 2_000, len(section.encode())


_MODULE = """module @jit_scale attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> {mhlo.layout_mode = "default"}) -> (tensor<RESULT> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<VALUE> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<3xf32>
    return %1 : tensor<3xf32>
  }
}
"""


def test_a_moved_keys_line_shows_how_its_lowered_module_differs_and_names_its_test(tmp_path):
    """Issue 51, item 4: a test whose static argument is a random int (`moved key: program`) says which lines of the
    module differ (only a constant) and names the test; a static value that changes a shape inside says so."""
    from harness.report.sources import function_evidence
    from harness.report.write import ReportWriter

    test = "t.py::test_static_scale"
    values = {1: ("7.000000e+00", "3xf32"), 2: ("4.200000e+01", "3xf32"), 3: ("4.200000e+01", "9xf32")}
    for n, (value, result) in values.items():
        dump = tmp_path / "logs" / f"run-0{n}.ir"
        dump.mkdir(parents=True)
        (dump / "jax_ir1_jit_scale_compile.mlir").write_text(_MODULE.replace("VALUE", value).replace("RESULT", result))
    base = key("jit_scale", "1", test, ("float32[3]",))
    runs = [run(1, [base], {test: "passed"})]
    runs += [replace(run(n, [key("jit_scale", str(n), test, ("float32[3]",), computation=str(n))], {test: "passed"}),
                     log=f"logs/run-0{n}.log") for n in (2, 3)]
    runs[0] = replace(runs[0], log="logs/run-01.log")
    cell = _cell(runs)
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    head = report[:report.index("## Results")]
    assert f"- `jit_scale` (moved key, `{test}`): float32\\[3\\]; run 2 against run 1: only constants differ" in head
    assert "(the diff: under Evidence below)" in head  # the one the Evidence section shows is not repeated
    assert "-    %cst = stablehlo.constant dense<7.000000e+00> : tensor<f32>" in report
    assert "+    %cst = stablehlo.constant dense<4.200000e+01> : tensor<f32>" in report
    section = "\n".join(per_test_section([cell], {cell.spec.key: function_evidence(tmp_path, cell)}))
    assert section.count("```diff") == 1 and "-    %cst = stablehlo.constant dense<7.000000e+00>" in section
    (tmp_path / "logs" / "run-02.ir" / "jax_ir1_jit_scale_compile.mlir").unlink()  # run 3's alone: a shape inside
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    assert "run 3 against run 1: the results' types differ (`tensor<3xf32>` -> `tensor<9xf32>`)" in report
