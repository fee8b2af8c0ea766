"""A cell's failure signature and whether a candidate keeps it (pure: cells in, reasons out)."""

from harness.model import Attribution, Cause, CellSpec, Platform, RunRecord, Verdict
from harness.reduce.signature import Signature, signature_of, why_not_kept
from harness.tally import Tally

BAD = CellSpec("0.4.28", Platform.CPU, 8, None)
GOOD = CellSpec("0.4.29", Platform.CPU, 8, None)


def key(module, n):
    return f"{module}-{n:064x}"


def cell(spec, keys_per_run, components=("computation",), cause=Cause.ORDER, exit_codes=None):
    records = [RunRecord(index=i, seed=100 + i, exit_code=(exit_codes or {}).get(i, 0), duration_s=1.0,
                         new_entries=list(keys)) for i, keys in enumerate(keys_per_run, start=1)]
    tally = Tally(len(records))
    for record in records:
        tally.add(record)
    result = tally.cell(spec, [], {})
    if result.verdict == Verdict.REPRODUCED:
        module = keys_per_run[1][0].rpartition("-")[0]
        result.attribution = Attribution(module, 1, 2, keys_per_run[0][0], keys_per_run[1][0],
                                         [(c, "a", "b") for c in components] + [("devices", "x", "x")])
        result.cause = cause
    return result


TARGET = Signature("jit_f", ("computation",), Cause.ORDER)


def test_the_signature_of_a_reproduced_cell_is_its_module_moved_components_and_cause():
    reproduced = cell(BAD, [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert signature_of(reproduced) == TARGET
    assert signature_of(cell(GOOD, [[key("jit_f", 1)], []])) is None  # clean: no signature
    assert Signature.from_json(TARGET.to_json()) == TARGET


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
