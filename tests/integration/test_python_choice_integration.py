"""Releases that need a newer Python than the harness's, in real venvs made from this machine's Pythons.

Skipped, saying why, where no Python 3.12 is found (PATH, uv, pyenv); `.ci/run` sets
HARNESS_REQUIRE_PYTHON_312=1, so in CI a missing one fails instead.
"""

import os

import pytest

from harness.environments.interpreters import discover
from harness.inputs.pythons import PythonVersion
from tests.sweeps import sweep

pytestmark = pytest.mark.integration

PY312 = PythonVersion(3, 12)


@pytest.fixture(scope="module")
def interpreters():
    found = discover()
    if not any(i.version == PY312 for i in found):
        reason = ("no Python 3.12 on this machine (looked on PATH, in uv's managed Pythons and pyenv's "
                  "versions folder); jax 0.11 and newer need one")
        if os.environ.get("HARNESS_REQUIRE_PYTHON_312") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def test_each_release_in_the_python_it_chose(interpreters, tmp_path, capsys, write):
    config = write("newest.yaml", """\
name: newest
repro: shard_map_grad
jax_versions: ["0.10.2", "0.12.0.1"]
runs: 2
""")
    swept = sweep(["run", str(config)], tmp_path / "r", capsys, quiet=False)
    data = swept.data
    cells = {c["spec"]["jax_version"]: c for c in data["cells"]}
    assert {v: c["verdict"] for v, c in cells.items()} == {"0.10.2": "clean", "0.12.0.1": "clean"}
    own = cells["0.10.2"]["environment"]
    assert own["python_choice"]["why"] == "harness" and own["path"].endswith(f"py{own['python_choice']['version']}")
    newer = cells["0.12.0.1"]["environment"]
    newest = max(i.version for i in interpreters)
    assert newer["python_choice"] == {**newer["python_choice"], "why": "newest", "version": str(newest)}
    assert newer["python"].startswith(f"{newest}.")  # what the venv's interpreter itself reported
    assert "jax 0.12.0.1: Python" in swept.err  # the choice is printed with the environment


def test_a_pinned_python_312_environment(interpreters, tmp_path, capsys, write):
    config = write("pinned.yaml", """\
name: pinned
repro: shard_map_grad
jax_versions: ["0.11.0"]
python: "3.12"
runs: 2
""")
    data = sweep(["run", str(config)], tmp_path / "r", capsys, quiet=False).data
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean" and cell["environment"]["python"].startswith("3.12.")
    assert cell["environment"]["python_choice"]["why"] == "pinned"
    assert data["config"]["python"] == "3.12"
