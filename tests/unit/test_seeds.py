"""Seed choice and miss bounds: pure parts with made-up probes, and the real probe with this interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.environments.local import LocalEnvironment
from harness.environments.process import clean_environment
from harness.core.model import CellSpec, Mesh, Platform
from harness.core.confidence import SeedStrategy, miss_probability_random, runs_for_target
from harness.measure.seeds import Probe, SeedPlanner, choose_seeds, chosen_plan, covers, name_sets, run_probe


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
    assert plan.covers[0]["pairs_in_both_orders"] is True
    assert plan.miss_bound == 0.0
    assert plan.miss_bound_other == 1.0  # nothing random: no claim beyond the probed sets
    data = plan.to_json()
    assert data["strategy"] == "chosen" and "assumes" in data and data["target"] == 1e-3


def test_an_order_never_seen_among_candidates_is_reported_and_gives_no_certainty():
    probe = _probe({1: ["a", "b"], 2: ["a", "b"]})
    plan = chosen_plan(probe)
    assert len(plan.seeds) == 2  # still two runs
    assert plan.covers[0]["pairs_in_both_orders"] is False
    assert plan.miss_bound > 1e-3


def test_random_extras_fill_up_to_runs_and_tighten_the_other_mechanism_bound():
    probe = _probe({1: ["a", "b"], 2: ["b", "a"]})
    plan = chosen_plan(probe, extra_random=10)
    assert plan.seeds[:2] == [1, 2] and len(plan.seeds) == 12 and len(set(plan.seeds)) == 12
    assert plan.miss_bound_other == 2 ** -10


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
    assert all(c["pairs_in_both_orders"] for c in covers(probe, seeds))
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


def test_a_user_script_s_later_seeds_cover_both_orders_with_its_first_run_s():
    from harness.measure.seeds import script_plan
    first = 123456789
    probe = _probe({first: ["b", "a"], 1: ["b", "a"], 2: ["b", "a"], 3: ["a", "b"]})
    plan = script_plan(probe, first, 4, [("a", "b")])
    assert plan.seeds[:2] == [first, 3] and len(plan.seeds) == 4 and plan.random == plan.seeds[2:]
    assert plan.strategy == SeedStrategy.CHOSEN and plan.covers[0]["pairs_in_both_orders"] is True
    assert "names from run 1's lowered module: a, b" in plan.note
    assert plan.miss_bound == 0.0 and plan.miss_bound_other == 2 ** -2
    # a first run that already shows one order: the seed of the other order is second, whatever its number
    probe = _probe({first: ["a", "b"], 1: ["a", "b"], 2: ["b", "a"]})
    assert choose_seeds(probe, given=(first,)) == [first, 2]


def test_a_cover_longer_than_runs_is_cut_and_says_so():
    from harness.measure.seeds import script_plan
    probe = Probe("cpython test", (("a", "b"), ("c", "d")),
                  {1: (("a", "b"), ("c", "d")), 2: (("b", "a"), ("c", "d")), 3: (("a", "b"), ("d", "c"))})
    plan = script_plan(probe, 1, 2, [("a", "b"), ("c", "d")])
    assert len(plan.seeds) == 2 and "needs 3 seeds, more than runs: 2" in plan.note
    assert plan.miss_bound > 0


def test_the_reseeder_chooses_from_run_1_s_dump_with_this_interpreter(tmp_path):
    """The real probe (this Python) on the recorded 0.4.28 dump: every pair order of {a, b} and of
    {a, b, c, d} is in the runs after a random first one."""
    planner = SeedPlanner(runs=None)
    spec = CellSpec("0.4.28", Platform.CPU, 8, None)
    env = LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})
    plan = planner.plan(spec, env, tmp_path)
    assert plan.strategy == SeedStrategy.RANDOM and len(plan.seeds) == runs_for_target()
    reseed = planner.reseeder(spec, plan, env, tmp_path)
    later = reseed(plan.seeds[0], Path(__file__).parents[1] / "fixtures" / "ir_dump" / "run-01.ir")
    assert plan.strategy == SeedStrategy.CHOSEN and plan.seeds[1:] == later and len(plan.seeds) == runs_for_target()
    assert all(c["pairs_in_both_orders"] for c in plan.covers) and plan.miss_bound == 0.0
    assert plan.chosen[0] == plan.seeds[0]


def test_a_dump_without_names_keeps_the_random_seeds(tmp_path):
    planner = SeedPlanner(runs=4)
    spec = CellSpec("0.4.28", Platform.CPU, 8, None)
    plan = planner.plan(spec, LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]}), tmp_path)
    seeds = list(plan.seeds)
    assert planner.reseeder(spec, plan, LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]}), tmp_path)(seeds[0], tmp_path) == seeds[1:]
    assert plan.strategy == SeedStrategy.RANDOM and "carries no set" in plan.note
    assert SeedPlanner(strategy=SeedStrategy.RANDOM).reseeder(spec, plan, LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]}),
                                                              tmp_path) is None


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
