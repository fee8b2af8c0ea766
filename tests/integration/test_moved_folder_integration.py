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
