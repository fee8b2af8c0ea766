"""A later run's key at argument types run 1 never had is `new input` only where the seed control agrees it is the
program's own doing: where the control (run 1's seed again, a fresh folder with run 1's entries) compiled the module at
exactly run 1's argument types (none, where run 1 compiled it not at all), the new types follow the hash seed and the
cell is `reproduced` (a set-named mesh that leaves an array unsharded for run 1's order). Pure: keys as JAX's log
names them, no processes."""

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.evidence.keys import comparison_of, control_keys
from harness.evidence.misses import Category, Follows, control_baseline, function_misses
from harness.report.first_screen import terminal_lines
from harness.verdicts.judge import Tally
from harness.verdicts.verdict import judge

T_SET, T_DRAW = "t.py::test_mesh", "t.py::test_draw"


def _key(module: str, tag: str, types: tuple[str, ...], outcome: Outcome = Outcome.WRITTEN, test: str = "",
         ) -> LoggedKey:
    return LoggedKey(module, f"{module}-{(tag * 64)[:64]}", outcome, tests=(test,) if test else (), arg_types=types,
                     compile_time_s=0.2)


def _hit(k: LoggedKey) -> LoggedKey:
    return LoggedKey(k.module, k.key, Outcome.HIT, tests=k.tests, arg_types=k.arg_types)


def _run(index: int, keys: list[LoggedKey], seed: int | None = None) -> RunRecord:
    return RunRecord(index, seed if seed is not None else index, 0, 1.0,
                     [k.key for k in keys if k.outcome == Outcome.WRITTEN], keys=RunLog(keys))


BCAST = _key("jit_broadcast_in_dim", "a", ("float32[]",))
SLICE = _key("jit__multi_slice", "b", ("float32[8,16]",))


def _mesh_runs() -> list[RunRecord]:
    """Run 1's order leaves the array whole (no slicing module); run 2's slices it; run 3's leaves it whole again."""
    return [_run(1, [BCAST]), _run(2, [_hit(BCAST), SLICE]), _run(3, [_hit(BCAST)])]


def test_a_module_run_1_never_compiled_that_its_seed_again_compiles_not_either_is_a_hash_seed_moved_key():
    runs = _mesh_runs()
    control = _run(1, [_hit(BCAST)])  # run 1's seed again: the array whole again, no slicing module
    j = judge(runs, control=control_keys(control))
    assert j.verdict == Verdict.REPRODUCED, j.reason
    assert j.reason.startswith("jit__multi_slice: a new key in run 2 (a module the first run did not compile)")
    assert ("its argument types follow the hash seed: run 1 never compiled it at float32[8,16], and run 1's seed "
            "again (the seed control) did not compile it either") in j.reason, j.reason
    assert j.comparison.new_input == {} and j.comparison.seed_typed == {SLICE.key} <= j.comparison.seed_moved
    (miss,) = function_misses(runs, j.comparison, control)
    assert miss.category == Category.MOVED_KEY and miss.follows == Follows.HASH_SEED
    cell = CellResult(CellSpec("0.10.2", Platform.CPU, 8, None), j.verdict, j.keys, runs, j.reason,
                      seed_control=control)
    (line,) = terminal_lines([cell])[1:]
    assert "jit__multi_slice: its argument types follow the hash seed (float32[8,16]" in line, line
    assert "iterate a sorted list, not a set" in line, line


def test_without_a_seed_control_new_argument_types_stay_new_input():
    """The built-in repro, a job, harness reduce's candidates (no control), or none made yet: as before."""
    j = judge(_mesh_runs())
    assert j.verdict == Verdict.NEW_INPUT, j.reason
    assert j.reason.startswith("jit__multi_slice at float32[8,16] (run 2); run 1 never compiled it"), j.reason
    assert j.comparison.seed_typed == frozenset()


def test_a_control_that_fails_says_nothing_and_new_input_stays():
    failed = RunRecord(1, 1, 1, 1.0, [], keys=RunLog([_hit(BCAST)]), reason="boom")
    assert judge(_mesh_runs(), control=control_keys(failed)).verdict == Verdict.NEW_INPUT


MSE4, MSE7 = _key("jit_mse", "4", ("float32[4]",)), _key("jit_mse", "7", ("float32[7]",))


def test_a_control_that_draws_other_types_keeps_new_input():
    """An unseeded draw: run 1's seed again draws yet another shape, so the program drew it."""
    runs = [_run(1, [MSE4]), _run(2, [MSE7])]
    control = _run(1, [_key("jit_mse", "5", ("float32[5]",))])
    j = judge(runs, control=control_keys(control))
    assert j.verdict == Verdict.NEW_INPUT, j.reason
    assert "run 1 compiled it at float32[4]" in j.reason, j.reason


def test_a_control_that_compiles_the_module_at_run_1s_types_again_only_says_the_hash_seed():
    runs = [_run(1, [MSE4]), _run(2, [MSE7])]
    j = judge(runs, control=control_keys(_run(1, [_hit(MSE4)])))
    assert j.verdict == Verdict.REPRODUCED, j.reason
    assert ("its argument types follow the hash seed: run 1 never compiled it at float32[7], and run 1's seed again "
            "(the seed control) compiled it at run 1's argument types only") in j.reason, j.reason


def test_a_control_at_run_1s_types_and_new_ones_too_keeps_new_input():
    """Run 1's types again and other new types beside them: not gone with the hash seed held."""
    runs = [_run(1, [MSE4]), _run(2, [MSE7])]
    control = _run(1, [_hit(MSE4), _key("jit_mse", "9", ("float32[9]",))])
    assert judge(runs, control=control_keys(control)).verdict == Verdict.NEW_INPUT


def test_a_control_with_new_types_in_another_module_of_the_same_test_keeps_new_input():
    """A test that draws its own shapes draws them elsewhere too: run 1's types again for this module by chance is no
    sign of the hash seed."""
    mse4, mse7 = (_key("jit_mse", "4", ("float32[4]",), test=T_DRAW), _key("jit_mse", "7", ("float32[7]",), test=T_DRAW))
    norm3 = _key("jit_norm", "3", ("float32[3]",), test=T_DRAW)
    runs = [_run(1, [mse4, norm3]), _run(2, [mse7, _hit(norm3)])]
    control = _run(1, [_hit(mse4), _key("jit_norm", "6", ("float32[6]",), test=T_DRAW)])
    assert judge(runs, control=control_keys(control)).verdict == Verdict.NEW_INPUT


def test_run_1s_types_again_by_chance_in_one_test_while_another_draws_new_ones_keeps_new_input():
    """optax 0.2.8's masked tests on 0.10.2: each compiles its helpers at a mask's sum (0 to 10), so run 1's seed again
    gives run 1's sizes in one test by chance (it read `reproduced`, the hash seed); where run 1 compiled the module,
    the whole control must be free of new types, and another masked test drew other sizes."""
    a6, a1 = (_key("jit__reduce_sum", "6", ("float32[6]",), test=T_DRAW),
              _key("jit__reduce_sum", "1", ("float32[1]",), test=T_DRAW))
    b3, b4, b5 = (_key("jit__reduce_sum", "3", ("float32[3]",), test=T_SET),
                  _key("jit__reduce_sum", "4", ("float32[4]",), test=T_SET),
                  _key("jit__reduce_sum", "5", ("float32[5]",), test=T_SET))
    runs = [_run(1, [a6, b3]), _run(2, [a1, b4])]
    control = _run(1, [_hit(a6), b5])  # T_DRAW: run 1's size again; T_SET: another
    j = judge(runs, control=control_keys(control))
    assert j.verdict == Verdict.NEW_INPUT, j.reason
    assert j.comparison.seed_typed == frozenset()


def test_each_test_is_told_by_its_own_keys_in_the_control():
    """The set-ordered test's new types of a module run 1 never compiled follow the hash seed, the drawing test's stay
    new input, in one cell."""
    mesh = _key("jit__multi_slice", "b", ("float32[8,16]",), test=T_SET)
    mse4, mse7 = (_key("jit_mse", "4", ("float32[4]",), test=T_DRAW), _key("jit_mse", "7", ("float32[7]",), test=T_DRAW))
    runs = [_run(1, [mse4]), _run(2, [mesh, mse7])]
    control = _run(1, [_key("jit_mse", "5", ("float32[5]",), test=T_DRAW)])
    j = judge(runs, control=control_keys(control))
    assert j.verdict == Verdict.REPRODUCED, j.reason
    assert j.comparison.seed_typed == {mesh.key} and j.comparison.new_input == {2: {"jit_mse": [mse7.key]}}
    assert "also missed: jit_mse (new input)" in j.reason, j.reason


def test_the_control_is_planned_for_a_cell_with_new_input_and_not_for_a_clean_one():
    assert control_baseline(_mesh_runs()) is not None  # new input only: the control tells whose the types are
    clean = [_run(1, [BCAST]), _run(2, [_hit(BCAST)])]
    assert comparison_of(clean).new_input == {} and control_baseline(clean) is None  # no run more for a clean cell


def test_a_cell_finished_with_its_control_reads_reproduced_and_its_stored_comparison_agrees():
    tally = Tally(3)
    for run in _mesh_runs():
        tally.add(run)
    tally.control = _run(1, [_hit(BCAST)])
    cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 8, None), [], {})
    assert cell.verdict == Verdict.REPRODUCED, cell.reason
    assert comparison_of(cell.runs, cell.seed_control or tally.control).seed_typed == {SLICE.key}
