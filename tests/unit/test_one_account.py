"""Issue 60, item 4: one account of each run. A run's "N new" is what its own account (the recorder's reading of JAX's
log) says it wrote, never the folder's listing, which two overlapping runs share; a summary never calls a release
"the only release measured" beside another measured release."""

from harness.cli.console import ConsoleProgress
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.verdicts.boundaries import release_boundaries

A, B = "jit_a-" + "a" * 64, "jit_b-" + "b" * 64


def test_overlapping_runs_each_count_only_the_entries_their_own_account_wrote(capsys):
    # Both runs ran while jit_a's and jit_b's entries appeared: the listing gives each both; their accounts one each.
    both = [f"{A}-cache", f"{A}-atime", f"{B}-cache", f"{B}-atime"]
    first = RunRecord(2, 2, 0, 1.0, both, keys=RunLog([LoggedKey("jit_a", A, Outcome.WRITTEN)]), overlapped=True)
    second = RunRecord(3, 3, 0, 1.0, both, keys=RunLog([LoggedKey("jit_b", B, Outcome.WRITTEN),
                                                        LoggedKey("jit_a", A, Outcome.HIT)]), overlapped=True)
    assert first.own_new_keys() == [A] and second.own_new_keys() == [B]
    progress, spec = ConsoleProgress(), CellSpec("0.10.2", Platform.CPU, 1, None)
    for run in (first, second):
        progress.run_finished(spec, run, 3)
    err = capsys.readouterr().err
    assert err.count(", 1 new") == 2 and "2 new" not in err, err
    listed_only = RunRecord(2, 2, 0, 1.0, both)  # no account (a log that named no key): the listing, as before
    assert listed_only.own_new_keys() == [A, B]


def _cell(version: str, verdict: Verdict) -> CellResult:
    return CellResult(CellSpec(version, Platform.CPU, 1, None), verdict, {}, [RunRecord(1, 1, 0, 1.0, [])], "why")


def test_no_summary_calls_a_release_the_only_one_measured_beside_another_measured_release():
    """The two-release line of the issue read "the only release measured" beside 0.10.2's callback cell, then
    `unsupported`; measured as `not cached` or `new input`, the other release is named as measured."""
    for other in (Verdict.NOT_CACHED, Verdict.NEW_INPUT, Verdict.CLEAN):
        line = release_boundaries([_cell("0.4.31", Verdict.REPRODUCED), _cell("0.10.2", other)]).line()
        assert "only release measured" not in line and "0.10.2" in line, (other, line)
    alone = release_boundaries([_cell("0.4.31", Verdict.REPRODUCED)]).line()
    assert "on 0.4.31, the only release measured" in alone
