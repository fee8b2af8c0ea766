"""Faults a user's script can cause, against real runs under every backend (issue 10).

Each case is run through the same CellRunner a sweep uses, in a real venv and (where a Docker engine
and the offline base image are here) a real container, so a backend that reads a crash as success
shows up as a wrong verdict.
"""

from __future__ import annotations

import os

import docker
import pytest

from harness.config import Repro
from harness.environments.docker import OFFLINE_BASE_IMAGE, DockerBackend, docker_available
from harness.environments.venv import VenvBackend
from harness.model import CellSpec, Platform, Verdict
from harness.runner import CellRunner

pytestmark = pytest.mark.integration

VERSION = "0.4.29"

# Compiles (so the cache gets an entry, which alone would read as `clean`), then dies by a signal
# it sends itself.
SELF_SIGNALLED_CRASH = """\
import os, signal
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
print("compiled", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
print("still alive after SIGSEGV")
"""


def _docker_environment():
    ok, reason = docker_available()
    if not ok:
        _missing(f"{reason}: start one with .ci/install-docker.sh")
    client = docker.from_env()
    try:
        client.images.get(OFFLINE_BASE_IMAGE)
    except docker.errors.ImageNotFound:
        _missing(f"the base image {OFFLINE_BASE_IMAGE} is not built: run `make base-image`")
    from harness.versions import PyPIIndex
    backend = DockerBackend(base_image=OFFLINE_BASE_IMAGE, release_date=PyPIIndex().release_date)
    return backend.prepare(VERSION, Platform.CPU, print)


def _missing(reason: str):
    if os.environ.get("HARNESS_REQUIRE_DOCKER") == "1":
        pytest.fail(f"HARNESS_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module", params=["venv", pytest.param("docker", marks=pytest.mark.docker)])
def environment(request):
    if request.param == "venv":
        return VenvBackend().prepare(VERSION, Platform.CPU)
    return _docker_environment()


def measure(environment, script_text: str, tmp_path, runs: int = 2):
    script = tmp_path / "script" / "user.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(script_text)
    spec = CellSpec(VERSION, Platform.CPU, 1, None)
    runner = CellRunner(environment, Repro("user", script, builtin=False), timeout_s=120)
    return runner.run(spec, range(1, runs + 1), tmp_path / "cache", tmp_path / "logs")


def test_a_self_signalled_crash_after_compiling_is_error(environment, tmp_path):
    cell = measure(environment, SELF_SIGNALLED_CRASH, tmp_path)
    assert cell.listing, "the script compiled before it crashed: its entry is in the cache"
    assert cell.verdict == Verdict.ERROR, (cell.verdict, cell.reason)
    assert all(not r.ok for r in cell.runs)
    assert "SIGSEGV" in cell.runs[0].reason, cell.runs[0].reason
