"""Issue 60, item 3: a later run's moved key is diffed only against the first run's module of the same function, from
the same test, at the same argument types (each dump paired with its key by the order JAX computed them); where the
first run has none, the report says so; a module whose constants alone differ reads `constant` everywhere."""

from pathlib import Path

import msgspec

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Cause
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.core.ir_results import main_results, with_result_types
from harness.report.evidence import Evidence, compare_runs, likely_cause, what_differs
from harness.report.misses_screen import per_test_section
from harness.report.sources import collect, function_evidence, keyed_texts
from harness.report.write import ReportWriter
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.header import RecordedConfig, ResultsHeader
from harness.core.records import replace
from harness.evidence.keys import controls_keys
from harness.core.comparison import Moved
from harness.evidence.misses import Category
from harness.report.first_screen import first_screen
from harness.report.misses_screen import cell_findings
from harness.verdicts.judge import Tally
from harness.verdicts.verdict import judge

T_A, T_COMPLEX, T_B = "t.py::test_set_order", "t.py::test_complex", "t.py::test_b"

_F32 = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = ""}) {
    %0 = stablehlo.FIRST %arg0, %arg0 : tensor<4xf32>
    %1 = stablehlo.SECOND %0, %0 : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}
"""
_COMPLEX = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2xcomplex<f32>>) -> (tensor<2xcomplex<f32>> {jax.result_info = ""}) {
    %0 = stablehlo.custom_call @xla_python_cpu_callback(%arg0) {backend_config = "ADDRESS"} : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
    return %0 : tensor<2xcomplex<f32>>
  }
}
"""
ORDERED = _F32.replace("FIRST", "add").replace("SECOND", "multiply")
REORDERED = _F32.replace("FIRST", "multiply").replace("SECOND", "add")


def _key(tag: str, test: str, types: tuple[str, ...], outcome: Outcome = Outcome.WRITTEN) -> LoggedKey:
    comps = {"computation": (tag * 64)[:64], "devices": "b" * 64}
    return LoggedKey("jit_f", f"jit_f-{(tag * 64)[:64]}", outcome, components=comps, tests=(test,), arg_types=types)


def _run(tmp: Path, index: int, compiled: list[tuple[LoggedKey, str]], tests: list[str]) -> RunRecord:
    """A run whose dump holds each compiled module in order (JAX's `jax_ir<n>_<module>_compile.mlir`)."""
    dump = tmp / "logs" / f"run-0{index}.ir"
    dump.mkdir(parents=True)
    for n, (_, text) in enumerate(compiled):
        (dump / f"jax_ir{n}_jit_f_compile.mlir").write_text(text)
    keys = [k for k, _ in compiled]
    return RunRecord(index, index, 0, 1.0, [k.key for k in keys], keys=RunLog(keys), log=f"logs/run-0{index}.log",
                     tests=dict.fromkeys(tests, "passed"))


def _cell(runs: list[RunRecord], controls: list[RunRecord] | None = None) -> CellResult:
    j = judge(runs, controls=controls_keys(controls or []))
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 1, None), j.verdict, j.keys, runs, j.reason,
                      attribution=j.attribution, listing=[f"{k.key}-cache" for r in runs for k in r.keys.keys])
    if controls:
        cell.seed_control, *cell.more_controls = controls
    cell.comparison = j.comparison
    return cell


def _two_tests(tmp: Path) -> CellResult:
    """Two tests compile jit_f: one at float32[4] in a set's order, one at complex64[2] with an address baked in."""
    first = _run(tmp, 1, [(_key("1", T_A, ("float32[4]",)), ORDERED),
                          (_key("2", T_COMPLEX, ("complex64[2]",)), _COMPLEX.replace("ADDRESS", "140234567890123"))],
                 [T_A, T_COMPLEX])
    later = _run(tmp, 2, [(_key("3", T_COMPLEX, ("complex64[2]",)), _COMPLEX.replace("ADDRESS", "140299999990123")),
                          (_key("4", T_A, ("float32[4]",)), REORDERED)], [T_A, T_COMPLEX])
    return _cell([first, later])


def test_each_moved_key_is_diffed_against_its_own_tests_module_at_its_types(tmp_path):
    cell = _two_tests(tmp_path)
    compared = function_evidence(tmp_path, cell)["jit_f"]
    assert [(e.test, e.arguments, e.cause) for e in compared] == [  # type: ignore[union-attr]
        (T_COMPLEX, "complex64[2]", Cause.ADDRESS), (T_A, "float32[4]", Cause.ORDER)]
    section = "\n".join(per_test_section([cell], {cell.spec.key: function_evidence(tmp_path, cell)}))
    assert f"  - at complex64\\[2\\] in `{T_COMPLEX}`; run 2 against run 1: what differs is a hex address" \
        in section, section
    assert f"  - at float32\\[4\\] in `{T_A}`; run 2 against run 1: the differing lines hold the " \
        "same tokens in another order" in section, section


def test_the_report_diffs_the_moved_key_against_its_own_counterpart(tmp_path):
    cell = _two_tests(tmp_path)
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    evidence = report[report.index("## Evidence"):]
    assert "Likely cause (`address`)" in evidence, evidence
    assert "tensor<4xf32>" not in evidence  # never diffed against the other test's module of other shapes


def test_a_test_that_never_compiled_it_at_these_types_in_run_1_is_said_not_diffed(tmp_path):
    first = _run(tmp_path, 1, [(_key("1", T_A, ("float32[4]",)), ORDERED)], [T_A, T_B])
    later = _run(tmp_path, 2, [(_key("1", T_A, ("float32[4]",), Outcome.HIT), ORDERED),
                               (_key("5", T_B, ("float32[4]",)), REORDERED)], [T_A, T_B])
    # with no control, a function run 1 never compiled in this test is new input (never paired with T_A's)
    assert _cell([first, later]).verdict == Verdict.NEW_INPUT
    # the controls say the hash seed decides whether test_b compiles it: a moved key with no counterpart
    def again(index: int, keys: list[LoggedKey]) -> RunRecord:
        return RunRecord(index, index, 0, 1.0, [], keys=RunLog(keys), tests={T_A: "passed", T_B: "passed"})
    controls = [again(1, [_key("1", T_A, ("float32[4]",), Outcome.HIT)]) if n % 2 == 0 else
                again(2, [_key("1", T_A, ("float32[4]",), Outcome.HIT), _key("5", T_B, ("float32[4]",), Outcome.HIT)])
                for n in range(5)]
    cell = _cell([first, later], controls)
    assert cell.verdict == Verdict.REPRODUCED and cell.attribution is None
    [item] = function_evidence(tmp_path, cell)["jit_f"]
    assert item.why == f"run 1 never compiled it at these types in this test (it did in {T_A}, another test: " \
        "not compared)", item  # type: ignore[union-attr]
    section = "\n".join(per_test_section([cell], {cell.spec.key: function_evidence(tmp_path, cell)}))
    assert "run 1 never compiled it at these types in this test" in section


def test_dumps_pair_with_keys_in_order_and_a_recompiled_key_is_one_text(tmp_path):
    k1, k2 = _key("1", T_A, ("float32[4]",)), _key("2", T_COMPLEX, ("complex64[2]",))
    run = _run(tmp_path, 1, [(k1, ORDERED), (k2, _COMPLEX), (k1, ORDERED)], [T_A])  # k1 compiled again
    run = RunRecord(1, 1, 0, 1.0, [], keys=RunLog([k1, k2]), log="logs/run-01.log")
    assert keyed_texts(tmp_path, run, "jit_f") == {k1.key: ORDERED, k2.key: _COMPLEX}
    cut = RunRecord(1, 1, 0, 1.0, [], keys=RunLog([k1]), log="logs/run-01.log")  # two texts, one key: no guess
    assert keyed_texts(tmp_path, cut, "jit_f") == {}


_CONST = """module @jit_g {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<VALUE> : tensor<3xf32>
    %0 = stablehlo.add %arg0, %cst : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""


def test_a_module_whose_constants_alone_differ_reads_constant_as_its_likely_cause():
    """What differs said `only constants differ` while the likely cause said `unknown`: they agree now."""
    diff = ["-    %cst = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>",
            "+    %cst = stablehlo.constant dense<[4.0, 5.0, 6.0]> : tensor<3xf32>"]
    assert likely_cause(diff) == Cause.CONSTANT
    ev = compare_runs("jit_g", RunRecord(1, 1, 0, 1.0, []), RunRecord(2, 2, 0, 1.0, []),
                      _CONST.replace("VALUE", "[1.0, 2.0, 3.0]"), _CONST.replace("VALUE", "[4.0, 5.0, 6.0]"))
    assert ev.cause == Cause.CONSTANT and what_differs(ev).startswith("only constants differ")


_STATIC = """module @jit_tile attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<RESULTxf32> {jax.result_info = ""}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<NROWx3xf32>
    %1 = stablehlo.reshape %0 : (tensor<NROWx3xf32>) -> tensor<RESULTxf32>
    return %1 : tensor<RESULTxf32>
  }
}
"""


def _static_run(tmp: Path, index: int, rows: int) -> RunRecord:
    """A run whose test tiles a float32[3] `rows` times (a static argument drawn at random), as read_run leaves it."""
    dump = tmp / "logs" / f"run-0{index}.ir"
    dump.mkdir(parents=True)
    (dump / "jax_ir0_jit_tile_compile.mlir").write_text(_STATIC.replace("RESULT", str(3 * rows)).replace("NROW", str(rows)))
    k = LoggedKey("jit_tile", f"jit_tile-{str(rows) * 64}"[:73], Outcome.WRITTEN,
                  components={"computation": str(rows) * 64}, tests=(T_B,), arg_types=("float32[3]",))
    keys = with_result_types([k], dump)
    return RunRecord(index, index, 0, 1.0, [k.key], keys=RunLog(keys), log=f"logs/run-0{index}.log",
                     tests={T_B: "passed"})


def _control(rows: int, tmp: Path, of: int = 1) -> RunRecord:
    """A cause control (run `of`'s seed again) that tiled `rows` times: its run's own size when the hash seed decides
    the results (a set-named mesh's shard shapes); another when the program draws it (a random static size)."""
    return _static_run(tmp / f"control-{of}-{rows}", of, rows)


def _seed_controls(tmp: Path, first_rows: int, later_rows: int, later: int = 2) -> list[RunRecord]:
    """Run 1's seed three times and run `later`'s twice, each giving its run's own size again (the hash seed's)."""
    return [_control(first_rows, tmp / f"c{n}", 1) if n % 2 == 0 else _control(later_rows, tmp / f"c{n}", later)
            for n in range(5)]


def test_other_result_types_at_run_1s_argument_types_are_new_input_only_where_the_controls_say_program(tmp_path):
    """A static size drawn at random gives other result types at the same argument types, and so does a mesh whose
    axis names come from a set (its shards' shapes follow the hash seed: the seed's own bug class). The cause controls
    tell them apart: a run's own seed again drew another size (the program's) -> new input, certain; run 1's seed and
    run 2's, each again, gave their runs' sizes every time (the hash seed's, bound 0.035) -> a moved key, reproduced;
    one control of run 1's seed alone agreeing bounds nothing (a coin agrees half the time) -> not decided; no control
    made (or it failed) -> a moved key (never hidden, exit 0)."""
    runs = [_static_run(tmp_path, 1, 2), _static_run(tmp_path, 2, 5)]
    assert runs[0].keys is not None and runs[0].keys.keys[0].result_types == ("tensor<6xf32>",)
    moved = runs[1].keys.keys[0].key  # type: ignore[union-attr]
    program = judge(runs, controls=controls_keys([_control(7, tmp_path / "p")]))
    assert program.verdict == Verdict.NEW_INPUT, program.reason
    assert program.comparison is not None and program.comparison.new == {} and program.comparison.new_input == {
        2: {"jit_tile": [moved]}}
    assert program.reason.startswith("jit_tile at (float32[3], -> tensor<15xf32>) (run 2, t.py::test_b): a control "
                                     "with run 1's own hash seed computed another key"), program.reason
    seed = judge(runs, controls=controls_keys(_seed_controls(tmp_path / "s", 2, 5)))
    assert seed.verdict == Verdict.REPRODUCED, seed.reason
    assert seed.comparison is not None and seed.comparison.new == {2: {"jit_tile": [moved]}}
    assert seed.comparison.seed_moved == {moved} and seed.comparison.new_input == {}
    (decision,) = seed.comparison.decisions
    assert (decision.moved, decision.controls, round(decision.bound, 5)) == (Moved.HASH_SEED, 5, 0.03456)
    coincided = judge(runs, controls=controls_keys([_control(2, tmp_path / "one")]))
    assert coincided.comparison is not None and coincided.comparison.seed_moved == frozenset()  # not decided
    assert coincided.comparison.decisions[0].moved == Moved.UNDECIDED
    failed = RunRecord(1, 1, 1, 1.0, [], keys=_control(7, tmp_path / "f").keys)
    for controls in ([], [failed]):
        j = judge(runs, controls=controls_keys(controls))
        assert j.verdict == Verdict.REPRODUCED and j.comparison is not None and j.comparison.new_input == {}, j.reason
    same = [_static_run(tmp_path / "again", 1, 2), _static_run(tmp_path / "again", 2, 2)]
    same[1] = RunRecord(2, 2, 0, 1.0, [], keys=RunLog([LoggedKey(  # the same results, another key
        "jit_tile", "jit_tile-" + "9" * 64, Outcome.WRITTEN, components={"computation": "9" * 64}, tests=(T_B,),
        arg_types=("float32[3]",), result_types=("tensor<6xf32>",))]), tests={T_B: "passed"})
    assert judge(same).verdict == Verdict.REPRODUCED  # no control: a moved key
    # run 1's seed again computed yet another key: the program's own randomness baked in, new input
    assert judge(same, controls=controls_keys([_control(7, tmp_path / "q")])).verdict == Verdict.NEW_INPUT


def test_a_cell_finished_with_its_controls_reads_new_input_in_the_table_and_the_first_screen(tmp_path):
    """The cell as finish_cell makes it (Tally.cell with the controls): its verdict, the per-test table's category and
    the first screen's line on the program's randomness, also for the cell read back from results.json."""
    runs = [_static_run(tmp_path, 1, 2), _static_run(tmp_path, 2, 5)]
    control = _control(7, tmp_path)
    tally = Tally(2)
    for run in runs:
        tally.add(run)
    cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 1, None), [], {}, controls=[control])
    cell.seed_control = control
    assert cell.verdict == Verdict.NEW_INPUT, cell.reason
    for shown in (cell, replace(cell, runs=list(cell.runs))):  # the second derives its comparison again
        shown.comparison = None if shown is not cell else shown.comparison
        [miss] = cell_findings(shown).misses
        assert (miss.category, miss.arg_types) == (Category.NEW_INPUT, [["float32[3]", "-> tensor<15xf32>"]])
        [line] = first_screen([shown])[2:]
        assert ("`jit_tile`: the program's own randomness moved it, not the hash seed (a control with run 1's own "
                "hash seed computed another key)") in line, line
        assert "**make what the program draws the same every start (seed its generators)" in line, line


def test_the_result_types_of_an_entry_point_are_read_from_its_signature_line():
    assert main_results(_COMPLEX.replace("ADDRESS", "1")) == ("tensor<2xcomplex<f32>>",)
    assert main_results(ORDERED) == ("tensor<4xf32>",)
    assert main_results("module @m {\n") == () and main_results('func.func public @main(%arg0: tensor<3xf32>') == ()


def test_a_check_stopped_at_a_key_the_seed_control_calls_new_input_goes_on_with_its_planned_runs(tmp_path):
    """check stops a cell at its first moved key; one at run 1's argument types with other results may turn out new
    input once the control is made: then the planned runs go on (a set-ordered miss in run 3 must not hide behind a
    random static size in run 2). Where the control says the hash seed, the cell stays stopped (a set-named mesh)."""
    for rows, goes_on in ((7, True), (2, False)):
        tally = Tally(6, stop_when_reproduced=True)
        for run in [_static_run(tmp_path / str(rows), 1, 2), _static_run(tmp_path / str(rows), 2, 5)]:
            tally.add(run)
        assert tally.stop_now()  # no control yet: a moved key
        tally.controls = [_control(7, tmp_path / str(rows))] if goes_on else _seed_controls(tmp_path / str(rows), 2, 5)
        assert tally.stop_now() is not goes_on
        if not goes_on:  # stopped at 2 of 6 runs, reproduced (never "only 2 of 6 runs were made")
            cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 1, None), [], {})
            assert cell.verdict == Verdict.REPRODUCED, cell.reason


def _dumped_run(tmp: Path, name: str, index: int, compiled: list[tuple[LoggedKey, str]], tests: list[str]) -> RunRecord:
    """A run that lowered each key's module in order (hits too: JAX dumps before it looks in the cache)."""
    dump = tmp / "logs" / f"{name}-0{index}.ir"
    dump.mkdir(parents=True)
    for n, (k, text) in enumerate(compiled):
        (dump / f"jax_ir{n}_{k.module}_compile.mlir").write_text(text)
    keys = [k for k, _ in compiled]
    return RunRecord(index, index, 0, 1.0, [k.key for k in keys if k.outcome == Outcome.WRITTEN], keys=RunLog(keys),
                     log=f"logs/{name}-0{index}.log", tests=dict.fromkeys(tests, "passed"))


def _g(tag: str, value: str, outcome: Outcome = Outcome.WRITTEN) -> tuple[LoggedKey, str]:
    k = LoggedKey("jit_g", f"jit_g-{(tag * 64)[:64]}", outcome, components={"computation": (tag * 64)[:64]},
                  tests=(T_B,), arg_types=("float32[3]",))
    return k, _CONST.replace("VALUE", value)


def test_the_headline_names_the_hash_seeds_module_before_the_programs_and_what_differs_agrees(tmp_path):
    """Issue 60.5: the title named the module whose key the program's own randomness moved in every run (`jit_g`, a
    random constant), not the one whose key followed the hash seed (`jit_f`, in one run of two), and "What differs"
    below it spoke of the other module than the per-test table's first row. The seed control says which is which:
    the title, the verdict's reason, the Evidence and "What differs" name the hash seed's first, as the first screen."""
    f1, f2 = _key("1", T_A, ("float32[4]",)), _key("2", T_A, ("float32[4]",))
    runs = [_dumped_run(tmp_path, "run", 1, [(f1, ORDERED), _g("a", "[1.0, 2.0, 3.0]")], [T_A, T_B]),
            _dumped_run(tmp_path, "run", 2, [(LoggedKey(f1.module, f1.key, Outcome.HIT, components=f1.components,
                                                         tests=f1.tests, arg_types=f1.arg_types), ORDERED),
                                             _g("b", "[4.0, 5.0, 6.0]")], [T_A, T_B]),
            _dumped_run(tmp_path, "run", 3, [(f2, REORDERED), _g("c", "[7.0, 8.0, 9.0]")], [T_A, T_B])]
    # run 1's seed and run 3's, again: jit_f's keys come back every time, jit_g's constant moves again
    controls = [_dumped_run(tmp_path, f"control{n}", of, [(f1 if of == 1 else f2, ORDERED if of == 1 else REORDERED),
                                                           _g(tag, "[0.5, 0.5, 0.5]")], [T_A, T_B])
                for n, (of, tag) in enumerate([(1, "d"), (3, "e"), (1, "f"), (3, "g"), (1, "h")])]
    tally = Tally(3)
    for r in runs:
        tally.add(r)
    cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 1, None), [n for r in runs for n in r.new_entries], {},
                      controls=controls)
    cell.seed_control, *cell.more_controls = controls
    assert cell.verdict == Verdict.REPRODUCED and cell.reason.startswith("jit_f: a new key in run 3"), cell.reason
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    title = report.splitlines()[0]
    assert "`jit_f` got a persistent-cache key the first run did not compute in 1 of 2" in title, title
    todo = report[report.index("## What to do"):report.index("## What missed")]
    assert todo.splitlines()[2].startswith(f"- `{T_A}`: `jit_f`: its key follows the hash seed"), todo
    table = report[report.index("## What missed"):report.index("## Results")]
    assert "| `jit_f` | moved key: hash seed |" in table or "moved key: hash seed" in table.splitlines()[4], table
    what = next(line for line in report.splitlines() if line.startswith("- What differs: "))
    assert "`order`" in what, what
    assert "Likely cause (`order`)" in report[report.index("## Evidence"):]
def test_a_function_compiled_twice_at_one_types_pairs_its_nth_key_with_the_first_runs_nth(tmp_path):
    """Issue 63 item 3: a training step compiled twice at the same argument types (its first call, then the state it
    returned) has two keys a run. The later run's second key sorted before its first (the digests' order) and was
    diffed against the first run's first module: the two calls' own difference read `unknown` (the Flax training
    reduction's bad cell, one CI run of three). Each new key now pairs with the first run's key compiled at its place,
    and the first compiled is the one shown."""
    other = _F32.replace("FIRST", "subtract").replace("SECOND", "divide")
    other_reordered = _F32.replace("FIRST", "divide").replace("SECOND", "subtract")
    types = ("float32[4]",)
    first = _run(tmp_path, 1, [(_key("1", T_A, types), ORDERED), (_key("2", T_A, types), other)], [T_A])
    # run 2's first compilation's key sorts after its second's
    later = _run(tmp_path, 2, [(_key("9", T_A, types), REORDERED), (_key("8", T_A, types), other_reordered)], [T_A])
    cell = _cell([first, later])
    [item] = function_evidence(tmp_path, cell)["jit_f"]
    assert isinstance(item, Evidence) and item.key_b == later.keys.keys[0].key  # type: ignore[union-attr]
    assert item.key_a == first.keys.keys[0].key and item.cause == Cause.ORDER, item.diff  # type: ignore[union-attr]
    evidence, _ = collect(tmp_path, cell)
    assert isinstance(evidence, Evidence) and evidence.cause == Cause.ORDER, evidence
    # and where the later run compiled only its second call anew, that one is the first run's second
    hit = msgspec.structs.replace(first.keys.keys[0], outcome=Outcome.HIT)  # type: ignore[union-attr]
    again = _run(tmp_path, 3, [(hit, ORDERED), (_key("7", T_A, types), other_reordered)], [T_A])
    [item] = function_evidence(tmp_path, _cell([first, again]))["jit_f"]
    assert isinstance(item, Evidence) and item.key_a == first.keys.keys[1].key  # type: ignore[union-attr]
    assert item.cause == Cause.ORDER, item.diff
_NOISE = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<[NOISE]> : tensor<4xf32>
    %0 = stablehlo.add %arg0, %cst : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_a_function_moved_in_many_tests_gives_two_comparisons_and_counts_the_rest(tmp_path):
    """Issue 60.5 on distrax's own tests: a jitted KL divergence closed over unseeded random arrays moved in every
    test that compiled it, and each (test, argument types) got its own line and diff: report.md was 36 KB for two
    files on two releases. Now two lines a function (one past half a cell's budget), two diffs a cell, the rest
    of its four compared counted by what differs."""
    tests = [f"distrax/_src/distributions/normal_test.py::NormalTest::test_kl_case_{n}" for n in range(12)]
    def noise(run: int, n: int) -> str:
        return _NOISE.replace("NOISE", ", ".join(f"0.{run}{n}{i}4567891" for i in range(4)))
    first = _run(tmp_path, 1, [(_key(f"a{n:02x}", t, ("float32[4]",)), noise(1, n)) for n, t in enumerate(tests)], tests)
    later = _run(tmp_path, 2, [(_key(f"b{n:02x}", t, ("float32[4]",)), noise(2, n)) for n, t in enumerate(tests)],
                 tests)
    cell = _cell([first, later])
    assert len(function_evidence(tmp_path, cell)["jit_f"]) == 4  # report/sources.py's MAX_PAIRS
    section = "\n".join(per_test_section([cell], {cell.spec.key: function_evidence(tmp_path, cell)}))
    assert section.count("  - at float32\\[4\\] in `") == 2, section
    assert section.count("```diff") == 2, section
    assert "  - and 2 more tests or argument types compared: only constants differ" in section, section
    assert len(section.encode()) < 4_000, len(section.encode())


def test_a_suite_with_a_test_failing_in_every_run_gets_its_moved_keys_compared_and_reported(tmp_path):
    """Issue 60.6 on distrax's own tests, 0.4.31: eight Greedy tests fail in every run (pytest's exit status 1 in
    every run) while normal_test's keys move with unseeded random constants. The verdict counts such runs, but
    gathering the evidence kept only runs that exited 0: `harness check` ended in an internal error
    (StopIteration in report/sources.py's collect) and no results were written."""
    from harness.core.records import replace
    failing = "t.py::test_float64"
    def failed(run: RunRecord) -> RunRecord:
        return replace(run, exit_code=1, tests={**run.tests, failing: "failed"},
                       reason="pytest: 1 failed, 1 passed in 1.00s")
    first = failed(_run(tmp_path, 1, [(_key("a1", T_A, ("float32[4]",)), _NOISE.replace("NOISE", "0.1, 0.2, 0.3, 0.4"))],
                        [T_A]))
    later = failed(_run(tmp_path, 2, [(_key("b2", T_A, ("float32[4]",)), _NOISE.replace("NOISE", "0.5, 0.6, 0.7, 0.8"))],
                        [T_A]))
    cell = _cell([first, later])
    assert cell.verdict == Verdict.REPRODUCED, cell.reason
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31"]), [cell],
                               SweepStatus.COMPLETE)
    report = ReportWriter(tmp_path).write(document, [cell]).read_text()
    assert "Likely cause (`constant`)" in report, report
    assert f"`{failing}`" in report
