"""Run 2 beside run 1 (issue 51, item 7): its keys compared with run 1's entries (pure), when a cell pairs its first
two runs, and the schedule with a scripted environment (no JAX: tests/integration/test_pytest_integration.py runs
real releases under bubblewrap)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness.core.records import replace
from harness.core.confidence import SeedPlan, SeedStrategy
from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellSpec
from harness.core.runs import ComparedByKey, ProcessOutcome, RunRecord
from harness.environments.base import Environment
from harness.evidence.beside_keys import compared_by_key, compared_phrase, why_not_compared
from harness.inputs.config import Repro
from harness.inside.startup.jax_cache_harness_hook import RECORD_VAR
from harness.measure.beside import MIN_RUNS_TO_PAIR, pairing_problem
from harness.measure.cell_runner import CellRunner
from harness.measure.seeds import OrderObserver, Probe, SeedWindow
from harness.verdicts.judge import Tally

DIGEST = "{:064x}"


def key(module: str, n: int) -> str:
    return f"{module}-{DIGEST.format(n)}"


def logged(module: str, n: int, outcome: Outcome, **more) -> LoggedKey:
    return LoggedKey(module, key(module, n), outcome, **more)


def run(index: int, keys: list[LoggedKey], new_entries: list[str], exit_code: int = 0) -> RunRecord:
    return RunRecord(index=index, seed=index, exit_code=exit_code, duration_s=1.0, new_entries=new_entries,
                     keys=RunLog(keys))


# ---- the comparison by key (pure) ----

FIRST = run(1, [logged("jit_f", 1, Outcome.WRITTEN, compile_time_s=0.5),
                logged("jit_small", 2, Outcome.NOT_WRITTEN, reason="compile time below the threshold")],
            [f"{key('jit_f', 1)}-cache", f"{key('jit_f', 1)}-atime"])


def test_a_key_run_1_wrote_is_a_hit_by_key_and_leaves_no_entry():
    own = run(2, [logged("jit_f", 1, Outcome.WRITTEN, compile_time_s=0.4),
                  logged("jit_small", 2, Outcome.NOT_WRITTEN, reason="compile time below the threshold")],
              [f"{key('jit_f', 1)}-cache", f"{key('jit_f', 1)}-atime"])
    compared = compared_by_key(own, FIRST, own.new_entries, "caches/cell.run-02")
    assert compared.keys is not None
    hit, small = compared.keys.keys
    assert (hit.outcome, hit.compile_time_s) == (Outcome.HIT, None)  # nothing compiled in the cell's folder
    assert small == own.keys.keys[1]  # not written by run 1: compiled again there too, as it was
    assert compared.new_entries == []
    assert compared.compared_by_key == ComparedByKey(baseline=1, folder="caches/cell.run-02", hits=1)
    assert own.compared_by_key is None and own.keys.keys[0].outcome == Outcome.WRITTEN  # the record as it ran: kept


def test_a_key_run_1_never_computed_is_a_miss_its_entry_the_one_it_would_have_added():
    own = run(2, [logged("jit_f", 3, Outcome.WRITTEN), logged("jit_small", 2, Outcome.WRITTEN)],
              [f"{key('jit_f', 3)}-cache", f"{key('jit_f', 3)}-atime", f"{key('jit_small', 2)}-cache", "tmp-lock"])
    compared = compared_by_key(own, FIRST, own.new_entries, "own")
    assert compared.keys is not None and [k.outcome for k in compared.keys.keys] == [Outcome.WRITTEN] * 2
    # the moved key's files, the entry run 1 computed without writing it (written here: the same in the cell's
    # folder), and a file that is no entry: all would have appeared in the cell's folder
    assert compared.new_entries == sorted(own.new_entries)
    assert compared.compared_by_key is not None and compared.compared_by_key.hits == 0


def test_a_run_whose_log_named_no_key_is_compared_by_its_folder_alone():
    own = RunRecord(index=2, seed=2, exit_code=0, duration_s=1.0,
                    new_entries=[f"{key('jit_f', 1)}-cache", f"{key('jit_g', 9)}-cache"])
    compared = compared_by_key(own, FIRST, own.new_entries, "own")
    assert compared.keys is None and compared.new_entries == [f"{key('jit_g', 9)}-cache"]


def test_a_run_1_that_ran_again_or_failed_leaves_run_2_nothing_to_be_compared_with():
    assert why_not_compared(FIRST, first_ran_again=False) == ""
    assert "ran again" in why_not_compared(FIRST, first_ran_again=True)
    assert why_not_compared(run(1, [], [], exit_code=1), first_ran_again=False) == "run 1 failed"
    assert why_not_compared(None, first_ran_again=False)


def test_a_pytest_run_1_with_a_test_failing_in_both_runs_is_still_run_2s_baseline():
    """distrax's tests on 0.4.31: ten float64 tests fail in every run (pytest's exit status 1), 41 pass. Run 1
    counts as a run (keys.counted), so run 2, made beside it, is compared by key; it was run again after run 1
    in the cell's folder, one more process in a row (its first attempt kept as `.beside.log`)."""
    from harness.core.records import replace
    tests = {"t.py::test_float64": "failed", "t.py::test_float32": "passed"}
    first = replace(FIRST, exit_code=1, tests=tests)
    second = replace(run(2, [], [], exit_code=1), tests=tests)
    assert why_not_compared(first, first_ran_again=False, beside=second) == ""
    # no test passed in both: the suite is broken here, run 1 is no baseline
    broken = replace(second, tests={"t.py::test_float64": "failed", "t.py::test_float32": "failed"})
    assert why_not_compared(first, first_ran_again=False, beside=broken) == "run 1 failed"
    assert why_not_compared(first, first_ran_again=False) == "run 1 failed"


def test_the_verdict_says_run_2_was_compared_by_key_and_which_runs_were_served():
    first = run(1, [logged("jit_f", 1, Outcome.WRITTEN)], [f"{key('jit_f', 1)}-cache"])
    own = compared_by_key(run(2, [logged("jit_f", 1, Outcome.WRITTEN)], [f"{key('jit_f', 1)}-cache"]), first,
                          [f"{key('jit_f', 1)}-cache"], "own")
    later = [run(i, [logged("jit_f", 1, Outcome.HIT)], []) for i in (3, 4)]
    tally = Tally(4)
    for record in (first, own, *later):
        tally.add(record)
    cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 8, None), [], {})
    assert cell.verdict == Verdict.CLEAN
    assert cell.reason.endswith("; run 2 ran beside run 1 in an empty folder of its own: its keys were compared "
                                "with run 1's entries, not served (runs 3-4 were served from the cell's folder)")
    assert compared_phrase([first, *later]) == ""  # no run compared so: nothing said
    in_moved = [replace(later[0], in_moved_folder=True), later[1]]  # the moved run counted as run 3
    assert compared_phrase([first, own, *in_moved]).endswith(
        "not served (run 4 was served from the cell's folder; run 3 was served from a copy of it at another path "
        "(the moved folder))")
    moved = compared_by_key(run(2, [logged("jit_f", 7, Outcome.WRITTEN)], [f"{key('jit_f', 7)}-cache"]), first,
                            [f"{key('jit_f', 7)}-cache"], "own")
    tally = Tally(4, stop_when_reproduced=True)
    tally.add(first)
    tally.add(moved)
    assert tally.stop_now()
    cell = tally.cell(CellSpec("0.4.31", Platform.CPU, 8, None), [], {})
    assert cell.verdict == Verdict.REPRODUCED and "a new key in run 2" in cell.reason
    assert cell.reason.endswith("compared with run 1's entries, not served")  # no run after it to name


# ---- when a cell pairs its first runs (pure) ----

PAIRED = dict(builtin=False, module="pytest", processes=1, varied=False, at_once=2, folder_known=False, runs=6,
              give_up=False, own_folder_problem=lambda: "")


@pytest.mark.parametrize("change, why", [
    ({}, ""),
    ({"module": None}, "only a test suite or a module"),
    ({"builtin": True}, "only a test suite or a module"),
    ({"processes": 2}, "multi-process"),
    ({"varied": True}, "--vary"),
    ({"at_once": 1}, "one run at a time"),
    ({"folder_known": True}, "harness reduce"),
    ({"runs": MIN_RUNS_TO_PAIR - 1}, "no run after run 2 would measure a served hit"),
    ({"give_up": True}, "harness reduce"),
    ({"own_folder_problem": lambda: "bubblewrap (bwrap) is not installed"}, "bubblewrap (bwrap) is not installed"),
])
def test_a_cell_pairs_its_first_runs_only_where_it_is_safe(change, why):
    asked = []

    def probe(answer=change.get("own_folder_problem", lambda: "")):
        asked.append(True)
        return answer()
    problem = pairing_problem(**{**PAIRED, **change, "own_folder_problem": probe})
    assert (why in problem) if why else problem == ""
    assert bool(asked) == (set(change) <= {"own_folder_problem"})  # the probe asked only where all else allows


def test_run_2_beside_run_1_takes_its_seed_from_no_run_and_run_3_from_both():
    calls: list[int] = []
    window = SeedWindow(lambda index, seed, dump, started, pending: calls.append(index) or [9] * pending, 2, 2,
                        beside_first=True)
    assert [window.sources(n) for n in range(2, 7)] == [0, 2, 2, 3, 4]
    assert window.ready(2) and window.seeds_for(2, [11], 5) is None and calls == []  # the plan's seed, at once
    window.run_ended(1, 11, Path("run-01.ir"))
    assert not window.ready(3)  # run 3's seed waits for run 2's orders too
    window.run_ended(2, 12, Path("run-02.ir"))
    assert window.seeds_for(3, [11, 12], 4) == [9] * 4 and calls == [1, 2]


def test_a_seed_the_probe_never_predicted_counts_only_for_the_orders_its_module_showed():
    """Run 2's seed beside run 1 is the plan's (random for a suite), not one chosen from run 1's orders: an order
    it lowered is measured, but it is no seed predicted to give the other order, so the bound does not lean on it."""
    probe = Probe("cpython 3.11", (("a", "b"),), {1: (("a", "b"),), 2: (("b", "a"),), 3: (("b", "a"),)})
    observer = OrderObserver(probe)
    observer.observe(1, ['loc("[(\'a\', \'b\'), None]")'])
    observer.observe(4000000000, ['loc("[(\'a\', \'b\'), None]")'])  # run 2: not probed, lowered a,b again
    (cover,) = observer.covers([1, 4000000000])
    assert cover.pair_orders_not_seen == ["b,a"] and cover.seeds_predicted_otherwise == 0
    plan = SeedPlan(SeedStrategy.CHOSEN, [1, 4000000000], chosen=[1], random=[4000000000], covers=[cover])
    assert plan.miss_bound == 1.0  # nothing predicted b,a: no claim
    observer.observe(4000000000, ['loc("[(\'b\', \'a\'), None]")'])  # had it lowered b,a: seen both ways
    (cover,) = observer.covers([1, 4000000000])
    assert cover.pairs_in_both_orders


# ---- the schedule (a scripted environment: no process, no JAX) ----


class SuiteEnvironment(Environment):
    """Each run writes the entry `key_for(seed)` where it is given its folder and says, as the start-up hook does,
    that the cell's folder came at first use; a run 2 may get a folder of its own (as a container does). Records
    each run's folder, start and end."""

    jax_version = "0.4.31"

    def __init__(self, key_for=lambda seed: 1, fail_seeds=(), own_folders=True, sets_folder_late=False,
                 delay=0.15):
        self.key_for, self.fail_seeds, self.own_folders = key_for, set(fail_seeds), own_folders
        self.sets_folder_late, self.delay = sets_folder_late, delay
        self.runs: list[tuple[int, Path, float, float]] = []
        self.lock = threading.Lock()

    def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
        seed, start = int(env["PYTHONHASHSEED"]), time.monotonic()
        events = [{"kind": "fallback", "option": "jax_compilation_cache_dir", "applied": str(cache_dir)}]
        with self.lock:
            late = self.sets_folder_late and not any(s == seed for s, *_ in self.runs)
        if late:  # the script set its own folder after its first compilation: run 1 runs again
            events.append({"kind": "setting", "option": "jax_compilation_cache_dir", "api": "jax.config.update",
                           "requested": "/elsewhere", "applied": str(cache_dir)})
        Path(env[RECORD_VAR]).write_text("".join(json.dumps(e) + "\n" for e in events))
        time.sleep(self.delay)
        log_path.write_text(f"seed {seed}\n")
        (cache_dir / f"jit_f-{self.key_for(seed):064x}").write_text("x")
        with self.lock:
            self.runs.append((seed, Path(cache_dir), start, time.monotonic()))
        return ProcessOutcome(1 if seed in self.fail_seeds else 0, self.delay)

    def own_folder_problem(self) -> str:
        return "" if self.own_folders else "no folder of its own here"

    def own_folder_run(self, program, cell_folder, own):
        return program, own

    def describe(self):
        return {"backend": "scripted"}


SUITE = CellSpec("0.4.31", Platform.CPU, 8, None)
SEEDS = [101, 102, 103, 104]


def check(tmp_path: Path, environment: SuiteEnvironment, runs: list[int] = SEEDS, stop: bool = True):
    repro = Repro("pytest", tmp_path, builtin=False, module="pytest")
    runner = CellRunner(environment, repro, 10, at_once=2, cwd=tmp_path)
    return runner.run(SUITE, runs, tmp_path / "caches" / "cell", tmp_path / "logs", results_root=tmp_path,
                      stop_when_reproduced=stop)


def overlap(environment: SuiteEnvironment, a: int, b: int) -> bool:
    spans: dict[int, tuple[float, float]] = {}
    for seed, _, start, end in environment.runs:  # each seed's first run (the seed control runs run 1's again)
        spans.setdefault(seed, (start, end))
    return spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]


def test_a_clean_suite_runs_run_2_beside_run_1_in_its_own_folder_and_the_later_runs_in_the_cell_s(tmp_path):
    """Runs 3.. are served from the cell's entries: each in a folder of its own holding them as it starts (runs
    overlap: harness/measure/own_folder.py), whose changes go back into the cell's folder."""
    environment = SuiteEnvironment()
    cell = check(tmp_path, environment)
    assert cell.verdict == Verdict.CLEAN, cell.reason
    assert overlap(environment, 101, 102) and not overlap(environment, 102, 103)
    folders = {seed: folder for seed, folder, *_ in environment.runs}
    own, caches = tmp_path / "caches" / "cell.run-02", (tmp_path / "caches").resolve()
    assert folders[102] == own and folders[101] == caches / "cell"
    assert [folders[s] for s in (103, 104)] == [caches / "cell.own-run-03", caches / "cell.own-run-04"]
    assert not (caches / "cell.own-run-03").exists()  # merged back into the cell's folder, then removed
    first, second, *later = cell.runs
    assert second.compared_by_key == ComparedByKey(baseline=1, folder="caches/cell.run-02")
    assert second.new_entries == [] and [p.name for p in own.iterdir()] == [f"jit_f-{1:064x}"]  # kept
    assert all(r.compared_by_key is None for r in (first, *later))
    assert "run 2 ran beside run 1" in cell.reason and "(runs 3-4 were served from the cell's folder)" in cell.reason


def test_a_set_order_miss_shows_at_run_2_and_the_cell_stops_there(tmp_path):
    environment = SuiteEnvironment(key_for=lambda seed: seed)
    cell = check(tmp_path, environment)
    assert cell.verdict == Verdict.REPRODUCED and [r.index for r in cell.runs] == [1, 2]
    assert cell.runs[1].compared_by_key is not None and cell.runs[1].new_entries == [f"jit_f-{102:064x}"]
    assert overlap(environment, 101, 102)


def test_run_2_s_new_entries_are_in_the_cell_s_folder_before_run_3_starts(tmp_path):
    """A key only run 2 computed (a random shape it drew) is in the cell's folder for runs 3.., as if run 2 had
    run there: a later run that draws it again finds it, as it would in a check that made run 2 there."""
    environment = SuiteEnvironment(key_for=lambda seed: {102: 7, 103: 7}.get(seed, 1))
    cell = check(tmp_path, environment, stop=False)
    folder = tmp_path / "caches" / "cell"
    second = cell.runs[1]
    assert second.compared_by_key is not None and second.new_entries == [f"jit_f-{7:064x}"]
    assert sorted(p.name for p in folder.iterdir()) == [f"jit_f-{1:064x}", f"jit_f-{7:064x}"]
    assert all(r.new_entries == [] for r in cell.runs[2:])  # run 3 drew 7 again: found, nothing new


@pytest.mark.parametrize("environment, why", [
    (SuiteEnvironment(fail_seeds={101}), "run 1 failed: run 2 may be the baseline, its entries in the cell's folder"),
    (SuiteEnvironment(sets_folder_late=True), "run 1 ran again: run 2 was compared with entries since removed"),
])
def test_run_2_runs_again_in_the_cell_s_folder_when_its_comparison_cannot_stand(tmp_path, environment, why):
    cell = check(tmp_path, environment, stop=False)
    second = cell.runs[1]
    assert second.compared_by_key is None, why
    again = [folder for seed, folder, *_ in environment.runs if seed == second.seed]
    # beside run 1 in its own folder, then again after it with the cell's entries (runs overlap: in a folder of its
    # own at the cell folder's path, merged back; a seed check's runs may follow)
    caches = (tmp_path / "caches").resolve()
    assert again[:2] == [tmp_path / "caches" / "cell.run-02", caches / "cell.own-run-02"], why
    attempt = [p.name for p in (tmp_path / "logs").glob("run-02-*.beside.log")]
    assert len(attempt) == 1 and not (tmp_path / "caches" / "cell.run-02").exists()
    assert "ran beside" not in cell.reason


@pytest.mark.parametrize("environment, seeds", [
    (SuiteEnvironment(own_folders=False), SEEDS),  # no bubblewrap here
    (SuiteEnvironment(), SEEDS[:2]),  # no run after run 2 to measure a served hit
])
def test_where_a_cell_cannot_pair_run_2_runs_after_run_1_as_before(tmp_path, environment, seeds):
    cell = check(tmp_path, environment, runs=seeds)
    assert cell.verdict == Verdict.CLEAN and not overlap(environment, 101, 102)
    assert all(r.compared_by_key is None for r in cell.runs)
    assert not (tmp_path / "caches" / "cell.run-02").exists()


# ---- a folder of its own at another folder's path (a real bubblewrap process) ----


def test_bubblewrap_shows_a_run_its_own_folder_at_the_cell_folder_s_path_and_nothing_else_changes(tmp_path):
    import os
    import subprocess

    from harness.environments.same_path import bind_argv, same_path_problem
    if same_path_problem():
        if os.environ.get("HARNESS_REQUIRE_BWRAP") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BWRAP=1 but {same_path_problem()}")
        pytest.skip(f"no bubblewrap here: {same_path_problem()}")
    cell, own = tmp_path / "cell", tmp_path / "cell.run-02"
    cell.mkdir()
    own.mkdir()
    (cell / "run-1-entry").write_text("1")
    done = subprocess.run([*bind_argv(own, cell), "sh", "-c", f'ls "{cell}" && echo x > "{cell}/written" && id -u'],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(os.getuid())]  # the cell's folder looked empty there; the same user
    assert [p.name for p in own.iterdir()] == ["written"] and [p.name for p in cell.iterdir()] == ["run-1-entry"]
