"""Your own package (--with-editable, --with PATH) with --backend docker on a real release: built as a
wheel on the host, its dependencies resolved with the release's dated pins into the wheelhouse, installed
in the image after jax; the image's tag follows the package's content, and a package whose pins contradict
the release is that cell's error in one line, as with venv (tests/integration/test_own_package_integration.py).

Needs a Docker daemon and the offline base image (`.ci/install-docker.sh`, then `harness base-image`)."""

from __future__ import annotations

import pytest

from tests.docker_engine import engine_with_base_image
from tests.sweeps import check

pytestmark = [pytest.mark.docker, pytest.mark.integration]

STEP = '''import jax
import jax.numpy as jnp


@jax.jit
def train_step(x):
    return jnp.sin(x) * SCALE


SCALE = 2.0


def run():
    return float(train_step(jnp.ones(4)).sum())
'''


@pytest.fixture(scope="module", autouse=True)
def engine():
    client = engine_with_base_image()
    yield client
    client.close()


def own_package(tmp_path, dependencies: str):
    folder = tmp_path / "mypkg-project"  # not "mypkg": the script's folder is on sys.path
    (folder / "mypkg").mkdir(parents=True)
    (folder / "mypkg" / "__init__.py").write_text(STEP)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "mypkg"\nversion = "0.1"\ndependencies = [{dependencies}]\n')
    script = tmp_path / "train.py"
    script.write_text("import mypkg\nprint(mypkg.run())\n")
    return folder, script


def test_your_package_is_installed_in_the_image_and_its_content_names_the_image(tmp_path, capsys):
    folder, script = own_package(tmp_path, '"numpy"')
    argv = [str(script), "--with-editable", str(folder), "--backend", "docker", "--versions", "0.4.31", "--runs", "2"]
    swept = check(argv, tmp_path / "out", capsys, quiet=False)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(r["exit_code"] == 0 for r in cell["runs"]) and "jit_train_step" in cell["keys"]
    environment = cell["environment"]
    assert environment["backend"] == "docker" and environment["distributions"]["mypkg"] == "0.1"
    (digest,) = swept.data["options"]["editable_digests"]
    # An edit is another package: another image (the tag follows the content), with the edit in it.
    (folder / "mypkg" / "__init__.py").write_text(STEP.replace("jnp.sin", "jnp.cos"))
    edited = check([*argv[:1], "--with", str(folder), *argv[3:]], tmp_path / "edited", capsys, quiet=False)
    (again,) = edited.data["cells"]
    assert again["verdict"] == "clean", again["reason"]
    assert edited.data["options"]["editable_digests"] != [digest]
    assert again["environment"]["image"] != environment["image"]


def test_a_package_pinning_another_jax_is_that_cells_error_in_one_line(tmp_path, capsys):
    folder, script = own_package(tmp_path, '"jax==0.4.30"')
    swept = check([str(script), "--with-editable", str(folder), "--backend", "docker", "--versions", "0.4.31",
                   "--runs", "2"], tmp_path / "out", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "error" and not cell.get("runs")
    assert "mypkg" in cell["reason"] and "jax==0.4.30" in cell["reason"] and "\n" not in cell["reason"]
