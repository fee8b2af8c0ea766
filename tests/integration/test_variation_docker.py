"""--vary in containers (a real engine): the folder a factor moves is mounted at another path inside, the
user and the host name are the container's; what an image cannot vary says so."""

import pytest

from tests import sweeps
from tests.docker_engine import engine_with_base_image

pytestmark = [pytest.mark.docker, pytest.mark.integration]


@pytest.fixture(scope="module")
def client():
    client = engine_with_base_image()
    yield client
    client.close()


def check(tmp_path, capsys, *argv):
    (cell,) = sweeps.check(["examples/stable_script.py", "--backend", "docker", "--runs", "2", *argv], tmp_path,
                           capsys).data["cells"]
    return cell, {f["factor"]: f for f in cell["variation"]["factors"]}


def test_every_factor_a_container_can_vary_hits_where_nothing_is_keyed_on_it(client, tmp_path, capsys):
    cell, found = check(tmp_path, capsys, "--versions", "0.4.31", "--vary", "all")
    assert cell["verdict"] == "clean", cell["reason"]
    assert {name for name, f in found.items() if f["outcome"] == "hit"} == {
        "cache-path", "cwd", "script-path", "home", "user", "hostname", "env-order", "tz", "locale"}
    assert {name for name, f in found.items() if f["outcome"] == "cannot vary here"} == {"prefix", "compression"}


def test_the_cache_mounted_at_another_path_misses_where_the_path_is_keyed(client, tmp_path, capsys):
    cell, found = check(tmp_path, capsys, "--versions", "0.10.2", "--vary", "cache-path")
    assert cell["verdict"] == "reproduced" and found["cache-path"]["components"] == ["compile_options"]
