"""Modules JAX never writes (issue 60 item 2, issue 62 item 6): `not cached` as a verdict and a per-test category,
the line that put a host callback there (from a real lowered module's locations), its seconds per start, JUnit,
--fail-on and nightly's alarm. Runs built by hand as the recorder reads them; the module text is a real dump."""

from pathlib import Path
from xml.etree import ElementTree

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import NothingCached, Platform, Verdict, parse_fail_on
from harness.core.model import CellResult, CellSpec
from harness.core.records import plain
from harness.core.runs import RunRecord
from harness.bisect.logic import search
from harness.bisect.measure_point import point_verdict
from harness.evidence.keys import cell_comparison
from harness.evidence.misses import suite_findings
from harness.evidence.not_cached import (callback_sites, cell_not_cached, machinery_frame, recorded_site, recorded_sites, not_cached_modules, refusal_seconds,
                                         short_site)
from harness.nightly.compare import Change, classify
from harness.output.ci import failing, write_junit
from harness.report.misses_screen import per_test_section
from harness.report.table import summary_line
from harness.verdicts.cell_facts import detail
from harness.results.document import read_cell
from harness.verdicts.boundaries import release_boundaries, version_verdicts
from harness.verdicts.finish import with_uncached_facts
from harness.verdicts.verdict import judge

from tests.cells import SCHEMA

CALLBACK = "it uses host callbacks (e.g. from jax.debug.print or breakpoint)"
T_LS, T_OK = "tests/test_opt.py::test_linesearch", "tests/test_opt.py::test_plain"
PASSED = {T_LS: "passed", T_OK: "passed"}
# jit_step of `def step(x): jax.debug.print("x = {x}", x=x); return x * 2` jitted in a pytest test, as JAX 0.10.2
# dumped it, its paths renamed: the file under site-packages as an installed library's would be.
DUMP = Path(__file__).parents[1] / "fixtures" / "ir_dump" / "host_callback_jit_step-0.10.2.mlir"


def key(module: str, tag: str, test: str, outcome: Outcome, reason: str = "") -> LoggedKey:
    return LoggedKey(module, f"{module}-{(tag * 64)[:64]}", outcome, reason=reason, tests=(test,),
                     arg_types=("float32[3]",))


def runs_with_a_callback(count: int = 3) -> list[RunRecord]:
    """jit_while (a callback, never written) and jit_update (written by run 1, hit after) in every run."""
    out = []
    for index in range(1, count + 1):
        keys = [key("jit_while", "a", T_LS, Outcome.NOT_WRITTEN, CALLBACK),
                key("jit_update", "b", T_OK, Outcome.WRITTEN if index == 1 else Outcome.HIT)]
        out.append(RunRecord(index, index, 0, 1.0, [keys[1].key] if index == 1 else [], keys=RunLog(keys),
                             tests=PASSED))
    return out


def cell_of(runs: list[RunRecord]) -> CellResult:
    j = judge(runs)
    cell = CellResult(CellSpec("0.10.2", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason)
    return with_uncached_facts(cell, {"jit_while": "jaxopt/_src/zoom_linesearch.py:132 jax.debug.print"},
                               {"jit_while": 0.42})


def test_written_keys_that_hit_beside_a_callback_module_are_not_cached_never_unsupported():
    cell = cell_of(runs_with_a_callback())
    assert cell.verdict == Verdict.NOT_CACHED
    assert cell.reason.startswith("jit_while uses a host callback (jaxopt/_src/zoom_linesearch.py:132 "
                                  "jax.debug.print); never written by JAX, so every fresh process compiles it "
                                  "again: 0.42 s lost per start; 2 tests: the other 1 module hit"), cell.reason
    assert "nothing" not in cell.reason and "nothing" not in summary_line([cell])
    assert release_boundaries([cell]).unmeasured is None  # not "nothing was measured: the only cell ..."
    assert "not cached on 0.10.2 (jit_while uses a host callback (jaxopt/_src/zoom_linesearch.py:132" \
        in summary_line([cell])
    assert detail(cell).startswith(cell.reason)


def test_the_per_test_table_names_the_test_the_reason_the_line_and_the_cost():
    cell = cell_of(runs_with_a_callback())
    (module,) = cell_not_cached(cell)
    assert (module.module, module.why, module.tests, module.runs) == ("jit_while", NothingCached.HOST_CALLBACKS,
                                                                      [T_LS], [2, 3])
    section = "\n".join(per_test_section([cell]))
    assert "| `tests/test_opt.py::test_linesearch` | `jit_while` | not cached | host callback at " \
           "jaxopt/_src/zoom_linesearch.py:132 jax.debug.print | 2, 3 |" in section, section
    assert ("- `jit_while` (not cached, `tests/test_opt.py::test_linesearch`): host callback at "
            "jaxopt/_src/zoom_linesearch.py:132 jax.debug.print; 0.42 s lost per start") in section
    assert "1 of 2 tests are clean" in section and "1 is `not cached`" in section


def test_a_threshold_module_costs_what_jax_logged_for_it():
    runs = runs_with_a_callback()
    for run in runs:
        k = run.keys.keys[0]
        k.reason, k.compile_time_s = "it took < 1.00 seconds to compile (0.30s)", 0.3 + run.index / 10
    (module,) = not_cached_modules(runs)
    assert module.why == NothingCached.THRESHOLDS and module.seconds == 0.55  # the later runs' mean (0.5, 0.6)


def test_junit_passes_a_not_cached_cell_and_its_tests_and_says_why(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(path, [cell_of(runs_with_a_callback())], "check-suite")
    SCHEMA.validate(str(path))
    cases = {c.get("name"): c for c in ElementTree.parse(path).getroot().iter("testcase")}
    for case in cases.values():
        assert case.find("failure") is None and case.find("skipped") is None and case.find("error") is None
    out = cases[f"{T_LS} [jax 0.10.2]"].find("system-out").text
    assert "jit_while: not cached (host callback at jaxopt/_src/zoom_linesearch.py:132 jax.debug.print)" in out


def test_failing_on_not_cached_is_the_users_choice():
    cell = cell_of(runs_with_a_callback())
    assert parse_fail_on("reproduced,not-cached") == frozenset({Verdict.REPRODUCED, Verdict.NOT_CACHED})
    assert failing([cell], parse_fail_on("reproduced,error")) == []
    assert failing([cell], parse_fail_on("not-cached")) == [cell]


def test_nightly_alarms_on_clean_to_not_cached():
    assert classify(Verdict.CLEAN, Verdict.NOT_CACHED) == Change.NOT_CACHED
    assert classify(Verdict.NOT_CACHED, Verdict.NOT_CACHED) == Change.SAME


def test_the_facts_read_from_files_survive_results_json():
    cell = cell_of(runs_with_a_callback())
    again = read_cell(plain(cell))
    assert again.callback_sites == cell.callback_sites and again.refusal_seconds == {"jit_while": 0.42}
    assert cell_not_cached(again)[0].site.startswith("jaxopt/_src/zoom_linesearch.py:132")


def test_the_callback_line_is_read_from_the_lowered_modules_locations():
    text = DUMP.read_text()
    assert callback_sites(text) == ["mylib/steps.py:5 jax.debug.print"]  # the innermost frame, the library's path
    assert short_site("/work/suite/tests/t.py:5 jax.debug.print", "/work/suite") == "tests/t.py:5 jax.debug.print"


def test_a_module_without_a_callback_or_locations_names_none_and_a_line_of_megabytes_is_never_parsed():
    assert callback_sites("module @jit_f {\n  func.func public @main() {\n  }\n}\n") == []
    huge = "  %0 = stablehlo.constant dense<\"0x" + "ab" * 2_000_000 + "\"> : tensor<1000000xf32> loc(#loc1)\n"
    assert callback_sites(huge + DUMP.read_text()) == callback_sites(DUMP.read_text())


def test_a_refusal_jax_logs_no_time_for_costs_the_seconds_from_its_miss():
    messages = [(10.0, "Compiling jit(step) with global shapes and types (ShapedArray(float32[3]),)."),
                (10.1, "PERSISTENT COMPILATION CACHE MISS for 'jit_step' with key 'jit_step-29d9'"),
                (10.5, "Not writing persistent cache entry for 'jit_step' because it uses host callbacks"),
                (11.0, "PERSISTENT COMPILATION CACHE MISS for 'jit_step' with key 'jit_step-77aa'"),
                (11.2, "Not writing persistent cache entry for 'jit_step' because it uses host callbacks"),
                (None, "Not writing persistent cache entry for 'jit_g' because it uses host callbacks")]
    assert refusal_seconds(messages) == {"jit_step": 0.6}


# equinox's error_if in lineax's linear_solve, as JAX 0.10.2 dumped it (cut to the callback's chain): equinox binds its
# primitive in `equinox/internal/_primitive.py`, the innermost frame; lineax's call is the first frame outside.
EQX_DUMP = """module @jit_solve {
  func.func public @main() {
    %4:2 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%1) {backend_config = ""} : (tensor<i32>) -> (tensor<3xf32>, tensor<i32>) loc(#loc91)
  }
}
#loc5 = loc("/v/lib/python3.11/site-packages/equinox/_jit.py":55:14 to :34)
#loc12 = loc("/v/lib/python3.11/site-packages/equinox/internal/_primitive.py":274:15 to :83)
#loc13 = loc("/v/lib/python3.11/site-packages/lineax/_solve.py":801:30 to 803:5)
#loc38 = loc("_filter_jit_cache.<locals>.fun_wrapped"(#loc5))
#loc39 = loc("filter_primitive_bind"(#loc12))
#loc40 = loc("linear_solve"(#loc13))
#loc46 = loc(callsite(#loc40 at #loc38))
#loc49 = loc(callsite(#loc39 at #loc46))
#loc53 = loc(callsite(#loc49 at #loc49))
#loc88 = loc(callsite(#loc53 at #loc49))
#loc91 = loc("cond/branch_1_fun/pure_callback"(#loc88))
"""


def test_the_callback_line_is_the_first_frame_outside_jax_and_a_librarys_machinery():
    assert callback_sites(EQX_DUMP) == ["lineax/_solve.py:801 jax.pure_callback"]
    assert machinery_frame("/v/lib/python3.11/site-packages/equinox/internal/_primitive.py")
    assert machinery_frame("/v/lib/python3.11/site-packages/jax/_src/callback.py")
    # a library's own code, `_src` included (optax's linesearch), and the program's files are where a callback is
    assert not machinery_frame("/v/lib/python3.11/site-packages/optax/_src/linesearch.py")
    assert not machinery_frame("/v/lib/python3.11/site-packages/equinox/_errors.py")
    assert not machinery_frame("/work/suite/internal/t.py")


def test_a_callback_module_beside_a_written_namesake_is_not_cached_by_its_key():
    """A callback lambda and a plain lambda are both `jit__lambda` on 0.10.2: the written one does not hide the
    other, and the per-test table counts the callback's test not cached, never clean."""
    out = []
    for index in (1, 2, 3):
        shout = key("jit__lambda", "a", T_LS, Outcome.NOT_WRITTEN, CALLBACK)
        plain_ = key("jit__lambda", "b", T_OK, Outcome.WRITTEN if index == 1 else Outcome.HIT)
        out.append(RunRecord(index, index, 0, 1.0, [plain_.key] if index == 1 else [],
                             keys=RunLog([shout, plain_]), tests=PASSED))
    cell = cell_of(out)
    assert cell.verdict == Verdict.NOT_CACHED, cell.reason
    (module,) = cell_not_cached(cell)
    assert module.module == "jit__lambda" and module.tests == [T_LS] and module.runs == [2, 3]
    status = {t.id: t.status for t in suite_findings(cell.runs, cell_comparison(cell),
                                                     cell_not_cached(cell)).tests}
    assert status == {T_LS: "not cached", T_OK: "clean"}


def test_a_never_written_key_that_moves_is_not_cached_and_a_reproduced_cell_keeps_its_row():
    """0.4.31 lowers a callback's address into its module: its key moves, never written either way: not cached. Beside
    a key that really moved, the cell is reproduced and its never-written module keeps its row, tests and cost."""
    def runs(moved: bool) -> list[RunRecord]:
        out = []
        for index in (1, 2, 3):
            keys = [key("jit_while", "abc"[index - 1], T_LS, Outcome.NOT_WRITTEN, CALLBACK),
                    key("jit_update", "d" if index == 1 or not moved else "def"[index - 1], T_OK,
                        Outcome.WRITTEN if index == 1 or moved else Outcome.HIT)]
            out.append(RunRecord(index, index, 0, 1.0, [keys[1].key] if index == 1 or moved else [],
                                 keys=RunLog(keys), tests=PASSED))
        return out
    alone = judge(runs(False))
    assert alone.verdict == Verdict.NOT_CACHED and "its key differs between runs too" in alone.reason, alone.reason
    both = cell_of(runs(True))
    assert both.verdict == Verdict.REPRODUCED and both.reason.startswith("jit_update: a new key"), both.reason
    assert "; also not cached: jit_while uses a host callback (jaxopt/_src/zoom_linesearch.py:132" in both.reason
    (module,) = cell_not_cached(both)
    assert module.tests == [T_LS] and module.seconds == 0.42
    status = {t.id: t.status for t in suite_findings(both.runs, cell_comparison(both),
                                                     cell_not_cached(both)).tests}
    assert status == {T_LS: "not cached", T_OK: "missed"}


def test_a_not_cached_release_is_its_own_state_never_clean_nor_a_boundary():
    def cell(version: str, verdict: Verdict) -> CellResult:
        return CellResult(CellSpec(version, Platform.CPU, 1, None), verdict, {}, [RunRecord(1, 1, 0, 1.0, [])], "why")
    cells = [cell("0.4.30", Verdict.CLEAN), cell("0.4.31", Verdict.REPRODUCED), cell("0.6.0", Verdict.NOT_CACHED),
             cell("0.10.2", Verdict.NOT_CACHED)]
    assert version_verdicts(cells)["0.6.0"] == Verdict.NOT_CACHED
    found = release_boundaries(cells)
    assert found.appears_in == "0.4.31" and found.fixed_in is None, found.line()
    line = release_boundaries([cell("0.4.31", Verdict.REPRODUCED), cell("0.10.2", Verdict.NOT_CACHED)]).line()
    assert "fixed" not in line and "0.10.2 not cached, never clean" in line, line
    # bisect steps over it as it does over a failed point: never good, never bad
    assert point_verdict([cell("0.6.0", Verdict.NOT_CACHED)]) == Verdict.NOT_CACHED
    found_ = search(["a", "b", "c", "d"], {"a": Verdict.CLEAN, "b": Verdict.REPRODUCED, "c": Verdict.NOT_CACHED,
                                           "d": Verdict.NOT_CACHED}.__getitem__)
    assert found_.appears is not None and found_.appears.first == "b" and found_.fixed is not None
    assert found_.fixed.first is None, found_.fixed


SP = "/v/lib/python3.11/site-packages/"


def test_a_recorded_callback_call_names_its_line_and_the_package_that_reached_it():
    """lineax's linear_solve puts equinox's error_if into `jit_linear_solve` while its primitive is lowered: the call's
    line is equinox's, reached from lineax's; a program's own call or a library's own test names no other."""
    lineax = [f"{SP}equinox/_errors.py:111", f"{SP}equinox/_errors.py:118", f"{SP}equinox/internal/_primitive.py:90",
              f"{SP}lineax/_solve.py:125", f"{SP}equinox/internal/_primitive.py:274", "/work/suite/test/test_solve.py:9",
              f"{SP}_pytest/python.py:159"]
    assert recorded_site("jax.pure_callback", lineax) == \
        "equinox/_errors.py:111 jax.pure_callback, reached from lineax/_solve.py:125"
    optax = [f"{SP}optax/_src/linesearch.py:1746", f"{SP}optax/_src/linesearch_test.py:690",
             f"{SP}absl/testing/parameterized.py:320", f"{SP}chex/_src/variants.py:70"]
    assert recorded_site("jax.debug.print", optax) == "optax/_src/linesearch.py:1746 jax.debug.print"
    assert recorded_site("jax.debug.print", ["/work/suite/t.py:5", "/work/suite/t.py:9"]) == \
        "/work/suite/t.py:5 jax.debug.print"
    assert recorded_site("", [f"{SP}equinox/internal/_loop.py:3", "/work/suite/t.py:9"]) == \
        "/work/suite/t.py:9 a host callback"
    assert short_site("/work/suite/lib.py:3 jax.pure_callback, reached from /work/suite/t.py:9", "/work/suite") == \
        "lib.py:3 jax.pure_callback, reached from t.py:9"
    # each call belongs to the next module refused for host callbacks, never to one refused otherwise
    said = recorded_sites(['Host callback jax.debug.print: ["/work/suite/t.py:5"]',
                           "Not writing persistent cache entry for 'jit_g' because it took < 1.00 seconds to compile",
                           "Not writing persistent cache entry for 'jit_f' because it uses host callbacks (e.g. ...)",
                           "Not writing persistent cache entry for 'jit_h' because it uses host callbacks (e.g. ...)"])
    assert said == {"jit_f": "/work/suite/t.py:5 jax.debug.print"}
