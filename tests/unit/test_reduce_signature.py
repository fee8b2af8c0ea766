"""A cell's failure signature and whether a candidate keeps it (pure: cells in, reasons out)."""

from harness.core.kinds import Cause, Platform, Verdict
from harness.core.model import CellSpec
from harness.core.records import convert, plain
from harness.reduce.signature import signature_of, why_not_kept
from harness.results.reduce_results import Signature
from tests.reduce_cells import cell, key

BAD = CellSpec("0.4.28", Platform.CPU, 8, None)
GOOD = CellSpec("0.4.29", Platform.CPU, 8, None)


TARGET = Signature("jit_f", ("computation",), Cause.ORDER)


def test_the_signature_of_a_reproduced_cell_is_its_module_moved_components_and_cause():
    reproduced = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert signature_of(reproduced) == TARGET
    assert signature_of(cell(GOOD, [[key("jit_f", 1)], []])) is None  # clean: no signature
    assert convert(plain(TARGET), Signature) == TARGET


def test_a_candidate_keeps_the_signature_only_with_the_same_module_components_and_cause():
    same = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert why_not_kept(TARGET, same) is None
    other_module = cell(BAD, [[key("jit_g", 1)], [key("jit_g", 2)]])
    assert "another module moved (jit_g" in why_not_kept(TARGET, other_module)
    other_component = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]], components=("compile_options",))
    assert "other key components moved (compile_options)" in why_not_kept(TARGET, other_component)
    other_cause = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]], cause=Cause.ADDRESS)
    assert "another cause (address, not order)" in why_not_kept(TARGET, other_cause)


def test_a_candidate_that_crashes_or_stays_clean_never_keeps_it():
    crashed = cell(BAD, [[key("jit_f", 1)], []], exit_codes={2: 1})
    assert why_not_kept(TARGET, crashed).startswith("error on 0.4.28")
    clean = cell(BAD, [[key("jit_f", 1)], []])
    assert why_not_kept(TARGET, clean).startswith("clean on 0.4.28")


def test_with_a_good_release_the_candidate_must_be_clean_there():
    bad = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert why_not_kept(TARGET, bad, cell(GOOD, [[key("jit_f", 1)], []])) is None
    also_bad = cell(GOOD, [[key("jit_f", 1)], [key("jit_f", 3)]])
    assert "reproduced on 0.4.29, the good release" in why_not_kept(TARGET, bad, also_bad)


def test_unknown_components_in_the_original_are_not_asked_of_a_candidate():
    unknown = Signature("jit_f", (), Cause.ORDER)
    assert why_not_kept(unknown, cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])) is None


# ---- --vary: the factor that missed -------------------------------------------------------------------

from harness.core.factors import Factor, FactorOutcome  # noqa: E402
from harness.core.findings import CellVariation, FactorResult, RankSplit
from harness.core.runs import RankRecord


def varied(spec, outcome, modules=("jit_broadcast_in_dim", "jit_step"), components=("compile_options",),
           factor=Factor.CACHE_PATH):
    result = cell(spec, [[key("jit_step", 1)]])
    variation = CellVariation(1, 101, [FactorResult(factor, outcome, "r", list(components), list(modules), 2)])
    result.variation = variation
    if outcome == FactorOutcome.MISS:
        result.verdict = Verdict.REPRODUCED
    return result


VARY_TARGET = Signature("jit_step", ("compile_options",), None, factor=Factor.CACHE_PATH)


def test_under_vary_the_signature_is_the_first_factor_that_missed_through_the_script_s_own_module():
    missed = varied(BAD, FactorOutcome.MISS)
    assert signature_of(missed, (Factor.CWD, Factor.CACHE_PATH), frozenset({"jit_step"})) == VARY_TARGET
    assert signature_of(missed, (Factor.CACHE_PATH,)).module == "jit_broadcast_in_dim"  # no own module known
    assert signature_of(varied(BAD, FactorOutcome.HIT), (Factor.CACHE_PATH,)) is None
    reproduced_by_seeds = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert signature_of(reproduced_by_seeds, (Factor.CACHE_PATH,)) is None  # no factor missed: refused
    assert convert(plain(VARY_TARGET), Signature) == VARY_TARGET
    assert "when varying cache-path" in VARY_TARGET.describe()


def test_under_vary_a_candidate_keeps_it_only_if_the_same_factor_misses_the_same_way():
    assert why_not_kept(VARY_TARGET, varied(BAD, FactorOutcome.MISS)) is None
    assert "cache-path hit" in why_not_kept(VARY_TARGET, varied(BAD, FactorOutcome.HIT))
    other = varied(BAD, FactorOutcome.MISS, modules=("jit_broadcast_in_dim",))
    assert "another module missed under cache-path (jit_broadcast_in_dim" in why_not_kept(VARY_TARGET, other)
    moved = varied(BAD, FactorOutcome.MISS, components=("compile_options", "computation"))
    assert "other key components moved under cache-path" in why_not_kept(VARY_TARGET, moved)
    crashed = cell(BAD, [[key("jit_step", 1)]], exit_codes={1: 1})
    assert why_not_kept(VARY_TARGET, crashed).startswith("error on 0.4.28")
    # with --good: clean there under the same factor
    assert why_not_kept(VARY_TARGET, varied(BAD, FactorOutcome.MISS), varied(GOOD, FactorOutcome.HIT)) is None
    assert "the good release" in why_not_kept(VARY_TARGET, varied(BAD, FactorOutcome.MISS),
                                              varied(GOOD, FactorOutcome.MISS))


# ---- --processes: the ranks that disagreed ------------------------------------------------------------

def split_cell(spec, module="jit_loss", ranks=(0, 1), differ=("computation", "accelerator_config"),
               cause=Cause.ORDER):
    result = cell(spec, [[key(module, 1)]])
    hashes = [(c, "a", "b") for c in differ] + [("compile_options", "o", "o")]
    result.rank_split = RankSplit(module, 1, ranks, (key(module, 1), key(module, 2)), hashes)
    result.verdict, result.cause = Verdict.REPRODUCED, cause
    return result


RANK_TARGET = Signature("jit_loss", ("computation",), Cause.ORDER, ranks=(0, 1))


def test_between_processes_the_signature_is_the_ranks_module_and_program_components():
    assert signature_of(split_cell(BAD)) == RANK_TARGET  # the devices' own component left out
    assert convert(plain(RANK_TARGET), Signature) == RANK_TARGET
    assert "between processes 0 and 1" in RANK_TARGET.describe()
    old = {"module": "jit_f", "components": ["computation"], "cause": "order"}  # a reduce.json from before
    assert convert(old, Signature) == TARGET


def test_between_processes_a_candidate_keeps_it_only_if_the_same_ranks_disagree_the_same_way():
    assert why_not_kept(RANK_TARGET, split_cell(BAD)) is None
    assert "another module (jit_step" in why_not_kept(RANK_TARGET, split_cell(BAD, module="jit_step"))
    assert "other processes disagree (0 and 2" in why_not_kept(RANK_TARGET, split_cell(BAD, ranks=(0, 2)))
    host_only = split_cell(BAD, differ=("accelerator_config", "compile_options_x"))
    assert "differ in other components" in why_not_kept(RANK_TARGET, host_only)
    assert "another cause" in why_not_kept(RANK_TARGET, split_cell(BAD, cause=Cause.ADDRESS))
    by_a_later_run = cell(BAD, [[key("jit_loss", 1)], [key("jit_loss", 2)]])
    assert "not by a disagreement between processes" in why_not_kept(RANK_TARGET, by_a_later_run)
    assert why_not_kept(RANK_TARGET, cell(BAD, [[key("jit_loss", 1)], []])).startswith("clean on 0.4.28")
    apart = split_cell(BAD)
    apart.runs[0].ranks = [RankRecord(0, 1, 0, 1.0, joined=False), RankRecord(1, 2, 0, 1.0, joined=False)]
    assert "never called jax.distributed.initialize()" in why_not_kept(RANK_TARGET, apart)


# ---- the cause controls' word is part of the signature ------------------------------------------------

def test_the_controls_word_on_the_module_is_kept_and_a_candidate_whose_controls_say_otherwise_loses_it():
    """A candidate keeps the original's cause, not only its module: where the cause controls said the hash seed moved
    the original's key, a candidate whose own controls say something else moved the same module's key (a second
    miss of the program, its own randomness) does not keep it."""
    from dataclasses import replace

    from harness.core.comparison import CauseDecision, Moved
    from harness.evidence.keys import cell_comparison

    def decided(moved):
        found = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
        found.comparison = replace(cell_comparison(found), decisions=(CauseDecision("jit_f", "", moved),))
        return found

    target = signature_of(decided(Moved.HASH_SEED))
    assert target == Signature("jit_f", ("computation",), Cause.ORDER, moved=Moved.HASH_SEED)
    assert target.describe().endswith("cause order; moved by hash seed)")
    assert signature_of(decided(Moved.UNDECIDED)) == TARGET  # no word: nothing more asked of a candidate
    assert why_not_kept(target, decided(Moved.HASH_SEED)) is None
    assert why_not_kept(target, decided(Moved.NOT_SEED)) == ("another cause: the cause controls say not the hash seed "
                                                             "moved jit_f's key, not hash seed")
    assert why_not_kept(target, cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])) is None  # no controls made there
    assert convert(plain(target), Signature) == target
