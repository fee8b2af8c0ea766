"""The GitHub Action's shell steps, run for real here with its inputs substituted: they pass on a clean
script and fail on the seed's repro at 0.4.28 (the action's unit tests: tests/unit/test_action.py)."""

import json
import shutil
from pathlib import Path

import pytest

from harness.inside.repros import builtin_path
from tests.helpers import CHECK_STEP, ROOT, Runner


@pytest.mark.integration
def test_the_actions_steps_pass_on_a_clean_script_and_fail_on_the_seed_at_0_4_28(tmp_path):
    workspace = tmp_path / "workspace"
    (workspace / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "stable_script.py", workspace / "tests" / "cache_probe.py")
    shutil.copy(builtin_path("shard_map_grad"), workspace / "tests" / "seed.py")  # the seed's repro, as a script
    runner = Runner(tmp_path / "runner-temp", workspace)
    code, _, text = runner.run("Install the harness", {}, "install")
    assert code == 0, text
    assert (tmp_path / "runner-temp" / "jax-cache-harness" / "bin" / "harness").is_file()

    code, outputs, text = runner.run(CHECK_STEP, {"script": "tests/cache_probe.py", "versions": "0.4.28",
                                                  "runs": "2", "extra-args": "--jobs 1 --quiet"}, "clean")
    assert code == 0, text
    clean = outputs
    assert clean["exit-code"] == "0" and Path(clean["results"]).parent == Path(clean["folder"])
    assert Path(clean["folder"]).parent == tmp_path / "runner-temp" / "jax-cache-results"
    assert "| 0.4.28 " in text and "clean" in text and "::error" not in text  # the job summary's table
    assert json.loads((Path(clean["results"]) / "results.json").read_text())["cells"][0]["verdict"] == "clean"

    # A second use in the same job: its own folder, junit.xml and artifact name; the first's are untouched.
    code, outputs, text = runner.run(CHECK_STEP, {"script": "tests/seed.py", "versions": "0.4.28", "runs": "3",
                                                  "extra-args": "--quiet"}, "seed")
    assert code == 1 and outputs["exit-code"] == "1", text
    assert outputs["folder"] != clean["folder"] and outputs["artifact"] != clean["artifact"]
    assert 'type="reproduced"' not in (Path(clean["folder"]) / "junit.xml").read_text()
    assert "::error title=JAX cache check: Regression::" in text and "--fail-on reproduced,error: 1 cell(s) failed" in text
    assert "lost per start" in text  # the table's detail, in the job summary too
    junit = (Path(outputs["folder"]) / "junit.xml").read_text()
    assert 'type="reproduced"' in junit

    # A release that never writes a module of the script (a host callback before 0.11): `not cached`, passes,
    # saying why. (fail-on-not-cached: tests/unit/test_action.py sees it reach the harness's --fail-on, and
    # tests/integration/test_not_cached_integration.py a not cached cell fail it: a fourth check here measured it again.)
    shutil.copy(ROOT / "examples" / "host_callback.py", workspace / "tests" / "callback.py")
    inputs = {"script": "tests/callback.py", "versions": "0.6.0", "runs": "2", "extra-args": "--quiet"}
    code, outputs, text = runner.run(CHECK_STEP, inputs, "not-cached")
    assert code == 0 and "::warning title=jax 0.6.0: not cached::" in text and "host callback" in text, text
    # its own cell only, not the other uses' folders (0.6.0's moved folder misses too: the path is in its keys)
    assert text.count("::warning title=jax 0.6.0: not cached::") == 1 and "::warning title=jax 0.4.28" not in text
