"""The program's own packages between real releases (issue 51.5), and `harness bisect` of a script with no
config (issue 51.8): tests/fixtures/optax_version_order.py (PEP 723: flax, optax) misses the cache in every fresh
process with optax 0.2.5 or newer, so it is clean on JAX 0.4.31 (optax 0.2.3 of its date) and reproduced on
0.10.2 (optax 0.2.8). The summary must name optax's change at that boundary, `--with optax==0.2.3` must pin it on
both releases, and `harness bisect SCRIPT --env ... -- ARGS` must find the same boundary without a config."""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

import pytest

from harness.cli import commands as cli
from tests.sweeps import check

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[1] / "fixtures" / "optax_version_order.py"
PROGRAM = ["--env", "STEP_MODE=tiny", "--seeds", "random"]  # and `-- --steps 1`, last


def optax_of(cell) -> str:
    return cell["environment"]["distributions"]["optax"]


def test_a_boundary_where_the_programs_package_changed_says_so_and_a_pin_holds_it(tmp_path, capsys):
    swept = check([str(SCRIPT), "--versions", "0.4.31", "0.10.2", "--runs", "4", "--no-moved-folder", *PROGRAM,
                   "--", "--steps", "1"], tmp_path / "as resolved", capsys)
    cells = {c["spec"]["jax_version"]: c for c in swept.data["cells"]}
    assert cells["0.4.31"]["verdict"] == "clean" and cells["0.10.2"]["verdict"] == "reproduced"
    assert optax_of(cells["0.4.31"]) == "0.2.3" and optax_of(cells["0.10.2"]) == "0.2.8"
    line = swept.out.strip().splitlines()[-1]
    assert line.startswith("regression appears after 0.4.31, by 0.10.2"), line
    assert "optax 0.2.3 -> 0.2.8 here: the program's own packages" in line, line
    assert "--with optax==0.2.3" in line, line
    header = swept.out.splitlines()[0]
    assert "| packages " in header and "optax 0.2.3" in swept.out and "optax 0.2.8" in swept.out
    report = (swept.run_dir / "report.md").read_text()
    assert "optax 0.2.3 -> 0.2.8 here" in html.unescape(report.split("## ", 1)[0])  # the report's first lines

    # Pinned where the release allows it: optax 0.2.3 on both, and the miss is gone (it was optax's).
    pinned = check([str(SCRIPT), "--versions", "0.4.31", "0.10.2", "--with", "optax==0.2.3", "--runs", "3",
                    "--no-moved-folder", *PROGRAM, "--", "--steps", "1"], tmp_path / "pinned", capsys)
    cells = {c["spec"]["jax_version"]: c for c in pinned.data["cells"]}
    assert {optax_of(c) for c in cells.values()} == {"0.2.3"}
    assert {c["verdict"] for c in cells.values()} == {"clean"}, [c["reason"] for c in cells.values()]
    line = pinned.out.strip().splitlines()[-1]
    assert line.startswith("not reproduced in this range") and "optax" not in line, line


def test_bisect_takes_a_script_and_its_options_without_a_config(tmp_path, capsys):
    out_dir = tmp_path / "bisect"
    argv = ["bisect", str(SCRIPT), "--versions", "0.4.31", "0.10.2", "--runs", "3", *PROGRAM,
            "--out", str(out_dir), "-q", "--", "--steps", "1"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "regression appears in 0.10.2 (last clean 0.4.31), where flax also changed 0.8.5 -> 0.12.7 and " \
           "optax 0.2.3 -> 0.2.8 here" in out, out
    [folder] = out_dir.iterdir()
    assert folder.name.startswith("bisect-optax_version_order-")
    data = json.loads((folder / "results.json").read_text())
    assert data["config"]["env"] == {"STEP_MODE": "tiny"} and data["config"]["args"] == ["--steps", "1"]
    assert data["config"]["requirements"] == ["flax", "optax"]  # the script's PEP 723 block
    steps = {s["point"]: s["verdict"] for s in data["bisect"]["steps"]}
    assert steps == {"0.4.31": "clean", "0.10.2": "reproduced"}
    assert all(r["exit_code"] == 0 for c in data["cells"] for r in c["runs"]), "the program's options reached it"
    # The line it ends with is the script's own command, and replays the recorded bisection.
    line = out.strip().splitlines()[-1].removeprefix("Reproduce with: ")
    words = shlex.split(line)
    assert words[:3] == ["harness", "bisect", str(SCRIPT)] and words[-3:] == ["--", "--steps", "1"]
    assert cli.main(words[1:]) == 0
    assert "regression appears in 0.10.2 (last clean 0.4.31)" in capsys.readouterr().out
    assert [p.name for p in out_dir.iterdir()] == [folder.name]
