"""The nightly workflow parses, and every harness command it runs is one the CLI accepts."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from harness import cli
from harness.config import load_config

ROOT = Path(__file__).parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"


def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def harness_commands(data):
    """The argv of each `python -m harness ...` line in the workflow's run steps."""
    found = []
    for job in data["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "").replace("\\\n", " ")
            for line in script.splitlines():
                match = re.search(r"-m harness ([^|)]*)", line)  # up to a pipe or the end of $(...)
                if match:
                    # Expressions and variables stand for values: any well-formed one will do.
                    text = re.sub(r"\$\{\{[^}]*\}\}", "1", match[1])
                    text = text.replace("$VERSIONS", "latest").replace('"$CONFIG"', data["env"]["CONFIG"])
                    found.append(shlex.split(text))
    return found


def test_workflow_runs_nightly_on_a_schedule_with_shards_then_merge():
    data = workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"][0]["cron"]
    shard, merge = data["jobs"]["shard"], data["jobs"]["merge"]
    assert "self-hosted" in shard["runs-on"] and "gpu-8" in shard["runs-on"]
    assert len(shard["strategy"]["matrix"]["shard"]) == int(data["env"]["SHARDS"])
    assert merge["needs"] == "shard"
    uploads = [s["with"]["name"] for j in (shard, merge) for s in j["steps"]
               if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads == ["shard-${{ matrix.shard }}", "nightly-results"]
    load_config(Path(__file__).parent.parent / data["env"]["CONFIG"])  # the config it names is valid


def test_workflow_commands_exist_and_parse():
    commands = harness_commands(workflow())
    assert [c[0] for c in commands] == ["versions", "run", "merge", "compare", "nightly"]
    parser = cli.build_parser()
    for argv in commands:
        args = parser.parse_args(argv)  # SystemExit (a failed test) on an unknown command or option
        assert callable(cli.handler(args.command))
    plan = parser.parse_args(commands[0])
    assert plan.versions == ["latest"]
    run = parser.parse_args(commands[1])
    assert str(run.shard) == "1/1"


def test_every_shard_measures_the_versions_resolved_once():
    data = workflow()
    shard = data["jobs"]["shard"]
    assert shard["needs"] == "plan"
    sweep = next(s["run"] for s in shard["steps"] if "-m harness run" in s.get("run", ""))
    assert "--versions ${{ needs.plan.outputs.versions }}" in sweep


def test_actionlint_finds_nothing_in_the_workflows():
    """The real linter (installed with the test extra; config in .github/actionlint.yaml): expressions,
    action inputs and versions, runner labels, job needs."""
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert actionlint, "actionlint is not installed: pip install -e '.[test]'"
    workflows = sorted(str(p.relative_to(ROOT)) for p in (ROOT / ".github" / "workflows").glob("*.y*ml"))
    assert workflows
    done = subprocess.run([actionlint, "-no-color", "-config-file", ".github/actionlint.yaml", *workflows], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_optional_jax_main_job_measures_the_ref_against_the_last_green_night():
    data = workflow()
    job = data["jobs"]["jax-main"]
    assert job["if"] == "vars.JAX_CLONE != ''" and "gpu-8" in job["runs-on"]
    nightly = cli.build_parser().parse_args(harness_commands(data)[-1])
    assert nightly.jax_repo == Path("$JAX_CLONE") and nightly.ref == "$JAX_REF" and nightly.backend == "venv"
    assert str(nightly.baseline) == "baseline/*" and nightly.versions == ["1"]
    dispatch = (data.get("on") or data.get(True))["workflow_dispatch"]["inputs"]
    assert dispatch["jax_ref"]["default"] == "main"


def test_the_workflow_tells_a_regression_from_a_failure_of_the_harness():
    """Each step that runs a sweep or a comparison names what its exit code means (1 a regression, 3 the
    harness broke) through harness.errors, then exits with it."""
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "")
            if re.search(r"-m harness (run|compare|nightly) ", script):
                assert 'python -m harness.errors "$code"' in script and 'exit "$code"' in script, step["name"]
