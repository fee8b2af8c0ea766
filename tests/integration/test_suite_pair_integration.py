"""A suite's run 2 beside its run 1 (issue 51, item 7) on real releases: the two processes overlap, run 2 in an
empty folder of its own bound at the cell folder's path (bubblewrap), its keys compared with run 1's entries; the
later runs are served from the cell's folder. On 0.10.2 the folder's path is in every key (the moved folder misses
every module), so run 2's hits by key show that it saw the cell folder's path. A set-ordered test still reproduces,
with its category."""

import json
import os
from pathlib import Path

import pytest

from tests.helpers import SET_ORDERED_TEST
from harness.cli import commands as cli
from harness.core import recorder
from harness.environments.same_path import same_path_problem

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def bwrap():
    """Skips where bubblewrap cannot bind a folder here, unless HARNESS_REQUIRE_BWRAP=1 (CI: .ci/run installs it)."""
    if same_path_problem():
        if os.environ.get("HARNESS_REQUIRE_BWRAP") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BWRAP=1 but {same_path_problem()}")
        pytest.skip(f"run 2 cannot run beside run 1 here: {same_path_problem()}")

SET_ORDER = "tests/test_names.py::test_set_order"
SET_ORDERED = {
    "test_stable.py": "import jax, numpy as np\n\n\n"
                      "def double(x):\n    return x * 2\n\n\n"
                      "def test_double():\n    assert float(jax.jit(double)(np.ones(8, np.float32)).sum()) == 16.0\n",
    "test_names.py": SET_ORDERED_TEST,
}
CLEAN = {
    "test_add.py": "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                   "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n",
    "test_norm.py": "import jax, jax.numpy as jnp\n\n\n@jax.jit\ndef norm(x):\n    return jnp.sqrt((x * x).sum())\n\n\n"
                    "def test_norm():\n    assert float(norm(jnp.ones(9))) == 3.0\n",
}


def _check(tmp_path, capsys, version):
    out = tmp_path / "r"
    code = cli.main(["check", "--pytest", "--versions", version, "--quiet", "--json", "--cwd", str(tmp_path / "suite"),
                     "--out", str(out), "--", "-q", "-p", "no:randomly", "tests"])
    printed = capsys.readouterr()
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    return code, cell, json.loads(printed.out)["cells"][0], run_dir


def _span(run_dir, run) -> tuple[float, float]:
    """A run's first and last moment, from its recorder's own records (written in the run's process)."""
    path = run_dir / run["log"].replace(".log", ".recorder.jsonl")
    times = [json.loads(line)["time"] for line in path.read_text().splitlines() if '"time"' in line]
    return min(times), max(times)


def test_a_clean_suite_runs_run_2_beside_run_1_at_the_cell_folder_s_path(tmp_path, capsys, write):
    for name, text in CLEAN.items():
        write(f"suite/tests/{name}", text)
    code, cell, _, run_dir = _check(tmp_path, capsys, "0.10.2")
    assert code == 0 and cell["verdict"] == "clean", cell["reason"]
    first, second, *later = cell["runs"]
    assert len(later) == 4
    (start_1, end_1), (start_2, end_2) = _span(run_dir, first), _span(run_dir, second)
    assert start_2 < end_1 and start_1 < end_2  # the two processes ran at the same time
    assert all(_span(run_dir, run)[0] > max(end_1, end_2) for run in later)
    # run 2: every key of run 1's a hit by key, in its own folder at the cell folder's path (the path is in the key)
    written = {k["key"] for k in first["keys"]["keys"] if k["outcome"] == "written"}
    assert written and {k["key"] for k in second["keys"]["keys"]} == written
    assert {k["outcome"] for k in second["keys"]["keys"]} == {"hit"} and second["new_entries"] == []
    assert second["compared_by_key"]["baseline"] == 1 and second["compared_by_key"]["hits"] == len(written)
    assert second["compared_by_key"]["folder"].startswith("caches/") and second["compared_by_key"]["folder"].endswith(
        ".run-02")
    own = run_dir / second["compared_by_key"]["folder"]
    assert {p.name for p in own.iterdir()} == set(first["new_entries"])  # its own entries, not merged
    assert cell["moved_folder"]["outcome"] == "miss"  # another path moves every key on this release
    # the later runs are served from the cell's folder: measured hits
    for run in later:
        assert "compared_by_key" not in run and {k["outcome"] for k in run["keys"]["keys"]} == {"hit"}
    assert ("run 2 ran beside run 1 in an empty folder of its own: its keys were compared with run 1's entries, not "
            "served (runs 3-6 were served from the cell's folder)") in cell["reason"]
    assert recorder.read(run_dir / second["log"].replace(".log", ".recorder.jsonl")).exit_status() == 0


def test_a_set_ordered_test_still_reproduces_as_the_hash_seed_s(tmp_path, capsys, write):
    for name, text in SET_ORDERED.items():
        write(f"suite/tests/{name}", text)
    code, cell, summary, run_dir = _check(tmp_path, capsys, "0.4.31")
    assert code == 1 and cell["verdict"] == "reproduced", cell["reason"]
    assert cell["reason"].startswith("jit_by_names: a new key in run "), cell["reason"]
    assert cell["runs"][1]["compared_by_key"]["baseline"] == 1  # run 2 ran beside run 1
    misses = {(t, m["module"], m["category"], m.get("follows")) for m in summary["per_test"]["misses"]
              for t in m["tests"]}
    assert misses == {(SET_ORDER, "jit_by_names", "moved key", "hash seed")}, misses
    assert cell["seed_control"]["seed"] == cell["runs"][0]["seed"]
    # report.md's per-test section, where run 2 is listed, says its keys were compared, not served
    section = (run_dir / "report.md").read_text().split("## Results")[0]
    assert "Run 2 ran beside run 1 in an empty folder of its own: its keys were compared with run 1" in section


def test_a_suite_that_sets_its_folder_after_compiling_runs_run_2_again_in_the_cell_s_folder(tmp_path, capsys, write):
    """Run 1 runs again when its script set its own folder after its first compilation (jax#25768): run 2, made
    beside its first attempt, was compared with entries since removed, so it runs again after run 1, in the cell's
    folder, its attempt kept as `.beside.log`."""
    write("suite/tests/test_late.py",
          "import jax, jax.numpy as jnp\n\n\ndef test_compiles_then_sets_the_folder(tmp_path):\n"
          "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n"
          "    jax.config.update('jax_compilation_cache_dir', str(tmp_path / 'own-cache'))\n"
          "    assert float(jax.jit(lambda x: x * 3)(jnp.ones(4)).sum()) == 12.0\n")
    code, cell, _, run_dir = _check(tmp_path, capsys, "0.4.31")
    first, second, *_ = cell["runs"]
    assert "compared_by_key" not in second and "ran beside" not in cell["reason"], cell["reason"]
    logs = run_dir / Path(first["log"]).parent
    assert len(list(logs.glob("run-01-*.first-use.log"))) == 1  # run 1 ran again
    assert len(list(logs.glob("run-02-*.beside.log"))) == 1  # and so did run 2, after it
    assert _span(run_dir, second)[0] > _span(run_dir, first)[1]
