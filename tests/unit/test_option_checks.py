"""The rules between options, each in harness/service/option_checks.py, each saying what it said when it
was written out in the command that had it (pure: no parser, no backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import UserError
from harness.core.kinds import BackendName
from harness.inputs.sharding import parse_shard
from harness.service import option_checks
from harness.service.command_options import BisectOptions, ReduceOptions, SubmitOptions


@pytest.mark.parametrize(("call", "said"), [
    (lambda: option_checks.check_script_or_python_module("check", None, None),
     "check: name a script or -m MODULE (one of them)"),
    (lambda: option_checks.check_script_or_python_module("check", Path("s.py"), "m"),
     "check: name a script or -m MODULE (one of them)"),
    (lambda: option_checks.check_fingerprint_source(None, None),
     "fingerprint: name a script, -m MODULE or a results folder (one of them)"),
    (lambda: option_checks.check_ci_outputs_need_wait(False, Path("j.xml"), frozenset()),
     "--junit-xml: only with --wait"),
    (lambda: option_checks.check_ci_outputs_need_wait(False, None, frozenset({"reproduced"})),
     "--fail-on: only with --wait"),
    (lambda: option_checks.check_bisect(BisectOptions(backend=BackendName.LOCAL)),
     "--backend local has one JAX version; bisection needs venv or docker"),
    (lambda: option_checks.check_bisect(BisectOptions(backend=BackendName.DOCKER, jax_repo=Path("jax"))),
     "--jax-repo: commit bisection runs with --backend venv"),
    (lambda: option_checks.check_bisect(BisectOptions(shard=parse_shard("1/2"))),
     "--shard: a bisection cannot be split"),
    (lambda: option_checks.check_submit(SubmitOptions(shards=2, only_shards=(3,))),
     "--only-shards 3: shards are numbered 1 to 2"),
    (lambda: option_checks.check_submit(SubmitOptions(rebuild=True)), "--rebuild: not with submit"),
    (lambda: option_checks.check_reduce(ReduceOptions(versions=("0.4.28", "0.4.29"))),
     "--versions: give the one release where the script reproduces"),
])
def test_each_rule_says_the_flags_it_is_about(call, said):
    with pytest.raises(UserError) as raised:
        call()
    assert str(raised.value).startswith(said)


def test_what_the_rules_allow_passes():
    option_checks.check_script_or_python_module("check", Path("s.py"), None)
    option_checks.check_ci_outputs_need_wait(True, Path("j.xml"), frozenset({"reproduced"}))
    option_checks.check_bisect(BisectOptions(backend=BackendName.VENV, jax_repo=Path("jax")))
    option_checks.check_submit(SubmitOptions(shards=3, only_shards=(1, 3)))
    option_checks.check_reduce(ReduceOptions(versions=("0.4.28",)))
