"""The docker backend against a real engine: real images, real JAX releases, real containers.

Needs a Docker daemon and the offline base image (`.ci/install-docker.sh`, then `make base-image`).
Without them these tests skip and say why; with HARNESS_REQUIRE_DOCKER=1 (set by CI) they fail
instead, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import docker
import pytest

from harness.cli import commands as cli
from harness.inputs.config import Repro
from harness.inputs.dependencies import parse_requirements
from harness.environments import make_backend
from harness.environments.base import BackendOptions
from harness.environments.docker import (OFFLINE_BASE_IMAGE, OFFLINE_BASE_IMAGES, OFFLINE_PYTHONS,
                                         DockerBackend, DockerEnvironment)
from harness.environments.wheelhouse import MANYLINUX_X86_64
from harness.core.errors import BackendUnavailable
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import Program
from harness.inputs.pythons import PythonChooser, PythonVersion
from harness.inside.repros import builtin_path
from harness.measure.cell_runner import CellRunner
from harness.environments.package_index import PyPIIndex
from harness.inputs.versions import release_pythons
from tests.docker_engine import engine_with_base_image, missing, our_containers

pytestmark = [pytest.mark.docker, pytest.mark.integration]

SPEC_MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))
REPRO = Repro("shard_map_grad", builtin_path("shard_map_grad"), builtin=True)


@pytest.fixture(scope="module")
def client():
    client = engine_with_base_image()
    yield client
    client.close()


@pytest.fixture(scope="module")
def index():
    return PyPIIndex()


@pytest.fixture(scope="module")
def prepared(client, index):
    """0.4.28 and 0.4.29 images, built (or reused) once for this module."""
    backend = DockerBackend(base_image=OFFLINE_BASE_IMAGE, release_date=index.release_date)
    return {v: backend.prepare(v, Platform.CPU, print) for v in ("0.4.28", "0.4.29")}


# Three runs: seeds 1 and 2 put every pair of the mesh's axis names in both orders (the chosen seeds), so 0.4.28's
# second run misses; the third is the fixed release's one more run beside them. (Six ran three more a release.)
def measure(environment, version: str, tmp_path: Path, seeds=range(1, 4)):
    spec = CellSpec(version, Platform.CPU, 8, SPEC_MESH)
    runner = CellRunner(environment, REPRO, timeout_s=300)
    return runner.run(spec, list(seeds), tmp_path / version / "cache", tmp_path / version / "logs")


def test_regressed_release_gives_several_keys_and_the_fixed_one_gives_one(prepared, client, tmp_path):
    volumes_before = {v.name for v in client.volumes.list()}
    bad = measure(prepared["0.4.28"], "0.4.28", tmp_path)
    good = measure(prepared["0.4.29"], "0.4.29", tmp_path)

    assert all(r.ok for r in bad.runs + good.runs), [r.reason for r in bad.runs + good.runs]
    assert bad.verdict == Verdict.REPRODUCED and len(bad.keys["jit_f"]) >= 2, bad.keys
    assert good.verdict == Verdict.CLEAN and len(good.keys["jit_f"]) == 1, good.keys
    assert bad.environment_facts["backend"] == "docker" and bad.environment_facts["jax"] == "0.4.28"
    # Nothing left behind, and the host can read and delete what the containers wrote.
    assert our_containers(client, tmp_path) == []
    assert {v.name for v in client.volumes.list()} == volumes_before
    cache = tmp_path / "0.4.28" / "cache"
    assert {p.stat().st_uid for p in cache.iterdir()} == {os.getuid()}
    shutil.rmtree(cache)
    log = (tmp_path / "0.4.28" / "logs").glob("run-01-*.log")
    assert "LOWERED" in next(log).read_text()  # the repro's own output reached the host


def test_a_second_prepare_reuses_the_image(prepared, index):
    again = DockerBackend(base_image=OFFLINE_BASE_IMAGE, release_date=index.release_date)
    environment = again.prepare("0.4.29", Platform.CPU)
    assert again.builds == 0
    assert environment.image == prepared["0.4.29"].image
    assert environment.describe()["reused"] is True


def test_a_hang_an_oom_and_ctrl_c_leave_nothing_behind(prepared, client, tmp_path):
    script = tmp_path / "script" / "misbehave.py"
    script.parent.mkdir()
    script.write_text("import sys, time\n"
                      "if sys.argv[1] == 'hang': time.sleep(600)\n"
                      "if sys.argv[1] == 'eat': block = bytearray(2_000_000_000); print(len(block))\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    image = prepared["0.4.29"]

    hang = image.run(Program(script, ("hang",)), {}, cache, tmp_path / "hang.log", timeout_s=3)
    assert hang.timed_out and hang.exit_code is None and "timeout" in hang.reason

    small_env = DockerEnvironment(client, image.image, "0.4.29", Platform.CPU, {}, image.user,
                                  mem_limit="128m")
    oom = small_env.run(Program(script, ("eat",)), {}, cache, tmp_path / "eat.log", timeout_s=60)
    assert not oom.ok and "OOM" in oom.reason

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        with pytest.raises(KeyboardInterrupt):
            image.run(Program(script, ("hang",)), {}, cache, tmp_path / "ctrl-c.log", timeout_s=120)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert our_containers(client, tmp_path) == []


def test_a_base_image_that_cannot_be_had_is_one_clear_line(client):
    backend = DockerBackend(base_image="jax-harness-no-such-base:1")
    with pytest.raises(BackendUnavailable) as info:
        backend.prepare("0.4.29", Platform.CPU)
    assert "jax-harness-no-such-base:1" in str(info.value) and "harness base-image" in str(info.value)


def test_auto_chooses_docker_when_a_daemon_answers(client):
    choice = make_backend("auto", BackendOptions())
    assert choice.backend.name == "docker" and "daemon answers" in choice.why


def test_the_cli_sweeps_with_the_docker_backend(prepared, tmp_path, capsys, write):
    config = write("docker.yaml", f"""\
name: docker-smoke
repro: shard_map_grad
jax_versions: ["0.4.29"]
device_count: 8
meshes: [{{shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}}]
runs: 2
docker: {{base_image: "{OFFLINE_BASE_IMAGE}"}}
""")
    code = cli.main(["run", str(config), "--backend", "docker", "--out", str(tmp_path / "out"), "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["environment"]["backend"] == "docker" and cell["environment"]["reused"] is True


def test_a_runtime_without_gpus_is_one_clear_reason(prepared, client, tmp_path):
    if "nvidia" in client.info().get("Runtimes", {}):
        pytest.skip("this daemon has the NVIDIA runtime")
    script = tmp_path / "noop.py"
    script.write_text("print('never runs')\n")
    gpu_env = DockerEnvironment(client, prepared["0.4.29"].image, "0.4.29", Platform.CUDA, {},
                                prepared["0.4.29"].user)
    outcome = gpu_env.run(Program(script), {}, tmp_path, tmp_path / "gpu.log", timeout_s=60)
    assert not outcome.ok and "no GPU support" in outcome.reason and "NVIDIA Container Toolkit" in outcome.reason
    assert our_containers(client, tmp_path) == []


def test_a_release_that_needs_a_newer_python_gets_the_trixie_image_with_it(client, index, tmp_path):
    """jax 0.12.0.1 has no wheel for 3.11: its image is built on Debian trixie's Python 3.13, chosen as
    a venv's Python is, and the seed's repro runs clean there."""
    trixie = OFFLINE_BASE_IMAGES["3.13"]
    try:
        client.images.get(trixie)
    except docker.errors.ImageNotFound:
        missing(f"the base image {trixie} is not built: run `make base-image DEBIAN=trixie`")
    pythons = PythonChooser(PythonVersion(3, 11), release_pythons(index, MANYLINUX_X86_64),
                            provided=OFFLINE_PYTHONS)
    backend = DockerBackend(release_date=index.release_date, pythons=pythons)
    environment = backend.prepare("0.12.0.1", Platform.CPU, print)
    facts = environment.describe()
    assert facts["base_image"] == trixie and facts["python"].startswith("3.13.")
    assert facts["python_choice"]["why"] == "newest"
    cell = measure(environment, "0.12.0.1", tmp_path, seeds=range(1, 4))
    assert cell.verdict == Verdict.CLEAN and all(r.ok for r in cell.runs), [r.reason for r in cell.runs]
    assert our_containers(client, tmp_path) == []


def test_the_scripts_requirements_go_into_the_image(client, index, tmp_path, capsys):
    """The wheelhouse resolves the script's inline requirements with jax as of the release's date (the
    same Flax the venv backend gets), the image has them, and the same set reuses the image."""
    code = cli.main(["check", "examples/flax_mlp_step.py", "--backend", "docker", "--versions", "0.4.31",
                     "--runs", "2", "--out", str(tmp_path / "out"), "--quiet"])
    _, err = capsys.readouterr()
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(r["exit_code"] == 0 for r in cell["runs"]) and len(cell["keys"]["jit_step"]) == 1
    environment = cell["environment"]
    assert environment["backend"] == "docker" and environment["requirements"] == ["flax", "optax"]
    assert environment["distributions"]["flax"] == "0.8.5" and environment["distributions"]["optax"] == "0.2.3"
    again = DockerBackend(base_image=OFFLINE_BASE_IMAGE, release_date=index.release_date,
                          requirements=parse_requirements(["Optax", "flax"], "test"))
    assert again.prepare("0.4.31", Platform.CPU).image == environment["image"] and again.builds == 0


def test_a_suite_s_run_2_beside_run_1_gets_a_folder_of_its_own_at_the_container_s_one_mount(client, tmp_path, capsys,
                                                                                               write):
    """check --pytest --backend docker (issue 51, item 7): a container sees any host folder at one path, so run 2
    runs beside run 1 in a host folder of its own and, on 0.10.2 (the folder's path in every key), computes run 1's
    keys: every one a hit by key."""
    write("suite/tests/test_add.py", "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                                     "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n")
    out = tmp_path / "out"
    # Three runs (not a suite's default 6): run 2 beside run 1, and a later run that hits in the cell's folder.
    code = cli.main(["check", "--pytest", "--backend", "docker", "--versions", "0.10.2", "--runs", "3", "--quiet",
                     "--cwd", str(tmp_path / "suite"), "--out", str(out), "--", "-q", "tests"])
    assert code == 0, capsys.readouterr().err
    (run_dir,) = out.iterdir()
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean" and cell["environment"]["backend"] == "docker", cell["reason"]
    first, second, *later = cell["runs"]
    written = {k["key"] for k in first["keys"]["keys"] if k["outcome"] == "written"}
    assert written and {k["key"] for k in second["keys"]["keys"]} == written
    assert second["compared_by_key"]["hits"] == len(written) and second["new_entries"] == []
    assert {p.name for p in (run_dir / second["compared_by_key"]["folder"]).iterdir()} == set(first["new_entries"])
    assert later and all({k["outcome"] for k in r["keys"]["keys"]} == {"hit"} for r in later)
