"""Seed choice and miss bounds: pure parts with made-up probes, and the real probe with this interpreter."""

from __future__ import annotations

import itertools
import json

import msgspec
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from harness.core.records import plain
from harness.environments.local import LocalEnvironment
from harness.environments.process import clean_environment
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform
from harness.core.confidence import (SHOWN_ORDERS, SeedPlan, SeedStrategy, SetCover, _orders, miss_probability_random,
                                     runs_for_target, weak_bound_phrase)
from harness.core.ir_names import HLO_BEGIN, HLO_END, lowered_orders
from harness.inputs.process_variables import ir_dump_dir
from harness.measure.seeds import (DEFAULT_CANDIDATES, OrderObserver, Probe, Reseeder, SeedPlanner, SeedWindow,
                                   choose_seeds, chosen_plan, covers, name_sets, run_probe)


def test_random_seed_arithmetic_matches_the_two_ordering_worst_case():
    assert miss_probability_random(5) == 1 / 16  # "five runs all agree one time in sixteen"
    assert runs_for_target(1e-3) == 11  # 2^-10 < 1e-3 < 2^-9
    assert miss_probability_random(11) <= 1e-3 < miss_probability_random(10)
    assert runs_for_target(1e-3, orderings=24) == 4


def test_name_sets_start_with_the_full_set_and_hold_every_subset_of_two_or_more():
    sets = name_sets(("a", "b", "c", "d"))
    assert sets[0] == ("a", "b", "c", "d")
    assert len(sets) == 1 + 4 + 6
    assert ("b", "d") in sets
    assert name_sets(("a",)) == []


def _probe(orderings: dict[int, list[str]]) -> Probe:
    return Probe("cpython test", (("a", "b"),), {s: (tuple(o),) for s, o in orderings.items()})


def test_two_names_need_the_one_seed_that_reverses_them():
    probe = _probe({1: ["a", "b"], 2: ["a", "b"], 3: ["a", "b"], 4: ["b", "a"], 5: ["b", "a"]})
    assert choose_seeds(probe) == [1, 4]
    plan = chosen_plan(probe)
    assert plan.seeds == [1, 4]
    assert plan.covers[0].pairs_in_both_orders is True
    assert plan.miss_bound == 0.0
    # Two seeds, however chosen, are two draws for any other hash-order dependence: 2^(1-2).
    assert plan.miss_bound_other == 0.5
    data = plain(plan)
    assert data["strategy"] == "chosen" and data["seeds"] == [1, 4]  # the bounds and assumptions: derived, not written
    assert plan.assumes and plan.target == 1e-3


def test_an_order_never_seen_among_candidates_is_reported_and_gives_no_certainty():
    probe = _probe({1: ["a", "b"], 2: ["a", "b"]})
    plan = chosen_plan(probe)
    assert len(plan.seeds) == 2  # still two runs
    assert plan.covers[0].pairs_in_both_orders is False
    assert plan.miss_bound > 1e-3


def test_random_extras_fill_up_to_runs_and_tighten_the_other_mechanism_bound():
    probe = _probe({1: ["a", "b"], 2: ["b", "a"]})
    plan = chosen_plan(probe, extra_random=10)
    assert plan.seeds[:2] == [1, 2] and len(plan.seeds) == 12 and len(set(plan.seeds)) == 12
    assert plan.miss_bound_other == 2 ** -11  # 12 distinct seeds, the 2 chosen ones included


def test_a_user_script_falls_back_to_random_seeds_enough_for_the_target(tmp_path):
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": "x"})
    plan = SeedPlanner().plan(CellSpec("0.4.28", Platform.CPU, 8, None), env, tmp_path)
    assert plan.strategy == SeedStrategy.RANDOM and len(plan.seeds) == 11
    assert plan.miss_bound <= 1e-3 and "user script" in plan.note and "worst case" in plan.assumes


def _order_in_fresh_interpreter(seed: int, names: tuple[str, ...]) -> tuple[str, ...]:
    code = f"print(','.join(set({names!r}) - set()))"
    env = clean_environment({"PYTHONHASHSEED": str(seed)})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return tuple(out.stdout.strip().split(","))


def test_the_real_probe_agrees_with_fresh_interpreters_and_covers_both_orders(tmp_path):
    names = ("a", "b", "c", "d")
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})
    probe = run_probe(env, name_sets(names), 16, tmp_path, timeout_s=120)
    assert sorted(probe.orderings) == list(range(1, 17))
    # What the probe says is what a run with that seed sees (a probe ignoring PYTHONHASHSEED would not).
    for seed in (1, 2, 7):
        assert probe.orderings[seed][0] == _order_in_fresh_interpreter(seed, names)
    assert len({probe.orderings[s][0] for s in probe.orderings}) > 2
    seeds = choose_seeds(probe)
    assert all(c.pairs_in_both_orders for c in covers(probe, seeds))
    assert 2 <= len(seeds) <= 4


def test_the_planner_probes_once_per_interpreter(tmp_path, monkeypatch):
    import harness.measure.seeds as seeds

    calls = []
    real = seeds.run_probe

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(seeds, "run_probe", counting)
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})
    planner = SeedPlanner(candidates=8)
    spec = CellSpec("0.4.28", Platform.CPU, 2, Mesh((2, 1), ("x", "y")))
    first = planner.plan(spec, env, tmp_path)
    second = planner.plan(spec, env, Path(tmp_path / "again"))
    assert first.seeds == second.seeds and len(calls) == 1


def test_runs_is_a_ceiling_even_when_covering_every_pair_order_needs_more():
    """Eight axis names can need more chosen seeds than `runs`: the plan stays within runs and says
    so (in the line printed before the cell's runs), with the weaker bound that follows."""
    import random

    sets = name_sets(tuple("abcdefgh"))
    rng = random.Random(0)
    probe = Probe("cpython test", tuple(sets),
                  {s: tuple(tuple(rng.sample(names, len(names))) for names in sets) for s in range(1, 33)})
    needed = len(choose_seeds(probe))
    assert needed > 4
    plan = chosen_plan(probe, extra_random=0, limit=4)
    assert len(plan.seeds) == 4 and plan.miss_bound > 0
    assert f"needs {needed} chosen seeds, more than runs: 4" in plan.summary()
    assert len(chosen_plan(probe, extra_random=3, limit=needed + 3).seeds) == needed + 3


def test_venvs_of_one_interpreter_share_a_probe_and_other_interpreters_do_not(tmp_path):
    from harness.measure.seeds import interpreter_key

    version = sys.version.split()[0]
    for name in ("venv-a", "venv-b"):  # what `uv venv` makes: bin/python, a link to the interpreter
        (tmp_path / name / "bin").mkdir(parents=True)
        (tmp_path / name / "bin" / "python").symlink_to(sys.executable)
    a = LocalEnvironment(str(tmp_path / "venv-a" / "bin" / "python"), {"jax": "none", "python": version})
    b = LocalEnvironment(str(tmp_path / "venv-b" / "bin" / "python"), {"jax": "none", "python": version})
    assert interpreter_key(a) == interpreter_key(b)
    other = tmp_path / "other-python"
    other.write_text("#!/bin/sh\n")
    assert interpreter_key(LocalEnvironment(str(other), {"jax": "none", "python": version})) != interpreter_key(a)


def _lowered(*orders: tuple[str, ...]) -> list[str]:
    """Module texts that quote these names together, one place each (a shard_map's names)."""
    return ["".join(f'loc("[({", ".join(repr(n) for n in o)}), None]")' for o in orders)]


def test_lowered_orders_reads_each_place_where_the_names_are_quoted_together():
    text = ('sdy.mesh @mesh = <["model"=4, "fsdp"=2]> loc("[(\'fsdp\', \'model\'), None]") '
            'jax.result_info = "[(\'model\',), (\'fsdp\',)]"')
    assert lowered_orders([text], ("fsdp", "model")) == (("model", "fsdp"), ("fsdp", "model"), ("model", "fsdp"))
    assert lowered_orders([text], ("fsdp", "other")) == ()


def test_an_order_the_probe_predicted_but_the_run_did_not_lower_is_chosen_again():
    # Seed 1 puts both names in one slot: predicted a,b (the probe's insertion), lowered b,a (the program's).
    probe = _probe({1: ["a", "b"], 2: ["a", "b"], 3: ["b", "a"], 4: ["b", "a"]})
    observer = OrderObserver(probe)
    observer.observe(3, _lowered(("b", "a")))
    assert observer.next_seeds([3], 3)[0] == 1  # the probe's seed for a,b (then seeds that keep both even)
    observer.observe(1, _lowered(("b", "a")))  # ... which lowered b,a again
    (cover,) = observer.covers([3, 1])
    assert cover.orderings_run == ["b,a"] and cover.orderings_predicted == ["b,a", "a,b"]
    assert cover.pairs_in_both_orders is False and cover.pair_orders_not_seen == ["a,b"]
    # the next seed for a,b; then one that keeps the predictions even, in case 2 is mispredicted too
    assert observer.next_seeds([3, 1], 2) == [2, 4]
    observer.observe(2, _lowered(("a", "b")))
    (cover,) = observer.covers([3, 1, 2])
    assert cover.pairs_in_both_orders is True and not cover.pair_orders_not_seen
    assert observer.next_seeds([3, 1, 2], 2) == []  # covered: the rest are random


def test_a_place_that_never_changes_order_covers_nothing():
    # A spec written in the source (a,b every run) beside the set's own place (b,a every run).
    probe = _probe({1: ["a", "b"], 2: ["b", "a"]})
    observer = OrderObserver(probe)
    observer.observe(1, _lowered(("a", "b"), ("b", "a")))
    observer.observe(2, _lowered(("a", "b"), ("b", "a")))
    (cover,) = observer.covers([1, 2])
    assert cover.pairs_in_both_orders is False
    assert cover.pair_orders_not_seen == ["a/b (each order only at places that never changed)"]
    assert cover.seeds_predicted_otherwise == 1
    plan = SeedPlan(SeedStrategy.CHOSEN, [1, 2], chosen=[1, 2], covers=observer.covers([1, 2]))
    # Never lowered both ways at one place: either the set's order does not reach the module, or the seed
    # predicted otherwise put both names in one slot (1 in 8).
    assert plan.miss_bound == 1 / 8
    assert "weak: the runs never lowered {a, b} with a and b in another order at any one place" in \
        weak_bound_phrase(plan.bounds, plan)


def test_a_set_the_modules_never_quote_keeps_the_probe_s_prediction():
    probe = _probe({1: ["a", "b"], 2: ["b", "a"]})
    observer = OrderObserver(probe)
    observer.observe(1, ["no names here"])
    observer.observe(2, ["no names here"])
    (cover,) = observer.covers([1, 2])
    assert cover.lowered is False and cover.pairs_in_both_orders is True


def test_the_reseeder_chooses_from_run_1_s_dump_with_this_interpreter(tmp_path):
    """The real probe (this Python) on the recorded 0.4.28 dump: the runs after a random first one get seeds
    predicted to bring every pair order run 1 did not lower, of {a, b} and of {a, b, c, d}."""
    planner = SeedPlanner(runs=None)
    spec = CellSpec("0.4.28", Platform.CPU, 8, None)
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})
    plan = planner.plan(spec, env, tmp_path)
    assert plan.strategy == SeedStrategy.RANDOM and len(plan.seeds) == runs_for_target()
    reseed = planner.reseeder(spec, plan, env, tmp_path)
    first = plan.seeds[0]
    later = reseed(1, first, Path(__file__).parents[1] / "fixtures" / "ir_dump" / "run-01.ir", [first],
                   len(plan.seeds) - 1)
    assert plan.strategy == SeedStrategy.CHOSEN and plan.seeds[1:] == later and len(plan.seeds) == runs_for_target()
    assert plan.chosen[0] == first and len(plan.chosen) >= 2
    # one run lowered so far: not yet every pair both ways, and the bound says so until the runs show it
    assert plan.miss_bound == 1.0 and "each run's orders read back from its module" in plan.note
    assert all(c.lowered for c in plan.covers if len(c.names) == 2)


def test_a_dump_without_names_keeps_the_random_seeds(tmp_path):
    planner = SeedPlanner(runs=4)
    spec = CellSpec("0.4.28", Platform.CPU, 8, None)
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})
    plan = planner.plan(spec, env, tmp_path)
    seeds = list(plan.seeds)
    assert planner.reseeder(spec, plan, env, tmp_path)(1, seeds[0], tmp_path, seeds[:1], 3) == seeds[1:]
    assert plan.strategy == SeedStrategy.RANDOM and "carries no set" in plan.note
    assert SeedPlanner(strategy=SeedStrategy.RANDOM).reseeder(spec, plan, env, tmp_path) is None


def test_a_weak_bound_says_so_and_how_many_runs_make_it_strong():
    from harness.core.confidence import SeedPlan, WEAK_BOUND, weak_bound_phrase
    from harness.measure.seeds import random_plan
    plan = random_plan(4)
    assert plan.miss_bound == 0.125 > WEAK_BOUND
    assert weak_bound_phrase(plan.bounds, plan) == (
        "weak: a regression would read clean with chance up to 0.12 (above 0.05); --runs 6 would make it at most "
        "0.031")
    assert weak_bound_phrase(random_plan(6).bounds, random_plan(6)) == ""
    assert weak_bound_phrase(None, plan) == "" and weak_bound_phrase(plan.bounds, None) == ""
    group_plan = SeedPlan(SeedStrategy.RANDOM, [1, 2], random=[1, 2], ranks=[[1, 3], [2, 4]])  # 4 processes' seeds
    assert "--runs 3 " in weak_bound_phrase(group_plan.bounds, group_plan)


def test_a_bound_above_the_target_says_so_with_the_runs_that_reach_it():
    """Between 1e-3 and WEAK_BOUND (a test suite's default runs): the bound and --runs for 1e-3; a weak bound is
    said by weak_bound_phrase alone, one whose runs never lowered an order by unseen_orders_phrase."""
    from harness.core.confidence import (SUITE_RUNS, TARGET_MISS, WEAK_BOUND, runs_for_bound, runs_for_target,
                                         target_bound_phrase)
    from harness.measure.seeds import random_plan
    assert SUITE_RUNS == 6 and random_plan(SUITE_RUNS).miss_bound == 2 ** -5
    plan = random_plan(SUITE_RUNS)
    assert target_bound_phrase(plan.bounds, plan) == (
        "a regression would read clean with chance up to 0.031; --runs 11 would make it at most 0.00098")
    assert target_bound_phrase(random_plan(4).bounds, random_plan(4)) == ""  # weak: said as such
    assert target_bound_phrase(random_plan(11).bounds, random_plan(11)) == ""  # the target met
    assert target_bound_phrase(None, plan) == "" and target_bound_phrase(plan.bounds, None) == ""
    group_plan = SeedPlan(SeedStrategy.RANDOM, [1, 2, 3], random=[1, 2, 3], ranks=[[1, 4], [2, 5], [3, 6]])
    assert runs_for_bound(group_plan, TARGET_MISS) == 6 == -(-runs_for_target() // 2)  # each process counts
    unseen = SeedPlan(SeedStrategy.CHOSEN, [1, 2, 3], chosen=[1, 2], random=[3], covers=[
        SetCover(["a", "b"], False, lowered=True, pair_orders_not_seen=["b/a"], seeds_predicted_otherwise=1)])
    assert runs_for_bound(unseen, TARGET_MISS) == 3 + 2 * 3  # (1/8)^4 <= 1e-3 < (1/8)^3: three seeds more each
    assert runs_for_bound(unseen, WEAK_BOUND) == 3 + 2 * 1


def test_a_met_set_order_bound_still_says_the_other_mechanisms_bound_above_the_target():
    """A suite that builds a mesh: its chosen seeds showed both orders of every pair (set-order bound 0), but
    any other hash-order dependence is bounded by its 6 distinct seeds alone (0.031): the clean cell says so,
    with --runs 11, in its phrase and in the summary sentence."""
    from harness.core.confidence import MissBounds, runs_to_target, target_bound_phrase
    from harness.core.kinds import Verdict
    from harness.core.records import replace
    from harness.report.table import weak_bounds_sentence
    from harness.verdicts.cell_facts import cells_facts
    from tests.cells import cell
    covered = SeedPlan(SeedStrategy.CHOSEN, [1, 2, 3, 4, 5, 6], chosen=[1, 2], random=[3, 4, 5, 6], covers=[
        SetCover(["a", "b"], True, lowered=True)])
    assert covered.bounds == MissBounds(0.0, 2 ** -5) and covered.bounds.worst == 2 ** -5
    assert runs_to_target(covered.bounds, covered) == 11
    assert target_bound_phrase(covered.bounds, covered) == (
        "a regression through another hash order than the mesh's names would read clean with chance up to 0.031; "
        "--runs 11 would make it at most 0.00098")
    eleven = SeedPlan(SeedStrategy.CHOSEN, list(range(1, 12)), chosen=[1, 2], random=list(range(3, 12)),
                      covers=covered.covers)
    assert target_bound_phrase(eleven.bounds, eleven) == ""  # 2^-10: the target met
    clean = replace(cell("0.4.31", Verdict.CLEAN), seeds=covered, miss_bounds=covered.bounds)
    assert weak_bounds_sentence(cells_facts([clean])) == (
        "clean on 0.4.31: "
        "a regression would read clean with chance up to 0.031 (--runs 11 would make it at most 0.00098)")
    assert weak_bounds_sentence(cells_facts([replace(clean, seeds=eleven, miss_bounds=eleven.bounds)])) == ""


def test_a_seed_whose_order_follows_insertion_is_not_chosen_while_another_gives_the_same_order():
    # Seed 1 orders a,b only because both names share a slot and a was inserted first (fragile).
    probe = Probe("cpython test", (("a", "b"),), {1: (("a", "b"),), 2: (("a", "b"),), 3: (("b", "a"),)},
                  frozenset({1}))
    observer = OrderObserver(probe)
    observer.observe(3, _lowered(("b", "a")))
    assert observer.next_seeds([3], 1) == [2]
    data = {"python": "3.11", "orderings": {"1": [["a", "b"]], "2": [["a", "b"]]}, "fragile": {"1": [True], "2": [False]}}
    assert Probe.from_output([("a", "b")], data).fragile == frozenset({1})


def test_a_clean_cell_names_a_few_orders_never_lowered_and_counts_the_rest() -> None:
    unseen = [f"{{a, b, c, d}} as {x},{y}" for x, y in ("ba", "ca", "da", "cb", "db", "dc")]
    said = _orders(unseen)
    assert said.count(" as ") == SHOWN_ORDERS and said.endswith("and 3 more orders of the same sets")
    assert _orders(unseen[:2]) == "; ".join(unseen[:2])


def test_a_pair_lowered_one_way_only_counts_the_seeds_predicted_the_other_way():
    """A release that always lowers a,b (its order never follows the set): each seed predicted to give b,a is one
    the set's order would have had to mispredict. Before, the bound took the fewer seeds predicted for either order
    (none predicted a,b here): 0, and a bound of 1 that said nothing of three runs that tested b,a."""
    probe = _probe({1: ["b", "a"], 2: ["b", "a"], 3: ["b", "a"], 4: ["a", "b"]})
    observer = OrderObserver(probe)
    for seed in (1, 2, 3):
        observer.observe(seed, _lowered(("a", "b")))
    (cover,) = observer.covers([1, 2, 3])
    assert cover.pair_orders_not_seen == ["b,a"] and cover.seeds_predicted_otherwise == 3
    plan = SeedPlan(SeedStrategy.CHOSEN, [1, 2, 3], chosen=[1, 2, 3], covers=observer.covers([1, 2, 3]))
    assert plan.miss_bound == (1 / 8) ** 3
    # a run whose module never quoted the names tested nothing: it does not count
    observer.observe(4, ["no names here"])
    observer.observe(2, ["no names here"])
    (cover,) = observer.covers([1, 2, 3, 4])
    assert cover.seeds_predicted_otherwise == 2
    # a seed predicted to give the order that was lowered tests nothing either
    observer.observe(4, _lowered(("a", "b")))
    (cover,) = observer.covers([1, 2, 3, 4])
    assert cover.seeds_predicted_otherwise == 2


def test_no_seed_predicted_for_the_order_never_lowered_leaves_a_bound_of_1():
    """A bound of 1 is said only when no run was predicted to give the order never lowered: nothing tested it."""
    probe = _probe({1: ["a", "b"], 2: ["a", "b"], 3: ["b", "a"]})
    observer = OrderObserver(probe)
    observer.observe(1, _lowered(("a", "b")))
    observer.observe(2, _lowered(("a", "b")))
    plan = SeedPlan(SeedStrategy.CHOSEN, [1, 2], chosen=[1, 2], covers=observer.covers([1, 2]))
    assert plan.covers[0].seeds_predicted_otherwise == 0 and plan.miss_bound == 1.0


ABCD_PROBE = Path(__file__).parents[1] / "fixtures" / "seed_probe" / "abcd-cpython-3.11.json"


def _printed(log: Path, names: tuple[str, ...]) -> Path:
    """A built-in run's log that printed a module quoting `names` in this order; its IR dump folder beside it."""
    quoted = ", ".join(f"'{n}'" for n in names)
    log.write_text(f"{HLO_BEGIN}\nmodule @jit_f {{\n  func.func private @shmap_body(%arg0: tensor<1x1xf32>) -> "
                   f"(tensor<1x1xf32> {{jax.result_info = \"[({quoted}), None]\"}})\n}}\n{HLO_END}\n")
    return ir_dump_dir(log)


def _sweep_cell(logs: Path, finish_order: Callable[[int], int], at_once: int, runs: int = 8) -> SeedPlan:
    """The built-in repro's cell on JAX 0.4.30 (a,b,c,d lowered in that order whatever the seed) as the runner
    schedules it: runs start in order while `SeedWindow` lets them, at most `at_once` at a time, and
    `finish_order(k)` picks which of the k running runs ends next."""
    names = ("a", "b", "c", "d")
    probe = Probe.from_output(name_sets(names), json.loads(ABCD_PROBE.read_text()))
    plan = chosen_plan(probe, extra_random=runs - len(choose_seeds(probe)), limit=runs)
    reseeder = Reseeder(LocalEnvironment(sys.executable, {"jax": "none", "python": "3.11"}), plan, logs, DEFAULT_CANDIDATES, 10,
                        observer=OrderObserver(probe), kept=frozenset(plan.chosen), printed=True, note=plan.note)
    window = SeedWindow(reseeder, at_once, settling=2)
    pending = list(enumerate(plan.seeds, start=1))
    started: list[int] = []
    running: list[tuple[int, int]] = []
    while pending or running:
        while pending and len(running) < at_once and window.ready(pending[0][0]):
            later = window.seeds_for(pending[0][0], list(started), len(pending))
            if later is not None:
                pending = [(index, seed) for (index, _), seed in zip(pending, later)]
            index, seed = pending.pop(0)
            started.append(seed)
            running.append((index, seed))
        index, seed = running.pop(finish_order(len(running)))
        window.run_ended(index, seed, _printed(logs / f"run-{index:02d}-seed-{seed}.log", names))
    window.give_all(list(started), 0)
    return plan


def test_a_cell_s_seeds_and_bound_do_not_depend_on_which_concurrent_run_ends_first(tmp_path):
    """Two runs at a time, every choice of which ends first: one plan, one bound. Before, run n's seed came from
    whichever runs had ended when it started (a run still going counted as predicted, an ended one as lowered), so
    `make table`'s clean 0.4.30 cell got other seeds from one sweep to the next, and a bound from 2.4e-4 to 1."""
    def plan_for(choices: tuple[int, ...]) -> SeedPlan:
        logs = tmp_path / "-".join(map(str, choices))
        logs.mkdir()
        taken = iter(choices)
        return _sweep_cell(logs, lambda running: min(next(taken, 0), running - 1), at_once=2)

    plans = [plan_for(choices) for choices in itertools.product((0, 1), repeat=6)]
    said = {(tuple(p.seeds), tuple(p.chosen), p.miss_bound, json.dumps(msgspec.to_builtins(p.covers), sort_keys=True)) for p in plans}
    assert len(said) == 1
    (plan,) = plans[:1]
    assert len(plan.seeds) == 8 and plan.random == []  # every run a probed seed for an order never lowered
    assert plan.miss_bound <= (1 / 8) ** 3  # each order never lowered was predicted for at least three runs
    # one run at a time: each seed chosen from every run before it (another plan, as deterministic)
    (tmp_path / "one").mkdir()
    one = _sweep_cell(tmp_path / "one", lambda running: 0, at_once=1)
    assert len(one.seeds) == 8 and one.miss_bound <= (1 / 8) ** 3


def test_a_run_s_seed_waits_for_the_runs_it_is_chosen_from():
    calls: list[int] = []
    window = SeedWindow(lambda index, seed, dump, started, pending: calls.append(index) or [9] * pending, 2, 2)
    assert [window.sources(n) for n in range(2, 8)] == [1, 2, 2, 3, 4, 5]
    window.run_ended(1, 11, Path("run-01.ir"))
    assert window.ready(2) and window.seeds_for(2, [11], 7) == [9] * 7 and calls == [1]
    window.run_ended(3, 13, Path("run-03.ir"))  # run 3 ended before run 2: nothing it may be chosen from yet
    assert not window.ready(3) and not window.ready(5)
    window.run_ended(2, 12, Path("run-02.ir"))
    assert window.seeds_for(4, [11, 12, 13], 5) == [9] * 5 and calls == [1, 2]  # run 3's orders wait for run 5
    assert window.seeds_for(4, [11, 12, 13], 5) is None  # nothing new: run 4's seed stands
    assert window.ready(5) and window.seeds_for(5, [11, 12, 13, 14], 4) == [9] * 4 and calls == [1, 2, 3]
    window.run_ended(5, 15, Path("run-05.ir"))
    assert window.give_all([11, 12, 13, 14, 15], 0) is None  # run 4 has not ended: run 5's orders wait for it
    window.run_ended(4, 14, Path("run-04.ir"))
    assert window.give_all([11, 12, 13, 14, 15], 0) == [] and calls == [1, 2, 3, 4, 5]
