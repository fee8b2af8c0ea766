"""`harness submit --processes 2` on the real one-node Slurm: each shard task is a job of 2 Slurm tasks, and
every run's two processes are the tasks of one srun step, joined by JAX's own Slurm detection."""

import json
from pathlib import Path

import pytest

from tests.helpers import run_harness

pytestmark = [pytest.mark.slurm, pytest.mark.integration, pytest.mark.usefixtures("slurm_cluster")]

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_each_run_is_one_srun_step_of_two_tasks(tmp_path):
    config = tmp_path / "multihost.yaml"
    config.write_text(f"name: multihost\nrepro: {EXAMPLES / 'multihost_stable.py'}\njax_versions: ['0.10.2']\n"
                      "runs: 2\ntimeout_s: 120\n")
    done = run_harness("submit", str(config), "--shards", "1", "--processes", "2", "--wait", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr + done.stdout
    (sweep,) = (tmp_path / "out").iterdir()
    assert "#SBATCH --ntasks=2" in (sweep / "shard.sbatch").read_text()
    (results,) = (sweep / "merged").glob("*/results.json")
    (cell,) = json.loads(results.read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["spec"]["processes"] == 2
    for run in cell["runs"]:
        for rank in run["ranks"]:
            log = (results.parent / rank["log"]).read_text()
            assert f"harness: srun task {rank['rank']} of 2 on " in log
            assert rank["joined"]


def test_a_step_whose_task_never_joins_ends_at_the_timeout_with_no_task_left(tmp_path):
    import subprocess

    script = tmp_path / "never_joins.py"
    script.write_text("import os, time\nimport jax\nif os.environ.get('SLURM_PROCID') == '1':\n"
                      "    time.sleep(3600)\njax.distributed.initialize()\nprint(jax.device_count())\n")
    config = tmp_path / "hang.yaml"
    config.write_text(f"name: hang\nrepro: {script}\njax_versions: ['0.10.2']\nruns: 2\ntimeout_s: 10\n")
    done = run_harness("submit", str(config), "--shards", "1", "--processes", "2", "--wait", "--out", str(tmp_path / "out"))
    (results,) = (tmp_path / "out").glob("*/merged/*/results.json")
    (cell,) = json.loads(results.read_text())["cells"]
    assert cell["verdict"] == "error" and "processes did not finish" in cell["reason"], (cell["reason"], done.stderr)
    left = subprocess.run(["pgrep", "-f", str(script)], capture_output=True, text=True).stdout.split()
    assert left == [], f"tasks left behind: {left}"
