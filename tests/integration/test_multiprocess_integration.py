"""Multi-process cells with real releases: each run one job of two processes on this machine, each with
its own hash seed (docs/multi-process.md)."""

import time
from pathlib import Path

import pytest

from harness.results.document import read_cell
from tests import sweeps
from tests.sweeps import Swept
from tests.helpers import OWN_PID, machine_pid
from tests.docker_engine import engine_with_base_image, our_containers

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[2] / "examples"


def check(argv, out: Path, capsys) -> Swept:
    """`harness check ARGV --processes 2`: each run a job of two processes."""
    return sweeps.check([*argv, "--processes", "2"], out, capsys)


def test_a_deterministic_process_group_is_clean_on_0_10_2(tmp_path, capsys):
    # Two runs: each run's two processes and their seeds, and the runs compared, are what is asserted.
    data = check([str(EXAMPLES / "multihost_stable.py"), "--versions", "0.10.2", "--runs", "2"], tmp_path, capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["spec"]["processes"] == 2
    for run in cell["runs"]:
        assert [r["rank"] for r in run["ranks"]] == [0, 1]
        assert all(r["joined"] for r in run["ranks"])
        assert len({r["seed"] for r in run["ranks"]}) == 2  # each process its own hash seed
    assert cell["seeds"]["ranks"] == [[r["seed"] for r in run["ranks"]] for run in cell["runs"]]
    facts = cell["job"]
    assert facts["writers"] == [0]  # JAX writes from process 0 only
    assert [p["verdict"] for p in facts["per_process"]] == ["clean", "clean"]
    # check's moved folder is not made for a job, and says so instead of guessing (issue 47 item 3)
    assert cell["moved_folder"]["outcome"] == "cannot vary here" and "multi-process" in cell["moved_folder"]["reason"]


def test_the_pvary_psum_program_reproduces_on_0_8_1_and_is_fixed_in_0_8_2(tmp_path, capsys):
    """The program also computes on each process's own device (jnp.ones, a PRNG key, a device_put): those
    keys differ between the processes by design, and the fixed releases still read clean."""
    # 0.8.1 with room to reproduce (the cell stops there: its first disagreeing launch dies at Gloo's deadline);
    # the fixed releases with two runs, what their verdicts and per-process notes need (six ran 8 jobs more).
    program = str(EXAMPLES / "multihost_pvary.py")
    broken_swept = check([program, "--versions", "0.8.1", "--runs", "6", "--timeout", "120"], tmp_path / "bad", capsys)
    swept = check([program, "--versions", "0.8.2", "0.10.2", "--runs", "2", "--timeout", "120"], tmp_path / "good",
                  capsys)
    verdicts = {c["spec"]["jax_version"]: c for s in (broken_swept, swept) for c in s.data["cells"]}
    broken = verdicts["0.8.1"]
    assert broken["verdict"] == "reproduced", broken["reason"]
    assert "computed different keys" in broken["reason"] or "new key" in broken["reason"]
    if "rank_split" in broken:
        assert broken["rank_split"]["module"] == "jit_loss"
        assert "computation" in read_cell(broken).rank_split.components
    for version in ("0.8.2", "0.10.2"):
        fixed = verdicts[version]
        assert fixed["verdict"] == "clean", (version, fixed["reason"])
        assert "accelerator_config" in fixed["job"]["host_components"]
        (local,) = [n for n in fixed["job"]["notes"] if "its own devices" in n]
        assert "jit_broadcast_in_dim" in local and "compile_options" in local
        # The local computations' keys were recorded with the devices they were compiled for.
        rank1 = fixed["runs"][0]["ranks"][1]["keys"]
        assert [k["devices"] for k in rank1["keys"] if k["module"] == "jit_broadcast_in_dim"] == [[2048]]
        assert all(len(k["devices"]) == 8 for k in rank1["keys"] if k["module"] == "jit_loss")
    for run_dir in (broken_swept.run_dir, swept.run_dir):
        assert "processes" in (run_dir / "report.md").read_text()


def test_processes_that_differ_in_a_constant_reproduce_and_their_collectives_are_not_blamed(tmp_path, capsys):
    swept = check([str(EXAMPLES / "multihost_rank_constant.py"), "--versions", "0.10.2", "--runs", "2"],
                  tmp_path, capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert cell["rank_split"]["module"] == "jit_total" and "computation" in read_cell(cell).rank_split.components
    assert "collectives" not in cell["reason"]
    report = (swept.run_dir / "report.md").read_text()
    assert "the same program but for a constant" in report and "do not match" not in report


def test_a_process_that_never_joins_ends_at_the_timeout_as_error(tmp_path, capsys, write):
    # Process 1 says it started before it could import anything, then sleeps; process 0 waits for it in
    # initialize(): a 5 s timeout ends both whatever the load (process 1 leaves its pid file at once).
    script = write("never_joins.py", "import os, time\n"
                                     "if os.environ['HARNESS_JOB_RANK'] == '1':\n"
                                     "    open(os.environ['PID_FILE'] + '.' + " + OWN_PID + ", 'w').close()\n"
                                     "    time.sleep(3600)\n"
                                     "import jax\njax.distributed.initialize()\nprint(jax.device_count())\n")
    pids = tmp_path / "pids"
    pids.mkdir()
    data = check([str(script), "--versions", "0.10.2", "--runs", "2", "--timeout", "5",
                  "--env", f"PID_FILE={pids / 'sleeper'}"], tmp_path / "out", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "error", cell["reason"]
    assert "processes did not finish" in cell["reason"]
    for run in cell["runs"]:
        assert run["timed_out"]
        assert 5 <= run["duration_s"] < 45
    sleepers = [p.name.rsplit(".", 1)[1] for p in pids.iterdir()]
    assert sleepers
    for named in sleepers:  # every process of every job is gone (named by its pid in its own PID namespace)
        deadline = time.monotonic() + 5
        while machine_pid(named) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert machine_pid(named) is None, f"process {named} was left behind"


def test_a_release_that_cannot_run_a_process_group_is_unsupported(tmp_path, capsys):
    data = check([str(EXAMPLES / "multihost_stable.py"), "--versions", "0.4.31", "--runs", "2",
                  "--timeout", "60"], tmp_path, capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "unsupported", cell["reason"]
    assert "cannot run a 2-process job here" in cell["reason"]


@pytest.mark.docker
def test_a_process_group_in_containers_one_per_process_sharing_a_loopback(tmp_path, capsys, write):

    client = engine_with_base_image()
    data = check([str(EXAMPLES / "multihost_stable.py"), "--versions", "0.10.2", "--runs", "2",
                  "--backend", "docker"], tmp_path / "stable", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(r["joined"] for run in cell["runs"] for r in run["ranks"])
    script = write("never_joins.py", "import os, time\n"
                                     "if os.environ['HARNESS_JOB_RANK'] == '1':\n    time.sleep(3600)\n"
                                     "import jax\njax.distributed.initialize()\nprint(jax.device_count())\n")
    data = check([str(script), "--versions", "0.10.2", "--runs", "2", "--timeout", "10", "--backend", "docker"],
                 tmp_path / "hang", capsys).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "error" and "processes did not finish" in cell["reason"], cell["reason"]
    assert our_containers(client, tmp_path) == []
    client.close()
