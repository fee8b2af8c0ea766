"""Issue 60, item 5: report.md (and the terminal) open with one line per finding, most important first (hash-seed moved
keys, not served, the program's own moved keys, not cached, new input), each with the test, the function, the cause
in words, the cost per start and the action; what it says agrees with the per-test table below it."""

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Cause, Platform
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.report.evidence import compare_runs
from harness.report.first_screen import first_screen, terminal_lines
from harness.verdicts.verdict import judge
from harness.evidence.keys import controls_keys

from harness.verdicts.finish import with_uncached_facts

T_SET, T_NOISE, T_SHAPE = "t.py::test_set_order", "t.py::test_noise", "t.py::test_shapes"
PASSED = {T_SET: "passed", T_NOISE: "passed", T_SHAPE: "passed"}


def key(module: str, tag: str, test: str, types: tuple[str, ...], computation: str = "c",
        outcome: Outcome = Outcome.WRITTEN, seconds: float | None = None) -> LoggedKey:
    comps = {"computation": (computation * 64)[:64], "devices": "b" * 64}
    return LoggedKey(module, f"{module}-{(tag * 64)[:64]}", outcome, components=comps, tests=(test,), arg_types=types,
                     compile_time_s=seconds)


def hit(k: LoggedKey) -> LoggedKey:
    return LoggedKey(k.module, k.key, Outcome.HIT, components=k.components, tests=k.tests, arg_types=k.arg_types)


def _run(index: int, keys: list[LoggedKey]) -> RunRecord:
    return RunRecord(index, index, 0, 1.0, [k.key for k in keys if k.outcome == Outcome.WRITTEN], keys=RunLog(keys),
                     tests=PASSED)


def _suite() -> CellResult:
    """A new shape, a random constant and a set's order, in that order of the table (the set's last)."""
    names, noise, mse = (key("jit_names", "1", T_SET, ("float32[3]",)), key("jit_noise", "2", T_NOISE, ("float32[3]",)),
                         key("jit_mse", "3", T_SHAPE, ("float32[4]",)))
    first = _run(1, [mse, noise, names])
    later = _run(2, [key("jit_mse", "4", T_SHAPE, ("float32[7]",), seconds=0.3),
                     key("jit_noise", "5", T_NOISE, ("float32[3]",), "e", seconds=0.25),
                     key("jit_names", "6", T_SET, ("float32[3]",), "d", seconds=1.5)])
    # the cause controls: run 1's seed and run 2's, each again: the set's keys come back every time (bound 0.035),
    # the noise moves again at once, and run 2's seed again draws yet another shape
    controls = [_run(1, [hit(names), key("jit_noise", "7", T_NOISE, ("float32[3]",), "f"), hit(mse)]),
                _run(2, [hit(later.keys.keys[2]), hit(later.keys.keys[1]), key("jit_mse", "8", T_SHAPE, ("float32[5]",))]),
                _run(1, [hit(names)]), _run(2, [hit(later.keys.keys[2])]), _run(1, [hit(names)])]
    for control in controls:
        control.index = control.seed
    j = judge([first, later], controls=controls_keys(controls))
    return CellResult(CellSpec("0.4.31", Platform.CPU, 1, None), j.verdict, j.keys, [first, later], j.reason,
                      seed_control=controls[0], more_controls=controls[1:])


def test_findings_come_most_important_first_with_cause_cost_and_action():
    cell = _suite()
    a, b = "%cst = stablehlo.constant dense<1.0> : tensor<3xf32>\n", "%cst = stablehlo.constant dense<2.0> : tensor<3xf32>\n"
    noise = compare_runs("jit_noise", cell.runs[0], cell.runs[1], a, b, test=T_NOISE)
    assert noise.cause == Cause.CONSTANT
    lines = first_screen([cell], {cell.spec.key: {"jit_noise": [noise]}})
    assert lines[:2] == ["## What to do", ""], lines
    body = lines[2:]
    assert len(body) == 3, body
    assert body[0].startswith(f"- `{T_SET}`: `jit_names`: its key follows the hash seed") \
        and "(5 controls, each a run's own hash seed again" in body[0] and "at most 0.035" in body[0] \
        and "1.50 s per start" in body[0] and "**iterate a sorted list, not a set" in body[0], body[0]
    # the program's own randomness: new input, whatever its shapes (a control with a run's own seed moved it again)
    assert body[1].startswith(f"- `{T_SHAPE}`: `jit_mse`: the program's own randomness moved it, not the hash seed "
                              "(a control with run 2's own hash seed computed another key); compiled at float32\\[7\\], "
                              "argument types run 1 never had") and "0.30 s per start" in body[1], body[1]
    assert body[2].startswith(f"- `{T_NOISE}`: `jit_noise`: the program's own randomness moved it, not the hash seed "
                              "(a control with run 1's own hash seed computed another key); at run 1's argument types: "
                              "other values baked in") and "0.25 s per start" in body[2] \
        and "**pass what the program draws anew each start (a PRNG key, an array) to the jitted function as an " \
            "argument instead of closing over it, or seed its generators" in body[2], body[2]
    assert "**make what the program draws the same every start (seed its generators)" in body[1], body[1]
    assert terminal_lines([cell])[0] == "What to do:"


CALLBACK = "it uses host callbacks (e.g. from jax.debug.print or breakpoint)"
T_LS, T_OK = "tests/test_opt.py::test_linesearch", "tests/test_opt.py::test_plain"


def _callback_cell() -> CellResult:
    """jit_while (a callback, never written) and jit_update (written by run 1, hit after) in each of 3 runs."""
    runs = []
    for index in (1, 2, 3):
        keys = [LoggedKey("jit_while", "jit_while-" + "a" * 64, Outcome.NOT_WRITTEN, reason=CALLBACK, tests=(T_LS,),
                          arg_types=("float32[3]",)),
                LoggedKey("jit_update", "jit_update-" + "b" * 64, Outcome.WRITTEN if index == 1 else Outcome.HIT,
                          tests=(T_OK,), arg_types=("float32[3]",))]
        runs.append(RunRecord(index, index, 0, 1.0, [keys[1].key] if index == 1 else [], keys=RunLog(keys),
                              tests={T_LS: "passed", T_OK: "passed"}))
    j = judge(runs)
    cell = CellResult(CellSpec("0.10.2", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason)
    return with_uncached_facts(cell, {"jit_while": "jaxopt/_src/zoom_linesearch.py:132 jax.debug.print"},
                               {"jit_while": 0.42})


def test_a_callback_module_says_the_line_that_keeps_it_out_of_the_cache():
    cell = _callback_cell()
    (line,) = terminal_lines([cell])[1:]
    assert line == ("- tests/test_opt.py::test_linesearch: jit_while: host callback at jaxopt/_src/zoom_linesearch.py:132 "
                    "jax.debug.print; 0.42 s per start: the callback at jaxopt/_src/zoom_linesearch.py:132 "
                    "jax.debug.print keeps jit_while out of the cache: move it out of the jitted code, or accept a "
                    "compile per start"), line


def test_a_clean_cell_has_no_first_screen():
    k = key("jit_f", "1", T_SET, ("float32[3]",))
    runs = [_run(1, [k]), _run(2, [hit(k)])]
    j = judge(runs)
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason)
    assert first_screen([cell]) == [] and terminal_lines([cell]) == []


def test_a_clean_cell_whose_program_writes_nothing_as_its_author_runs_it_says_so_under_the_table():
    """A program under JAX's 1 s threshold read `clean` (with the harness's zeros its keys are stable) and the
    reason every start compiles was only at the end of the detail column; the terminal now says it as a line."""
    k = key("jit_f", "1", T_SET, ("float32[3]",))
    runs = [_run(1, [k]), _run(2, [hit(k)])]
    j = judge(runs)
    why = "as you run it, nothing is written: jit_f compiles in 0.2 s, below JAX's default 1 s threshold"
    cells = [CellResult(CellSpec(version, Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason,
                        as_you_run_it=why) for version in ("0.4.31", "0.10.2")]
    assert terminal_lines(cells) == ["What to do:", f"- jax 0.4.31, jax 0.10.2: {why}"]
    assert first_screen(cells) == []  # report.md says it in its first lines already


def test_a_reproduced_cells_modules_jax_never_writes_are_on_its_first_screen_too():
    """Issue 60.5: a module JAX never writes is a finding of its own beside a moved key (the per-test table's `not
    cached` row, the first screen's line, with the callback's line and its cost), not only where it is the verdict."""
    runs = _callback_cell().runs
    moved = key("jit_names", "1", T_SET, ("float32[3]",))
    for run, k in zip(runs, (moved, key("jit_names", "2", T_SET, ("float32[3]",), "d", seconds=1.5),
                             hit(moved))):
        run.keys = RunLog([*run.keys.keys, k])  # type: ignore[union-attr]
        run.new_entries = [*run.new_entries, *([k.key] if k.outcome == Outcome.WRITTEN else [])]
        run.tests = {**run.tests, T_SET: "passed"}
    j = judge(runs)
    assert j.verdict == "reproduced", j.reason
    cell = with_uncached_facts(CellResult(CellSpec("0.10.2", Platform.CPU, 1, None), j.verdict, j.keys, runs,
                                          j.reason), {"jit_while": "jaxopt/_src/zoom_linesearch.py:132 jax.debug.print"},
                               {"jit_while": 0.42})
    lines = terminal_lines([cell])[1:]
    assert len(lines) == 2 and lines[0].startswith(f"- {T_SET}: jit_names: its key moved"), lines
    assert lines[1].startswith(f"- {T_LS}: jit_while: host callback at jaxopt/_src/zoom_linesearch.py:132 "
                               "jax.debug.print; 0.42 s per start: the callback at"), lines


def test_a_module_jax_never_writes_is_on_the_first_screen_beside_a_dozen_moved_keys():
    """lineax's reproduced cell named only moved keys: its host callback's module, recompiled every start in 26 tests,
    never reached the first screen. The first finding of each kind is named, whatever the others."""
    from harness.report.first_screen import MAX_FINDINGS, Finding, shown
    moved = [Finding(0, f"t.py::test_{n}", 0, f"jit_{n}", "", "its key moved", "1 s per start", "read the diff")
             for n in range(12)]
    callback = Finding(3, "t.py::test_cb", 25, "jit_linear_solve", "", "host callback", "9 s per start", "move it")
    said = shown([*moved, callback])
    assert len(said) == MAX_FINDINGS and said[-1] is callback and said[:-1] == moved[:MAX_FINDINGS - 1]
    assert shown(moved) == moved[:MAX_FINDINGS]


def test_a_cause_and_action_said_above_is_said_again_as_the_same_with_its_own_cost():
    """A tutorial's script had six modules whose keys followed the hash seed: the first screen said the same long
    sentence six times. A line whose cause (but its controls' parentheses) and action a line above said reads
    "the same (its head)" with its own cost; another cause, or the same words on another release, is said whole."""
    from harness.report.first_screen import Finding, _listed

    seed = ("its key follows the hash seed: a set's order (or hash() of a string) is traced into the module "
            "(5 controls, each a run's own hash seed again, at most 0.035)")
    action = "iterate a sorted list, not a set, where the function is traced"
    found = [Finding(1, "", 0, "jit_step", "", seed, "1.50 s per start", action),
             Finding(1, "", 0, "jit_norm", "", seed.replace("5 controls", "3 controls"), "0.01 s per start", action),
             Finding(1, "", 0, "jit_step", "0.10.2", seed, "1.20 s per start", action),
             Finding(3, "", 0, "jit_noise", "", "the program's own randomness moved it", "0.25 s per start", "seed it")]
    assert [repeated for _, repeated in _listed(found)] == [False, True, False, False]
    assert found[1].plain(True) == "jit_norm: the same (its key follows the hash seed); 0.01 s per start"
    assert found[0].plain() == f"jit_step: {seed}; 1.50 s per start: {action}"


def test_within_a_kind_the_user_s_function_is_named_before_an_eager_operation_s_module():
    """A set-ordered mesh: the user's jit_body and the eager slice of a shard (jit__multi_slice) both follow the hash
    seed; the user's function is said whole first, the eager slice "the same" after it."""
    from harness.report.first_screen import Finding, in_order

    seed, action = "its key follows the hash seed: a set's order", "iterate a sorted list"
    found = [Finding(1, "", 0, "jit__multi_slice", "", seed, "0.01 s per start", action),
             Finding(1, "", 0, "jit_body", "", seed, "0.02 s per start", action),
             Finding(3, "", 0, "jit_noise", "", "randomness", "0.25 s per start", "seed it")]
    assert [f.module for f in in_order(found)] == ["jit_body", "jit__multi_slice", "jit_noise"]
