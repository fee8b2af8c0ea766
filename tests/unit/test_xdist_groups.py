"""make test relies on `--dist loadgroup` keeping each xdist_group on one worker (the Slurm tests, the make targets
in their order, the long reductions one after another). A pytest or pytest-xdist upgrade once made it ignore the
groups without a word (pytest-dev/pytest-xdist#1386): this fails when it does."""

import subprocess
import sys

GROUPED = """
import os

import pytest

GROUP = pytest.mark.xdist_group("together")


def note(name):
    with open(name + ".worker", "w") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"])


@GROUP
@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    note(f"grouped-{i}")


@pytest.mark.parametrize("i", range(6))
def test_others(i):
    note(f"other-{i}")
"""


def test_an_xdist_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "-o", "addopts=", "test_grouped.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = {path.stem: path.read_text() for path in tmp_path.glob("*.worker")}
    assert len(workers) == 10 and len(set(workers.values())) > 1, workers  # the others went where they could
    assert len({w for name, w in workers.items() if name.startswith("grouped-")}) == 1, workers
