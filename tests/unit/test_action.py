"""The GitHub Action (action.yml) and the example workflow in docs/ci.md: actionlint finds nothing, every
expression names a declared input, and (integration) the action's shell steps, run for real here with
its inputs substituted, pass on a clean script and fail on the seed's repro at 0.4.28."""

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ACTION, CHECK_STEP, EXPRESSION, Runner, action


ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "ci.md"


# Every shell step: bash with -euo pipefail (GitHub's `shell: bash` has no -u; tests/unit/test_workflow.py).
STRICT_BASH = "bash --noprofile --norc -euo pipefail {0}"

# The example pins the action to the tag of pyproject.toml's version (docs/ci.md; CHANGELOG.md).
PINNED = f"uses: OWNER/jax-cache-harness@v{tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['version']}"


def example_workflow() -> str:
    """The first ```yaml block after "### Example workflow" in docs/ci.md."""
    text = DOCS.read_text().split("### Example workflow", 1)[1]
    return re.search(r"```yaml\n(.*?)```", text, re.DOTALL)[1]


def actionlint() -> str:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert found, "actionlint is not installed: pip install -e '.[test]'"
    return found


def test_the_action_is_composite_with_the_inputs_the_docs_name():
    data = action()
    assert data["runs"]["using"] == "composite"
    # The Marketplace listing's icon and colour (GitHub accepts these colours only).
    assert data["branding"]["icon"] and data["branding"]["color"] in (
        "white", "black", "yellow", "blue", "green", "orange", "red", "purple", "gray-dark")
    inputs = data["inputs"]
    for name in ("script", "module", "versions", "runs", "device-count", "extra-args", "fail-on-unsupported",
                 "fail-on-not-cached"):
        assert name in inputs and "description" in inputs[name], name
        assert f"`{name}`" in DOCS.read_text(), name
    steps = data["runs"]["steps"]
    assert all(s.get("shell") == STRICT_BASH for s in steps if "run" in s)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always() && steps.check.outputs.folder != ''"  # its folder, whatever the verdict
    # Every expression is one the action may use: its inputs, the runner's temp folder, its own path, steps.
    for expression in EXPRESSION.findall(ACTION.read_text()):
        for operand in expression.split("||"):
            operand = operand.strip()
            if operand.startswith("inputs."):
                assert operand[len("inputs."):] in inputs, operand
            else:
                assert operand in ("github.action_path", "runner.temp", "runner.os") or operand.startswith(
                    ("steps.check.", "steps.install.")), operand


def test_actionlint_finds_nothing_in_the_example_workflow_using_this_action(tmp_path):
    """The example as a workflow of a repository whose root holds action.yml (`uses: ./`), so actionlint
    checks its `with:` against the action's inputs."""
    workflow = example_workflow()
    assert PINNED in workflow  # a tag of this version, never a branch
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint finds `./` from the repo root
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(ACTION, tmp_path / "action.yml")
    (tmp_path / ".github" / "workflows" / "jax-cache.yml").write_text(
        workflow.replace(PINNED, "uses: ./"))
    done = subprocess.run([actionlint(), "-no-color", ".github/workflows/jax-cache.yml"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    zizmor = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    assert zizmor, "zizmor is not installed: pip install -e '.[test]'"
    done = subprocess.run([zizmor, "--offline", "--no-progress", "--format", "json", ".github/workflows", "action.yml"],
                          cwd=tmp_path, capture_output=True, text=True)
    # Pinned actions, no credentials kept, no injection; `self-repository` is about the `uses: ./` this test
    # puts in place of the user's `uses: OWNER/jax-cache-harness@v...`.
    found = [f["ident"] for f in json.loads(done.stdout) if f["ident"] != "self-repository"]
    assert found == [], done.stdout
    # And a wrong input name is caught: the check is real.
    (tmp_path / ".github" / "workflows" / "jax-cache.yml").write_text(
        workflow.replace(PINNED, "uses: ./").replace("device-count:", "devices:"))
    done = subprocess.run([actionlint(), "-no-color", ".github/workflows/jax-cache.yml"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 1 and "devices" in done.stdout, done.stdout


# ---- the steps, run for real ---------------------------------------------------------------------

def test_a_bad_input_to_the_action_is_exit_2_and_says_so(tmp_path):
    """No install needed to see extra-args refused: the harness's own check runs from this checkout."""
    runner = Runner(tmp_path / "runner-temp", ROOT)
    venv = tmp_path / "runner-temp" / "jax-cache-harness" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    (venv / "harness").symlink_to(Path(sys.executable).parent / "harness")
    code, outputs, text = runner.run(CHECK_STEP, {"script": "examples/stable_script.py",
                                                  "extra-args": "--with 'flax"}, "unclosed")
    assert code == 2 and "extra-args: not words a shell could split" in text
    assert outputs["exit-code"] == "2"  # set on this exit too
    first = outputs
    code, outputs, text = runner.run(CHECK_STEP, {"script": "no/such/script.py"}, "missing")
    assert code == 2 and outputs["exit-code"] == "2" and "no such script" in text, text
    assert "::error title=JAX cache check: Bad input::" in text
    assert "results" not in outputs  # no folder holds a results.json
    # Two uses in one job: each its own folder and its own default artifact name.
    assert first["folder"] != outputs["folder"] and first["artifact"] != outputs["artifact"]
    assert outputs["artifact"].startswith("jax-cache-check-") and len({first["artifact"], outputs["artifact"]}) == 2
    named = runner.run(CHECK_STEP, {"script": "no/such/script.py", "artifact-name": "mine"}, "named")[1]
    assert named["artifact"] == "mine"



@pytest.mark.parametrize("inputs, fail_on", [
    ({}, "reproduced,error"),
    ({"fail-on-not-cached": "true"}, "reproduced,error,not-cached"),
    ({"fail-on-unsupported": "true", "fail-on-not-cached": "true"}, "reproduced,error,unsupported,not-cached"),
], ids=["default", "not-cached", "both"])
def test_the_fail_on_inputs_reach_the_harness_and_its_exit_code_is_the_step_s(tmp_path, inputs, fail_on):
    """The harness a stand-in that says its arguments and fails as `--fail-on` would (that a not cached cell then
    fails the check: tests/integration/test_not_cached_integration.py; the action on real releases:
    tests/integration/test_action.py)."""
    runner = Runner(tmp_path / "runner-temp", ROOT)
    venv = tmp_path / "runner-temp" / "jax-cache-harness" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    (venv / "harness").write_text('#!/bin/sh\necho "harness $*"\nexit 1\n')
    (venv / "harness").chmod(0o755)
    code, outputs, text = runner.run(CHECK_STEP, {"script": "examples/stable_script.py", **inputs}, "fail-on")
    assert code == 1 and outputs["exit-code"] == "1", text
    (said,) = [line for line in text.splitlines() if line.startswith("harness check ")]
    assert f" --fail-on {fail_on} " in f"{said} ", said


def test_a_cells_reason_cannot_add_a_workflow_command(tmp_path):
    """The check step's warning for an unsupported release is one workflow command, whatever the reason
    says: a newline in it would start a command of its own (`::error::`, `::add-mask::`)."""
    (step,) = [s for s in action()["runs"]["steps"] if s.get("name") == CHECK_STEP]
    program = step["run"].split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    (tmp_path / "r").mkdir()
    cell = {"jax_version": "0.6.0", "verdict": "unsupported", "reason": "host callbacks\n::error::injected 100%"}
    cells = [cell, {**cell, "verdict": "clean"}, {**cell, "verdict": "not cached", "jax_version": "0.10.2"}]
    (tmp_path / "r" / "results.json").write_text(json.dumps({"cells": cells}))
    done = subprocess.run([sys.executable, "-", str(tmp_path)], input=program, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["::warning title=jax 0.6.0: nothing measured::host callbacks%0A::error::"
                                        "injected 100%25",
                                        "::warning title=jax 0.10.2: not cached::host callbacks%0A::error::"
                                        "injected 100%25"]



def test_the_environments_are_cached_between_workflow_runs_keyed_on_the_releases_and_the_harness():
    steps = action()["runs"]["steps"]
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == "~/.cache/jax-cache-harness/envs"
    assert "steps.install.outputs.envs-key" in cache["with"]["key"]
    install = next(s for s in steps if s.get("id") == "install")
    assert "inputs.versions" in install["env"]["ENVIRONMENTS_OF"] and "harness\" --version" in install["run"]
    assert [s.get("id") for s in steps].index("install") < steps.index(cache)
