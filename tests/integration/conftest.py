"""tests/integration/: real JAX releases, Docker, Slurm. Every test here is `integration` by its folder;
one marked `docker` or `slurm` keeps that marker (`-m docker`, `-m slurm` select them in CI and the docs)."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest


# The reductions: the longest tests, collected first so that they start first and the workers end together
# (`--reductions only` or `without` selects them or the others, to run them apart).
FIRST = "test_reduce_integration.py"
REDUCTIONS = (FIRST, "test_triage_integration.py")  # the triage's night ends in a reduction too


def pytest_addoption(parser):
    parser.addoption("--reductions", choices=("with", "only", "without"), default="with",
                     help="tests/integration's reductions (test_reduce_integration.py): run with the others "
                          "(the default), only them, or all but them")


# Before pytest-xdist's own hook (registered after this conftest, so called before it without tryfirst), which puts
# each test's xdist_group into its node id for --dist loadgroup: a group added after that was never seen (the Slurm
# tests ran on several workers at once).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    here = config.rootpath / "tests" / "integration"
    wanted = config.getoption("--reductions")
    if wanted != "with":
        keep = [item for item in items if (item.path.name in REDUCTIONS) == (wanted == "only")]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    for item in items:
        if item.path.is_relative_to(here) and not any(item.get_closest_marker(m) for m in ("docker", "slurm")):
            item.add_marker(pytest.mark.integration)
        shared = [name for name in SHARED_CELLS if name in getattr(item, "fixturenames", ())]
        if shared:
            item.add_marker(pytest.mark.xdist_group(shared[0]))
        if item.get_closest_marker("slurm"):
            # One worker runs them in turn: the cluster has one node, and a test waits for its jobs to start.
            item.add_marker(pytest.mark.xdist_group("slurm"))
    items.sort(key=started_at)  # stable: each file's own order is kept


# The files holding the longest tests (40 s and more in a fresh clone's make test), longest first: collected right
# after the reductions, so that under --dist loadgroup (which hands out the groups first, then single tests in this
# order) they start early and the workers end together, not one of them alone on a long test at the end.
LONGEST = ("test_distrax_suite_integration.py", "test_public_suite_integration.py",
           "test_public_callback_suite_integration.py", "test_multiprocess_integration.py", "test_make_targets.py",
           "test_action.py", "test_faults_integration.py", "test_script_cache_integration.py",
           "test_docker_integration.py")


def started_at(item) -> int:
    if item.path.name == FIRST:
        return 0
    return 1 + LONGEST.index(item.path.name) if item.path.name in LONGEST else 1 + len(LONGEST)


# The session fixtures below that measure a cell: the tests that read one run on the worker that measured it.
SHARED_CELLS = ("set_order_check", "new_venv_by_two")  # the second: test_faults_integration.py's, module-scoped


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


# ---- measured cells several tests read: each is made once per worker, so the tests that read one go to one worker
# (pytest_collection_modifyitems gives them its xdist group)

@pytest.fixture(scope="session")
def set_order_check(tmp_path_factory):
    """`harness check examples/set_order_script.py --versions 0.4.31 --runs 6 --quiet`, run once as a user runs it:
    its exit code and what it left. Read by tests/integration/test_integration.py (the verdict, 0.4.31's two files
    per entry), test_moved_folder_integration.py (the moved run in a planned place) and
    test_summary_words_integration.py (check's exit code): three measurements of one cell before."""
    from tests.sweeps import Swept

    out = tmp_path_factory.mktemp("set-order-check")
    done = subprocess.run([sys.executable, "-m", "harness", "check", "examples/set_order_script.py", "--versions",
                           "0.4.31", "--runs", "6", "--quiet", "--out", str(out)], capture_output=True, text=True,
                          timeout=900, cwd=Path(__file__).resolve().parents[2])
    folders = [p for p in out.iterdir() if p.is_dir()]
    assert done.returncode in (0, 1) and len(folders) == 1, done.stderr[-3000:]
    data = json.loads((folders[0] / "results.json").read_text())
    return done.returncode, Swept(data, folders[0], done.stdout, done.stderr)
