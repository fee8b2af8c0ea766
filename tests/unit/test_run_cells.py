"""Cells overlapping where a cell leaves run slots free: each keeps its own folder, first run alone,
tally; results in cell order; Ctrl-C and a harness failure keep what finished. Scripted environments."""

import threading

import pytest

from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.measure.cell_runner import CellRunner, error_cell
from harness.measure.cell_schedule import run_cells
from harness.measure.open_cell import OpenCell
from tests.fakes import REPRO, ScriptedEnvironment

MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))


class Shared:
    """Counts the runs going at once over every cell, and what each cell had going when a run started."""

    def __init__(self):
        self.lock, self.active, self.most, self.starts = threading.Lock(), 0, 0, []


class CountingEnvironment(ScriptedEnvironment):
    def __init__(self, shared, name, key_for, delay=0.05, interrupt_on_seed=None):
        super().__init__(key_for, delay=delay)
        self.shared, self.name, self.interrupt_on_seed = shared, name, interrupt_on_seed

    def run(self, program, env, cache_dir, log_path, timeout_s):
        seed = int(env["PYTHONHASHSEED"])
        if seed == self.interrupt_on_seed:
            raise KeyboardInterrupt
        with self.shared.lock:
            self.shared.active += 1
            self.shared.most = max(self.shared.most, self.shared.active)
            self.shared.starts.append((self.name, seed, self.active))
        try:
            return super().run(program, env, cache_dir, log_path, timeout_s)
        finally:
            with self.shared.lock:
                self.shared.active -= 1


def opener(tmp_path, env, version, seeds, stop=True):
    spec = CellSpec(version, Platform.CPU, 8, MESH)

    def open_cell():
        runner = CellRunner(env, REPRO, 10, at_once=2)
        return OpenCell.open(runner, spec, seeds, tmp_path / "caches" / version, tmp_path / "logs" / version,
                             tmp_path, stop_when_reproduced=stop)
    return open_cell


def test_cells_that_stop_at_two_runs_overlap_and_come_back_in_order(tmp_path):
    shared = Shared()
    envs = [CountingEnvironment(shared, f"0.4.2{i}", lambda seed: seed) for i in range(4)]  # reproduce
    results = []
    run_cells([opener(tmp_path, env, env.name, [1, 2, 3, 4]) for env in envs], 2, results.append)
    assert [r.spec.jax_version for r in results] == [env.name for env in envs]
    assert all(r.verdict == Verdict.REPRODUCED and len(r.runs) == 2 for r in results)
    assert shared.most == 2  # never more than --jobs, and the free slot was used
    # Each cell's first run started alone within its cell, and each cell wrote only its own folder.
    first = [active for name, seed, active in shared.starts if seed == 1]
    assert first == [0, 0, 0, 0]
    for r in results:
        assert len(r.listing) == len(r.runs)  # its own runs only: one key each


def test_a_slow_cell_before_a_quick_one_keeps_the_order(tmp_path):
    shared = Shared()
    slow = CountingEnvironment(shared, "0.4.25", lambda seed: 1, delay=0.3)  # clean: all its runs
    quick = CountingEnvironment(shared, "0.4.26", lambda seed: seed)
    spec = CellSpec("0.4.27", Platform.CPU, 8, MESH)
    results = []
    run_cells([opener(tmp_path, slow, "0.4.25", [1, 2, 3]), opener(tmp_path, quick, "0.4.26", [1, 2, 3]),
               lambda: error_cell(spec, "environment: no wheels")], 2, results.append)
    assert [(r.spec.jax_version, r.verdict) for r in results] == [
        ("0.4.25", Verdict.CLEAN), ("0.4.26", Verdict.REPRODUCED), ("0.4.27", Verdict.ERROR)]


def test_ctrl_c_gives_every_open_cell_interrupted_in_order_then_goes_on(tmp_path):
    shared = Shared()
    first = CountingEnvironment(shared, "0.4.25", lambda seed: 1, delay=0.2)
    second = CountingEnvironment(shared, "0.4.26", lambda seed: 1, interrupt_on_seed=2)
    results = []
    with pytest.raises(KeyboardInterrupt):
        run_cells([opener(tmp_path, first, "0.4.25", [1, 2, 3, 4, 5, 6]),
                   opener(tmp_path, second, "0.4.26", [1, 2, 3])], 2, results.append)
    assert [r.spec.jax_version for r in results] == ["0.4.25", "0.4.26"]
    assert all(r.interrupted for r in results)


def test_a_failure_opening_a_cell_lets_the_open_ones_finish_then_is_raised(tmp_path):
    shared = Shared()
    env = CountingEnvironment(shared, "0.4.25", lambda seed: 1, delay=0.1)

    def broken():
        raise RuntimeError("a bug")
    results = []
    with pytest.raises(RuntimeError, match="a bug"):
        run_cells([opener(tmp_path, env, "0.4.25", [1, 2, 3]), broken], 2, results.append)
    assert [(r.spec.jax_version, r.verdict, len(r.runs)) for r in results] == [("0.4.25", Verdict.CLEAN, 3)]


@pytest.mark.parametrize("at_once", [1, 2])
def test_a_run_that_another_of_its_cells_processes_ran_beside_says_so(tmp_path, at_once):
    """Issue 61 item 3: an entry no run computed that appeared while two of the harness's runs ran may be either's
    (harness/evidence/keys.py charges it to neither): each run says whether another ran beside it."""
    env = CountingEnvironment(Shared(), "0.4.31", lambda seed: 0, delay=0.3)  # the same key: clean
    results = []

    def open_cell():
        runner = CellRunner(env, REPRO, 10, at_once=at_once)
        return OpenCell.open(runner, CellSpec("0.4.31", Platform.CPU, 8, MESH), [1, 2, 3, 4, 5],
                             tmp_path / "caches", tmp_path / "logs", tmp_path, stop_when_reproduced=False)
    run_cells([open_cell], at_once, results.append)
    (cell,) = results
    overlapped = [r.overlapped for r in sorted(cell.runs, key=lambda r: r.index)]
    assert overlapped[0] is False  # run 1 runs alone
    assert any(overlapped) == (at_once > 1) and cell.verdict == Verdict.CLEAN
