"""The pure half of measuring a cell: records in; the verdict, whether to stop, and the cell out."""

from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.verdicts.judge import Tally

SPEC = CellSpec("0.4.28", Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))
KEY = "jit_f-{:064x}"


def run(index, key, exit_code=0):
    return RunRecord(index=index, seed=index, exit_code=exit_code, duration_s=0.1, new_entries=[KEY.format(key)])


def test_a_second_key_stops_the_cell_only_when_asked():
    eager, patient = Tally(planned=6, stop_when_reproduced=True), Tally(planned=6)
    for tally in (eager, patient):
        tally.add(run(1, 1))
        assert not tally.stop_now()
        tally.add(run(2, 2))
    assert eager.stop_now() and not patient.stop_now()


def test_a_cell_that_stopped_early_is_reproduced_not_short_of_runs():
    tally = Tally(planned=6, stop_when_reproduced=True)
    for record in (run(2, 2), run(1, 1)):  # parallel runs finish in any order
        tally.add(record)
    cell = tally.cell(SPEC, ["listing"], {"backend": "fake"})
    assert cell.verdict == Verdict.REPRODUCED and [r.index for r in cell.runs] == [1, 2]
    assert cell.listing == ["listing"] and cell.environment_facts == {"backend": "fake"} and not cell.interrupted


def test_runs_missing_without_a_reason_are_an_error():
    tally = Tally(planned=4)
    tally.add(run(1, 1))
    cell = tally.cell(SPEC, [], {})
    assert cell.verdict == Verdict.ERROR and cell.reason == "only 1 of 4 runs were made"


def test_ctrl_c_says_how_far_the_cell_got_unless_it_had_reproduced():
    tally = Tally(planned=8, stop_when_reproduced=True)
    tally.add(run(1, 1))
    cut = tally.cell(SPEC, [], {}, interrupted=True)
    assert cut.interrupted and cut.reason == "interrupted after 1 of 8 runs"
    tally.add(run(2, 2))
    settled = tally.cell(SPEC, [], {}, interrupted=True)
    assert settled.interrupted and settled.verdict == Verdict.REPRODUCED
    assert not settled.reason.startswith("interrupted")  # the verdict's own reason: it is settled


def empty(index, exit_code=0):
    return RunRecord(index=index, seed=index, exit_code=exit_code, duration_s=0.1, new_entries=[])


def test_two_runs_that_cached_nothing_stop_the_cell_as_unsupported_saying_why():
    tally = Tally(planned=11, stop_when_reproduced=True)
    tally.add(empty(1))
    assert not tally.stop_now()  # one run is not enough: the second has another hash seed
    tally.add(empty(2))
    assert tally.stop_now()
    cell = tally.cell(SPEC, [], {})
    assert cell.verdict == Verdict.UNSUPPORTED and len(cell.runs) == 2
    assert "stopped after 2 of 11 runs: none wrote an entry, so later runs could not change" in cell.reason


def test_nothing_cached_keeps_every_run_with_all_runs():
    tally = Tally(planned=4)
    tally.add(empty(1))
    tally.add(empty(2))
    assert not tally.stop_now()


def test_a_crash_or_an_entry_keeps_the_cell_going():
    crashed, wrote = Tally(planned=6, stop_when_reproduced=True), Tally(planned=6, stop_when_reproduced=True)
    crashed.add(empty(1))
    crashed.add(empty(2, exit_code=1))
    wrote.add(run(1, 1))
    wrote.add(empty(2))
    assert not crashed.stop_now() and not wrote.stop_now()


def test_a_run_still_going_that_cached_something_is_judged_by_the_rule_not_called_unsupported():
    tally = Tally(planned=6, stop_when_reproduced=True)
    tally.add(empty(1))
    tally.add(empty(2))
    assert tally.stop_now()
    tally.add(run(3, 1))  # overlapping, started before the decision: a key the first run did not compute
    cell = tally.cell(SPEC, [], {})
    assert cell.verdict == Verdict.REPRODUCED and "could not change" not in cell.reason


def test_give_up_stops_the_cell_at_once_and_its_verdict_counts_only_the_runs_made():
    tally = Tally(planned=6, stop_when_reproduced=True, give_up=lambda records: any(not r.ok for r in records))
    tally.add(run(1, 1, exit_code=1))
    assert tally.stop_now()
    cell = tally.cell(SPEC, [], {})
    assert cell.verdict == Verdict.ERROR and len(cell.runs) == 1 and "only 1 of 6" not in cell.reason


def test_without_give_up_a_crash_does_not_stop_the_cell():
    tally = Tally(planned=6, stop_when_reproduced=True)
    tally.add(run(1, 1, exit_code=1))
    assert not tally.stop_now()
