"""The Docker engine the docker tests need: a client, or a skip that says why (a failure under
HARNESS_REQUIRE_DOCKER=1, set by CI, so CI cannot pass by skipping them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import docker
from harness.environments.docker import LABEL, OFFLINE_BASE_IMAGE, docker_available


def missing(reason: str):
    if os.environ.get("HARNESS_REQUIRE_DOCKER") == "1":
        pytest.fail(f"HARNESS_REQUIRE_DOCKER=1 but {reason}")
    pytest.skip(reason)


def engine_with_base_image() -> docker.DockerClient:
    """A client of a running engine that has the offline base image, or skip/fail saying which lacks."""
    ok, reason = docker_available()
    if not ok:
        missing(f"{reason}: start one with .ci/install-docker.sh")
    client = docker.from_env()
    try:
        client.images.get(OFFLINE_BASE_IMAGE)
    except docker.errors.ImageNotFound:
        client.close()
        missing(f"the base image {OFFLINE_BASE_IMAGE} is not built: run `harness base-image`")
    return client


def our_containers(client, tmp_path: Path) -> list:
    """This test's containers: the harness's label and a folder of this test mounted (other sessions on
    the same engine may run containers of their own meanwhile). `sparse`: the engine's list as it answers it
    (Mounts included), without inspecting each container after, which fails when another test's container is
    removed between the two."""
    return [c for c in client.containers.list(all=True, sparse=True, filters={"label": LABEL})
            if any(str(m.get("Source", "")).startswith(str(tmp_path)) for m in c.attrs.get("Mounts", []))]
