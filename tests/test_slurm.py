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
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

ROOT = Path(__file__).parent.parent
SMOKE = "configs/smoke.yaml"


def _missing(reason: str):
    if os.environ.get("HARNESS_REQUIRE_SLURM") == "1":
        pytest.fail(f"HARNESS_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    if not shutil.which("sbatch"):
        _missing("no Slurm commands here: make a one-node cluster with .ci/install-slurm.sh")
    done = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True)
    if done.returncode != 0 or not {"idle", "mixed", "allocated"} & set(done.stdout.split()):
        _missing(f"no Slurm node is up ({(done.stderr or done.stdout).strip() or 'sinfo said nothing'}): "
                 "run .ci/install-slurm.sh")


def harness(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def submitted(out: str) -> tuple[str, str, Path]:
    """The array job, merge job and folder `harness submit` printed."""
    array = re.search(r"^shards: job (\d+)", out, re.M)[1]
    merge = re.search(r"^merge: job (\d+)", out, re.M)[1]
    folder = Path(re.search(r"^folder: (.+)$", out, re.M)[1])
    return array, merge, folder


def verdicts(results: Path) -> dict[str, str]:
    return {c["jax_version"]: c["verdict"] for c in json.loads(results.read_text())["cells"]}


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
    whole = harness("run", SMOKE, "--out", str(tmp_path / "whole"), "--quiet")
    assert whole.returncode == 0, whole.stderr

    sharded = harness("submit", SMOKE, "--shards", "2", "--wait", "--out", str(tmp_path / "slurm"))
    assert sharded.returncode == 0, sharded.stderr
    array, merge, folder = submitted(sharded.stdout)
    assert sharded.stdout.strip().splitlines()[-1] == whole.stdout.strip().splitlines()[-1]
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


def test_a_bad_partition_submits_nothing(tmp_path):
    before = subprocess.run(["squeue", "--noheader", "--format=%i"], capture_output=True, text=True).stdout
    done = harness("submit", SMOKE, "--shards", "2", "--partition", "no-such-partition",
                   "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.strip() == ("harness: error: --partition no-such-partition: no such partition "
                                   f"(this cluster has {_partitions()})")
    assert not (tmp_path / "r").exists()
    after = subprocess.run(["squeue", "--noheader", "--format=%i"], capture_output=True, text=True).stdout
    assert set(after.split()) <= set(before.split())


def _partitions() -> str:
    out = subprocess.run(["sinfo", "--noheader", "--format=%R"], capture_output=True, text=True).stdout
    return ", ".join(sorted(set(out.split())))
