"""Boundaries never cross a failure (issue 47.4): a regression that ends in a failure is not fixed, releases
that fail outside JAX (a missing module, a requirement that did not resolve) are said first and no boundary
is named through them, and a program that fails the same way in its first two runs stops there."""

from pathlib import Path

from harness.results.document import read_cell
from harness.core.records import plain
from harness.bisect import logic
from harness.results.bisect_results import BisectSection, Row
from harness.report.bisect_section import boundaries_line
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.measure.run_logs import with_log_detail
from harness.verdicts.boundaries import release_boundaries
from harness.evidence.failure import (
    OutsideJax,
    exception_line,
    outside_jax,
    traceback_packages,
)
from harness.verdicts.judge import Tally

API_GONE = "exit code 1: AttributeError: module 'jax.sharding' has no attribute 'XLACompatibleSharding'"
NO_MODULE = "exit code 1: ModuleNotFoundError: No module named 'importlib_resources'"


def failed_run(index: int, reason: str) -> RunRecord:
    return RunRecord(index=index, seed=index, exit_code=1, duration_s=0.1, new_entries=[], reason=reason)


def cell(version: str, verdict: Verdict, why: str = "") -> CellResult:
    runs = [failed_run(1, why), failed_run(2, why)] if verdict == Verdict.ERROR else []
    reason = f"2 of 2 runs failed (run 1: {why})" if verdict == Verdict.ERROR else ""
    return CellResult(CellSpec(version, Platform.CPU, 8, None), verdict, {}, runs=runs, reason=reason)


# ---- a regression that ends in a failure is not fixed ------------------------------------------------

def test_a_regression_that_ends_in_a_failure_is_not_fixed_and_the_failing_release_is_named():
    cells = [cell("0.5.3", Verdict.REPRODUCED), cell("0.6.0", Verdict.ERROR, API_GONE)]
    line = release_boundaries(cells).line()
    assert "the only release measured" not in line and "not fixed in this range" not in line
    assert line == ("fresh processes miss the cache on 0.5.3, the only release where the program ran, so the "
                    "range shows no boundary where it appears (measure an earlier release for one); reproduced "
                    f"through 0.5.3; the program fails from 0.6.0 ({API_GONE}), so no release here fixes it")


def test_a_regression_with_a_clean_release_before_it_that_then_fails_is_reproduced_through_its_last_release():
    cells = [cell("0.4.31", Verdict.CLEAN), cell("0.5.0", Verdict.REPRODUCED), cell("0.5.3", Verdict.REPRODUCED),
             cell("0.6.0", Verdict.ERROR, API_GONE), cell("0.6.1", Verdict.ERROR, API_GONE)]
    line = release_boundaries(cells).line()
    assert line == ("regression appears in 0.5.0 (last clean 0.4.31); reproduced through 0.5.3; the program fails "
                    f"from 0.6.0 ({API_GONE}), so no release here fixes it")


def test_a_failure_between_a_regression_and_its_fix_is_no_boundary():
    cells = [cell("0.4.28", Verdict.REPRODUCED), cell("0.4.29", Verdict.ERROR, API_GONE), cell("0.4.30", Verdict.CLEAN)]
    assert release_boundaries(cells).line().endswith("; fixed after 0.4.28, by 0.4.30, with 0.4.29 failing")


def test_clean_releases_then_a_failure_do_not_claim_the_range():
    cells = [cell("0.4.31", Verdict.CLEAN), cell("0.5.0", Verdict.ERROR, API_GONE)]
    assert release_boundaries(cells).line() == (f"not reproduced where the program ran (through 0.4.31); the "
                                                f"program fails from 0.5.0 ({API_GONE})")


# ---- failures outside JAX ------------------------------------------------------------------------------

def test_a_missing_module_is_outside_jax_and_names_the_option_that_adds_it():
    found = outside_jax(NO_MODULE)
    assert found is not None and found.kind == OutsideJax.MISSING_PYTHON_MODULE and found.name == "importlib_resources"
    assert "--with importlib_resources" in found.phrase()
    assert outside_jax("exit code 1: ModuleNotFoundError: No module named 'yaml'").requirement == "pyyaml"
    # JAX's own module gone is an API change in JAX, not a missing dependency.
    assert outside_jax("exit code 1: ModuleNotFoundError: No module named 'jax.experimental.maps'") is None
    assert outside_jax(API_GONE) is None
    unresolved = outside_jax("environment: could not install jax 0.4.26 with flax>=0.10: no solution (log)")
    assert unresolved is not None and unresolved.kind == OutsideJax.UNRESOLVED and unresolved.name == "flax>=0.10"


def test_a_sweep_says_a_missing_dependency_first_and_names_no_boundary_through_it():
    versions = ["0.4.31", "0.4.33", "0.4.34", "0.4.35", "0.4.36", "0.5.0"]
    cells = [cell("0.4.31", Verdict.CLEAN), *(cell(v, Verdict.ERROR, NO_MODULE) for v in versions[1:-1]),
             cell("0.5.0", Verdict.REPRODUCED)]
    line = release_boundaries(cells).line()
    assert line.startswith("0.4.33-0.4.36 (4 releases) failed on a dependency of the program, not on JAX: the program "
                           "imports importlib_resources, which their environments lack (add it: --with "
                           "importlib_resources, or requirements: [importlib_resources] in a config); ")
    assert "appears in 0.5.0" not in line
    assert "regression appears after 0.4.31, by 0.5.0, with 0.4.33-0.4.36 failing" in line


def test_a_bisection_through_failing_releases_names_no_boundary_through_them():
    points = ["0.4.31", "0.4.33", "0.4.34", "0.4.35", "0.5.0"]
    verdicts = {"0.4.31": Verdict.CLEAN, "0.5.0": Verdict.REPRODUCED}
    search = logic.search(points, lambda p: verdicts.get(p, Verdict.ERROR))
    rows = [Row(s.point, s.role, s.verdict, 2, None, f"2 of 2 runs failed (run 1: {NO_MODULE})"
                if s.verdict == Verdict.ERROR else "") for s in search.steps]
    line = boundaries_line(BisectSection(search.appears, search.fixed, search.problem, rows))
    assert line.startswith("0.4.33-0.4.35 (3 releases) failed on a dependency of the program, not on JAX: the "
                           "program imports importlib_resources"), line
    assert "appears in 0.5.0" not in line and "regression appears after 0.4.31, by 0.5.0, with 0.4.33-0.4.35 failing" in line


def test_a_bisection_without_failures_keeps_its_words():
    points = ["0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30"]
    verdicts = {"0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED, "0.4.28": Verdict.REPRODUCED,
                "0.4.29": Verdict.CLEAN, "0.4.30": Verdict.CLEAN}
    search = logic.search(points, verdicts.__getitem__)
    rows = [Row(s.point, s.role, s.verdict, 2, None, "") for s in search.steps]
    assert boundaries_line(BisectSection(search.appears, search.fixed, search.problem, rows)) == "regression appears in 0.4.27 (last clean 0.4.26); fixed in 0.4.29"


# ---- the same failure twice stops the cell ----------------------------------------------------------------

def test_the_same_failure_in_the_first_two_runs_stops_the_cell_as_an_error():
    tally = Tally(planned=11, stop_when_reproduced=True)
    tally.add(failed_run(1, API_GONE))
    assert not tally.stop_now()
    tally.add(failed_run(2, API_GONE))
    assert tally.stop_now()
    done = tally.cell(CellSpec("0.6.0", Platform.CPU, 8, None), [], {})
    assert done.verdict == Verdict.ERROR and len(done.runs) == 2
    assert done.reason == (f"2 of 2 runs failed (run 1: {API_GONE}); stopped after 2 of 11 runs: runs 1 and 2 "
                           "failed the same way, so later runs could not change the verdict")


def test_two_different_failures_or_all_runs_asked_for_go_on():
    differing = Tally(planned=11, stop_when_reproduced=True)
    differing.add(failed_run(1, API_GONE))
    differing.add(failed_run(2, "exit code 1: XlaRuntimeError: INTERNAL: replicated axes"))  # follows the seed
    assert not differing.stop_now()
    # A failure raised while JAX lowers can follow the seed even when two seeds fail alike (Shardy on 0.5.3:
    # a ValueError for seeds 0, 2, 4; 1, 3, 5-8 pass): the cell goes on.
    lowering = Tally(planned=10, stop_when_reproduced=True)
    shardy = ("exit code 1: ValueError: Cannot lower jaxpr with verifier errors: 'sdy.sharding_constraint' op "
              "replicated axes are not ordered w.r.t. mesh")
    lowering.add(failed_run(1, shardy))
    lowering.add(failed_run(2, shardy))
    assert not lowering.stop_now()
    compile_error = Tally(planned=11, stop_when_reproduced=True)  # XLA's errors can follow the seed
    for index in (1, 2):
        compile_error.add(failed_run(index, "exit code 1: XlaRuntimeError: INTERNAL: replicated axes"))
    assert not compile_error.stop_now()
    every = Tally(planned=11)  # --all-runs
    every.add(failed_run(1, API_GONE))
    every.add(failed_run(2, API_GONE))
    assert not every.stop_now()


PYTEST_COLLECTION = """\
==================================== ERRORS ====================================
_________________________ ERROR collecting test_model.py _________________________
ImportError while importing test module '/work/test_model.py'.
Hint: make sure your test modules/packages have valid Python names.
test_model.py:1: in <module>
    import flax
E   ModuleNotFoundError: No module named 'flax'
=========================== short test summary info ============================
ERROR test_model.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
""".splitlines()


def test_a_collection_error_is_the_exception_not_pytests_last_line():
    assert exception_line(PYTEST_COLLECTION) == "ModuleNotFoundError: No module named 'flax'"


def test_the_reason_names_the_versions_of_the_packages_the_traceback_passes_through(tmp_path: Path):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    for dist in ("flax-0.8.4.dist-info", "jax-0.4.31.dist-info", "jaxlib-0.4.31.dist-info"):
        (site / dist).mkdir(parents=True)
    log = tmp_path / "run.log"
    log.write_text(f"""\
Traceback (most recent call last):
  File "/work/train.py", line 3, in <module>
    from flax import nnx
  File "{site}/flax/nnx/__init__.py", line 12, in <module>
    from jax.sharding import XLACompatibleSharding
  File "{site}/jax/sharding.py", line 40, in __getattr__
    raise AttributeError
AttributeError: module 'jax.sharding' has no attribute 'XLACompatibleSharding'
DEBUG:jax._src.xla_bridge:Clearing JAX backend caches.
""")
    lines = log.read_text().splitlines()
    assert [top for _, top in traceback_packages(lines)] == ["flax", "jax"]
    assert with_log_detail("exit code 1", log) == ("exit code 1: AttributeError: module 'jax.sharding' has no "
                                                   "attribute 'XLACompatibleSharding' (flax 0.8.4, jax 0.4.31)")


# ---- a cell's cause: one rule on every release, `unknown` where it cannot tell (issue 47.5) ----------------

def test_a_reordering_that_renumbers_ssa_values_is_still_order():
    from harness.core.kinds import Cause
    from harness.report.evidence import likely_cause
    # The same two constants in the other order, each defined under the other's SSA name.
    diff = ["--- run 1", "+++ run 2",
            "-    %cst_0 = stablehlo.constant dense<5.000000e+00> : tensor<f32>",
            "-    %3 = stablehlo.add %2, %cst_0 : tensor<4xf32>",
            "-    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>",
            "+    %cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<f32>",
            "+    %3 = stablehlo.add %2, %cst_1 : tensor<4xf32>",
            "+    %cst_1 = stablehlo.constant dense<5.000000e+00> : tensor<f32>"]
    assert likely_cause(diff) == Cause.ORDER
    assert likely_cause(["-  %1 = stablehlo.add %0, %0", "+  %1 = stablehlo.multiply %0, %0"]) == Cause.UNKNOWN


def test_a_cause_of_other_from_an_older_folder_still_reads():
    from harness.core.kinds import Cause
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.REPRODUCED, {}, cause=Cause.OTHER)
    data = plain(cell)
    assert data["cause"] == "other" and read_cell(data).cause == Cause.OTHER


def test_a_bisection_whose_far_end_fails_is_reproduced_through_its_last_release_not_fixed():
    verdicts = {"0.4.28": Verdict.REPRODUCED, "0.4.31": Verdict.ERROR}
    search = logic.search(["0.4.28", "0.4.31"], verdicts.__getitem__)
    detail = (f"2 of 2 runs failed (run 1: {API_GONE}); stopped after 2 of 4 runs: runs 1 and 2 failed the same "
              "way, so later runs could not change the verdict")
    rows = [Row(s.point, s.role, s.verdict, 2, None, detail if s.verdict == Verdict.ERROR else "") for s in search.steps]
    assert boundaries_line(BisectSection(search.appears, search.fixed, search.problem, rows)) == (
        "regression present from the first measured release, 0.4.28 (no clean release before it); reproduced "
        f"through 0.4.28; the program fails from 0.4.31 ({API_GONE}), so no release here fixes it")
