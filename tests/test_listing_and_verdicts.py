"""Cache listings of every naming scheme -> entries -> verdicts and boundaries."""

from harness.analysis import boundaries, judge, version_verdicts
from harness.listing import entries, keys_by_module, parse_name
from harness.model import CellResult, CellSpec, Platform, RunRecord, Verdict

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


def test_reproduced_when_a_module_has_two_keys():
    j = judge([run(1, [f"jit_f-{H1}", f"jit_iota-{H1}"]), run(2, [f"jit_f-{H2}"])])
    assert j.verdict == Verdict.REPRODUCED and "jit_f: 2 distinct keys" in j.reason


def test_reason_table_and_report_name_the_same_module_on_a_tie():
    from harness.report.evidence import split_module
    from harness.table import rows

    j = judge([run(1, [f"jit_a-{H1}", f"jit_f-{H1}"]), run(2, [f"jit_a-{H2}", f"jit_f-{H2}"])])
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), j.verdict, j.keys, reason=j.reason)
    assert j.reason.startswith("jit_f: 2 distinct keys")
    assert rows([cell])[0][5] == "jit_f: 2" and split_module(cell) == "jit_f"


def test_clean_needs_every_run_ok_and_one_key_each():
    j = judge([run(1, [f"jit_f-{H1}-cache", f"jit_f-{H1}-atime"]), run(2, [])], expected_runs=2)
    assert j.verdict == Verdict.CLEAN and j.keys == {"jit_f": [f"jit_f-{H1}"]}


def test_crash_is_never_clean():
    j = judge([run(1, [f"jit_f-{H1}"]), run(2, [], exit_code=1)])
    assert j.verdict == Verdict.ERROR and "1 of 2 runs failed" in j.reason


def test_timeout_is_error():
    assert judge([run(1, [f"jit_f-{H1}"]), run(2, [], exit_code=None, timed_out=True)]).verdict == Verdict.ERROR


def test_crashed_runs_entries_do_not_count():
    # A crashed run's half-written key must not make the cell look reproduced.
    j = judge([run(1, [f"jit_f-{H1}"]), run(2, [f"jit_f-{H2}"], exit_code=1)])
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


def test_version_verdict_over_meshes():
    cells = [cell("0.4.28", Verdict.CLEAN), cell("0.4.28", Verdict.REPRODUCED),
             cell("0.4.29", Verdict.CLEAN), cell("0.4.29", Verdict.ERROR), cell("0.4.26", Verdict.CLEAN)]
    assert version_verdicts(cells) == {"0.4.26": Verdict.CLEAN, "0.4.28": Verdict.REPRODUCED,
                                       "0.4.29": Verdict.ERROR}
