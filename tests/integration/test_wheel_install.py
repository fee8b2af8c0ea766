"""The harness as a user installs it (`pipx install`, `uv tool install`): the wheel built from this checkout,
installed into a fresh venv outside it, runs `harness check` under venv and docker from a folder that knows
nothing of the checkout. Everything it needs at run time (Dockerfiles, the start-up hook, the repros, the seed
probe, the supervisor) must come from the installed package."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests.docker_engine import engine_with_base_image

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.4.31"
SCRIPT = """\
import jax, jax.numpy as jnp
print(jax.jit(lambda x: x * 2)(jnp.ones(4)))
"""
# What the harness reads from its own package while it runs (harness/core/files.py: package_path).
RUN_TIME_FILES = ("harness/environments/dockerfiles/Dockerfile.cpu", "harness/environments/dockerfiles/Dockerfile.cuda",
                  "harness/inside/startup/sitecustomize.py", "harness/inside/startup/jax_cache_harness_hook.py",
                  "harness/inside/repros/shard_map_grad.py", "harness/inside/seeds_probe.py", "harness/inside/supervise.py",
                  "harness/environments/dockerfiles/make_base_image.sh",
                  *(f"harness/configs/{name}.yaml" for name in ("gpu_local", "nightly", "releases", "shard_map_grad", "smoke")))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The `harness` command of a fresh venv with only the wheel (and its dependencies) in it."""
    where = tmp_path_factory.mktemp("wheel")
    uv = find_uv_bin()
    subprocess.run([uv, "build", "--wheel", "--out-dir", str(where / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (wheel,) = (where / "dist").glob("jax_cache_harness-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert not [f for f in RUN_TIME_FILES if f not in names], sorted(names)
    venv = where / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run([uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
                   check=True)
    return venv / "bin" / "harness"


def _outside_env() -> dict[str, str]:
    # Nothing that could lead the installed harness back to this checkout.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HARNESS_DOCKERFILES")}


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    found = subprocess.run([str(installed.with_name("python")), "-c", "import harness; print(harness.__file__)"],
                           cwd=tmp_path, env=_outside_env(), capture_output=True, text=True, check=True)
    assert "site-packages" in found.stdout and str(ROOT) not in found.stdout


@pytest.mark.parametrize("backend", ["venv", pytest.param("docker", marks=pytest.mark.docker)])
def test_harness_check_runs_from_the_installed_wheel(installed, backend, tmp_path):
    if backend == "docker":
        engine_with_base_image().close()
    (tmp_path / "doubling.py").write_text(SCRIPT)
    done = subprocess.run([str(installed), "check", "doubling.py", "--backend", backend, "--versions", VERSION,
                           "--runs", "2", "--device-count", "4", "--out", "out", "--quiet"],
                          cwd=tmp_path, env=_outside_env(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert VERSION in done.stdout and "clean" in done.stdout, done.stdout
    (run_dir,) = (tmp_path / "out").iterdir()
    assert (run_dir / "results.json").is_file() and (run_dir / "report.md").is_file()
    # The runs import the start-up folder from a copy (harness/inside/startup: startup_dir): their Python wrote no
    # bytecode into the installed package (the harness's own import of the hook module may, as any package's)
    startup = next(installed.parents[1].glob("lib/python*/site-packages/harness/inside/startup"))
    written = sorted(p.name for p in startup.rglob("*.pyc") if not p.name.startswith(("jax_cache_harness_hook.",
                                                                                      "__init__.")))
    assert written == [], written


@pytest.fixture(scope="module")
def tool(tmp_path_factory) -> Path:
    """`harness` as `uv tool install` puts it on a user's PATH, from a wheel built from a fresh clone of this
    checkout (only what is committed: package data that git does not track would be missing here)."""
    where = tmp_path_factory.mktemp("tool")
    uv = find_uv_bin()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where / "clone")], check=True)
    subprocess.run([uv, "build", "--wheel", "--out-dir", str(where / "dist"), str(where / "clone")],
                   check=True, capture_output=True, text=True)
    (wheel,) = (where / "dist").glob("jax_cache_harness-*.whl")
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    env = {**_outside_env(), "UV_TOOL_DIR": str(where / "tools"), "UV_TOOL_BIN_DIR": str(where / "bin")}
    subprocess.run([uv, "tool", "install", "--quiet", "--python", sys.executable, str(wheel)], env=env, check=True)
    return where / "bin" / "harness"


def _tool(tool: Path, cwd: Path, *words: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(tool), *words], cwd=cwd, env=_outside_env(), capture_output=True, text=True,
                          timeout=600)


def test_the_tool_says_its_version_runs_shipped_configs_by_name_and_writes_a_starter_config(tool, tmp_path):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _tool(tool, tmp_path, "--version").stdout == f"harness {version}\n"
    # The README's config examples, by name, in a folder that knows nothing of the checkout.
    listed = _tool(tool, tmp_path, "versions", "shard_map_grad", "--versions", VERSION)
    assert listed.returncode == 0 and listed.stdout.startswith(f"{VERSION}\tPython "), listed.stderr
    auto = _tool(tool, tmp_path, "versions", "smoke", "--python-version", "auto")  # versions --help's example
    assert auto.returncode == 0 and auto.stdout.splitlines()[0].startswith("0.4.28\t"), auto.stderr
    (tmp_path / "doubling.py").write_text(SCRIPT)
    made = _tool(tool, tmp_path, "init", "doubling.py")
    assert made.returncode == 0 and "config: doubling.yaml" in made.stdout, made.stderr
    checked = _tool(tool, tmp_path, "versions", "doubling.yaml", "--versions", VERSION)
    assert checked.returncode == 0 and checked.stdout.startswith(VERSION), checked.stderr
    for command in ("run", "check", "init", "base-image"):
        shown = _tool(tool, tmp_path, command, "--help")
        assert shown.returncode == 0 and "example:" in shown.stdout, shown.stderr
    missing = _tool(tool, tmp_path, "run", "nosuch")
    assert missing.returncode == 2 and "shipped: gpu_local, nightly, releases, shard_map_grad, smoke" in missing.stderr
