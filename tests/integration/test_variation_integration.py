"""--vary on real releases: the cache folder's path in the key (0.4.36 until 0.11.0), no false alarm from
any factor where nothing is keyed on the environment, and the seed's regression still found by its seeds.

Lean on purpose: two runs per cell (the factors need only the reference), one release per finding.
"""

import json
import os

import pytest

from harness.cli import commands as cli
from harness.environments.interpreters import discover
from harness.inputs.pythons import PythonVersion
from tests.sweeps import sweep

pytestmark = pytest.mark.integration


def factors(cell):
    return {f["factor"]: f for f in cell["variation"]["factors"]}


def test_cache_path_reproduces_on_a_release_that_keys_the_path(tmp_path, capsys):
    swept = sweep(["check", "examples/stable_script.py", "--versions", "0.5.0", "--runs", "2",
                   "--vary", "cache-path"], tmp_path, capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "reproduced"
    assert cell["reason"].startswith("misses when the cache folder is reached by another path (compile_options moved")
    found = factors(cell)["cache-path"]
    assert found["outcome"] == "miss" and found["components"] == ["compile_options"]
    assert found["modules"] and len(found["modules"]) == found["modules_total"]  # every module missed
    assert cell["variation"]["control"]["exit_code"] == 0  # the plain environment, same seed, hit
    assert [r["seed"] for r in cell["runs"]][0] == cell["variation"]["seed"] == found["run"]["seed"]
    assert "miss: cache-path" in swept.out
    report = (swept.run_dir / "report.md").read_text()
    assert "## Environment variation" in report and "--vary cache-path" in report


def test_every_factor_on_a_release_that_keys_none_is_clean(tmp_path, capsys):
    swept = sweep(["check", "examples/stable_script.py", "--versions", "0.4.31", "--runs", "2",
                   "--vary", "all"], tmp_path, capsys)
    data = swept.data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    found = factors(cell)
    assert set(found) == {"cache-path", "cwd", "script-path", "home", "user", "hostname", "env-order", "tz",
                          "locale", "prefix", "compression"}
    assert found["compression"]["outcome"] == "keyed by design"
    assert found["compression"]["components"] == ["compression"]
    for name, result in found.items():
        if name != "compression":  # a factor is a hit, or says why it could not be made here: never silent
            assert result["outcome"] in ("hit", "cannot vary here"), (name, result)
            assert result["outcome"] == "hit" or result["reason"]
    assert "keyed by design: compression" in swept.out
    assert "keyed by design" in (swept.run_dir / "report.md").read_text()


def test_the_seeds_regression_under_every_factor(tmp_path, capsys):
    # 0.4.28 alone: a clean release under every factor (smoke's 0.4.29, 13 runs more) is the test above's, 0.4.31.
    data = sweep(["run", "configs/smoke.yaml", "--versions", "0.4.28", "--runs", "2", "--vary", "all"], tmp_path,
                 capsys).data
    cells = {c["spec"]["jax_version"]: c for c in data["cells"]}
    assert {v: c["verdict"] for v, c in cells.items()} == {"0.4.28": "reproduced"}
    assert cells["0.4.28"]["reason"].startswith("jit_f: a new key in run 2")  # by its seeds, as without --vary
    for cell in cells.values():
        assert not [f for f in cell["variation"]["factors"] if f["outcome"] == "miss"]


def test_bisection_with_cache_path_finds_where_the_miss_appears_and_where_it_is_fixed(tmp_path, capsys, write):
    """Also the fix: 0.11.0, measured beside 0.10.2 for the boundary, is clean and its factor hits."""
    if not any(i.version == PythonVersion(3, 12) for i in discover()):
        reason = "no Python 3.12 on this machine; jax 0.11 needs one"
        if os.environ.get("HARNESS_REQUIRE_PYTHON_312") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    script = os.path.abspath("examples/stable_script.py")
    config = write("plain.yaml", f"name: plain\nrepro: {script}\njax_versions: ['>=0.4.31']\nruns: 2\n")
    argv = ["bisect", str(config), "--vary", "cache-path", "--good", "0.4.31",
            "--versions", "0.4.31", "0.4.35", "0.4.36", "0.5.0", "0.10.2", "0.11.0", "--out", str(tmp_path), "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "regression appears in 0.4.36 (last clean 0.4.35); fixed in 0.11.0" in out
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("bisect-")]
    cells = {c["spec"]["jax_version"]: c for c in json.loads((folder / "results.json").read_text())["cells"]}
    for version, cell in cells.items():  # every point measured its factor, and only the factor moved it
        assert factors(cell)["cache-path"]["outcome"] == ("miss" if cell["verdict"] == "reproduced" else "hit")
        assert cell["reason"].startswith("misses when the cache folder") == (cell["verdict"] == "reproduced")
    # the fix's release (its own test before): clean, and the cache folder reached by another path hits
    assert cells["0.11.0"]["verdict"] == "clean", cells["0.11.0"]["reason"]
    assert factors(cells["0.11.0"])["cache-path"]["outcome"] == "hit"


def test_fingerprints_of_two_environments_differing_in_one_factor_are_diffed(tmp_path, capsys):
    # Two "machines": the same release and script, their cache folders at two paths (the one factor).
    for name in ("a", "b"):
        assert cli.main(["fingerprint", "examples/stable_script.py", "--versions", "0.5.0", "-q", "--out",
                         str(tmp_path / f"work-{name}"), "--cache-dir", str(tmp_path / f"cache-{name}"),
                         "--output", str(tmp_path / f"{name}.json")]) == 0
    capsys.readouterr()
    assert cli.main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 1
    out = capsys.readouterr().out
    assert "jax 0.5.0 (cpu x8): 3 of 3 modules' keys differ; moved: compile_options" in out
    assert "cache_dir:" in out
    # the same machine twice: the same keys
    assert cli.main(["diff", str(tmp_path / "a.json"), str(tmp_path / "a.json")]) == 0


def test_script_path_from_a_project_folder_holding_the_results(tmp_path, capsys, monkeypatch):
    """Issue 32.7: run from the script's folder, `results/` is inside what script-path copies; the copy
    copied itself until `File name too long` (exit 3, no cell). Also with `all,cwd`."""
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(open("examples/stable_script.py").read())
    monkeypatch.chdir(project)
    swept = sweep(["check", "train.py", "--versions", "0.4.31", "--runs", "2", "--vary", "script-path,all,cwd"],
                  project / "results", capsys)
    (cell,) = swept.data["cells"]
    found = factors(cell)
    assert found["script-path"]["outcome"] == "hit", found["script-path"]
    copy = swept.run_dir / "logs"
    assert not list(copy.rglob("results")), "the results folder was copied"
