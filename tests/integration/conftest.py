"""tests/integration/: real JAX releases, Docker, Slurm. Every test here is `integration` by its folder;
one marked `docker` or `slurm` keeps that marker (`-m docker`, `-m slurm` select them in CI and the docs)."""

import os
import shutil
import subprocess
import time

import pytest


# The reductions take half the folder's time, the training script's alone about a third: they start first,
# so that `make test`'s pytest-xdist workers (--dist loadgroup) end together rather than one waiting on
# the longest test at the end.
FIRST = "test_reduce_integration.py"


def pytest_collection_modifyitems(config, items):
    here = config.rootpath / "tests" / "integration"
    for item in items:
        if item.path.is_relative_to(here) and not any(item.get_closest_marker(m) for m in ("docker", "slurm")):
            item.add_marker(pytest.mark.integration)
        if item.get_closest_marker("slurm"):
            # One worker runs them in turn: the cluster has one node, and a test waits for its jobs to start.
            item.add_marker(pytest.mark.xdist_group("slurm"))
    items.sort(key=lambda item: item.path.name != FIRST)  # stable: each file's own order is kept


# Slurm's node state on the way between two jobs: the node is up and takes the next job once done.
TRANSIENT_NODE_STATES = frozenset({"completing"})


def _slurm_missing(reason: str):
    if os.environ.get("HARNESS_REQUIRE_SLURM") == "1":
        pytest.fail(f"HARNESS_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def slurm_cluster():
    """A Slurm controller with a node up, or a skip that says why (a failure under HARNESS_REQUIRE_SLURM=1,
    set by .ci/run, so CI cannot pass by skipping): the slurm tests use it."""
    if not shutil.which("sbatch"):
        _slurm_missing("no Slurm commands here: make a one-node cluster with .ci/install-slurm.sh")
    # A node finishing the job another test cancelled is `completing` for a few seconds (seen in a fresh clone's
    # .ci/run): it is up, and takes the next job once done, so wait for it rather than call the cluster down.
    deadline = time.monotonic() + 120
    while True:
        done = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True)
        states = set(done.stdout.split())
        if done.returncode != 0 or not states & TRANSIENT_NODE_STATES or time.monotonic() > deadline:
            break
        time.sleep(1)
    if done.returncode != 0 or not {"idle", "mixed", "allocated"} & states:
        _slurm_missing(f"no Slurm node is up ({(done.stderr or done.stdout).strip() or 'sinfo said nothing'}): "
                       "run .ci/install-slurm.sh")
