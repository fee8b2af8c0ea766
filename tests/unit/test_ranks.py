"""Multi-process runs judged from each process's own JAX log (pure): real logs of the pvary/psum program
(examples/multihost_pvary.py) stored in tests/fixtures/jax_logs, two processes per launch."""

from pathlib import Path

from harness.results.document import read_cell
from harness.core.records import convert, plain
from harness.core import jaxlog
from harness.verdicts.verdict import group_facts, judge
from harness.core.jaxlog import Outcome
from harness.core.model import CellResult, CellSpec
from harness.core.findings import JobFacts, RankSplit
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RankRecord, RunRecord
from harness.evidence.ranks import differences, first_split, host_components, split_phrase, writers

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"
SPEC = CellSpec("0.8.1", Platform.CPU, 8, None, processes=2)


def rank(number, seed, name, exit_code=0, timed_out=False, joined=True):
    return RankRecord(number, seed, exit_code, 1.0, timed_out, "" if exit_code == 0 else "exit code 1",
                      f"run.rank{number}.log", jaxlog.parse((LOGS / name).read_text()), joined=joined)


def group_run(index, ranks, failed=False):
    """A launch as the runner records it: the folder holds what rank 0 wrote; the keys are every rank's."""
    written = [k.key + "-cache" for r in ranks for k in r.keys.with_outcome(Outcome.WRITTEN)]
    return RunRecord(index, ranks[0].seed, 1 if failed else 0, 1.0, sorted(written),
                     keys=jaxlog.merged(r.keys for r in ranks), ranks=ranks)


def pvary_0_10_2(index, joined=True):  # ranks agree on the program; keys differ in the devices only
    return group_run(index, [rank(0, 11, "job-pvary-0.10.2-seed11-rank0.err", joined=joined),
                       rank(1, 12, "job-pvary-0.10.2-seed12-rank1.err", joined=joined)])


def pvary_0_8_1(index):  # the two seeds order the axes differently: the ranks lowered different programs
    return group_run(index, [rank(0, 11, "job-pvary-0.8.1-seed11-rank0.err", exit_code=1),
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


def test_ranks_that_lowered_different_programs_reproduce_even_when_the_group_died():
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
    facts = group_facts(runs, 2, 3)
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


def test_a_process_group_no_process_joined_is_not_clean():
    runs = [pvary_0_10_2(1, joined=False), pvary_0_10_2(2, joined=False)]
    judgement = judge(runs)
    assert judgement.verdict == Verdict.UNSUPPORTED
    assert "no process called jax.distributed.initialize()" in judgement.reason


def test_a_hung_process_group_is_an_error_naming_its_processes():
    from harness.measure.multiprocess_run import group_reason

    ranks = [RankRecord(0, 11, None, 20.0, True, "killed after the 20 s timeout"),
             RankRecord(1, 12, None, 20.0, True, "killed after the 20 s timeout")]
    reason = group_reason(ranks)
    assert reason.startswith("processes did not finish: process 0 (killed after the 20 s timeout)")
    run = RunRecord(1, 11, None, 20.0, [], timed_out=True, reason=reason, ranks=ranks)
    judgement = judge([run, run], expected_runs=2)
    assert judgement.verdict == Verdict.ERROR and "processes did not finish" in judgement.reason
    assert group_reason([RankRecord(0, 1, 1, 1.0, reason="exit code 1")]) == "processes failed: process 0 (exit code 1)"


def test_multi_process_cells_round_trip_and_single_process_cells_are_written_as_before():
    runs = [pvary_0_8_1(1)]
    cell = CellResult(SPEC, Verdict.REPRODUCED, {}, runs, rank_split=first_split(runs), job=group_facts(runs, 2))
    data = plain(cell)
    assert data["spec"]["processes"] == 2 and data["rank_split"]["module"] == "jit_loss"
    back = read_cell(data)
    assert back.spec == SPEC and back.rank_split == cell.rank_split and back.job == cell.job
    assert plain(back.runs[0].ranks[1].keys) == plain(runs[0].ranks[1].keys)
    assert plain(back) == data
    single = plain(CellResult(CellSpec("0.8.1", Platform.CPU, 8, None), Verdict.CLEAN, {}, [
        RunRecord(1, 5, 0, 1.0, [])]))
    assert not {"rank_split", "job"} & set(single) and "processes" not in single["spec"] and "ranks" not in single["runs"][0]


def test_a_multiprocess_cell_has_its_own_key_and_folder():
    single = CellSpec("0.8.1", Platform.CPU, 8, None)
    assert SPEC.key != single.key and SPEC.slug != single.slug and SPEC.slug.endswith("-2p-script")
    assert single.key == "0.8.1|cpu|8|script" and single.slug == "jax-0.8.1-cpu8-script"
    assert SPEC.devices_label == "cpux8 (2 processes)" and single.devices_label == "cpux8"
    assert isinstance(convert(plain(JobFacts(2)), JobFacts), JobFacts)
    assert convert(plain(first_split([pvary_0_8_1(1)])), RankSplit) == first_split([pvary_0_8_1(1)])


def test_the_report_says_what_a_multi_process_cell_is_and_pairs_its_two_processes():
    from harness.report.render import render_report
    from harness.results.document import read_document
    from harness.measure.seeds import random_plan, with_ranks
    from harness.report.table import render

    runs = [pvary_0_8_1(1)]
    plan = with_ranks(random_plan(2), 2)
    cell = CellResult(SPEC, Verdict.REPRODUCED, {}, runs, reason=split_phrase(first_split(runs)), seeds=plan,
                      rank_split=first_split(runs), job=group_facts(runs, 2))
    document = {"schema_version": 2, "status": "complete", "cells": [plain(cell)],
                "config": {"name": "t", "repro": "train.py", "source": "harness check", "processes": 2}}
    from harness.report.evidence import MissingEvidence

    text = render_report(read_document(document, "test"), [cell], {SPEC.key: MissingEvidence("jit_loss", "no IR dump in this test")})
    assert "## Multi-process cells" in text and "2 processes per run" in text
    assert "processes that wrote to the cache: 0" in text
    assert "differ between processes 0 and 1 of run 1" in text and "| **computation**" in text
    assert "each run is a job of 2 processes" in text and "--processes 2" in text
    assert "for seed in" not in text  # no single-process loop for a job's cell
    table = render([cell])
    assert "cpux8 (2 processes)" in table and "jit_loss: processes differ" in table


# A psum program with local arrays beside it (`jnp.ones`, a PRNG key, a device_put on a local device), two
# processes of one launch: real logs, tests/fixtures/jax_logs/job-local-*.err (seeds in the comments).
def local_group(version, index=1, failed=False):
    code = 1 if failed else 0
    return group_run(index, [rank(0, 3025137998, f"job-local-{version}-rank0.err", exit_code=code),
                       rank(1, 650478405, f"job-local-{version}-rank1.err", exit_code=code)], failed=failed)


LOCAL_MODULES = {"jit_broadcast_in_dim", "jit_convert_element_type", "jit__threefry_seed", "jit_multiply",
                 "jit__reduce_sum", "jit__uniform"}  # 0.10.2 also compiles a jit_stage


def test_each_key_keeps_the_devices_jax_logged_it_was_compiled_for():
    ours = {k.module: k.devices for k in jaxlog.parse((LOGS / "job-local-0.10.2-rank0.err").read_text()).keys}
    theirs = {k.module: k.devices for k in jaxlog.parse((LOGS / "job-local-0.10.2-rank1.err").read_text()).keys}
    assert ours["jit_broadcast_in_dim"] == (0,) and theirs["jit_broadcast_in_dim"] == (2048,)
    # The job's computation: numpy wraps its assignment over two lines, both read.
    assert ours["jit_loss"] == theirs["jit_loss"] == (0, 1, 2, 3, 2048, 2049, 2050, 2051)
    # A single-process log of 0.4.26 (the oldest release with a CPU cache) says its devices the same way.
    seed = {k.module: k.devices for k in jaxlog.parse((LOGS / "seed-0.4.26-hs1-0.err").read_text()).keys}
    assert seed["jit_f"] == tuple(range(8)) and seed["jit_iota"] == (0,)
    key = jaxlog.parse((LOGS / "job-local-0.10.2-rank0.err").read_text()).keys[0]
    assert convert(plain(jaxlog.RunLog([key])), jaxlog.RunLog).keys[0].devices == (0,)
    assert convert({"keys": [{"module": "jit_f", "key": "jit_f-" + "0" * 64, "outcome": "miss"}]},
                   jaxlog.RunLog).keys[0].devices == ()


def test_an_assignment_cut_short_leaves_the_devices_unknown():
    head = ("DEBUG:jax._src.compiler:173: get_compile_options: num_replicas=1 num_partitions=8 "
            "device_assignment=[[CpuDevice(id=0) CpuDevice(id=1) ...\n")
    key = "DEBUG:jax._src.compiler:135: PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key 'jit_f-" + "a" * 64 + "'\n"
    (logged,) = jaxlog.parse(head + key).keys
    assert logged.devices == ()
    (logged,) = jaxlog.parse(head.replace(" ...", "") + "  CpuDevice(id=2) CpuDevice(id=3) CpuDevice(id=4)\n"
                             "  CpuDevice(id=5) CpuDevice(id=6) CpuDevice(id=7)]]\n" + key).keys
    assert logged.devices == tuple(range(8))


def test_local_computations_are_no_split_and_the_group_reads_clean_on_0_8_2_and_0_10_2():
    for version in ("0.8.2", "0.10.2"):
        runs = [local_group(version, 1), local_group(version, 2)]
        differing = {d.module for d in differences(runs[0])}
        assert LOCAL_MODULES <= differing  # their keys do differ between the processes ...
        assert first_split(runs) is None  # ... but each process compiled them for its own device
        judgement = judge(runs, expected_runs=2)
        assert judgement.verdict == Verdict.CLEAN, (version, judgement.reason)
        facts = group_facts(runs, 2, 2)
        assert [p.verdict for p in facts.per_process] == [Verdict.CLEAN, Verdict.CLEAN], facts.per_process
        assert facts.host_components == ("accelerator_config",)  # jit_loss, compiled for the same 8 devices
        (note,) = [n for n in facts.notes if "its own devices" in n]
        assert "jit_broadcast_in_dim" in note and "(1 device each)" in note
        assert "keys differ between the processes in compile_options, accelerator_config" in note


def test_ranks_that_lowered_different_programs_still_reproduce_beside_local_computations():
    runs = [local_group("0.8.1", failed=True)]
    split = first_split(runs)
    assert split is not None and split.module == "jit_loss" and "computation" in split.components
    judgement = judge(runs)
    assert judgement.verdict == Verdict.REPRODUCED and judgement.rank_split == split
    assert judgement.reason.startswith("jit_loss: processes 0 and 1 of run 1 computed different keys")


def test_a_local_computation_is_not_the_counterpart_of_the_groups_one():
    """Process 1 compiled `jit_loss` only for its own device, process 0 only for the job's: no split (nothing
    to compare), the modules' devices differ."""
    local = local_group("0.10.2")
    ours, theirs = local.ranks[0].keys, local.ranks[1].keys
    group_loss = next(k for k in ours.keys if k.module == "jit_loss")
    own = next(k for k in theirs.keys if k.module == "jit_multiply")
    theirs.keys = [jaxlog.LoggedKey("jit_loss", "jit_loss-" + "b" * 64, own.outcome, own.reason, dict(own.components),
                                    devices=own.devices)]
    ours.keys = [group_loss]
    (difference,) = differences(local)
    assert difference.other_devices and not difference.compared
    assert first_split([local]) is None


def test_keys_without_devices_are_compared_as_before():
    runs = [local_group("0.10.2")]
    for r in runs[0].ranks:
        for k in r.keys.keys:
            k.devices = ()  # results written before the devices were kept
    split = first_split(runs)
    assert split is not None and "compile_options" in split.components


def test_the_split_phrase_claims_no_collectives():
    split = first_split([pvary_0_8_1(1)])
    assert split_phrase(split).endswith("(computation, accelerator_config differ: they lowered different programs)")


RANK_DUMPS = Path(__file__).parents[1] / "fixtures" / "ir_dump" / "ranks"


def rank_evidence(name):
    """The lowered modules of two processes of one launch (real IR dumps), diffed as the report does."""
    from harness.report.evidence import compare_ranks

    a, b = ((RANK_DUMPS / f"{name}-rank{r}.mlir").read_text() for r in (0, 1))
    return compare_ranks("jit_f", RunRecord(1, 11, 0, 1.0, []), (0, 1), (11, 12), a, b,
                         ("jit_f-" + "a" * 64, "jit_f-" + "b" * 64))


def test_what_two_processes_programs_differ_in_is_read_from_their_diff():
    from harness.report.evidence import ProgramsDiffer, programs_differ

    # 0.8.1's pvary/psum program: the psum's replica groups follow the hash seed.
    assert programs_differ(rank_evidence("pvary-0.8.1").diff) == ProgramsDiffer.COLLECTIVES
    # `x * (1.0 + jax.process_index())` in a jitted sum over the job's devices, 0.10.2: one constant differs.
    assert programs_differ(rank_evidence("constant-0.10.2").diff) == ProgramsDiffer.CONSTANTS
    assert programs_differ(["--- a", "+++ b", "-  %0 = stablehlo.sine %arg0", "+  %0 = stablehlo.cosine %arg0"]) \
        == ProgramsDiffer.OTHER
    assert programs_differ([]) is None


def test_the_report_claims_mismatched_collectives_only_where_a_collective_differs():
    from harness.report.render import render_report
    from harness.results.document import read_document

    runs = [pvary_0_8_1(1)]
    split = first_split(runs)
    cell = CellResult(SPEC, Verdict.REPRODUCED, {}, runs, reason=split_phrase(split), rank_split=split,
                      job=group_facts(runs, 2))
    document = read_document({"schema_version": 2, "status": "complete", "cells": [plain(cell)],
                                          "config": {"name": "t", "repro": "train.py", "source": "harness check",
                                                     "processes": 2}}, "test")
    collectives = render_report(document, [cell], {SPEC.key: rank_evidence("pvary-0.8.1")})
    assert "the collectives each then runs do not match the other's" in collectives
    constant = render_report(document, [cell], {SPEC.key: rank_evidence("constant-0.10.2")})
    assert "do not match" not in constant
    assert "the same program but for a constant" in constant and "their collectives match" in constant
