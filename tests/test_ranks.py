"""Multi-process runs judged from each process's own JAX log (pure): real logs of the pvary/psum program
(examples/multihost_pvary.py) stored in tests/fixtures/jax_logs, two processes per launch."""

from pathlib import Path

from harness import jaxlog
from harness.analysis import job_facts, judge
from harness.jaxlog import Outcome
from harness.model import (CellResult, CellSpec, JobFacts, Platform, RankRecord, RankSplit, RunRecord,
                           Verdict)
from harness.ranks import differences, first_split, host_components, split_phrase, writers

LOGS = Path(__file__).parent / "fixtures" / "jax_logs"
SPEC = CellSpec("0.8.1", Platform.CPU, 8, None, processes=2)


def rank(number, seed, name, exit_code=0, timed_out=False, joined=True):
    return RankRecord(number, seed, exit_code, 1.0, timed_out, "" if exit_code == 0 else "exit code 1",
                      f"run.rank{number}.log", jaxlog.parse((LOGS / name).read_text()), joined=joined)


def job(index, ranks, failed=False):
    """A launch as the runner records it: the folder holds what rank 0 wrote; the keys are every rank's."""
    written = [k.key + "-cache" for r in ranks for k in r.keys.with_outcome(Outcome.WRITTEN)]
    return RunRecord(index, ranks[0].seed, 1 if failed else 0, 1.0, sorted(written),
                     keys=jaxlog.merged(r.keys for r in ranks), ranks=ranks)


def pvary_0_10_2(index, joined=True):  # ranks agree on the program; keys differ in the devices only
    return job(index, [rank(0, 11, "job-pvary-0.10.2-seed11-rank0.err", joined=joined),
                       rank(1, 12, "job-pvary-0.10.2-seed12-rank1.err", joined=joined)])


def pvary_0_8_1(index):  # the two seeds order the axes differently: the ranks lowered different programs
    return job(index, [rank(0, 11, "job-pvary-0.8.1-seed11-rank0.err", exit_code=1),
                       rank(1, 12, "job-pvary-0.8.1-seed12-rank1.err", exit_code=1)], failed=True)


def test_a_process_other_than_0_is_refused_writing_and_its_miss_is_read():
    log = jaxlog.parse((LOGS / "job-pvary-0.10.2-seed12-rank1.err").read_text())
    (key,) = log.keys
    assert key.module == "jit_loss" and key.outcome == Outcome.NOT_WRITTEN and key.reason == "process_id != 0"
    assert "computation" in key.components


def test_merged_keeps_each_key_once_with_the_write():
    a = jaxlog.parse((LOGS / "job-pvary-0.10.2-seed11-rank0.err").read_text())
    b = jaxlog.parse((LOGS / "job-pvary-0.10.2-seed12-rank1.err").read_text())
    both = jaxlog.merged([a, b, a])
    assert len(both.keys) == 2
    assert {k.outcome for k in both.keys} == {Outcome.WRITTEN, Outcome.NOT_WRITTEN}


def test_keys_that_differ_in_the_devices_only_are_no_split():
    run = pvary_0_10_2(1)
    (difference,) = differences(run)
    assert difference.components == ("accelerator_config",) and difference.host_only
    assert first_split([run]) is None
    assert host_components([run]) == ("accelerator_config",)
    assert writers([run]) == (0,)


def test_ranks_that_lowered_different_programs_reproduce_even_when_the_job_died():
    runs = [pvary_0_8_1(1)]
    split = first_split(runs)
    assert split is not None and split.module == "jit_loss" and split.run == 1 and split.ranks == (0, 1)
    assert "computation" in split.components
    judgement = judge(runs)
    assert judgement.verdict == Verdict.REPRODUCED and judgement.rank_split == split
    assert judgement.reason == split_phrase(split)
    assert "processes 0 and 1 of run 1 computed different keys" in judgement.reason
    assert "they lowered different programs" in judgement.reason


def test_stable_launches_are_clean_and_each_process_is_judged_alone():
    runs = [pvary_0_10_2(1), pvary_0_10_2(2), pvary_0_10_2(3)]
    judgement = judge(runs, expected_runs=3)
    assert judgement.verdict == Verdict.CLEAN, judgement.reason
    facts = job_facts(runs, 2, 3)
    assert [(p.rank, p.verdict) for p in facts.per_process] == [(0, Verdict.CLEAN), (1, Verdict.CLEAN)]
    assert "never written (JAX writes from process 0 only)" in facts.per_process[1].reason
    assert facts.writers == (0,) and facts.host_components == ("accelerator_config",)
    assert any("only process 0 wrote" in n for n in facts.notes)


def test_a_later_launch_whose_process_computes_a_new_key_reproduces():
    later = pvary_0_8_1(2)
    later.exit_code, later.ranks = 0, [later.ranks[1]]  # process 1's key alone: no split inside the run
    for r in later.ranks:
        r.exit_code = 0
    later.ranks[0].rank = 0
    first = pvary_0_10_2(1)
    first.ranks = [first.ranks[0]]
    # Release logs of two versions stand in for two launches whose process 0 computed different keys.
    judgement = judge([first, later])
    assert judgement.verdict == Verdict.REPRODUCED and "new key" in judgement.reason


def test_a_job_no_process_joined_is_not_clean():
    runs = [pvary_0_10_2(1, joined=False), pvary_0_10_2(2, joined=False)]
    judgement = judge(runs)
    assert judgement.verdict == Verdict.UNSUPPORTED
    assert "no process called jax.distributed.initialize()" in judgement.reason


def test_a_hung_job_is_an_error_naming_its_processes():
    from harness.job import job_reason

    ranks = [RankRecord(0, 11, None, 20.0, True, "killed after the 20 s timeout"),
             RankRecord(1, 12, None, 20.0, True, "killed after the 20 s timeout")]
    reason = job_reason(ranks)
    assert reason.startswith("processes did not finish: process 0 (killed after the 20 s timeout)")
    run = RunRecord(1, 11, None, 20.0, [], timed_out=True, reason=reason, ranks=ranks)
    judgement = judge([run, run], expected_runs=2)
    assert judgement.verdict == Verdict.ERROR and "processes did not finish" in judgement.reason
    assert job_reason([RankRecord(0, 1, 1, 1.0, reason="exit code 1")]) == "processes failed: process 0 (exit code 1)"


def test_multi_process_cells_round_trip_and_single_process_cells_are_written_as_before():
    runs = [pvary_0_8_1(1)]
    cell = CellResult(SPEC, Verdict.REPRODUCED, {}, runs, rank_split=first_split(runs), job=job_facts(runs, 2))
    data = cell.to_json()
    assert data["processes"] == 2 and data["rank_split"]["module"] == "jit_loss"
    back = CellResult.from_json(data)
    assert back.spec == SPEC and back.rank_split == cell.rank_split and back.job == cell.job
    assert back.runs[0].ranks[1].keys.to_json() == runs[0].ranks[1].keys.to_json()
    assert back.to_json() == data
    single = CellResult(CellSpec("0.8.1", Platform.CPU, 8, None), Verdict.CLEAN, {}, [
        RunRecord(1, 5, 0, 1.0, [])]).to_json()
    assert not {"processes", "rank_split", "job"} & set(single) and "ranks" not in single["runs"][0]


def test_a_job_cell_has_its_own_key_and_folder():
    single = CellSpec("0.8.1", Platform.CPU, 8, None)
    assert SPEC.key != single.key and SPEC.slug != single.slug and SPEC.slug.endswith("-2p-script")
    assert single.key == "0.8.1|cpu|8|script" and single.slug == "jax-0.8.1-cpu8-script"
    assert SPEC.devices_label == "cpux8 (2 processes)" and single.devices_label == "cpux8"
    assert isinstance(JobFacts.from_json(JobFacts(2).to_json()), JobFacts)
    assert RankSplit.from_json(first_split([pvary_0_8_1(1)]).to_json()) == first_split([pvary_0_8_1(1)])


def test_the_report_says_what_a_multi_process_cell_is_and_pairs_its_two_processes():
    from harness.report.render import render_report
    from harness.results import ResultsDocument
    from harness.seeds import random_plan, with_ranks
    from harness.table import render

    runs = [pvary_0_8_1(1)]
    plan = with_ranks(random_plan(2), 2)
    cell = CellResult(SPEC, Verdict.REPRODUCED, {}, runs, reason=split_phrase(first_split(runs)), seeds=plan,
                      rank_split=first_split(runs), job=job_facts(runs, 2))
    document = {"schema_version": 2, "status": "complete", "cells": [cell.to_json()],
                "config": {"name": "t", "repro": "train.py", "source": "harness check", "processes": 2}}
    from harness.report.evidence import MissingEvidence

    text = render_report(ResultsDocument.from_json(document, "test"), [cell], {SPEC.key: MissingEvidence("jit_loss", "no IR dump in this test")})
    assert "## Multi-process cells" in text and "2 processes per run" in text
    assert "processes that wrote to the cache: 0" in text
    assert "differ between processes 0 and 1 of run 1" in text and "| **computation**" in text
    assert "each run is a job of 2 processes" in text and "--processes 2" in text
    assert "for seed in" not in text  # no single-process loop for a job's cell
    table = render([cell])
    assert "cpux8 (2 processes)" in table and "jit_loss: processes differ" in table
