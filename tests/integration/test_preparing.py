"""`harness base-image` against a real Docker engine (the rest of `harness init` and `harness base-image`:
tests/unit/test_preparing.py)."""

import pytest

from harness.cli import commands as cli
from harness.environments.docker import OFFLINE_BASE_IMAGE
from tests.docker_engine import engine_with_base_image


@pytest.mark.docker
def test_base_image_of_a_real_engine_keeps_the_image_it_has(capfd):
    engine_with_base_image().close()
    assert cli.main(["base-image"]) == 0
    assert f"base-image: {OFFLINE_BASE_IMAGE} already exists" in capfd.readouterr().out
