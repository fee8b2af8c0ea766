"""What a miss costs, in seconds, from recorded JAX logs of real runs (tests/fixtures/jax_logs)."""

from pathlib import Path

from harness.results.document import read_cell
from harness.core.records import plain
from harness.core import jaxlog
from harness.evidence.cost import cell_cost, cost_of, cost_phrase, module_stats
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"


def run(index: int, log: str, exit_code: int = 0) -> RunRecord:
    keys = jaxlog.parse((LOGS / log).read_text()) if log else None
    return RunRecord(index=index, seed=index, exit_code=exit_code, duration_s=1.0, new_entries=[], keys=keys)


def seconds_of(log: str, module: str) -> float:
    return next(k.compile_time_s for k in jaxlog.parse((LOGS / log).read_text()).keys if k.module == module)


def test_the_seed_on_0_4_28_loses_jit_f_compile_seconds_in_each_later_start():
    cost = cell_cost([run(1, "seed-0.4.28-hs1-0.err"), run(2, "seed-0.4.28-hs2-4.err")])
    assert cost.starts == 1 and cost.missed_modules == ("jit_f",) and cost.each_start_missed == ("jit_f",)
    assert cost.modules == 4 and not cost.untimed_modules
    assert cost.lost_per_start_s == seconds_of("seed-0.4.28-hs2-4.err", "jit_f") > 0
    assert [r.misses for r in cost.runs] == [4, 1] and [r.hits for r in cost.runs] == [0, 3]
    assert cost_phrase(cost) == (f"each fresh process recompiles jit_f: {cost.lost_per_start_s:.2f} s lost per start "
                                 "(1 of 4 modules missed)")


def test_a_start_with_the_first_runs_hash_order_hits_and_the_loss_is_averaged():
    """hs1-5 orders the axis names as hs1-0 does: it hits jit_f, and only one of two later starts pays."""
    runs = [run(1, "seed-0.4.28-hs1-0.err"), run(2, "seed-0.4.28-hs2-4.err"), run(3, "seed-0.4.28-hs1-5.err")]
    cost = cell_cost(runs)
    assert cost.starts == 2 and cost.missed_modules == ("jit_f",) and cost.each_start_missed == ()
    assert cost.lost_per_start_s == round(seconds_of("seed-0.4.28-hs2-4.err", "jit_f") / 2, 3)
    assert cost_phrase(cost).startswith("1 of 2 fresh processes recompile jit_f: ")
    assert "lost per start on average (1 of 4 modules missed)" in cost_phrase(cost)


def test_a_clean_release_says_what_its_hits_save():
    first = "seed-0.10.2-hs1-0.err"
    cost = cell_cost([run(1, first), run(2, "seed-0.10.2-hs2-4.err")])
    saved = sum(k.compile_time_s for k in jaxlog.parse((LOGS / first).read_text()).keys)
    assert cost.missed_modules == () and cost.lost_per_start_s == 0
    assert cost.saved_per_start_s == round(saved, 3) > 0  # each hit saves what its writer logged compiling it
    assert cost.first_run_s == round(saved, 3)
    assert cost_phrase(cost) == f"a hit saves {cost.saved_per_start_s:.2f} s per start (4 modules loaded)"


def test_a_module_never_written_is_missed_every_start_but_untimed():
    cost = cell_cost([run(1, "host_callback-0.4.31-hs1.err"), run(2, "host_callback-0.4.31-hs2.err")])
    assert cost.each_start_missed == ("jit_f",) and cost.untimed_modules == ("jit_f",)
    assert cost_phrase(cost).startswith("each fresh process recompiles jit_f (1 of 3 modules missed; JAX logs no "
                                        "compile time")
    stats = {s.module: s for s in module_stats([run(1, "host_callback-0.4.31-hs1.err"),
                                                run(2, "host_callback-0.4.31-hs2.err")])}
    assert stats["jit_f"].not_written == 2 and stats["jit_f"].later_misses == 1
    assert stats["jit_f"].reason.startswith("it uses host callbacks")
    assert stats["jit_broadcast_in_dim"].hits == 1 and stats["jit_broadcast_in_dim"].saved_s > 0


def test_no_cost_without_the_first_runs_log_or_a_later_run():
    assert cell_cost([run(1, ""), run(2, "seed-0.10.2-hs2-4.err")]) is None
    assert cell_cost([]) is None
    lone = cell_cost([run(1, "seed-0.10.2-hs1-0.err")])
    assert lone.starts == 0 and cost_phrase(lone) == ""
    # A failed run is no start: it is left out.
    failed = cell_cost([run(1, "seed-0.10.2-hs1-0.err"), run(2, "seed-0.10.2-hs2-4.err", exit_code=1)])
    assert failed.starts == 0


def test_a_cell_from_an_older_folder_gets_its_cost_from_its_runs():
    spec = CellSpec("0.4.28", Platform.CPU, 8, None)
    runs = [run(1, "seed-0.4.28-hs1-0.err"), run(2, "seed-0.4.28-hs2-4.err")]
    old = CellResult(spec, Verdict.REPRODUCED, {}, runs)
    assert old.cost is None and cost_of(old) == cell_cost(runs)
    again = read_cell({**plain(old), "cost": plain(cell_cost(runs))})
    assert again.cost == cell_cost(runs)


def test_a_miss_jax_logged_as_0_00_s_is_said_to_cost_under_a_hundredth():
    runs = [run(1, "seed-0.4.28-hs1-0.err"), run(2, "seed-0.4.28-hs2-4.err")]
    for k in runs[1].keys.keys:
        k.compile_time_s = 0.0 if k.compile_time_s is not None else None
    assert cost_phrase(cell_cost(runs)) == ("each fresh process recompiles jit_f: under 0.01 s lost per start "
                                            "(1 of 4 modules missed)")


def test_a_jobs_misses_are_said_of_the_job_not_of_each_process():
    # A job's run merges its processes' keys: a miss may be one process's (JAX writes only process 0's
    # entries), so the words say the job recompiles in at least one process, never that each process does.
    runs = [run(1, "seed-0.4.28-hs1-0.err"), run(2, "seed-0.4.28-hs2-4.err")]
    cost = cell_cost(runs)
    assert cost_phrase(cost, processes=2).startswith("each job recompiles jit_f in at least one of its 2 processes: ")
    assert "each fresh process" not in cost_phrase(cost, processes=2)
    averaged = cell_cost([*runs, run(3, "seed-0.4.28-hs1-5.err")])
    assert cost_phrase(averaged, processes=2).startswith("1 of 2 jobs recompile jit_f in at least one of its 2 processes: ")
