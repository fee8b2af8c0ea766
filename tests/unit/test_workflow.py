"""The nightly workflow parses, and every harness command it runs is one the CLI accepts."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from harness.cli import commands as cli
from harness.inputs.config import load_config

ROOT = Path(__file__).parents[2]
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
                    text = (text.replace('"${requested[@]}"', "latest").replace('"${versions[@]}"', "1")
                            .replace('"$SHARD/$SHARDS"', "1/1").replace('"$CONFIG"', data["env"]["CONFIG"]))
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
    load_config(Path(__file__).parents[2] / data["env"]["CONFIG"])  # the config it names is valid


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
    step = next(s for s in shard["steps"] if "-m harness run" in s.get("run", ""))
    assert step["env"]["TONIGHT"] == "${{ needs.plan.outputs.versions }}"
    assert 'read -r -a versions <<< "$TONIGHT"' in step["run"] and '--versions "${versions[@]}"' in step["run"]


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
    harness broke) through harness.core.errors, then exits with it."""
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "")
            if re.search(r"-m harness (run|compare|nightly) ", script):
                assert 'python -m harness.core.errors "$code"' in script and 'exit "$code"' in script, step["name"]


# ---- hardening (issue 32.9) ----------------------------------------------------------------------

ACTION = ROOT / "action.yml"
STRICT_BASH = "bash --noprofile --norc -euo pipefail {0}"
# `uses: owner/repo@<40-hex commit>  # vX.Y.Z`: a tag can be moved to other code, a commit cannot.
PINNED = re.compile(r"uses: [\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}  # v\d+(\.\d+)*$")


def run_steps(data):
    steps = [s for job in data.get("jobs", {}).values() for s in job["steps"]]
    return [s for s in steps + data.get("runs", {}).get("steps", []) if "run" in s]


def test_every_run_step_is_strict_bash_and_no_expression_is_pasted_into_a_script():
    """A failing `harness versions` in the plan's pipe passed with no versions (no pipefail); a `${{ }}` in
    a script is pasted into it before bash reads it (an input or an output could inject a command)."""
    data = workflow()
    assert data["defaults"]["run"]["shell"] == STRICT_BASH
    action = yaml.safe_load(ACTION.read_text())
    for step in run_steps(data):
        assert step.get("shell", STRICT_BASH) == STRICT_BASH, step["name"]
    for step in run_steps(action):
        assert step["shell"] == STRICT_BASH, step["name"]
    for step in run_steps(data) + run_steps(action):
        assert "${{" not in step["run"], step.get("name")


def test_every_action_is_pinned_to_a_commit_with_its_tag_beside():
    for path in (WORKFLOW, ACTION):
        uses = [line.strip().lstrip("- ") for line in path.read_text().splitlines() if "uses:" in line]
        assert uses, path
        for line in uses:
            assert PINNED.fullmatch(line), f"{path.name}: {line}"


def test_the_token_reaches_only_the_steps_that_call_gh_and_no_checkout_keeps_it():
    """The jax-main job ran JAX's main-branch code (and the harness) with GH_TOKEN in its environment."""
    data = workflow()
    assert "GH_TOKEN" not in data.get("env", {})
    for name, job in data["jobs"].items():
        assert "GH_TOKEN" not in job.get("env", {}), name
        for step in job["steps"]:
            calls_gh = bool(re.search(r"(^|[\s$(])gh ", step.get("run", "")))
            assert ("GH_TOKEN" in step.get("env", {})) == calls_gh, (name, step.get("name"))
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, name
    tokened = [s["name"] for j in data["jobs"].values() for s in j["steps"] if "GH_TOKEN" in s.get("env", {})]
    assert tokened == ["Fetch the baseline (the last successful night)"] * 2


def zizmor() -> str:
    found = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    assert found, "zizmor is not installed: pip install -e '.[test]'"
    return found


def zizmor_findings(persona: str) -> list[dict]:
    done = subprocess.run([zizmor(), "--offline", "--no-progress", "--format", "json", f"--persona={persona}",
                           ".github/workflows", "action.yml"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode in (0, 10, 11, 12, 13, 14), done.stderr  # 10+: findings, read below
    return json.loads(done.stdout)


# The findings the auditor persona reports that are by design, each with why.
EXPLAINED = {
    # The nightly measures on 8-GPU machines GitHub does not host; it runs on schedule and by dispatch
    # only (never on a pull request), so no code from outside reaches these runners.
    "self-hosted-runner",
}


def test_zizmor_finds_nothing_in_the_workflows_and_the_action():
    """Offline (no network here or in CI): template injection, unpinned actions, persisted credentials,
    excessive permissions... The regular persona finds nothing; the auditor's one finding is explained."""
    assert zizmor_findings("regular") == []
    unexplained = [(f["ident"], f["determinations"]["severity"]) for f in zizmor_findings("auditor")
                   if f["ident"] not in EXPLAINED and f["determinations"]["severity"] != "Informational"]
    assert unexplained == []


def plan_step(tmp_path: Path, versions: str, harness_exit: int) -> tuple[int, str, str]:
    """The plan's `Resolve the versions` script run as the workflow runs it, its `harness versions` a
    stand-in that records its arguments and prints two releases (or fails)."""
    (step,) = [s for s in workflow()["jobs"]["plan"]["steps"] if s.get("id") == "resolve"]
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > args\n[ {harness_exit} = 0 ] || exit {harness_exit}\n"
                      "printf '0.4.31\\t3.11\\n0.5.0\\t3.11\\n'\n")
    python.chmod(0o755)
    (tmp_path / "results.json").write_text("")  # a file a glob `*` would expand to
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    env = {**os.environ, "CONFIG": "configs/nightly.yaml", "VERSIONS": versions,
           "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}
    done = subprocess.run([str(script) if w == "{0}" else w for w in workflow()["defaults"]["run"]["shell"].split()],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    output = (tmp_path / "output").read_text() if (tmp_path / "output").exists() else ""
    return done.returncode, output, (tmp_path / "args").read_text()


def test_the_plan_fails_when_harness_versions_fails_and_never_globs_the_versions(tmp_path):
    code, output, args = plan_step(tmp_path / "ok", "latest >=0.5,<0.6 *", 0)
    assert code == 0 and output == "versions=0.4.31 0.5.0 \n"
    assert args.splitlines() == ["-m", "harness", "versions", "configs/nightly.yaml", "--versions", "latest",
                                 ">=0.5,<0.6", "*"]  # `*` stays a word: no file name in its place
    code, output, _ = plan_step(tmp_path / "failing", "latest", 3)
    assert code != 0 and "versions=" not in output
