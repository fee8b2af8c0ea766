"""Modules JAX never writes, on a real release (issue 60 item 2, issue 62 item 6): a test suite whose test jits a
function with `jax.debug.print` beside a cacheable one reads `not cached`, naming the test, the line and the cost,
never `unsupported` or "nothing was measured"; a small MLP step at --cache-thresholds script, every module under (or
all but one over) JAX's 1 s threshold, has that as its headline, its sentences whole."""

import json
import re
import shutil
from xml.etree import ElementTree

import pytest

from harness.cli import commands as cli
from tests.sweeps import sweep

pytestmark = pytest.mark.integration

SUITE = ("import jax, jax.numpy as jnp\n\n\n"
         "def step(x):\n"
         "    jax.debug.print('x = {x}', x=x)\n"  # line 5: the callback's line
         "    return x * 2\n\n\n"
         "def plain(x):\n    return x + 1\n\n\n"
         "def test_callback():\n    assert float(jax.jit(step)(jnp.ones(3)).sum()) == 6.0\n\n\n"
         "def test_plain():\n    assert float(jax.jit(plain)(jnp.ones(3)).sum()) == 6.0\n")

MLP = """import jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", "/tmp/jax-cache-harness-mlp-never-used")  # redirected by the hook


def loss(p, x, y):
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)


@jax.jit
def step(p, x, y):
    g = jax.grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)


k1, k2 = jax.random.split(jax.random.PRNGKey(0))
p = {"w1": jax.random.normal(k1, (8, 16)), "w2": jax.random.normal(k2, (16, 1))}
for _ in range(3):
    p = step(p, jnp.ones((4, 8)), jnp.zeros((4, 1)))
print(float(loss(p, jnp.ones((4, 8)), jnp.zeros((4, 1)))))
"""


def test_a_suite_with_a_debug_print_is_not_cached_per_test_with_its_line_and_cost(tmp_path, capsys, write):
    write("suite/tests/test_cb.py", SUITE)
    junit = tmp_path / "junit.xml"
    swept = sweep(["check", "--pytest", "--versions", "0.10.2", "--runs", "3", "--cwd", str(tmp_path / "suite"),
                   "--junit-xml", str(junit), "--", "-q", "tests"], tmp_path / "r", capsys, expect=0)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "not cached", cell["reason"]
    assert cell["reason"].startswith("jit_step uses a host callback (tests/test_cb.py:5 jax.debug.print); never "
                                     "written by JAX, so every fresh process compiles it again: "), cell["reason"]
    assert re.search(r"again: [0-9.]+ s lost per start", cell["reason"]), cell["reason"]
    assert cell["callback_sites"] == {"jit_step": "tests/test_cb.py:5 jax.debug.print"}
    report = (swept.run_dir / "report.md").read_text()
    assert "nothing was measured" not in report and "Stepped over" not in report
    assert report.startswith("# check-pytest: not reproduced in this range; not cached on 0.10.2 (jit_step uses")
    # (report.md's tables are unpadded since issue 60.5's 20 KB budget: the row's cells, whatever the spaces)
    assert re.search(r"\| `tests/test_cb\.py::test_callback` +\| `jit_step` +\| not cached +\| host callback at "
                     r"tests/test_cb\.py:5 jax\.debug\.print", report), report
    assert "1 of 2 tests are clean" in report and "1 is `not cached`" in report
    cases = {c.get("name"): c for c in ElementTree.parse(junit).getroot().iter("testcase")}
    assert all(c.find("skipped") is None and c.find("failure") is None for c in cases.values())
    assert "jit_step: not cached" in cases["tests/test_cb.py::test_callback [jax 0.10.2]"].find("system-out").text
    # Failing on it is the user's choice: the same cell, a copy of its folder resumed (complete: nothing is measured
    # again; a second check of the suite measured it twice).
    copy = tmp_path / "r2" / swept.run_dir.name
    shutil.copytree(swept.run_dir, copy)
    capsys.readouterr()
    code = cli.main(["check", "--pytest", "--versions", "0.10.2", "--runs", "3", "--quiet", "--cwd",
                     str(tmp_path / "suite"), "--fail-on", "not-cached", "--resume", str(copy), "--", "-q", "tests"])
    err = capsys.readouterr().err
    assert code == 1 and "--fail-on not-cached: 1 cell(s) failed" in err, err
    assert json.loads((copy / "results.json").read_text())["cells"] == swept.data["cells"]


def test_an_mlp_step_as_it_runs_leads_with_its_threshold_never_nothing_measured(tmp_path, capsys, write):
    swept = sweep(["check", str(write("mlp.py", MLP)), "--versions", "0.10.2", "--runs", "3",
                   "--cache-thresholds", "script"], tmp_path / "r", capsys, expect=0)
    (cell,) = swept.data["cells"]
    reason = cell["reason"]
    assert cell["verdict"] == "not cached" and cell["nothing_cached"] == "thresholds", reason
    # Every module under JAX's 1 s threshold, or (a slow machine) all but one whose compile passed it.
    assert reason.startswith(("as you run it, nothing is cached: every module compiles under JAX's default 1 s "
                              "threshold (", "as you run it, ")), reason
    assert re.search(r"; [0-9.]+ s lost per start; `jax_persistent_cache_min_compile_time_secs=0` would keep them",
                     reason), reason
    report = (swept.run_dir / "report.md").read_text()
    assert "nothing was measured" not in report and "nothing measured" not in report
    assert "would be." not in report and "would be;" not in report  # no sentence cut short
    assert "not cached on 0.10.2 (as you run it, " in report.splitlines()[0]
    json.dumps(cell)  # plain JSON


def test_a_test_failing_in_every_run_is_named_with_pytests_line_and_the_cell_judged_on_the_rest(tmp_path, capsys,
                                                                                               write):
    """Issue 60, item 6: pytest closes its capture, then JAX's atexit clear_backends logs to it: a "--- Logging
    error ---" with `ValueError: I/O operation on closed file.` ends every run's log. The reason is pytest's own."""
    write("suite/tests/test_cb.py", SUITE)
    write("suite/tests/test_bad.py", "import jax, jax.numpy as jnp\n\n\ndef test_tolerance():\n"
                                     "    assert float(jax.jit(lambda x: x * 3)(jnp.ones(2)).sum()) == 7.0\n")
    swept = sweep(["check", "--pytest", "--versions", "0.10.2", "--runs", "2", "--no-moved-folder",
                   "--cwd", str(tmp_path / "suite"), "--", "-q", "tests"], tmp_path / "r", capsys, expect=0)
    (cell,) = swept.data["cells"]
    assert any("--- Logging error ---" in (swept.run_dir / r["log"]).read_text() for r in cell["runs"])
    assert cell["verdict"] == "not cached", cell["reason"]  # judged on the tests that passed, not `error`
    assert ("failing in every run (not cache misses): tests/test_bad.py::test_tolerance (pytest: 1 failed, 2 passed "
            "in ") in cell["reason"], cell["reason"]
    assert "FAILED tests/test_bad.py::test_tolerance - assert 6.0 == 7.0)" in cell["reason"]
    assert "I/O operation on closed file" not in json.dumps(swept.data)
    assert cell["callback_sites"] == {"jit_step": "tests/test_cb.py:5 jax.debug.print"}
    report = (swept.run_dir / "report.md").read_text()
    assert "Tests that failed in every run" in report and "`tests/test_bad.py::test_tolerance`" in report


# Two lambdas: both `jit__lambda` (0.10.2; `jit__lambda_` on 0.4.31), one with a `jax.debug.print` (line 5), one
# written. On 0.4.31 the callback's key moves too (its address is lowered into the module): never written either way.
# The script keeps a cache as it runs (its folder, no threshold), so what JAX never writes is the finding.
LAMBDAS = ("import jax, jax.numpy as jnp\n"
           "jax.config.update('jax_compilation_cache_dir', '/tmp/jax-cache-harness-lambdas-never-used')\n"
           "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n\n"
           "shout = jax.jit(lambda x: (jax.debug.print('x = {x}', x=x), x * 2)[1])\n"
           "plain = jax.jit(lambda x: x + 1)\n"
           "print(float(shout(jnp.ones(3)).sum()), float(plain(jnp.ones(3)).sum()))\n")


def test_a_callback_module_beside_a_written_namesake_is_not_cached_on_both_releases_moved_or_not(tmp_path, capsys,
                                                                                                 write):
    """Issue 72 item 4: attribution by key, not by module name (a written `jit__lambda` hid the callback's, read
    clean on 0.10.2); a never-written module whose key also moves is `not cached`, not `reproduced` (0.4.31); the
    summary never calls the change between them a regression fixed."""
    swept = sweep(["check", str(write("lambdas.py", LAMBDAS)), "--versions", "0.4.31", "0.10.2", "--runs", "2",
                   "--no-moved-folder"], tmp_path / "r", capsys, expect=0)
    cells = {c["spec"]["jax_version"]: c for c in swept.data["cells"]}
    for version, cell in cells.items():
        assert cell["verdict"] == "not cached", (version, cell["reason"])
        module = next(k["module"] for r in cell["runs"] for k in r["keys"]["keys"] if k["outcome"] == "not written")
        assert module.startswith("jit__lambda"), module
        # the callback's module by its key: its namesake was written (on disk), and it is the one named
        assert any(n.startswith(module + "-") for r in cell["runs"] for n in r["new_entries"]), cell["runs"]
        assert cell["reason"].startswith(f"{module} uses a host callback"), cell["reason"]
        # the recorder's record of the call (0.4.31's dump names only a debug_callback)
        assert cell["callback_sites"] == {module: "lambdas.py:5 jax.debug.print"}, cell["callback_sites"]
    assert "its key differs between runs too, which costs nothing more" in cells["0.4.31"]["reason"]
    line = swept.data["summary"]["line"]
    assert "fixed" not in line and "regression" not in line, line
    report = (swept.run_dir / "report.md").read_text()
    assert report.startswith("# check-lambdas: not reproduced in this range; not cached on 0.4.31, 0.10.2 (on 0.4.31: "
                             "jit__lambda_ uses a host callback (lambdas.py:5 jax.debug.print); never written"), report[:300]
