"""A test suite as the program (issue 51, items 1 and 3): `harness check --pytest` on real releases. pytest
captures fd 2, so JAX's log on stderr says nothing; the recorder inside each run reads JAX's messages there,
and its pytest plugin ties each key to the test that compiled it."""

import json

import pytest

from harness.cli import commands as cli
from harness.core import recorder
from tests.sweeps import sweep

pytestmark = pytest.mark.integration

SUITE = {
    "test_add.py": "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                   "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n",
    "test_scale.py": "import logging, sys\nimport jax, jax.numpy as jnp\n\n\n"
                     "def scale(x):\n    return x * 3\n\n\n"
                     "def test_scale():\n"
                     "    logging.basicConfig(force=True, level=logging.ERROR)  # a suite's own logging\n"
                     "    print('noise', file=sys.stderr)\n"
                     "    assert float(jax.jit(scale)(jnp.ones(4)).sum()) == 12.0\n",
    "test_skip.py": "import pytest\n\n\n@pytest.mark.skip(reason='not here')\ndef test_skipped():\n    pass\n",
}


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_check_pytest_reads_every_key_with_its_test_while_pytest_captures_stderr(version, tmp_path, capsys, write):
    for name, text in SUITE.items():
        write(f"suite/tests/{name}", text)
    out = tmp_path / "r"
    code = cli.main(["check", "--pytest", "--versions", version, "--runs", "2", "--no-moved-folder", "--quiet",
                     "--cwd", str(tmp_path / "suite"), "--out", str(out), "--", "-q", "tests"])
    assert code == 0, capsys.readouterr().err
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["command"]["argv"][:2] == ["-m", "pytest"]
    for run in cell["runs"]:
        assert run["exit_code"] == 0 and "log_note" not in run  # not "the script compiled nothing"
        log = (run_dir / run["log"]).read_text()
        assert "get_cache_key" not in log  # pytest captured JAX's log on stderr: none of it there
        tests = {t for k in run["keys"]["keys"] for t in k.get("tests", ())}
        assert tests == {"tests/test_add.py::test_add", "tests/test_scale.py::test_scale"}
        scale = [k for k in run["keys"]["keys"] if k["module"] == "jit_scale"]
        assert scale and all(k["tests"] == ["tests/test_scale.py::test_scale"] for k in scale)
        assert [k.get("arg_types") for k in scale] == [["float32[4]"]]
    first, second = cell["runs"]
    assert {k["outcome"] for k in first["keys"]["keys"]} == {"written"}
    assert {k["outcome"] for k in second["keys"]["keys"]} == {"hit"}
    recording = recorder.read(run_dir / first["log"].replace(".log", ".recorder.jsonl"))
    assert recording.outcomes() == {"tests/test_add.py::test_add": "passed", "tests/test_scale.py::test_scale": "passed",
                                    "tests/test_skip.py::test_skipped": "skipped"}
    assert len(recording.collected()) == 3 and recording.exit_status() == 0
    assert cell["cost"]["runs"][0]["misses"] > 0  # the cost is read from the recorded messages too
    logs = sorted(p.name for p in (run_dir / first["log"]).parent.glob("run-01-*.log"))
    assert len(logs) == 1  # run 1 ran once: no run without a folder before it


def test_a_suite_checked_without_runs_makes_the_fewest_runs_that_are_not_weak_and_says_its_bound(tmp_path, capsys,
                                                                                                   write):
    """check --pytest without --runs (issue 51, item 7): 6 runs and the moved folder's, not 11; the clean verdict's
    line, the row and the summary say the bound (0.031) and that --runs 11 gives 1e-3."""
    write("suite/tests/test_add.py", SUITE["test_add.py"])
    out = tmp_path / "r"
    code = cli.main(["check", "--pytest", "--versions", "0.4.31", "--cwd", str(tmp_path / "suite"),
                     "--out", str(out), "--", "-q", "tests"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    document = json.loads((run_dir / "results.json").read_text())
    (cell,) = document["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert document["options"]["runs"] == len(cell["runs"]) == 6 == len(set(cell["seeds"]["seeds"]))
    assert cell["miss_bounds"]["miss_bound"] == 2 ** -5 and cell["moved_folder"]["outcome"] == "hit"
    said = "a regression would read clean with chance up to 0.031; --runs 11 would make it at most 0.00098"
    (verdict_line,) = [line for line in printed.err.splitlines() if "=> clean: " in line]
    assert verdict_line.endswith(f"; {said}") and cell["reason"] in verdict_line
    assert said in printed.out  # the row
    assert printed.out.rstrip().endswith("not reproduced in this range; clean on 0.4.31: a regression would read clean "
                                         "with chance up to 0.031 (--runs 11 would make it at most 0.00098)")


def test_a_module_the_release_does_not_have_is_one_line(tmp_path, capsys):
    swept = sweep(["check", "-m", "no_such_module_here", "--versions", "0.10.2", "--runs", "2",
                   "--no-moved-folder", "--cwd", str(tmp_path)], tmp_path / "r", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "error"
    assert "no module no_such_module_here in this release's environment" in cell["reason"]
    assert "\n" not in cell["reason"]
    assert json.dumps(cell["runs"][0]["reason"]).count("no module") == 1


CLOSES_STDERR = """\
import os
os.close(2)  # nothing it or JAX writes to stderr goes anywhere
import jax, jax.numpy as jnp
print(jax.jit(lambda x: x * 2)(jnp.ones(3)))
"""


def test_a_script_that_closes_stderr_is_still_read_and_runs_run_1_once(tmp_path, capsys, write):
    swept = sweep(["check", str(write("closes.py", CLOSES_STDERR)), "--versions", "0.4.31", "--runs", "2",
                   "--no-moved-folder"], tmp_path / "r", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(any(k["module"] == "jit__lambda_" for k in run["keys"]["keys"]) for run in cell["runs"])
    assert cell["cache_folder"] == "environment"  # it sets none: run 1 told, in the same run
    logs = swept.run_dir / "logs" / "jax-0.4.31-cpu8-script"
    assert len(list(logs.glob("run-01-*.log"))) == 1 and not list(logs.glob("*.first-use.log"))
    assert recorder.read(next(logs.glob("run-01-*.recorder.jsonl"))).fallback()
