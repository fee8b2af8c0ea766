"""The reducer's measuring side, where it can be tested without runs: how a batch of candidates is shared out."""

import threading

from harness.reduce.measure_candidate import Measurer
from harness.reduce.search import Tried
from tests.reduce_cells import cell, key


def test_a_candidate_twice_in_one_batch_is_measured_once(monkeypatch, tmp_path):
    # Two threads on one candidate once shared its folder: the second's mkdir failed (FileExistsError), an
    # internal error that ended the reduction (seen in CI's Ctrl-C test).
    measurer = Measurer(config=None, script=tmp_path / "s.py", workdir=tmp_path, bad=None, good=None, target=None,
                        bad_seeds=[1, 2], work=tmp_path / "candidates", timeout_s=10.0, at_once=2)
    calls, lock = [], threading.Lock()

    def one_bad(source):
        with lock:
            calls.append(source)
        return Tried(source == "a", source)

    monkeypatch.setattr(measurer, "one_bad", one_bad)
    assert [t.kept for t in measurer.test_bad(["a", "b", "a"])] == [True, False, True]
    assert sorted(calls) == ["a", "b"]


def test_the_deciding_seeds_are_the_shortest_plan_for_each_kind_of_signature():
    from harness.core.factors import Factor
    from harness.core.model import CellSpec
    from harness.core.findings import CellVariation, RankSplit
    from harness.core.kinds import Platform
    from harness.core.runs import RankRecord, RunRecord
    from harness.reduce.measure_candidate import deciding_seeds, launch_of
    from harness.results.reduce_results import Signature

    group_run = RunRecord(index=3, seed=7, exit_code=0, duration_s=1.0, new_entries=[],
                        ranks=[RankRecord(1, 70, 0, 1.0), RankRecord(0, 7, 0, 1.0)])
    assert launch_of(group_run) == (7, 70)  # a seed per process, by rank
    spec = CellSpec("0.8.1", Platform.CPU, 8, None, 2)
    split = cell(spec, [[key("jit_loss", 1)]])
    split.runs.append(group_run)
    split.rank_split = RankSplit("jit_loss", 3, (0, 1), ("a", "b"), [])
    assert deciding_seeds(split, Signature("jit_loss", (), None, ranks=(0, 1))) == [(7, 70)]
    varied = cell(CellSpec("0.5.0", Platform.CPU, 8, None), [[key("jit_f", 1)]])
    varied.variation = CellVariation(1, 101)
    assert deciding_seeds(varied, Signature("jit_f", (), None, factor=Factor.CACHE_PATH)) == [101]
    by_seeds = cell(CellSpec("0.4.28", Platform.CPU, 8, None), [[key("jit_f", 1)], [key("jit_f", 2)]])
    assert deciding_seeds(by_seeds, Signature("jit_f", (), None)) == [101, 102]


def test_a_candidate_under_vary_runs_only_the_signature_s_factor(tmp_path):
    from harness.reduce.sandbox import Workspace
    from harness.inputs.config import Config, Repro
    from harness.core.factors import Factor
    from harness.results.reduce_results import Signature

    config = Config("s", Repro("s", tmp_path / "s.py", builtin=False), ("0.5.0",),
                    vary=(Factor.CWD, Factor.CACHE_PATH))
    target = Signature("jit_f", (), None, factor=Factor.CACHE_PATH)
    measurer = Measurer(config=config, script=tmp_path / "s.py", workdir=tmp_path, bad=None, good=None,
                        target=target, bad_seeds=[1], work=tmp_path / "candidates", timeout_s=10.0)
    space = Workspace(tmp_path / "c")
    assert measurer._config(tmp_path / "c" / "s.py", space).vary == (Factor.CACHE_PATH,)
    plain = Measurer(config=config, script=tmp_path / "s.py", workdir=tmp_path, bad=None, good=None,
                     target=Signature("jit_f", (), None), bad_seeds=[1], work=tmp_path, timeout_s=10.0)
    assert plain._config(tmp_path / "c" / "s.py", space).vary == ()
    assert plain._config(tmp_path / "c" / "s.py", space).cwd == space.work  # its own copy, not the user's folder


def test_how_a_process_died_in_one_word():
    from harness.reduce.measure_candidate import failure_kind

    gloo = ("exit code 1: jax.errors.JaxRuntimeError: UNKNOWN: Buffer Definition Event: Gloo context "
            "initialization failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: cpu:gloo/0")
    assert failure_kind(gloo, False) == "jax.errors.JaxRuntimeError"
    assert failure_kind("exit code 1: TypeError: 'int' object is not callable", False) == "TypeError"
    assert failure_kind("killed after the 15 s timeout", True) == "timed out"


def test_a_candidate_may_run_10_s_plus_twice_the_originals_slowest_run_within_the_configs_timeout():
    from harness.core.runs import RunRecord
    from harness.reduce.measure_candidate import candidate_timeout
    runs = [RunRecord(1, 1, 0, 2.5, []), RunRecord(2, 2, 0, 1.8, []), RunRecord(3, 3, 1, 40.0, [])]  # a failed run: not
    assert candidate_timeout(runs, 300) == 15.0
    assert candidate_timeout(runs, 8) == 8  # never past the config's own timeout
    assert candidate_timeout(runs[2:], 300) == 300  # no run succeeded: the config's
