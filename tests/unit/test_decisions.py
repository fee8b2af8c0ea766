"""Decisions each made in one place (issue 64): the default number of runs, what a verdict means, what a program
is. The tables here are the meanings; each reader asks these, never a list of its own."""

from __future__ import annotations

import msgspec
import msgspec.structs
import pytest

from harness.core.confidence import CONFIG_RUNS, SUITE_RUNS, default_runs, runs_for_target
from harness.core.kinds import Platform, Verdict
from harness.core.runs import Program, ProgramKind
from harness.inputs.config import Config, ConfigFile, parse_config
from harness.inputs.option_set import CHECK_FAILS_ON


def test_the_default_runs_of_each_kind_of_program() -> None:
    assert default_runs() == runs_for_target() == 11  # a script on cpu: random seeds, the 1e-3 target
    assert default_runs(suite=True) == SUITE_RUNS == 6  # a test suite: the fewest that are not weak
    assert default_runs(platform=Platform.TPU) == default_runs(platform=Platform.CUDA) == SUITE_RUNS
    assert default_runs(platform=Platform.AUTO) == default_runs(platform=Platform.CPU) == 11
    assert default_runs(config=CONFIG_RUNS, suite=True) == CONFIG_RUNS == 8  # a config's runs: are its own
    assert default_runs(4, config=9, suite=True) == 4  # --runs wins over everything


def test_a_config_without_runs_takes_the_one_default() -> None:
    config = parse_config({"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.30"]})
    assert config.runs == CONFIG_RUNS == next(f.default for f in msgspec.structs.fields(ConfigFile) if f.name == "runs")
    assert Config.__dataclass_fields__["runs"].default == CONFIG_RUNS


MEANINGS = {  # verdict: (compared, measured, no_key_moved, compiles_again, fails_check)
    Verdict.REPRODUCED: (True, True, False, True, True),
    Verdict.CLEAN: (True, True, True, False, False),
    Verdict.UNSUPPORTED: (False, False, False, False, False),
    Verdict.ERROR: (False, False, False, False, True),
    Verdict.NEW_INPUT: (True, False, True, True, False),
    Verdict.NOT_CACHED: (True, False, True, True, False),
}


@pytest.mark.parametrize("verdict", list(Verdict))
def test_what_each_verdict_means(verdict: Verdict) -> None:
    assert (verdict.compared, verdict.measured, verdict.no_key_moved, verdict.compiles_again,
            verdict.fails_check) == MEANINGS[verdict]


def test_check_fails_on_what_fails_a_check() -> None:
    assert CHECK_FAILS_ON == {Verdict.REPRODUCED, Verdict.ERROR}


def test_a_program_is_a_script_a_module_or_pytest() -> None:
    assert ProgramKind.of(None) is ProgramKind.SCRIPT
    assert ProgramKind.of("pytest") is ProgramKind.PYTEST
    assert ProgramKind.of("pytest_x") is ProgramKind.MODULE is ProgramKind.of("mypkg.train")
    assert Program(None, module="pytest").kind is ProgramKind.PYTEST
