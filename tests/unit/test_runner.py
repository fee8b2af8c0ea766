"""The runner's bookkeeping against an environment that writes cache entries itself (no JAX)."""

from pathlib import Path

import pytest
import time

from harness.core import jaxlog
from harness.inputs.config import Repro
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import ProcessOutcome
from harness.inputs.process_variables import process_env, repro_args
from harness.measure.cell_runner import CellRunner
from harness.measure.seeds import random_seeds
from tests.fakes import REPRO, ScriptedEnvironment

SPEC = CellSpec("0.4.28", Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))


def test_process_env_sets_cache_thresholds_and_simulated_devices():
    env = process_env(SPEC, 1234)
    assert env["PYTHONHASHSEED"] == "1234"
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8"
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    assert env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] == "-1"
    assert "XLA_FLAGS" not in process_env(CellSpec("0.4.28", Platform.CUDA, 8, None), 1)


def test_repro_args_carry_the_mesh():
    assert repro_args(REPRO, SPEC) == ["--mesh-shape", "8,1,1,1", "--axis-names", "a,b,c,d"]
    assert repro_args(Repro("mine", __file__, builtin=False), SPEC) == []


def test_random_seeds_distinct_and_nonzero():
    seeds = random_seeds(50)
    assert len(set(seeds)) == 50 and all(1 <= s < 2**32 for s in seeds)


def test_each_run_gets_its_seed_and_new_entries(tmp_path):
    env = ScriptedEnvironment(key_for=lambda seed: seed % 2)
    result = CellRunner(env, REPRO, 10).run(SPEC, [11, 12, 13], tmp_path / "cache", tmp_path / "logs",
                                            results_root=tmp_path)
    assert [r.seed for r in result.runs] == [11, 12, 13]
    assert result.runs[0].new_entries == [f"jit_f-{1:064x}"]
    assert result.runs[1].new_entries == [f"jit_f-{0:064x}"]
    assert result.runs[2].new_entries == []  # a cache hit
    assert result.verdict == Verdict.REPRODUCED
    assert result.runs[0].log.startswith("logs/")
    assert sorted(result.listing) == [f"jit_f-{0:064x}", f"jit_f-{1:064x}"]


def test_clean_cell(tmp_path):
    result = CellRunner(ScriptedEnvironment(lambda s: 7), REPRO, 10).run(
        SPEC, [1, 2, 3, 4], tmp_path / "c", tmp_path / "l")
    assert result.verdict == Verdict.CLEAN and len(result.runs) == 4


def test_failed_run_makes_error(tmp_path):
    result = CellRunner(ScriptedEnvironment(lambda s: 7, fail_seeds={2}), REPRO, 10).run(
        SPEC, [1, 2, 3], tmp_path / "c", tmp_path / "l")
    assert result.verdict == Verdict.ERROR and "run 2" in result.reason


def test_stop_when_reproduced(tmp_path):
    env = ScriptedEnvironment(key_for=lambda seed: seed)
    result = CellRunner(env, REPRO, 10).run(SPEC, [1, 2, 3, 4, 5], tmp_path / "c", tmp_path / "l",
                                            stop_when_reproduced=True)
    assert result.verdict == Verdict.REPRODUCED and len(result.runs) == 2


def test_jobs_run_in_parallel(tmp_path):
    env = ScriptedEnvironment(key_for=lambda seed: 1, delay=0.2)
    result = CellRunner(env, REPRO, 10, at_once=2).run(SPEC, [1, 2, 3, 4], tmp_path / "c", tmp_path / "l")
    assert env.max_active == 2
    assert result.verdict == Verdict.CLEAN and [r.index for r in result.runs] == [1, 2, 3, 4]


def test_relative_folders_reach_the_process_as_absolute_paths(tmp_path, monkeypatch):
    # Runs start in the script's folder: a relative cache path would land somewhere else entirely.
    monkeypatch.chdir(tmp_path)
    seen = []

    class Recording(ScriptedEnvironment):
        def run(self, program, env, cache_dir, log_path, timeout_s):
            seen.append((cache_dir, log_path))
            return super().run(program, env, cache_dir, log_path, timeout_s)

    result = CellRunner(Recording(lambda s: 1), REPRO, 10).run(
        SPEC, [1, 2], Path("rel/cache"), Path("rel/logs"),
        results_root=Path("rel"))
    assert all(c.is_absolute() and l.is_absolute() for c, l in seen)
    assert result.runs[0].log.startswith("logs/")


class InterruptedAt(ScriptedEnvironment):
    """Ctrl-C arrives while the run with seed `at` is going."""

    def __init__(self, at, **kw):
        super().__init__(key_for=lambda s: 1, **kw)
        self.at, self.interrupted = at, False

    def run(self, program, env, cache_dir, log_path, timeout_s):
        if int(env["PYTHONHASHSEED"]) == self.at:
            raise KeyboardInterrupt
        return super().run(program, env, cache_dir, log_path, timeout_s)

    def interrupt(self):
        self.interrupted = True


def test_ctrl_c_keeps_the_finished_runs(tmp_path):
    partial = CellRunner(InterruptedAt(3), REPRO, 10).run(SPEC, [1, 2, 3, 4], tmp_path / "c", tmp_path / "l")
    assert [r.seed for r in partial.runs] == [1, 2]
    assert partial.verdict == Verdict.ERROR and partial.reason == "interrupted after 2 of 4 runs"
    assert partial.interrupted


def test_ctrl_c_during_parallel_runs_stops_the_others(tmp_path):
    env = InterruptedAt(4, delay=0.05)
    # A KeyboardInterrupt in a worker reaches the main thread through future.result().
    partial = CellRunner(env, REPRO, 10, at_once=2).run(SPEC, [1, 2, 3, 4, 5, 6], tmp_path / "c", tmp_path / "l")
    assert env.interrupted and partial.interrupted
    assert 4 not in [r.seed for r in partial.runs]
    assert len(partial.runs) < 6


def test_an_unwritable_environment_folder_is_an_unavailable_environment(tmp_path):
    from harness.environments.venv import VenvBackend
    from harness.core.errors import EnvironmentUnavailable

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(EnvironmentUnavailable, match="cannot make the venv"):
        VenvBackend(root=blocker / "envs").prepare("0.4.29", Platform.CPU)


def test_a_crash_reason_carries_the_last_line_it_printed(tmp_path):
    class Crashing(ScriptedEnvironment):
        def run(self, program, env, cache_dir, log_path, timeout_s):
            log_path.write_text("Traceback (most recent call last):\n  ...\nRuntimeError: Unable to "
                                "initialize backend 'cuda'\n\n")
            return ProcessOutcome(1, 0.01, reason="exit code 1")

    result = CellRunner(Crashing(lambda s: 1), REPRO, 10).run(SPEC, [1, 2], tmp_path / "c", tmp_path / "l")
    assert result.runs[0].reason == "exit code 1: RuntimeError: Unable to initialize backend 'cuda'"
    assert result.verdict == Verdict.ERROR and "Unable to initialize backend" in result.reason


def test_a_cuda_run_that_failed_on_memory_another_process_held_is_the_harness_s_failure(tmp_path, monkeypatch):
    """JAX could not preallocate its GPU memory (another process held it): said as the harness's failure, in the
    run's reason and the cell's; the same words on cpu (no GPU to hold) stay the program's."""
    class Held(ScriptedEnvironment):
        def run(self, program, env, cache_dir, log_path, timeout_s):
            log_path.write_text("Traceback (most recent call last):\n  ...\njaxlib._jax.XlaRuntimeError: "
                                "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 107.37GiB.\n")
            return ProcessOutcome(1, 0.01, reason="exit code 1")

    monkeypatch.setattr("harness.measure.run_logs.gpu_memory_holders", lambda: ["pid 4242 python3, 104000 MiB"])
    cuda = CellSpec("0.11.2", Platform.CUDA, 1, Mesh((1, 1, 1, 1), ("a", "b", "c", "d")))
    result = CellRunner(Held(lambda s: 1), REPRO, 10).run(cuda, [1, 2], tmp_path / "c", tmp_path / "l")
    assert result.runs[0].reason.startswith("the GPU's memory was held by another process (pid 4242 python3, "
                                            "104000 MiB): the harness's failure, not the program's")
    assert result.runs[0].reason.endswith("exit code 1: jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of "
                                          "memory while trying to allocate 107.37GiB.")
    assert result.verdict == Verdict.ERROR and "the harness's failure, not the program's" in result.reason
    on_cpu = CellRunner(Held(lambda s: 1), REPRO, 10).run(SPEC, [1, 2], tmp_path / "c2", tmp_path / "l2")
    assert on_cpu.runs[0].reason.startswith("exit code 1: jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED")


def test_a_reason_the_backend_wrote_as_the_log_is_not_repeated(tmp_path):
    class Refused(ScriptedEnvironment):
        def run(self, program, env, cache_dir, log_path, timeout_s):
            log_path.write_text("docker: the Docker runtime has no GPU support\n")
            return ProcessOutcome(None, 0.01, reason="docker: the Docker runtime has no GPU support")

    result = CellRunner(Refused(lambda s: 1), REPRO, 10).run(SPEC, [1, 2], tmp_path / "c", tmp_path / "l")
    assert result.runs[0].reason == "docker: the Docker runtime has no GPU support"


class TwoShapes(ScriptedEnvironment):
    """A function compiled at two shapes: two entries per process; `moving_seeds` lower the second
    shape differently (a new key), the way a set iterated into only one shape's computation would."""

    def __init__(self, moving_seeds=(), **kw):
        super().__init__(key_for=lambda s: 1, **kw)
        self.moving_seeds = set(moving_seeds)
        self.running: list[int] = []
        self.seen_running: dict[int, list[int]] = {}

    def run(self, program, env, cache_dir, log_path, timeout_s):
        seed = int(env["PYTHONHASHSEED"])
        with self.lock:
            self.seen_running[seed] = list(self.running)
            self.running.append(seed)
        time.sleep(self.delay)
        log_path.write_text(f"seed {seed}\n")
        second = 3 if seed in self.moving_seeds else 2
        for key in (1, second):
            name = f"jit_f-{key:064x}"
            if not (cache_dir / name).exists():  # a hit writes nothing
                (cache_dir / name).write_text("x")
        with self.lock:
            self.running.remove(seed)
        return ProcessOutcome(0, 0.01)


@pytest.mark.parametrize("at_once", [1, 3])
def test_a_function_compiled_at_two_shapes_is_clean(tmp_path, at_once):
    result = CellRunner(TwoShapes(delay=0.05), REPRO, 10, at_once=at_once).run(
        SPEC, [1, 2, 3, 4, 5], tmp_path / "c", tmp_path / "l")
    assert result.verdict == Verdict.CLEAN
    assert result.reason.startswith("jit_f: 2 keys per run, the same in all 5 runs; hits not observed in runs 2-5")


@pytest.mark.parametrize("at_once", [1, 3])
def test_one_shape_that_moves_is_reproduced_and_the_cell_stops(tmp_path, at_once):
    env = TwoShapes(moving_seeds={2}, delay=0.05)
    result = CellRunner(env, REPRO, 10, at_once=at_once).run(SPEC, [1, 2, 3, 4, 5, 6, 7], tmp_path / "c", tmp_path / "l",
                                                       stop_when_reproduced=True)
    assert result.verdict == Verdict.REPRODUCED and len(result.runs) < 7
    # One at a time, the run is known; overlapping runs may all have seen the one new key appear.
    overlapped = at_once > 1 and result.reason.startswith("jit_f: 1 new key in runs 2")
    assert result.reason == "jit_f: a new key in run 2" or overlapped


def test_with_jobs_the_first_run_runs_alone(tmp_path):
    env = TwoShapes(delay=0.05)
    CellRunner(env, REPRO, 10, at_once=3).run(SPEC, [1, 2, 3, 4, 5, 6], tmp_path / "c", tmp_path / "l")
    assert env.seen_running[1] == [] and all(1 not in running for running in env.seen_running.values())
    assert any(env.seen_running[s] for s in (2, 3, 4, 5, 6))  # the others did overlap


def test_an_environment_whose_interpreter_cannot_start_gives_an_error_cell(tmp_path):
    """A ready venv whose bin/python is a dangling link: each run fails, the cell is `error`, and the
    runner returns (the sweep goes on to the next version) instead of raising."""
    from harness.environments.venv import VenvEnvironment

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(tmp_path / "gone" / "python3.11")
    script = tmp_path / "user.py"
    script.write_text("print('never runs')\n")
    runner = CellRunner(VenvEnvironment(venv, "0.4.29", {}), Repro("user", script, builtin=False), 60)
    cell = runner.run(CellSpec("0.4.29", Platform.CPU, 1, None), [1, 2], tmp_path / "cache", tmp_path / "logs")
    assert cell.verdict == Verdict.ERROR and len(cell.runs) == 2
    assert "cannot start" in cell.runs[0].reason, cell.runs[0].reason


class LoggingEnvironment(ScriptedEnvironment):
    """Writes a real JAX debug log (tests/fixtures/jax_logs) as the run's log, and the entries it wrote."""

    LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"

    def __init__(self, log_for_seed, delay=0.0):
        super().__init__(key_for=lambda seed: 0, delay=delay)
        self.log_for_seed = log_for_seed

    def run(self, program, env, cache_dir, log_path, timeout_s):
        self.calls.append((list(program.args), dict(env)))
        seed = int(env["PYTHONHASHSEED"])
        text = (self.LOGS / self.log_for_seed[seed]).read_text()
        time.sleep(self.delay)
        log_path.write_text(text)
        for k in jaxlog.parse(text).with_outcome(jaxlog.Outcome.WRITTEN):
            (cache_dir / k.key).write_text("x")
        return ProcessOutcome(0, 0.01)


def test_each_run_keeps_the_keys_its_own_log_names_with_jobs(tmp_path):
    """Overlapping runs: the listing can blur which run wrote which entry, the log cannot."""
    logs = {1: "seed-0.4.28-hs1-0.err", 2: "seed-0.4.28-hs2-4.err", 3: "seed-0.4.28-hs2-4.err"}
    env = LoggingEnvironment(logs, delay=0.2)
    result = CellRunner(env, REPRO, 10, at_once=2).run(SPEC, [1, 2, 3], tmp_path / "c", tmp_path / "l",
                                                    results_root=tmp_path)
    assert env.calls[0][1]["JAX_LOGGING_LEVEL"] == "DEBUG"
    assert "jax._src.cache_key" in env.calls[0][1]["JAX_DEBUG_LOG_MODULES"]
    first, second, third = result.runs
    assert first.keys.modules()["jit_f"] == ["jit_f-bf0f8ab75e1d07afa7159bccd1662ab460cf3941ef653f02db21360faeae2eb6"]
    assert second.keys.modules()["jit_f"] == third.keys.modules()["jit_f"] == [
        "jit_f-6337b97ed54dcc614cfc64cd27e7d3f6b44970e768b192c84bb6aed5c8e119bb"]
    assert result.verdict == Verdict.REPRODUCED


def test_a_run_whose_log_names_no_key_says_why(tmp_path):
    result = CellRunner(ScriptedEnvironment(lambda s: 7), REPRO, 10).run(SPEC, [1, 2], tmp_path / "c",
                                                                         tmp_path / "l")
    assert all(r.keys is None and "no cache key" in r.log_note for r in result.runs)
    assert result.verdict == Verdict.CLEAN  # the listing still gives the verdict
