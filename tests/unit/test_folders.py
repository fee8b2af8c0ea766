"""The suite's folders mark its tests: everything under tests/integration/ is `integration` (a `docker` or
`slurm` test keeps its own marker), and a slow marker on a test under tests/unit/ stops the collection."""

import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parents[1]
MARKERS = '[tool.pytest.ini_options]\nmarkers = ["integration: x", "docker: x", "slurm: x"]\naddopts = "--strict-markers"\n'


def project(tmp_path: Path, unit_test: str) -> Path:
    """A project with this suite's two folder conftests, one test in each folder and one docker test."""
    (tmp_path / "pyproject.toml").write_text(MARKERS)
    for folder in ("unit", "integration"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
        shutil.copy(TESTS / folder / "conftest.py", tmp_path / "tests" / folder / "conftest.py")
    (tmp_path / "tests" / "unit" / "test_fast.py").write_text(unit_test)
    (tmp_path / "tests" / "integration" / "test_slow.py").write_text(
        "import pytest\n\ndef test_plain():\n    pass\n\n@pytest.mark.docker\ndef test_engine():\n    pass\n")
    return tmp_path


def collect(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=folder, capture_output=True, text=True)


def test_integration_folder_marks_its_tests_and_keeps_docker(tmp_path):
    folder = project(tmp_path, "def test_quick():\n    pass\n")
    assert collect(folder, "-m", "integration").stdout.splitlines()[0] == "tests/integration/test_slow.py::test_plain"
    assert collect(folder, "-m", "docker").stdout.splitlines()[0] == "tests/integration/test_slow.py::test_engine"
    assert collect(folder, "-m", "not integration and not docker").stdout.splitlines()[0] == \
        "tests/unit/test_fast.py::test_quick"


def test_a_slow_marker_under_unit_is_an_error_at_collection(tmp_path):
    folder = project(tmp_path, "import pytest\n\n@pytest.mark.slurm\ndef test_cluster():\n    pass\n")
    done = collect(folder)
    assert done.returncode != 0
    assert "tests/unit/test_fast.py::test_cluster is marked slurm: move it to tests/integration/" in \
        done.stdout + done.stderr
