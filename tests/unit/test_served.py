"""`clean` means the later runs loaded the entries, not only that their keys matched (issue 47, item 1).

Recorded from real releases (tests/fixtures/jax_logs/unreadable_entries-*): examples/unreadable_entries.py
overwrites its entries after compiling, so the next process computes the same keys, finds the entries,
cannot read them back (JAX's UserWarning), and compiles everything again."""

from pathlib import Path

import pytest

from harness.core import jaxlog
from harness.core.jaxlog import Outcome
from harness.core.listing import Entry
from harness.core.runs import RunRecord
from harness.core.kinds import Verdict
from harness.evidence.keys import RunKeys, compare_with_first_run
from harness.verdicts.verdict import judge

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"
H1, H2 = "a" * 64, "b" * 64
READ_ERROR = 'error: Error -3 while decompressing data: incorrect header check'


def recorded(version: str, run: int) -> RunRecord:
    keys = jaxlog.parse((LOGS / f"unreadable_entries-{version}-run{run}.err").read_text())
    # Run 1 wrote every key (on disk from then on); run 2 rewrote the same names: no new entry.
    written = [f"{k.key}-cache" for k in keys.keys] if run == 1 else []
    return RunRecord(run, run, 0, 0.5, written, keys=keys)


@pytest.mark.parametrize("version", ["0.4.28", "0.4.31", "0.10.2"])
def test_the_read_error_is_tied_to_the_key_jax_then_compiled(version):
    log = jaxlog.parse((LOGS / f"unreadable_entries-{version}-run2.err").read_text())
    (g,) = [k for k in log.keys if k.module == "jit_g"]
    assert g.outcome == Outcome.WRITTEN and g.read_error == READ_ERROR
    first = jaxlog.parse((LOGS / f"unreadable_entries-{version}-run1.err").read_text())
    assert not any(k.read_error for k in first.keys)  # a cold folder: nothing to read


@pytest.mark.parametrize("version", ["0.4.28", "0.4.31", "0.10.2"])
def test_same_keys_compiled_again_while_on_disk_is_a_miss_not_clean(version):
    runs = [recorded(version, 1), recorded(version, 2)]
    assert {k.key for k in runs[0].keys.keys} == {k.key for k in runs[1].keys.keys}  # the keys agree
    judgement = judge(runs, expected_runs=2)
    assert judgement.verdict == Verdict.REPRODUCED, judgement.reason
    # The program's own function (the longer compile of jit_f and jit_g), not a helper JAX compiled eagerly.
    assert judgement.reason[:5] in ("jit_f", "jit_g")
    assert judgement.reason[5:].startswith(": the entry run 1 wrote was on disk, yet run 2 compiled the same key "
                                           "again instead of loading it (JAX could not read it back: ")
    assert READ_ERROR in judgement.reason and "and 4 other modules" in judgement.reason
    assert judgement.comparison.unserved_modules() == ["jit__reduce_sum", "jit_broadcast_in_dim",
                                                       "jit_convert_element_type", "jit_f", "jit_g"]


def test_the_rule_only_entries_the_first_run_left_on_disk_count():
    f1, g1 = Entry("jit_f", f"jit_f-{H1}"), Entry("jit_g", f"jit_g-{H1}")
    both = frozenset({f1, g1})
    # jit_g was never written by run 1 (a threshold, a refusal): compiling it again is no unserved entry.
    hit = [RunKeys(1, frozenset({f1}), both, compiled=both), RunKeys(2, frozenset(), both, compiled=frozenset({g1}))]
    assert not compare_with_first_run(hit).unserved
    missed = [hit[0], RunKeys(2, frozenset(), both, compiled=both)]
    assert compare_with_first_run(missed).unserved == {2: {"jit_f": [f1.key]}}
    # A log that disagrees with the folder cannot say what was compiled; nor can a run without one.
    untrusted = [hit[0], RunKeys(2, frozenset(), both, log_trusted=False, compiled=both)]
    assert not compare_with_first_run(untrusted).unserved
    assert not compare_with_first_run([hit[0], RunKeys(2, frozenset(), None)]).unserved


def _run(index: int, outcome: Outcome, written: bool) -> RunRecord:
    key = jaxlog.LoggedKey("jit_f", f"jit_f-{H1}", outcome, compile_time_s=0.5 if outcome != Outcome.HIT else None)
    return RunRecord(index, index, 0, 0.5, [f"jit_f-{H1}"] if written else [], keys=jaxlog.RunLog([key]))


def test_a_folder_emptied_before_compiling_says_no_read_error_and_is_not_clean():
    judgement = judge([_run(1, Outcome.WRITTEN, True), _run(2, Outcome.WRITTEN, False),
                       _run(3, Outcome.WRITTEN, False)], expected_runs=3)
    assert judgement.verdict == Verdict.REPRODUCED
    assert judgement.reason == ("jit_f: the entry run 1 wrote was on disk, yet each of runs 2-3 compiled the same "
                                "key again instead of loading it (JAX logged no hit and no read error: the entry "
                                "was gone or not found when the run looked)")


def test_logged_hits_are_clean_without_a_note_and_unlogged_ones_are_said():
    assert judge([_run(1, Outcome.WRITTEN, True), _run(2, Outcome.HIT, False)]).reason == \
        "jit_f: 1 key per run, the same in all 2 runs"
    blind = _run(3, Outcome.HIT, False)
    blind.keys, blind.log_note = None, "JAX logged no cache key (the script ... changed logging itself)"
    judgement = judge([_run(1, Outcome.WRITTEN, True), _run(2, Outcome.HIT, False), blind])
    assert judgement.verdict == Verdict.CLEAN
    assert judgement.reason.endswith("; hits not observed in run 3 (JAX logged no cache key (the script ... changed "
                                     "logging itself)): the cache folder shows no new key, not that the entries "
                                     "were loaded")


def test_a_key_one_run_hit_beside_the_run_that_compiled_it_is_the_compiling_run_s():
    """Runs beside each other share the cell's folder: run 4 compiled and wrote a new key, and run 3, running at the
    same time, hit it. The key is run 4's, with its test (optax's masked tests on 0.10.2: the test run 3 was in then
    was named before); a run alone that hits a key it is new to keeps it, as before."""
    f1 = Entry("jit_f", f"jit_f-{H1}")
    f2 = Entry("jit_f", f"jit_f-{H2}")
    first = RunKeys(1, frozenset({f1}), frozenset({f1}), compiled=frozenset({f1}))
    hit_beside = RunKeys(3, frozenset({f2}), frozenset({f1, f2}), compiled=frozenset(), overlapped=True)
    compiled = RunKeys(4, frozenset({f2}), frozenset({f1, f2}), compiled=frozenset({f2}), overlapped=True)
    assert compare_with_first_run([first, hit_beside, compiled]).new == {4: {"jit_f": [f2.key]}}
    # With no later run that compiled it (its log cut, or the writer not counted), the run that computed it has it.
    assert compare_with_first_run([first, hit_beside]).new == {3: {"jit_f": [f2.key]}}
