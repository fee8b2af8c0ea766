"""Issue 60.4 (one account of each run) on distrax's own tests, 0.4.31: float64 tests failing in every run made
pytest print what they wrote to stderr (JAX's log among it) in its report. Read as the run's log on stderr, those
excerpts "disagreed" with the recorder (a key run 1 compiled in one test and hit in a failing one: "a miss in the
recorder, a hit on stderr"). pytest's captured sections are not the process's log (harness/measure/run_logs.py)."""

from harness.core import jaxlog
from harness.measure.run_logs import outside_captured

KEY = "jit_sample-" + "d" * 64
HIT = f"DEBUG:2026-12-06 02:05:10,500:jax._src.compilation_cache:108: Persistent compilation cache hit for 'jit_sample' with key '{KEY}'"
LOGGED = f"DEBUG    jax._src.compilation_cache:compilation_cache.py:108 Persistent compilation cache hit for 'jit_sample' with key '{KEY}'"
REPORT = [
    "..FF.", "=================================== FAILURES ===================================",
    "______________ GreedyTest.test_sample_dtype_float64__with_jit ________________",
    "E   AssertionError: [Chex] Assertion assert_type failed",
    "----------------------------- Captured stderr call -----------------------------", HIT,
    "------------------------------ Captured log call -------------------------------", LOGGED,
    "________________ GreedyTest.test_sample_dtype_float64__with_pmap ______________",
    "E   AssertionError: [Chex] Assertion assert_type failed",
    "=========================== short test summary info ============================",
    "FAILED ::GreedyTest::test_sample_dtype_float64__with_jit - AssertionError: [Chex]...",
    "1 failed, 4 passed in 3.20s",
]


def test_pytests_report_of_a_failing_tests_output_is_not_the_runs_log():
    assert [k.key for k in jaxlog.parse(REPORT).keys] == [KEY]  # read whole, the excerpt names a key
    kept = outside_captured(REPORT)
    assert not jaxlog.parse(kept).keys
    assert HIT not in kept and LOGGED not in kept
    # the failure itself and pytest's summary stay: the run's reason reads them
    assert "E   AssertionError: [Chex] Assertion assert_type failed" in kept
    assert kept[-2:] == REPORT[-2:] and "________________ GreedyTest.test_sample_dtype_float64__with_pmap ______________" in kept


def test_a_log_with_no_captured_section_is_read_whole():
    lines = ["collected 3 items", HIT, "3 passed in 1.00s"]
    assert outside_captured(lines) == lines
