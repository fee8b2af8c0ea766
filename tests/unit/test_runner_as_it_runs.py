"""The runner's part in measuring a program as it runs, against an environment that plays the script
(no JAX): the first run tells how the folder is given, and a failure that follows the seed is re-run."""

import json
from pathlib import Path

from harness.core.records import plain, convert
from harness.results.document import read_cell
from harness.inputs.config import Repro
from harness.environments.base import Environment
from harness.core.model import CellSpec
from harness.core.kinds import FolderMode, Platform, Verdict
from harness.core.runs import ProcessOutcome
from harness.core.findings import SeedCheck
from harness.measure.cell_runner import CellRunner
from harness.verdicts.seed_check import phrase
from harness.inside.startup.jax_cache_harness_hook import CACHE_DIR, FOLDER_VAR, RECORD_VAR

SPEC = CellSpec("0.4.31", Platform.CPU, 8, None)


class PlayedScript(Environment):
    """Writes what a script would: its hook record (a folder set in code, or none), one cache entry when
    JAX has a folder, and a traceback for the seeds in `fail_seeds`."""

    jax_version = "0.4.31"

    def __init__(self, sets_folder: bool, fail_seeds=()):
        self.sets_folder, self.fail_seeds = sets_folder, set(fail_seeds)
        self.calls: list[dict[str, str]] = []

    def run(self, program, env, cache_dir, log_path, timeout_s):
        self.calls.append(dict(env))
        seed = int(env["PYTHONHASHSEED"])
        hook_only = env.get(FOLDER_VAR) == "hook"
        if self.sets_folder:
            Path(env[RECORD_VAR]).write_text(json.dumps({"kind": "setting", "option": CACHE_DIR, "api": "set_cache_dir",
                                                         "requested": "/mine", "applied": str(cache_dir)}) + "\n")
        if self.sets_folder or not hook_only:
            (cache_dir / f"jit_f-{7:064x}").write_text("x")
        if seed in self.fail_seeds:
            log_path.write_text("Traceback (most recent call last):\n  File \"s.py\", line 1\nValueError: odd seed\n"
                                "DEBUG:jax._src.xla_bridge:Clearing JAX backend caches.\n")
            return ProcessOutcome(1, 0.01, reason="exit code 1")
        log_path.write_text("ok\n")
        return ProcessOutcome(0, 0.01)

    def describe(self):
        return {"backend": "played"}


def measure(env, tmp_path, seeds):
    runner = CellRunner(env, Repro("s", tmp_path / "s.py", builtin=False), 10)
    return runner.run(SPEC, seeds, tmp_path / "caches" / "c", tmp_path / "logs", results_root=tmp_path)


def test_a_script_that_sets_its_folder_runs_with_the_folder_only_through_the_hook(tmp_path):
    env = PlayedScript(sets_folder=True)
    cell = measure(env, tmp_path, [11, 12])
    assert [c[FOLDER_VAR] for c in env.calls] == ["hook", "hook"]
    assert cell.cache_folder == FolderMode.HOOK and "set_cache_dir" in cell.cache_folder_why
    assert cell.verdict == Verdict.CLEAN


def test_a_script_that_sets_no_folder_has_its_first_run_redone_with_the_folders_variable(tmp_path):
    env = PlayedScript(sets_folder=False)
    cell = measure(env, tmp_path, [11, 12])
    assert [c[FOLDER_VAR] for c in env.calls] == ["hook", "environment", "environment"]
    assert cell.cache_folder == FolderMode.ENVIRONMENT and [r.index for r in cell.runs] == [1, 2]
    assert cell.runs[0].new_entries == [f"jit_f-{7:064x}"] and cell.verdict == Verdict.CLEAN
    assert (tmp_path / "logs" / "run-01-seed-11.first-use.log").exists()


def test_a_failure_that_follows_the_seed_is_re_run_twice_per_side_and_named(tmp_path):
    env = PlayedScript(sets_folder=True, fail_seeds={12, 14})
    cell = measure(env, tmp_path, [11, 12, 13, 14])
    assert len(env.calls) == 8  # four planned runs, then the failing and the passing seed twice each
    assert cell.verdict == Verdict.ERROR and len(cell.runs) == 4
    assert cell.seed_check.follows_seed
    assert (cell.seed_check.failing.seed, cell.seed_check.passing.seed) == (12, 11)
    assert cell.reason.startswith("fails for some hash seeds (a nondeterministic program): seed 12 fails (run 2, "
                                  "and again in 2 re-runs), seed 11 passes (run 1, and again in 2 re-runs); 2 of 4 runs failed "
                                  "(run 2: exit code 1: ValueError: odd seed)")
    assert (tmp_path / "caches" / "c.seed-check-12").is_dir() and (tmp_path / "caches" / "c.seed-check-12-again").is_dir()
    assert len(cell.seed_check.again) == 2 and convert(plain(cell.seed_check), SeedCheck) == cell.seed_check


class CoinFlipScript(PlayedScript):
    """Fails on the calls numbered in `fail_calls` (1-based), whatever the seed: flaky, not seed-bound."""

    def __init__(self, fail_calls):
        super().__init__(sets_folder=True)
        self.fail_calls = set(fail_calls)

    def run(self, program, env, cache_dir, log_path, timeout_s):
        self.fail_seeds = {int(env["PYTHONHASHSEED"])} if len(self.calls) + 1 in self.fail_calls else set()
        return super().run(program, env, cache_dir, log_path, timeout_s)


def test_a_failure_that_comes_and_goes_is_not_blamed_on_the_seed_when_one_re_run_happened_to_agree(tmp_path):
    """Run 2 fails, its seed fails again on its first re-run and the passing seed passes (what a coin flip
    does one time in four): its second re-run passes, so the failure does not follow the seed."""
    env = CoinFlipScript(fail_calls={2, 3})
    cell = measure(env, tmp_path, [11, 12])
    assert len(env.calls) == 6 and not cell.seed_check.follows_seed
    assert cell.reason.startswith("the failure does not follow the hash seed: seed 12 failed in run 2 but passed "
                                  "when re-run")


def test_seed_checks_written_before_with_one_re_run_a_side_still_read():
    old = {"failing": {"seed": 12, "run": 2, "rerun_ok": False}, "passing": {"seed": 11, "run": 1, "rerun_ok": True},
           "follows_seed": True}  # derived, and dropped on reading: a version 1 cell's
    check = read_cell({"jax_version": "0.4.31", "platform": "cpu", "device_count": 1, "mesh": None,
                       "verdict": "reproduced", "seed_check": old}).seed_check
    assert check is not None
    assert check.follows_seed and check.again == () and "and again when re-run" in phrase(check)


def test_every_run_failing_is_no_seed_check(tmp_path):
    env = PlayedScript(sets_folder=True, fail_seeds={11, 12})
    cell = measure(env, tmp_path, [11, 12])
    assert len(env.calls) == 2 and cell.seed_check is None and cell.verdict == Verdict.ERROR
