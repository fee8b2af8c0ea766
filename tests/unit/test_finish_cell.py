"""finish_cell: the one place a measured cell is finished (harness/verdicts/finish.py), pure: what was measured
in, the cell out, each addition in its order and none of its inputs changed."""

import copy

from harness.core.model import CellSpec
from harness.core.findings import CellVariation, SeedCheck, SeedRun
from harness.core.kinds import FolderMode, Platform, Verdict
from harness.core.runs import RunRecord
from harness.core.factors import Factor, FactorOutcome
from harness.measure.seeds import random_plan
from harness.verdicts.finish import INTERRUPTED_VARY, Measured, ScriptRun, finish_cell
from harness.verdicts.judge import Tally
from harness.verdicts.factor_verdicts import judge_factor

SPEC = CellSpec("0.5.0", Platform.CPU, 8, None)
KEY = "jit_f-{:064x}"


def tally(*keys: int, planned: int | None = None, failed: tuple[int, ...] = ()) -> Tally:
    out = Tally(planned or len(keys))
    for index, key in enumerate(keys, start=1):
        out.add(RunRecord(index=index, seed=index, exit_code=1 if index in failed else 0, duration_s=0.1,
                          new_entries=[KEY.format(key)] if index == 1 else [],
                          reason="exit code 1" if index in failed else ""))
    return out


def moved_miss(reference: RunRecord) -> CellVariation:
    moved = RunRecord(index=9, seed=reference.seed, exit_code=0, duration_s=0.1, new_entries=[KEY.format(9)])
    return CellVariation(1, reference.seed, [judge_factor(Factor.CACHE_PATH, reference, moved, "another path")])


def test_the_runs_verdict_alone_when_nothing_else_was_measured():
    runs = tally(1, 1, 1)
    cell = finish_cell(Measured(SPEC, runs, ["entry"], {"backend": "fake"}))
    judged = runs.cell(SPEC, ["entry"], {"backend": "fake"})
    assert (cell.verdict, cell.reason, cell.listing) == (judged.verdict, judged.reason, ["entry"])
    assert cell.seeds is None and cell.miss_bounds is None and cell.variation is None and cell.command is None


def test_a_factor_s_miss_and_the_plan_s_bounds_follow_the_verdict_they_amend():
    runs = tally(1, 1, 1)
    variation = moved_miss(runs.records[0])
    plan = random_plan(3)
    cell = finish_cell(Measured(SPEC, runs, [], {}, variation=variation, plan=plan))
    assert variation.factors[0].outcome == FactorOutcome.MISS
    assert cell.verdict == Verdict.REPRODUCED and "another path" in cell.reason
    assert cell.seeds is plan and cell.miss_bounds is None  # bounds speak for a clean cell only
    clean = finish_cell(Measured(SPEC, tally(1, 1, 1), [], {}, plan=plan))
    assert clean.verdict == Verdict.CLEAN and clean.miss_bounds == plan.bounds


def test_an_interrupted_cell_keeps_what_was_judged_without_changing_its_verdict_or_its_inputs():
    runs = tally(1, 1, planned=4)
    variation = moved_miss(runs.records[0])
    before = copy.deepcopy(variation)
    cell = finish_cell(Measured(SPEC, runs, [], {}, interrupted=True, variation=variation,
                                seed_check=SeedCheck(SeedRun(1, 1, False), SeedRun(2, 2, True))))
    assert cell.interrupted and cell.reason == "interrupted after 2 of 4 runs" and cell.seed_check is None
    assert cell.variation.note == INTERRUPTED_VARY and variation.note == before.note == ""


def test_a_script_s_command_and_folder_then_its_seed_check_lead_the_reason():
    runs = tally(1, 1, 1, failed=(2,))
    check = SeedCheck(SeedRun(2, 2, False), SeedRun(1, 1, True))
    cell = finish_cell(Measured(SPEC, runs, [], {}, script=ScriptRun("python s.py", FolderMode.ENVIRONMENT, "why"),
                                seed_check=check))
    assert cell.command == "python s.py" and cell.cache_folder == FolderMode.ENVIRONMENT
    assert cell.cache_folder_why == "why" and cell.seed_check == check
    assert cell.reason.startswith("fails for some hash seeds")


def test_a_job_the_environment_cannot_run_still_records_its_plan(tmp_path):
    """As the sweep's record_plan did after the fact: an `unsupported` multi-process cell keeps the seeds
    planned for it (no bound: it is not clean)."""
    from harness.measure.cell_runner import CellRunner
    from harness.measure.seeds import with_ranks
    from tests.fakes import REPRO, ScriptedEnvironment

    spec = CellSpec("0.4.28", Platform.CPU, 8, None, 2)
    plan = with_ranks(random_plan(2), 2)
    cell = CellRunner(ScriptedEnvironment(lambda seed: 1), REPRO, 10).run(spec, plan.launches(), tmp_path / "c",
                                                                        tmp_path / "l", plan=plan)
    assert cell.verdict == Verdict.UNSUPPORTED and cell.seeds is plan and cell.miss_bounds is None


def test_a_reproduced_cell_s_cause_is_read_last_from_the_cell_as_finished():
    """The likely cause is decided here too (it was added by the results writer after the cell was finished):
    the reader sees the finished cell, and what it says is the cell's cause."""
    from harness.core.kinds import Cause

    seen = []

    def read_cause(cell):
        seen.append((cell.verdict, cell.seeds))
        return Cause.ORDER

    plan, runs = random_plan(3), tally(1, 1, 1)
    variation = moved_miss(runs.records[0])  # a clean cell's factor missed: reproduced
    cell = finish_cell(Measured(SPEC, runs, [], {}, variation=variation, plan=plan, read_cause=read_cause))
    assert seen == [(Verdict.REPRODUCED, plan)] and cell.cause == Cause.ORDER
    assert finish_cell(Measured(SPEC, runs, [], {}, variation=variation)).cause is None  # no reader: not looked for
