"""Boundaries never cross a failure, on real releases (issue 47.4): a program that reproduces on 0.4.28 and
uses an API 0.4.31 removed is reproduced through 0.4.28 and fails from 0.4.31 (not fixed); its 0.4.31 cell
stops after two runs with the exception and the jax version its traceback passes through; a program that
imports a module no release installs says so first, with the `--with` that adds it, and runs with it."""

import json

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

SET_ORDER = """\
STAGES = list({"embed", "attend", "mix", "project"})  # order changes with PYTHONHASHSEED


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x


print(f(jnp.ones(4)))
"""


def checked(script, out, capsys, *more):
    code = cli.main(["check", str(script), "--versions", "0.4.28", "0.4.31", "--quiet", "--out", str(out),
                     "--json", *more])
    printed, err = capsys.readouterr()
    return code, json.loads(printed), err


def test_a_regression_that_ends_in_an_api_removal_is_not_fixed_and_its_failure_stops_early(tmp_path, capsys, write):
    script = write("prog.py", "import jax\nimport jax.numpy as jnp\n\nassert jax.core.NamedShape  # gone in 0.4.31\n"
                   + SET_ORDER)
    code, summary, err = checked(script, tmp_path / "r", capsys, "--runs", "6")
    assert code == 1, err
    gone = "AttributeError: module 'jax.core' has no attribute 'NamedShape' (jax 0.4.31)"
    assert summary["summary"] == (
        "fresh processes miss the cache on 0.4.28, the only release where the program ran, so the range shows "
        "no boundary where it appears (measure an earlier release for one); reproduced through 0.4.28; the program "
        f"fails from 0.4.31 (exit code 1: {gone}), so no release here fixes it")
    assert summary["boundaries"]["appears_in"] is None and summary["boundaries"]["fails_from"] == "0.4.31"
    failed = next(c for c in summary["cells"] if c["jax"] == "0.4.31")
    assert failed["verdict"] == "error" and failed["runs"] == 2, failed  # not all 6
    assert gone in failed["reason"] and "runs 1 and 2 failed the same way" in failed["reason"]


def test_a_module_the_program_imports_that_no_release_installs_is_said_first_with_the_option(tmp_path, capsys, write):
    script = write("prog.py", "import importlib_resources\nimport jax\nimport jax.numpy as jnp\n\n" + SET_ORDER)
    code, summary, err = checked(script, tmp_path / "r", capsys, "--runs", "4")
    assert code == 1, err
    assert summary["summary"].startswith(
        "0.4.28 and 0.4.31 failed on a dependency of the program, not on JAX: the program imports "
        "importlib_resources, which their environments lack (add it: --with importlib_resources, or requirements: [importlib_resources] in a config); "), summary["summary"]
    assert all(c["runs"] == 2 for c in summary["cells"])
    code, summary, err = checked(script, tmp_path / "w", capsys, "--runs", "4", "--with", "importlib_resources")
    assert [c["verdict"] for c in summary["cells"]] == ["reproduced", "reproduced"], err
    assert "dependency" not in summary["summary"]
