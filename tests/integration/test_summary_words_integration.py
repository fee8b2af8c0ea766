"""The summary line and check's exit code on real runs (issue 31.3): a script that needs an argument (every
cell an error: nothing was measured, and why; check exits 1), a script that never imports JAX (it compiled
nothing with JAX), and check on a reproducing example (exit 1 by default)."""

import json
import shutil

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

VERSION = "0.4.31"


def checked(argv, out, capsys, runs=2):
    code = cli.main(["check", *argv, "--versions", VERSION, "--runs", str(runs), "--quiet", "--out", str(out)])
    printed, err = capsys.readouterr()
    return code, printed.strip().splitlines()[-1], err


def test_a_script_that_needs_an_argument_measures_nothing_and_check_fails(tmp_path, capsys, write):
    script = write("needs_arg.py", """\
import sys
import jax
if len(sys.argv) < 2:
    sys.exit("usage: needs_arg.py STEPS")
print(jax.jit(lambda x: x + 1)(1))
""")
    code, line, err = checked([str(script)], tmp_path / "r", capsys)
    assert code == 1, err
    assert line.startswith("nothing was measured: the only cell failed or cached nothing (jax 0.4.31: "), line
    assert "usage: needs_arg.py STEPS" in line and "not reproduced" not in line
    assert "harness: --fail-on reproduced,error: 1 cell(s) failed" in err


def test_a_script_that_never_imports_jax_says_it_compiled_nothing_with_jax(tmp_path, capsys, write):
    script = write("no_jax.py", "print(sum(range(10)))\n")
    code, line, err = checked([str(script)], tmp_path / "r", capsys)
    assert code == 0, err  # unsupported: nothing measured, not a failure by default
    assert line.endswith("the program compiled nothing with JAX (0.4.31: it never imported jax): nothing measured"), line
    (folder,) = (tmp_path / "r").iterdir()
    assert '"nothing_cached": "no jax"' in (folder / "results.json").read_text()


def test_check_on_a_reproducing_example_exits_1_by_default(tmp_path, capsys, set_order_check):
    code, swept = set_order_check  # check examples/set_order_script.py --versions 0.4.31 --runs 6 (conftest.py)
    err = swept.err
    assert code == 1, err
    assert "harness: --fail-on reproduced,error: 1 cell(s) failed: 0.4.31" in err
    assert "missed the cache in a fresh process" in err and "report.md" in err
    # The same cell with --fail-on none: a copy of its folder resumed (complete: nothing is measured again).
    copy = tmp_path / "n" / swept.run_dir.name
    shutil.copytree(swept.run_dir, copy)
    code = cli.main(["check", "examples/set_order_script.py", "--versions", VERSION, "--runs", "6", "--quiet",
                     "--fail-on", "none", "--resume", str(copy)])
    assert code == 0, capsys.readouterr().err
    assert json.loads((copy / "results.json").read_text())["cells"] == swept.data["cells"]
