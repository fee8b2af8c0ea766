"""What moved a key, decided by controls with a stated bound (harness/evidence/controls.py, keys.py, open_cell.py):
the seed's bug class whatever it changes (shapes, the functions compiled), a program's own randomness never
`reproduced`, a control of run 1's seed alone never enough, every module judged inside its own test. Pure logic
and a fake environment; tests/integration/test_cause_controls_integration.py runs real releases."""

from __future__ import annotations

import hashlib
from itertools import product

import pytest

from harness.core.comparison import Moved
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Verdict
from harness.core.runs import ProcessOutcome, RunRecord
from harness.environments.base import Environment
from harness.evidence.controls import CAUSE_BOUND, agreement_bound, decide, next_repeat
from harness.evidence.keys import controls_keys, next_control, observed_keys
from harness.evidence.misses import Category, Follows, suite_findings
from harness.evidence.keys import comparison_of
from harness.measure.cell_runner import CellRunner
from harness.inputs.config import Repro
from harness.results.document import cell_json, read_cell
from harness.verdicts.verdict import judge
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform

SPEC = CellSpec("0.5.0", Platform.CPU, 8, None)


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()



def test_the_bound_is_the_largest_chance_any_draw_agrees_with_every_control():
    assert agreement_bound([1]) == agreement_bound([5]) == 1.0  # one outcome repeated bounds nothing
    assert agreement_bound([1, 1]) == 0.25
    assert agreement_bound([2, 2]) == pytest.approx(1 / 16)
    assert agreement_bound([3, 2]) == pytest.approx(27 * 4 / 5 ** 5)
    assert agreement_bound([3, 2]) < CAUSE_BOUND < agreement_bound([2, 2])
    # no draw of two outcomes does better than the bound says: p^3 (1-p)^2 over a grid of p
    assert max(p ** 3 * (1 - p) ** 2 for p in (i / 1000 for i in range(1001))) <= agreement_bound([3, 2]) + 1e-12


def _sets(*keys: str) -> dict[tuple[str, str], frozenset[str]]:
    return {("jit_f", ""): frozenset(keys)}


def test_a_disagreeing_control_decides_at_once_and_agreeing_ones_only_past_the_bound():
    runs = {1: _sets("a"), 2: _sets("b")}
    assert decide(("jit_f", ""), runs, [(1, _sets("c"))]).moved == Moved.NOT_SEED
    assert decide(("jit_f", ""), runs, [(1, _sets("a")), (2, _sets("b")), (1, _sets("x"))]).disagreed == 1
    agreed = [(1, _sets("a")), (2, _sets("b")), (1, _sets("a")), (2, _sets("b"))]
    assert decide(("jit_f", ""), runs, agreed).moved == Moved.UNDECIDED  # 0.0625 > 0.05
    done = decide(("jit_f", ""), runs, [*agreed, (1, _sets("a"))])
    assert (done.moved, done.controls, done.repeated) == (Moved.HASH_SEED, 5, (1, 2, 1, 2, 1))
    assert decide(("jit_f", ""), runs, [(1, _sets("a"))] * 9).moved == Moved.UNDECIDED  # run 1's seed alone: never


def test_the_controls_alternate_run_1_and_the_later_run_and_stop_when_decided():
    runs, made = {1: _sets("a"), 2: _sets("a"), 3: _sets("b")}, []
    order = []
    while (index := next_repeat({("jit_f", ""): 3}, 1, runs, made)) is not None:
        order.append(index)
        made.append((index, runs[index]))  # the hash seed's program: every control gives its run's keys again
    assert order == [1, 3, 1, 3, 1]
    assert next_repeat({("jit_f", ""): 3}, 1, runs, [(1, _sets("z"))]) is None  # decided: not the seed
    assert next_repeat({("jit_f", ""): 3}, 1, runs, [(1, runs[1])] * 9, most=9) is None  # enough made


T_A, T_B = "t.py::test_a", "t.py::test_b"


def key(module: str, tag: str, types: tuple[str, ...], test: str = "", computation: str = "",
        outcome: Outcome = Outcome.WRITTEN, **components: str) -> LoggedKey:
    comps = {"computation": ((computation or tag) * 64)[:64], "compile_options": "o" * 64, **components}
    return LoggedKey(module, f"{module}-{(tag * 64)[:64]}", outcome, components=comps,
                     tests=(test,) if test else (), arg_types=types)


def run(index: int, *keys: LoggedKey, tests: dict[str, str] | None = None) -> RunRecord:
    return RunRecord(index, 100 + index, 0, 1.0, [k.key for k in keys if k.outcome == Outcome.WRITTEN],
                     keys=RunLog(list(keys)), tests=tests or {})


def again(of: RunRecord, *keys: LoggedKey) -> RunRecord:
    """A control: `of`'s index and seed, its keys as given (hits of its run's, or others)."""
    return RunRecord(of.index, of.seed, 0, 1.0, [], keys=RunLog([LoggedKey(
        k.module, k.key, Outcome.HIT, components=k.components, tests=k.tests, arg_types=k.arg_types) for k in keys]),
        tests=dict(of.tests))


# The set-named mesh on an (8,1) grid: for some seeds the batch is split 8 ways (the shard function at [1,16], and a
# reshard module), for others it stays whole ([8,16], no reshard): new argument types and fewer things, both the
# hash seed's.
SHARDED = (key("jit_shard", "1", ("float32[1,16]",)), key("jit_reshard", "2", ("float32[8,16]",)))
WHOLE = (key("jit_shard", "3", ("float32[8,16]",)),)


def _seed_controls(first: RunRecord, later: RunRecord, first_keys, later_keys) -> list[RunRecord]:
    return [again(first, *first_keys) if n % 2 == 0 else again(later, *later_keys) for n in range(5)]


@pytest.mark.parametrize("sharded_first", [True, False], ids=["run 1 sharded", "run 1 whole"])
def test_a_set_named_mesh_is_reproduced_whichever_order_run_1_drew(sharded_first):
    one, other = (SHARDED, WHOLE) if sharded_first else (WHOLE, SHARDED)
    runs = [run(1, *one), run(2, *other)]
    # no control yet: new argument types (new input), or fewer things (unsupported), never reproduced
    assert judge(runs).verdict in (Verdict.NEW_INPUT, Verdict.UNSUPPORTED)
    assert next_control(observed_keys(runs), []) == 1  # run 1's seed first
    controls = _seed_controls(runs[0], runs[1], one, other)
    j = judge(runs, controls=controls_keys(controls))
    assert j.verdict == Verdict.REPRODUCED, j.reason
    assert j.comparison is not None and j.comparison.fewer == {}  # fewer things, explained by the seed
    assert all(d.moved == Moved.HASH_SEED for d in j.comparison.decisions)
    assert next_control(observed_keys(runs), controls_keys(controls)) is None
    misses = suite_findings(runs, j.comparison).misses
    assert misses and all(m.category == Category.MOVED_KEY for m in misses)
    assert all(m.follows == Follows.HASH_SEED and m.bound == pytest.approx(agreement_bound([3, 2])) for m in misses)


@pytest.mark.parametrize("coincide", list(product([False, True], repeat=2)))
def test_an_unseeded_coin_is_new_input_whatever_the_controls_draw_but_one_agreeing_pair(coincide):
    """The coin decides sharded or whole: run 1's seed again coincides half the time, run 2's too; a control that
    drew the other side decides it (certain); only every control coinciding (at most the bound) could mislead."""
    runs = [run(1, *SHARDED), run(2, *WHOLE)]
    first_again = SHARDED if coincide[0] else WHOLE
    later_again = WHOLE if coincide[1] else SHARDED
    controls = [again(runs[0], *first_again), again(runs[1], *later_again)]
    j = judge(runs, controls=controls_keys(controls[:1] if not coincide[0] else controls))
    if coincide == (True, True):
        assert j.comparison is not None and j.comparison.decisions[0].moved == Moved.UNDECIDED  # 0.25: not enough
    else:
        assert j.verdict == Verdict.NEW_INPUT, j.reason
        assert "the program's own randomness moved it" in j.reason


def test_random_constants_at_run_1s_types_are_new_input_and_a_per_process_value_reproduced():
    noise1, noise2 = key("jit_noise", "1", ("float32[3]",)), key("jit_noise", "2", ("float32[3]",))
    runs = [run(1, noise1), run(2, noise2)]
    moved_again = key("jit_noise", "3", ("float32[3]",))
    assert judge(runs, controls=controls_keys([again(runs[0], moved_again)])).verdict == Verdict.NEW_INPUT
    # only compile_options moved (the computation is the same): JAX's per-process value, a moved key
    path1 = key("jit_p", "4", ("float32[3]",), computation="c", compile_options="p" * 64)
    path2 = key("jit_p", "5", ("float32[3]",), computation="c", compile_options="q" * 64)
    path3 = key("jit_p", "6", ("float32[3]",), computation="c", compile_options="r" * 64)
    runs = [run(1, path1), run(2, path2)]
    j = judge(runs, controls=controls_keys([again(runs[0], path3)]))
    assert j.verdict == Verdict.REPRODUCED, j.reason
    [miss] = suite_findings(runs, j.comparison).misses
    assert (miss.category, miss.follows, miss.components) == (Category.MOVED_KEY, Follows.PROCESS, ["compile_options"])


def test_a_key_is_never_paired_with_another_tests_module():
    """lineax on 0.10.2: test_b compiled jit__squeeze at types run 1 compiled only in test_a: no moved key of
    test_a's, and no diff of one against the other."""
    both = {T_A: "passed", T_B: "passed"}
    in_a = key("jit__squeeze", "1", ("float32[3,1]",), T_A)
    runs = [run(1, in_a, tests=both), run(2, again(run(1, in_a), in_a).keys.keys[0],
                                            key("jit__squeeze", "2", ("float32[3,1]",), T_B), tests=both)]
    j = judge(runs)
    assert j.verdict == Verdict.NEW_INPUT and j.attribution is None, j.reason
    [miss] = suite_findings(runs, j.comparison).misses
    assert miss.components == [] and miss.tests == [T_B]


def test_controls_are_kept_in_results_json_and_an_old_single_control_still_reads():
    runs = [run(1, *SHARDED), run(2, *WHOLE)]
    controls = _seed_controls(runs[0], runs[1], SHARDED, WHOLE)
    j = judge(runs, controls=controls_keys(controls))
    cell = CellResult(SPEC, j.verdict, j.keys, runs, j.reason, seed_control=controls[0], more_controls=controls[1:])
    back = read_cell(cell_json(cell))
    assert len(back.controls) == 5 and comparison_of(back.runs, back.controls).seed_moved == j.comparison.seed_moved
    old = cell_json(cell)
    del old["more_controls"]  # a results folder of the release before: one control of run 1's seed
    single = read_cell(old)
    assert [c.index for c in single.controls] == [1]
    assert comparison_of(single.runs, single.controls).decisions[0].moved == Moved.UNDECIDED


class SetNamedMesh(Environment):
    """Writes and logs keys as JAX does for a program whose mesh is named from a set: odd hash seeds shard the batch
    (two modules), even ones keep it whole (one); `coin`: an unseeded coin instead (every process its own draw)."""

    jax_version = "0.5.0"

    def __init__(self, coin: bool = False):
        self.coin, self.runs = coin, 0

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        self.runs += 1
        sharded = (self.runs * 7919 % 3 == 0) if self.coin else int(env["PYTHONHASHSEED"]) % 2 == 1
        modules = [("jit_shard", "float32[1,16]"), ("jit_reshard", "float32[8,16]")] if sharded else \
            [("jit_shard", "float32[8,16]")]
        lines = []
        for module, types in modules:
            digest = h(module + types)
            lines.append(f"DEBUG:jax._src.cache_key:get_cache_key hash of serialized computation: {h(types)}")
            lines.append(f"DEBUG:jax._src.cache_key:get_cache_key hash after serializing computation: {digest}")
            entry = cache_dir / f"{module}-{digest}-cache"
            if entry.exists():
                entry.read_bytes()  # (as JAX loads it: the folder's watch sees the read)
                lines.append(f"DEBUG:jax._src.compiler:Persistent compilation cache hit for '{module}' with key "
                             f"'{module}-{digest}'")
            else:
                lines.append(f"DEBUG:jax._src.compiler:PERSISTENT COMPILATION CACHE MISS for '{module}' with key "
                             f"'{module}-{digest}'")
                lines.append(f"DEBUG:jax._src.compiler:Writing {module} to persistent compilation cache with key "
                             f"'{module}-{digest}'")
                entry.write_text("x")
        log_path.write_text("\n".join(lines) + "\n")
        return ProcessOutcome(0, 0.01)

    def describe(self):
        return {"backend": "set-named"}


@pytest.mark.parametrize("seeds", [[11, 12, 13, 14], [12, 11, 14, 13]], ids=["run 1 sharded", "run 1 whole"])
def test_a_cell_makes_controls_one_at_a_time_until_decided(tmp_path, seeds):
    script = tmp_path / "s.py"
    script.write_text("")
    environment = SetNamedMesh()
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10)
    cell = runner.run(SPEC, seeds, tmp_path / "cache", tmp_path / "logs", results_root=tmp_path,
                      stop_when_reproduced=True)
    assert cell.verdict == Verdict.REPRODUCED, cell.reason
    assert [c.index for c in cell.controls] == [1, 2, 1, 2, 1] and [c.seed for c in cell.controls][:2] == seeds[:2]
    assert len(cell.runs) == 2  # stopped at run 2's miss, then five controls, one at a time
    assert sorted(p.name for p in tmp_path.iterdir() if "seed-control" in p.name) == ["cache.seed-control"]


def test_a_coin_reads_new_input_and_its_planned_runs_go_on(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    environment = SetNamedMesh(coin=True)
    runner = CellRunner(environment, Repro("s", script, builtin=False), 10)
    cell = runner.run(SPEC, [11, 12, 13, 14], tmp_path / "cache", tmp_path / "logs", results_root=tmp_path,
                      stop_when_reproduced=True)
    assert cell.verdict == Verdict.NEW_INPUT, cell.reason
    assert len(cell.runs) == 4 and 1 <= len(cell.controls) < 5


def test_the_table_says_the_cause_bound_beside_the_miss_bound():
    from harness.verdicts.cell_facts import cell_facts
    runs = [run(1, *SHARDED), run(2, *WHOLE)]
    controls = _seed_controls(runs[0], runs[1], SHARDED, WHOLE)
    j = judge(runs, controls=controls_keys(controls))
    cell = CellResult(SPEC, j.verdict, j.keys, runs, j.reason, seed_control=controls[0], more_controls=controls[1:])
    assert cell_facts(cell).bound == "0.035 (cause: hash seed)"
    alone = CellResult(SPEC, Verdict.REPRODUCED, j.keys, runs, j.reason)  # no control made: nothing to bound
    assert cell_facts(alone).bound == "-"


def test_a_key_only_the_folder_saw_makes_no_control_and_stays_a_moved_key():
    """A child without the hook writes a set-ordered entry no account names: no control can say what computed it."""
    from harness.evidence.keys import RunKeys
    from harness.core.listing import Entry
    mine = Entry("jit_f", "jit_f-" + "1" * 64)
    child = Entry("jit_child", "jit_child-" + "2" * 64)
    runs = [RunKeys(1, frozenset({mine}), frozenset({mine})),
            RunKeys(2, frozenset({child}), frozenset({mine}))]  # run 2 hit jit_f; the folder saw jit_child written
    assert next_control(runs, []) is None
    comparison = comparison_of_keys(runs)
    assert comparison.new == {2: {"jit_child": [child.key]}} and comparison.decisions == ()


def comparison_of_keys(runs):
    from harness.evidence.keys import compare_with_first_run
    return compare_with_first_run(runs, [runs[0]])  # a control given: still nothing to decide
