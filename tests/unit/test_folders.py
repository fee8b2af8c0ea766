"""The suite's folders mark its tests: everything under tests/integration/ is `integration` (a `docker` or
`slurm` test keeps its own marker), and a slow marker on a test under tests/unit/ stops the collection."""

import ast
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
        (tmp_path / "tests" / folder / "__init__.py").write_text("")
    (tmp_path / "tests" / "__init__.py").write_text("")
    shutil.copy(TESTS / "fakes.py", tmp_path / "tests" / "fakes.py")  # the unit folder's fixtures use it
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


def imported_test_modules(source: str) -> list[str]:
    """The test modules (tests....test_*) that a module's source imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [name for name in found if name.split(".")[0] == "tests" and name.split(".")[-1].startswith("test_")]


def test_no_test_module_imports_another():
    """What two test modules share lives in tests/fakes.py, tests/helpers.py, tests/cells.py, ... or a
    conftest.py: importing a test module runs it and hides what the tests depend on."""
    assert imported_test_modules("from tests.unit.test_versions import INDEX\nfrom tests import test_x\n"
                                 "def f():\n    import tests.integration.test_slurm\n") == [
        "tests.unit.test_versions", "tests.test_x", "tests.integration.test_slurm"]
    assert imported_test_modules("from tests.fakes import INDEX\nfrom harness.core import model\n") == []
    found = {str(path.relative_to(TESTS)): imported_test_modules(path.read_text())
             for path in sorted(TESTS.rglob("*.py")) if "fixtures" not in path.parts}
    assert {path: names for path, names in found.items() if names} == {}


def test_the_reductions_are_collected_first_or_apart_and_slurm_tests_share_one_worker(tmp_path):
    folder = project(tmp_path, "def test_quick():\n    pass\n")
    integration = folder / "tests" / "integration"
    (integration / "test_reduce_integration.py").write_text("def test_reduce_one():\n    pass\n\n"
                                                            "def test_reduce_two():\n    pass\n")
    (integration / "test_cluster.py").write_text(
        "import pytest\n\n@pytest.mark.slurm\ndef test_on_the_cluster(request):\n"
        "    assert request.node.get_closest_marker('xdist_group').args == ('slurm',)\n")
    # one of the conftest's LONGEST, after test_cluster.py by name
    (integration / "test_script_cache_integration.py").write_text("def test_long():\n    pass\n")
    order = collect(folder, "tests/integration").stdout.splitlines()
    assert order[:2] == ["tests/integration/test_reduce_integration.py::test_reduce_one",
                         "tests/integration/test_reduce_integration.py::test_reduce_two"]  # in the file's order
    # then the longest files, so that xdist starts them early; then the others in the folder's order
    assert order[2:5] == ["tests/integration/test_script_cache_integration.py::test_long",
                          "tests/integration/test_cluster.py::test_on_the_cluster",
                          "tests/integration/test_slow.py::test_plain"], order
    # make test runs the reductions on their own, then the others: each of the folder's tests once.
    tests = [line for line in order if "::" in line]
    only, without = ([line for line in collect(folder, "tests/integration", "--reductions", which).stdout.splitlines()
                      if "::" in line] for which in ("only", "without"))
    assert only == tests[:2] and without == tests[2:], (only, without)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slurm"],
                          cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    # Under make test's --dist loadgroup the group is in the node id xdist schedules by (it was not: the conftest's
    # marker came after xdist had read them); so is a shared cell's, for a test that reads it.
    (integration / "test_shared.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef set_order_check():\n    return 1\n\n"
        "def test_reads_the_cell(set_order_check):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2", "--dist",
                           "loadgroup", "tests/integration/test_cluster.py", "tests/integration/test_shared.py"],
                          cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_cluster.py::test_on_the_cluster@slurm" in done.stdout, done.stdout
    assert "test_shared.py::test_reads_the_cell@set_order_check" in done.stdout, done.stdout
