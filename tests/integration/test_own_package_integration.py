"""Your own package (--with-editable) in each real JAX release's venv, its dependency served by a real
private index on the loopback (--extra-index-url): the train step that lives in the package is measured,
the results say where it came from, and a package whose pins contradict the release is that cell's error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli import commands as cli
from tests.local_index import build_wheel, served, simple_index
from tests.sweeps import check

pytestmark = pytest.mark.integration

STEP = '''import jax
import jax.numpy as jnp
import tinypkg


@jax.jit
def train_step(x):
    return jnp.sin(x) * tinypkg.SCALE


def run():
    return float(train_step(jnp.ones(4)).sum())
'''


def own_package(tmp_path, dependencies: str):
    folder = tmp_path / "mypkg-project"  # not "mypkg": the script's folder is on sys.path
    (folder / "mypkg").mkdir(parents=True)
    (folder / "mypkg" / "__init__.py").write_text(STEP)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "mypkg"\nversion = "0.1"\ndependencies = [{dependencies}]\n'
        '[tool.setuptools]\npackages = ["mypkg"]\n')  # a script and results/ may sit beside it
    script = tmp_path / "train.py"
    script.write_text("import mypkg\nprint(mypkg.run())\n")
    return folder, script


@pytest.fixture
def private_index(tmp_path):
    """A PEP 503 index with one project of one's own (no upload times, as most private indexes)."""
    wheel = build_wheel(tmp_path / "built", "tinypkg", "1.0", "SCALE = 3.0\n")
    simple_index(tmp_path / "private", {"tinypkg": [wheel.name]}, {wheel.name: wheel})
    with served(tmp_path / "private") as url:
        yield f"{url}/simple"


def test_your_package_editable_with_a_dependency_from_your_index(tmp_path, capsys, private_index):
    folder, script = own_package(tmp_path, '"tinypkg"')
    swept = check([str(script), "--with-editable", str(folder), "--extra-index-url", private_index,
                   "--versions", "0.4.31", "--runs", "2"], tmp_path / "out", capsys, quiet=False)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(r["exit_code"] == 0 for r in cell["runs"]) and "jit_train_step" in cell["keys"]
    environment = cell["environment"]
    assert environment["editables"] == [str(folder.resolve())]
    assert {"mypkg": "0.1", "tinypkg": "1.0"}.items() <= environment["distributions"].items()
    assert "-src" in environment["path"]  # not the plain venv of 0.4.31
    options = swept.data["options"]
    assert options["editables"] == [str(folder.resolve())] and options["extra_index_urls"] == [private_index]
    assert "undated (as the extra index has them, not as of each release): tinypkg" in swept.err
    assert "--with-editable" in swept.data["command"]


def test_a_package_pinning_another_jax_is_that_cells_error_in_one_line(tmp_path, capsys, private_index):
    folder, script = own_package(tmp_path, '"tinypkg", "jax==0.4.30"')
    swept = check([str(script), "--with-editable", str(folder), "--extra-index-url", private_index,
                   "--versions", "0.4.31", "--runs", "2"], tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "error" and not cell.get("runs")
    assert "mypkg" in cell["reason"] and "jax==0.4.30" in cell["reason"] and "\n" not in cell["reason"]


def test_with_a_folder_is_your_package_and_an_edit_before_resume_is_refused(tmp_path, capsys, private_index):
    """`--with PATH` installs the package as --with-editable does; results.json records its content, and a
    --resume after the package was edited is refused in one line (exit 2): one table, one package."""
    folder, script = own_package(tmp_path, '"tinypkg"')
    argv = [str(script), "--with", str(folder), "--extra-index-url", private_index, "--versions", "0.4.31",
            "--runs", "2"]
    swept = check(argv, tmp_path / "out", capsys, quiet=False)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["environment"]["editables"] == [str(folder.resolve())]
    (digest,) = swept.data["options"]["editable_digests"]
    assert f"packages from {private_index}" in swept.err
    (folder / "mypkg" / "__init__.py").write_text(STEP.replace("jnp.sin", "jnp.cos"))
    code = cli.main(["check", *argv, "--resume", str(swept.run_dir), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"--with-editable differs ({folder.resolve()} (content {digest}) there" in err[0]


def test_with_dot_from_the_project_folder_then_resume_of_its_own_results_is_the_same_package(tmp_path, private_index):
    """Issue 49, item 8: the README's usage, `harness check train.py --with .` from the project folder, writes
    results/ inside the package; its --resume was refused ("--with-editable differs") since the results and
    caches it had written counted as package content."""
    folder, _ = own_package(tmp_path, '"tinypkg"')
    (folder / "train.py").write_text("import mypkg\nprint(mypkg.run())\n")
    argv = ["check", "train.py", "--with", ".", "--extra-index-url", private_index, "--versions", "0.4.31",
            "--runs", "2", "--quiet"]
    first = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=folder, capture_output=True, text=True,
                           timeout=900)
    assert first.returncode == 0, first.stderr
    (results,) = (folder / "results").glob("*/results.json")
    again = subprocess.run([sys.executable, "-m", "harness", *argv, "--resume", str(results.parent.relative_to(folder))],
                           cwd=folder, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr
