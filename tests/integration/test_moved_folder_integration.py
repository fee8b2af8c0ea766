"""harness check's moved folder on real releases (issue 47 item 3): by default each cell's cache folder is also
read through another path, and the result is said beside the verdict, which keeps its meaning (fresh processes,
one path). The folder's path is in every key from 0.4.36 until 0.11.0 (0.10.2 has it, 0.4.31 not).

Lean on purpose: two runs per cell (the moved run needs only the reference), one clean script.
"""

import json
import re

import pytest

from tests.sweeps import check

pytestmark = pytest.mark.integration


def test_a_clean_script_stays_clean_and_says_the_moved_folder_misses_on_0_10_2_and_hits_on_0_4_31(tmp_path, capsys):
    swept = check(["examples/stable_script.py", "--versions", "0.4.31", "0.10.2", "--runs", "2", "--json",
                   "--junit-xml", str(tmp_path / "junit.xml")], tmp_path / "out", capsys)
    data = swept.data
    cells = {c["spec"]["jax_version"]: c for c in data["cells"]}
    assert data["options"]["moved_folder"] is True
    keyed, fixed = cells["0.10.2"], cells["0.4.31"]
    assert keyed["verdict"] == fixed["verdict"] == "clean", (keyed["reason"], fixed["reason"])
    assert "variation" not in keyed  # not --vary: the verdict is the fresh processes' alone
    moved = keyed["moved_folder"]
    assert moved["factor"] == "cache-path" and moved["outcome"] == "miss"
    assert moved["components"] == ["compile_options"]
    assert moved["modules"] and len(moved["modules"]) == moved["modules_total"]  # every module missed
    assert moved["run"]["seed"] == keyed["runs"][0]["seed"]  # the reference's seed
    assert fixed["moved_folder"]["outcome"] == "hit"
    summary = {c["jax"]: c for c in json.loads(swept.out)["cells"]}
    assert summary["0.10.2"]["moved_folder"] == "every module missed (compile_options)"
    assert summary["0.4.31"]["moved_folder"] == "hit"
    report = (swept.run_dir / "report.md").read_text()
    assert re.search(r"\| moved folder +\|", report)  # the table's own column
    assert "moved folder: every module missed (compile_options)" in report and "moved folder: hit" in report
    junit = (tmp_path / "junit.xml").read_text()
    assert "moved folder: every module missed (compile_options)" in junit and "<failure" not in junit


# ---- the moved run in a planned later run's place (issue 51 item 7) ----

SUITE = {
    "test_add.py": "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                   "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n",
    "test_norm.py": "import jax, jax.numpy as jnp\n\n\n@jax.jit\ndef norm(x):\n    return jnp.sqrt((x * x).sum())\n\n\n"
                    "def test_norm():\n    assert float(norm(jnp.ones(9))) == 3.0\n",
}


def _processes(run_dir):
    """The fresh processes a check made, as bench/bench_pytest.py counts them (its logs)."""
    return sorted(p.name for p in (run_dir / "logs").rglob("*.log")
                  if not p.name.endswith((".first-use.log", "seed-probe.log")))


def test_a_clean_suite_is_its_6_planned_runs_the_moved_run_one_of_them(tmp_path, capsys):
    for name, text in SUITE.items():
        (tmp_path / "suite" / "tests").mkdir(parents=True, exist_ok=True)
        (tmp_path / "suite" / "tests" / name).write_text(text)
    swept = check(["--pytest", "--versions", "0.4.31", "--cwd", str(tmp_path / "suite"), "--", "-q", "tests"],
                  tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert len(cell["runs"]) == 6 and len(_processes(swept.run_dir)) == 6  # 6 processes, not 7
    (moved_run,) = [r for r in cell["runs"] if r.get("in_moved_folder")]
    moved = cell["moved_folder"]
    assert moved["outcome"] == "hit" and moved["counted"] and moved["planned_run"] == moved_run["index"] == 3
    assert moved["run"]["seed"] == moved_run["seed"] == cell["seeds"]["seeds"][2]  # run 3's planned seed
    assert "a regression would read clean with chance up to 0.031" in swept.err or cell["miss_bounds"][
        "miss_bound"] == 2 ** -5  # the bound is the 6 runs'
    report = (swept.run_dir / "report.md").read_text()
    assert "moved folder: hit" in report and "counted as run 3" in report


def test_where_the_path_is_keyed_the_moved_runs_planned_run_is_made_in_the_cells_folder_and_proves_the_path(
        tmp_path, capsys):
    swept = check(["examples/stable_script.py", "--versions", "0.10.2", "--runs", "3"], tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    moved = cell["moved_folder"]
    assert moved["outcome"] == "miss" and moved["components"] == ["compile_options"] and "counted" not in moved
    assert moved["planned_run"] == 3 and moved["run"]["seed"] == cell["runs"][2]["seed"]
    assert not any(r.get("in_moved_folder") for r in cell["runs"])  # run 3 is the one in the cell's own folder
    assert moved["reason"].endswith("again in the cell's own folder, hit: the path moved them"), moved["reason"]
    assert len(_processes(swept.run_dir)) == 4  # runs 1-3 and the moved run


def test_a_set_order_script_still_reproduces_with_the_moved_run_in_a_planned_place(set_order_check):
    _, swept = set_order_check  # check examples/set_order_script.py --versions 0.4.31 --runs 6 (conftest.py)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    moved = cell["moved_folder"]
    indices = [r["index"] for r in cell["runs"]]
    if moved.get("counted"):  # its seed ordered the set as run 1's did (one in 24): it is a later run that hit
        assert moved["outcome"] == "hit" and moved["planned_run"] in indices
    elif indices == [1, 2]:  # run 2 reproduced: no run made to tell the moved run's miss (its seed's) from the path
        assert moved["outcome"] == "not judged" and "not known to be the path's: the cell stopped at its first " \
                                                    "miss" in moved["reason"], moved["reason"]
        # run 1, run 2, the moved run, and five cause controls (run 1's seed three times, run 2's twice)
        assert len(_processes(swept.run_dir)) == 8
    else:  # run 2 hit (one in 24): the moved run's planned run, in the cell's own folder, moved the key too
        assert moved["outcome"] == "not judged" and "the seed or the program moved the keys" in moved["reason"]
        assert moved["planned_run"] in indices
