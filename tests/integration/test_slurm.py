"""`harness submit` on a real Slurm: real sbatch array jobs, real JAX releases, real cancellation.

Needs a Slurm controller and an idle node (`.ci/install-slurm.sh` makes a one-node cluster on this
machine). Without them these tests skip and say why; with HARNESS_REQUIRE_SLURM=1 (set by `.ci/run`)
they fail instead, so CI cannot pass by skipping them. The tasks run `python -m harness` with this
interpreter, so they use this checkout and HARNESS_ENV_DIR as set here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cells import SCHEMA
from tests.helpers import run_harness

pytestmark = [pytest.mark.slurm, pytest.mark.integration, pytest.mark.usefixtures("slurm_cluster")]

ROOT = Path(__file__).parents[2]
SMOKE = "configs/smoke.yaml"


def submitted(out: str) -> tuple[str, str, Path]:
    """The array job, merge job and folder `harness submit` printed."""
    array = re.search(r"^shards: job (\d+)", out, re.M)[1]
    merge = re.search(r"^merge: job (\d+)", out, re.M)[1]
    folder = Path(re.search(r"^folder: (.+)$", out, re.M)[1])
    return array, merge, folder


def verdicts(results: Path) -> dict[str, str]:
    return {c["spec"]["jax_version"]: c["verdict"] for c in json.loads(results.read_text())["cells"]}


def the_one(pattern: str, folder: Path) -> Path:
    (found,) = folder.glob(pattern)
    return found


def completion_states(*job_ids: str) -> dict[str, str]:
    """`sacct --completion` (this cluster keeps job completions in a text file, no slurmdbd)."""
    done = subprocess.run(["sacct", "--completion", "--noheader", "--parsable2", "--format=JobID,State",
                           "--jobs", ",".join(job_ids)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return dict(line.split("|") for line in done.stdout.splitlines() if line)


def wait_until_gone(job_id: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = subprocess.run(["squeue", "--noheader", "--jobs", job_id], capture_output=True, text=True)
        if not done.stdout.strip():
            return
        time.sleep(1)
    raise AssertionError(f"job {job_id} still queued after {timeout}s")


def test_two_shards_give_the_verdicts_of_the_unsharded_sweep(tmp_path):
    whole = run_harness("run", SMOKE, "--out", str(tmp_path / "whole"), "--quiet")
    assert whole.returncode == 0, whole.stderr

    # A folder whose name sbatch would split or expand if the scripts did not quote it (issue 27, item 6).
    sharded = run_harness("submit", SMOKE, "--shards", "2", "--wait", "--out", str(tmp_path / "slurm out 100%"))
    assert sharded.returncode == 0, sharded.stderr
    array, merge, folder = submitted(sharded.stdout)
    # The boundaries agree; a clean cell's weak-bound clause after them follows the orders its runs lowered,
    # which the random seeds after the chosen ones decide (docs/measuring.md).
    def boundaries(out: str) -> str:
        return out.strip().splitlines()[-1].split("; clean on", 1)[0]

    assert boundaries(sharded.stdout) == boundaries(whole.stdout)
    merged = the_one("merged/*/results.json", folder)
    assert verdicts(merged) == verdicts(the_one("*/results.json", tmp_path / "whole")) == \
        {"0.4.28": "reproduced", "0.4.29": "clean"}
    assert json.loads(merged.read_text())["status"] == "complete"

    # Each shard says which Slurm task measured it; the scheduler says every task completed.
    shards = [json.loads(the_one(f"shard-{i}/*/results.json", folder).read_text()) for i in (1, 2)]
    assert [s["host"]["slurm_array_job_id"] for s in shards] == [array, array]
    assert [s["host"]["slurm_array_task_id"] for s in shards] == ["1", "2"]
    task_ids = [s["host"]["slurm_job_id"] for s in shards]
    assert completion_states(*task_ids, merge) == {j: "COMPLETED" for j in (*task_ids, merge)}
    assert (folder / "shard.sbatch").is_file() and (folder / "merge.sbatch").is_file()
    logs = sorted(p.name for p in (folder / "slurm-logs").iterdir())
    assert logs == sorted([f"shard-1-{array}.out", f"shard-2-{array}.out", f"merge-{merge}.out"])


def test_submit_wait_writes_the_junit_and_summary_of_the_merged_cells_and_fails_on_them(tmp_path):
    """In CI: --wait with --junit-xml, GITHUB_STEP_SUMMARY and --fail-on, of the cells the merge job joined."""
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    done = run_harness("submit", SMOKE, "--shards", "2", "--wait", "--out", str(tmp_path / "slurm"),
                   "--junit-xml", str(junit), "--fail-on", "reproduced",
                   env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr  # 0.4.28 reproduces
    assert "harness: --fail-on reproduced: 1 cell(s) failed: 0.4.28 8x1x1x1 (a,b,c,d) reproduced" in done.stderr
    text = junit.read_text()
    SCHEMA.validate(text)
    (suite,) = SCHEMA.to_dict(text)["testsuite"]
    assert (suite["@name"], suite["@tests"], suite["@failures"]) == ("smoke", "2", "1")
    assert [c["@name"] for c in suite["testcase"]] == [f"jax {v} 8x1x1x1 (a,b,c,d) cpux8" for v in ("0.4.28", "0.4.29")]
    assert summary.read_text().startswith("### smoke\n\n| ")
    # The tasks wrote neither (each measures a share): their command lines do not carry them.
    folder = submitted(done.stdout)[2]
    assert "--junit-xml" not in (folder / "shard.sbatch").read_text()
    assert completion_states(merge := submitted(done.stdout)[1]) == {merge: "COMPLETED"}


def test_a_bad_partition_submits_nothing(tmp_path):
    done = run_harness("submit", SMOKE, "--shards", "2", "--partition", "no-such-partition",
                   "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.strip() == ("harness: error: --partition no-such-partition: no such partition "
                                   f"(this cluster has {_partitions()})")
    assert not (tmp_path / "r").exists()
    # Only this test's jobs count: other sweeps may share the cluster. Queued scripts live in the results folder.
    queued = subprocess.run(["squeue", "--noheader", "--format=%o"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in queued


def _partitions() -> str:
    out = subprocess.run(["sinfo", "--noheader", "--format=%R"], capture_output=True, text=True).stdout
    return ", ".join(sorted(set(out.split())))


def test_a_cancelled_task_leaves_an_interrupted_shard_that_a_resubmission_completes(tmp_path):
    # long enough to cancel shard 2 in the middle of its cell: 8 runs two at a time, some 10 s; the cancel comes
    # within a second of its first run's log (12 made shard 1 and the resubmission 4 runs longer each)
    options = ["--runs", "8", "--all-runs"]
    first = run_harness("submit", SMOKE, "--shards", "2", *options, "--out", str(tmp_path / "slurm"))
    assert first.returncode == 0, first.stderr
    array, merge, folder = submitted(first.stdout)

    deadline = time.monotonic() + 600
    while not list(folder.glob("shard-2/*/logs/*/run-*.log")):  # shard 2 has begun its runs
        assert time.monotonic() < deadline, "shard 2 never started a run"
        time.sleep(0.5)
    subprocess.run(["scancel", f"{array}_2"], check=True)
    wait_until_gone(merge)

    shard2 = json.loads(the_one("shard-2/*/results.json", folder).read_text())
    assert shard2["status"] == "interrupted"  # SIGTERM stopped it as Ctrl-C would: what it measured is kept
    assert completion_states(shard2["host"]["slurm_job_id"]) == {shard2["host"]["slurm_job_id"]: "CANCELLED"}
    merged = json.loads(the_one("merged/*/results.json", folder).read_text())
    assert merged["status"] == "incomplete: shard 2 interrupted"

    again = run_harness("submit", SMOKE, "--shards", "2", *options, "--only-shards", "2", "--out", str(folder),
                    "--wait")
    assert again.returncode == 0, again.stderr
    assert submitted(again.stdout)[2] == folder
    shard2 = json.loads(the_one("shard-2/*/results.json", folder).read_text())  # the same folder, resumed
    assert shard2["status"] == "complete" and shard2.get("resumed")
    merges = sorted(folder.glob("merged/*/results.json"))
    assert len(merges) == 2 and json.loads(merges[-1].read_text())["status"] == "complete"
    assert verdicts(merges[-1]) == {"0.4.28": "reproduced", "0.4.29": "clean"}


def test_two_tasks_needing_one_new_environment_make_it_once(tmp_path):
    """Both shards measure jax 0.4.29 (two meshes), start together on this node and find no venv in the
    HARNESS_ENV_DIR given at submission: one makes it while the other waits, then reuses it."""
    config = tmp_path / "two-meshes.yaml"
    config.write_text("name: two-meshes\nrepro: shard_map_grad\njax_versions: ['0.4.29']\nruns: 3\n"
                      "meshes:\n  - {shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}\n"
                      "  - {shape: [4, 2, 1, 1], axis_names: [a, b, c, d]}\n")
    envs = tmp_path / "envs"
    done = run_harness("submit", str(config), "--shards", "2", "--wait", "--out", str(tmp_path / "slurm"),
                   env={**os.environ, "HARNESS_ENV_DIR": str(envs)})
    assert done.returncode == 0, done.stderr
    folder = submitted(done.stdout)[2]
    assert f"export HARNESS_ENV_DIR={envs}" in (folder / "shard.sbatch").read_text()
    merged = json.loads(the_one("merged/*/results.json", folder).read_text())
    assert merged["status"] == "complete"
    assert [c["verdict"] for c in merged["cells"]] == ["clean", "clean"]
    logs = [p.read_text() for p in sorted((folder / "slurm-logs").glob("shard-*.out"))]
    assert len(logs) == 2
    assert sum("creating venv for jax 0.4.29" in log for log in logs) == 1, logs
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    made = [p.name for p in envs.iterdir() if p.is_dir() and p.name.startswith("jax-")]
    assert made == [f"jax-0.4.29-cpu-{python}"]
