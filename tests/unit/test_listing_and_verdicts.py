"""Cache listings of every naming scheme -> entries -> verdicts and boundaries."""

from harness.core.records import plain
from harness.verdicts.boundaries import boundaries, release_boundaries, version_verdicts
from harness.evidence.keys import RunKeys, compare_with_first_run
from harness.verdicts.phrases import fewer_phrase, run_ranges
from harness.verdicts.verdict import judge
from harness.core.listing import Entry, entries, keys_by_module, parse_name
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import NothingCached, Platform, Verdict
from harness.core.runs import RunRecord

H1, H2, H3 = "a" * 64, "b" * 64, "0123456789abcdef" * 4


def test_old_scheme_one_file_per_entry():
    e = parse_name(f"jit_f-{H1}")
    assert e.module == "jit_f" and e.key == f"jit_f-{H1}"


def test_new_scheme_two_files_are_one_entry():
    found = entries([f"jit_f-{H1}-cache", f"jit_f-{H1}-atime"])
    assert len(found) == 1 and next(iter(found)).key == f"jit_f-{H1}"


def test_module_names_with_underscores_and_dashes():
    assert parse_name(f"jit__multi_slice-{H3}").module == "jit__multi_slice"
    assert parse_name(f"pjit-my-fn-{H1}").module == "pjit-my-fn"


def test_other_files_are_not_entries():
    names = [f"jit_f-{H1}.tmp", "lock", f"jit_f-{H1[:-1]}", f"jit_f-{H1.upper()}", "autotune", f"-{H1}x"]
    assert entries(names) == set()


def test_keys_by_module_sorted_and_distinct():
    found = entries([f"jit_f-{H2}-cache", f"jit_f-{H1}-cache", f"jit_f-{H1}-atime", f"jit_iota-{H1}"])
    assert keys_by_module(found) == {"jit_f": [f"jit_f-{H1}", f"jit_f-{H2}"], "jit_iota": [f"jit_iota-{H1}"]}


def run(index, new, exit_code=0, timed_out=False):
    return RunRecord(index=index, seed=index, exit_code=exit_code, duration_s=1.0, new_entries=new,
                     timed_out=timed_out)


def test_reproduced_when_a_later_run_brings_a_new_key():
    j = judge([run(1, [f"jit_f-{H1}", f"jit_iota-{H1}"]), run(2, [f"jit_f-{H2}"])])
    assert j.verdict == Verdict.REPRODUCED and j.reason == "jit_f: a new key in run 2"


def test_one_run_with_two_keys_of_a_module_is_not_a_miss():
    # A function compiled at two shapes: two jit_f keys in one run, and the later runs hit both.
    j = judge([run(1, [f"jit_f-{H1}", f"jit_f-{H2}"]), run(2, []), run(3, [])], expected_runs=3)
    # From the listing alone (no JAX log): the hits themselves were not seen, and the reason says so.
    assert j.verdict == Verdict.CLEAN and j.reason == ("jit_f: 2 keys per run, the same in all 3 runs; hits not "
                                                       "observed in runs 2-3 (their JAX log named no key): the cache "
                                                       "folder shows no new key, not that the entries were loaded")
    assert j.keys == {"jit_f": [f"jit_f-{H1}", f"jit_f-{H2}"]}


def test_reason_table_and_report_name_the_same_module_on_a_tie():
    from harness.report.evidence import moved_module
    from harness.report.table import rows

    runs = [run(1, [f"jit_a-{H1}", f"jit_f-{H1}"]), run(2, [f"jit_a-{H2}", f"jit_f-{H2}"])]
    j = judge(runs)
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), j.verdict, j.keys, runs, reason=j.reason)
    assert j.reason == "jit_f: a new key in run 2; also missed: jit_a (moved key)"  # every module that missed
    assert rows([cell])[0][5] == "jit_f: 1 + 1 new" and moved_module(cell) == "jit_f"


def test_clean_needs_every_run_ok_and_one_key_each():
    j = judge([run(1, [f"jit_f-{H1}-cache", f"jit_f-{H1}-atime"]), run(2, [])], expected_runs=2)
    assert j.verdict == Verdict.CLEAN and j.keys == {"jit_f": [f"jit_f-{H1}"]}
    assert j.reason.startswith("jit_f: 1 key per run, the same in all 2 runs; hits not observed in run 2 (its JAX")


# The rule itself, over runs that each compile several keys per module. `computed` is what a run's own
# log (JAX's debug log) says it computed, cache hits included; the listing shows only what was written.
F1, F2, F3, G1, G2 = (Entry(m, f"{m}-{h}") for m, h in
                      (("jit_f", H1), ("jit_f", H2), ("jit_f", H3), ("jit_g", H1), ("jit_g", H2)))
BASE = frozenset({F1, F2, G1, G2})


def test_rule_stable_runs_with_several_keys_per_module_are_clean():
    runs = [RunKeys(1, BASE, BASE)] + [RunKeys(i, frozenset(), BASE) for i in (2, 3, 4)]
    c = compare_with_first_run(runs)
    assert not c.reproduced and not c.fewer and c.baseline == {"jit_f": [F1.key, F2.key], "jit_g": [G1.key, G2.key]}
    assert c.later_runs == [2, 3, 4]


def test_rule_one_key_that_moves_is_reproduced():
    moved = (BASE - {F2}) | {F3}  # run 3 compiled jit_f's second shape to another key
    runs = [RunKeys(1, BASE, BASE), RunKeys(2, frozenset(), BASE), RunKeys(3, frozenset({F3}), moved)]
    c = compare_with_first_run(runs)
    assert c.reproduced and c.new == {3: {"jit_f": [F3.key]}} and c.moved_module() == "jit_f"
    assert c.runs_with_new("jit_f") == [3] and c.new_keys("jit_g") == []
    # From the listing alone (no log) the same verdict: F3 appeared after the first run.
    assert compare_with_first_run([RunKeys(1, BASE), RunKeys(2, frozenset()), RunKeys(3, frozenset({F3}))]).new == c.new


def test_rule_a_later_run_that_hits_an_earlier_later_runs_key_brings_nothing():
    moved = (BASE - {F2}) | {F3}
    runs = [RunKeys(1, BASE, BASE), RunKeys(2, frozenset({F3}), moved), RunKeys(3, frozenset(), moved)]
    assert compare_with_first_run(runs).new == {2: {"jit_f": [F3.key]}}
    # From the listing alone, overlapping runs both saw F3 appear: both are named, the key counted once.
    c = compare_with_first_run([RunKeys(1, BASE), RunKeys(2, frozenset({F3})), RunKeys(3, frozenset({F3}))])
    assert c.runs_with_new("jit_f") == [2, 3] and c.new_keys("jit_f") == [F3.key]


def test_rule_a_run_that_compiles_fewer_things_is_said_and_not_clean():
    fewer = BASE - {G2}  # run 2 hit everything it computed, but never compiled jit_g's second shape
    runs = [RunKeys(1, BASE, BASE), RunKeys(2, frozenset(), fewer), RunKeys(3, frozenset(), BASE)]
    c = compare_with_first_run(runs)
    assert not c.reproduced and c.fewer == {2: {"jit_g": [G2.key]}}
    assert fewer_phrase(c) == ("run 2 compiled fewer things than run 1 (jit_g: 1 key of 2 not computed): "
                               "the runs cannot be compared")
    # The listing alone cannot see it: a hit and a compilation never made both write nothing.
    assert not compare_with_first_run([RunKeys(1, BASE), RunKeys(2, frozenset())]).fewer


def test_judge_says_fewer_when_a_run_log_says_so():
    # The runner gives judge() the listing only today (each run's log comes with the attribution issue);
    # told what each run computed, the verdict is unsupported, never clean, with the reason above.
    both = frozenset(entries([f"jit_f-{H1}", f"jit_f-{H2}"]))
    observed = [RunKeys(1, both, both), RunKeys(2, frozenset(), frozenset(entries([f"jit_f-{H1}"])))]
    j = judge([run(1, [f"jit_f-{H1}", f"jit_f-{H2}"]), run(2, [])], expected_runs=2, observed=observed)
    assert j.verdict == Verdict.UNSUPPORTED and j.reason.startswith("run 2 compiled fewer things than run 1")


def test_reason_says_which_later_runs_brought_new_keys():
    runs = [run(1, [f"jit_f-{H1}", f"jit_iota-{H1}"])] + [run(i, [f"jit_f-{i:064x}"]) for i in (2, 3, 4)]
    assert judge(runs).reason == "jit_f: a new key in each of runs 2-4"
    runs = [run(1, [f"jit_f-{H1}"]), run(2, []), run(3, [f"jit_f-{H2}", f"jit_f-{H3}"]), run(4, [f"jit_f-{4:064x}"])]
    assert judge(runs).reason == "jit_f: 3 new keys in runs 3-4"
    runs = [run(1, [f"jit_f-{H1}"]), run(2, [f"jit_f-{H2}"]), run(3, [f"jit_f-{H2}"])]  # overlapping runs
    assert judge(runs).reason == "jit_f: 1 new key in runs 2-3"
    runs = [run(1, [f"jit_f-{H1}"]), run(2, [f"jit_g-{H1}"])]
    assert judge(runs).reason == "jit_g: a new key in run 2 (a module the first run did not compile)"


def test_run_ranges():
    assert run_ranges([2, 3, 4]) == "2-4" and run_ranges([2, 5, 6, 7, 9]) == "2, 5-7, 9" and run_ranges([3]) == "3"


def test_the_first_successful_run_is_the_baseline():
    j = judge([run(1, [f"jit_f-{H1}"], exit_code=1), run(2, [f"jit_f-{H2}"]), run(3, [])])
    assert j.verdict == Verdict.ERROR and j.comparison.baseline_run == 2


def test_crash_is_never_clean():
    j = judge([run(1, [f"jit_f-{H1}"]), run(2, [], exit_code=1)])
    assert j.verdict == Verdict.ERROR and "1 of 2 runs failed" in j.reason


def test_timeout_is_error():
    assert judge([run(1, [f"jit_f-{H1}"]), run(2, [], exit_code=None, timed_out=True)]).verdict == Verdict.ERROR


def test_crashed_runs_entries_do_not_count():
    # A crashed run's half-written key must not make the cell look reproduced.
    j = judge([run(1, [f"jit_f-{H1}"]), run(2, [f"jit_f-{H2}"], exit_code=1), run(3, [])])
    assert j.verdict == Verdict.ERROR


def test_empty_cache_is_unsupported_not_clean():
    assert judge([run(1, []), run(2, [])]).verdict == Verdict.UNSUPPORTED


def test_too_few_runs_is_error():
    assert judge([run(1, [f"jit_f-{H1}"])], expected_runs=4).verdict == Verdict.ERROR


def cell(version, verdict):
    return CellResult(CellSpec(version, Platform.CPU, 8, None), verdict, {})


SEED_ROWS = {"0.4.25": Verdict.UNSUPPORTED, "0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED,
             "0.4.28": Verdict.REPRODUCED, "0.4.29": Verdict.CLEAN, "0.4.30": Verdict.CLEAN,
             "0.4.31": Verdict.CLEAN}


def test_boundaries_of_the_seed():
    b = boundaries(SEED_ROWS)
    assert (b.appears_in, b.last_clean_before, b.fixed_in) == ("0.4.27", "0.4.26", "0.4.29")
    assert b.line() == "regression appears in 0.4.27 (last clean 0.4.26); fixed in 0.4.29"


def test_boundaries_step_over_errors_and_sort_versions():
    rows = {"0.4.9": Verdict.CLEAN, "0.4.10": Verdict.ERROR, "0.4.11": Verdict.REPRODUCED,
            "0.4.12": Verdict.UNSUPPORTED, "0.4.13": Verdict.CLEAN}
    b = boundaries(rows)
    assert (b.appears_in, b.last_clean_before, b.fixed_in) == ("0.4.11", "0.4.9", "0.4.13")


def test_never_reproduced():
    assert boundaries({"0.4.26": Verdict.CLEAN, "0.4.29": Verdict.CLEAN}).line() == "not reproduced in this range"


def test_not_fixed():
    b = boundaries({"0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED})
    assert b.fixed_in is None and b.line().endswith("not fixed in this range")


def cells_of(rows, causes=None):
    """A cell per release; an unsupported one with its `nothing_cached` cause where `causes` names one."""
    causes = causes or {}
    return [CellResult(CellSpec(v, Platform.CPU, 8, None), verdict, {}, nothing_cached=causes.get(v))
            for v, verdict in rows.items()]


def test_the_releases_that_cache_nothing_get_a_boundary_line_of_their_own():
    """The seed's table: 0.4.25 has no CPU persistent cache; its range is told as a boundary is."""
    b = release_boundaries(cells_of(SEED_ROWS, {"0.4.25": NothingCached.NO_PERSISTENT_CACHE}))
    assert b.line() == ("regression appears in 0.4.27 (last clean 0.4.26); fixed in 0.4.29; nothing is cached in "
                        "0.4.25 (no persistent cache; no release before it cached); cached from 0.4.26")
    assert plain(b.recorded())["line"] == b.line() and plain(b.recorded())["appears_in"] == "0.4.27"
    # The same table with 0.4.25 unsupported for another reason (nothing_cached unset): no such line.
    assert release_boundaries(cells_of(SEED_ROWS)).line() == boundaries(SEED_ROWS).line()


def test_a_range_that_caches_nothing_in_the_middle_or_at_the_end_errors_stepped_over():
    rows = {"0.4.31": Verdict.CLEAN, "0.5.0": Verdict.UNSUPPORTED, "0.5.0.1": Verdict.ERROR,
            "0.5.0.2": Verdict.UNSUPPORTED, "0.5.1": Verdict.CLEAN, "0.6.0": Verdict.UNSUPPORTED}
    uninitialised = {v: NothingCached.UNINITIALISED for v in ("0.5.0", "0.5.0.2")}
    b = release_boundaries(cells_of(rows, {**uninitialised, "0.6.0": NothingCached.SET_TOO_LATE}))
    assert [u.phrase() for u in b.uncached] == [
        "nothing is cached in 0.5.0 to 0.5.0.2 (cache uninitialised; last cached 0.4.31); cached again from 0.5.1",
        "nothing is cached in 0.6.0 (set too late; last cached 0.5.1); not cached again in this range"]
    assert b.line().startswith("not reproduced in this range; nothing is cached in 0.5.0 to 0.5.0.2 ")
    only = release_boundaries(cells_of({"0.5.0": Verdict.UNSUPPORTED}, uninitialised))
    # Nothing measured at all: the line claims no "not reproduced", it says why nothing was.
    assert only.line() == "nothing is cached on any release measured (0.5.0: cache uninitialised)"


def test_a_release_with_a_cell_that_cached_is_not_in_a_range_that_cached_nothing():
    cached = CellResult(CellSpec("0.5.0", Platform.CPU, 4, None), Verdict.CLEAN, {})
    cells = [*cells_of({"0.5.0": Verdict.UNSUPPORTED}, {"0.5.0": NothingCached.UNINITIALISED}), cached]
    assert release_boundaries(cells).uncached == ()


def test_keys_that_differ_on_every_release_measured_are_no_regression():
    """A program's own nondeterminism (a random constant) reproduces on every release, the earliest
    included: no clean release, so no boundary, and the line claims no regression."""
    b = release_boundaries(cells_of({"0.4.31": Verdict.REPRODUCED, "0.5.0": Verdict.REPRODUCED}))
    assert b.no_boundary
    assert b.line() == ("fresh processes miss the cache on every release measured, 0.4.31 to 0.5.0, so the "
                        "range shows no boundary: likely the program's own nondeterminism (or a regression older "
                        "than 0.4.31)")
    one = release_boundaries(cells_of({"0.4.28": Verdict.REPRODUCED}))
    assert one.line() == ("fresh processes miss the cache on 0.4.28, the only release measured, so the range "
                          "shows no boundary (measure an earlier release for one)")
    assert "regression present" not in b.line() + one.line()


def test_a_known_good_release_keeps_the_boundary():
    for rows in ({"0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED},  # clean before
                 {"0.4.28": Verdict.REPRODUCED, "0.4.29": Verdict.CLEAN}):  # fixed after
        b = release_boundaries(cells_of(rows))
        assert not b.no_boundary and b.line().startswith("regression ")
    # A bisection's line (its known-good release is its own) is told as before.
    assert boundaries({"0.4.28": Verdict.REPRODUCED}).line().startswith("regression present from the first")
    # A release that cached nothing is not a clean one: still no boundary.
    rows = {"0.4.25": Verdict.UNSUPPORTED, "0.4.26": Verdict.REPRODUCED, "0.4.27": Verdict.REPRODUCED}
    b = release_boundaries(cells_of(rows, {"0.4.25": NothingCached.NO_PERSISTENT_CACHE}))
    assert b.line().startswith("fresh processes miss the cache on every release measured, 0.4.26 to 0.4.27")
    assert b.line().endswith("; nothing is cached in 0.4.25 (no persistent cache; no release before it cached); "
                             "cached from 0.4.26")


def test_version_verdict_over_meshes():
    cells = [cell("0.4.28", Verdict.CLEAN), cell("0.4.28", Verdict.REPRODUCED),
             cell("0.4.29", Verdict.CLEAN), cell("0.4.29", Verdict.ERROR), cell("0.4.26", Verdict.CLEAN)]
    assert version_verdicts(cells) == {"0.4.26": Verdict.CLEAN, "0.4.28": Verdict.REPRODUCED,
                                       "0.4.29": Verdict.ERROR}


def test_a_file_name_that_is_not_utf8_is_listed_readably(tmp_path):
    """Issue 27, item 2: a program can make such a name; the listing must be writable anywhere."""
    import json
    import os

    from harness.core.listing import list_dir

    os.close(os.open(os.fsencode(tmp_path) + b"/odd-\xff\xfe-name", os.O_CREAT | os.O_WRONLY))
    (tmp_path / f"jit_f-{H1}-cache").touch()
    names = list_dir(tmp_path)
    assert names == {"odd-\\xff\\xfe-name", f"jit_f-{H1}-cache"}
    json.dumps(sorted(names), ensure_ascii=False).encode()  # no surrogates left
    assert entries(names) == {Entry("jit_f", f"jit_f-{H1}")}


def test_a_headline_names_the_users_moved_key_before_an_eager_module_only_a_later_run_compiled():
    """A reduced flax program (CI, once): run 2 compiled `jit__multi_slice` (an eager slice, twice, at shapes the set's
    order chose) that run 1 never compiled, and moved `jit_apply_fn`'s key; both follow the hash seed. The headline
    (and the reducer's signature) names jit_apply_fn: a key that moved, in the user's function."""
    from harness.core.comparison import Comparison

    c = Comparison(baseline_run=1, baseline={"jit_apply_fn": ["a1"]}, later_runs=[2],
                   new={2: {"jit_apply_fn": ["a2"], "jit__multi_slice": ["s1", "s2"]}},
                   seed_moved=frozenset({"a2", "s1", "s2"}))
    assert c.moved_module() == "jit_apply_fn"
    # the hash seed's word still comes first: a module it moved is named before one it did not
    assert Comparison(1, {"jit_apply_fn": ["a1"]}, [2], new={2: {"jit_apply_fn": ["a2"], "jit__multi_slice": ["s1"]}},
                      seed_moved=frozenset({"s1"})).moved_module() == "jit__multi_slice"


def test_an_eager_matmul_is_jax_s_module_and_the_training_step_is_the_headline():
    """A tutorial's script ran `x @ w` eagerly on sharded arrays: jnp.matmul's own jit (jit_matmul, two new keys)
    was named over the user's jit_train_step (one moved key)."""
    from harness.core.comparison import Comparison, dispatch_helper

    assert dispatch_helper("jit_matmul") and dispatch_helper("jit_norm") and not dispatch_helper("jit_train_step")
    c = Comparison(1, {"jit_train_step": ["t1"], "jit_matmul": ["m1"]}, [2],
                   new={2: {"jit_train_step": ["t2"], "jit_matmul": ["m2", "m3"]}})
    assert c.moved_module() == "jit_train_step"
    assert c.main_module() == "jit_train_step"
