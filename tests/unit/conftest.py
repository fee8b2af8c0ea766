"""tests/unit/: no JAX release, no Docker engine, no Slurm. A test here that carries one of the slow markers
is refused at collection, so a slow test cannot hide among the fast ones (`make test-unit`)."""

import pytest

from tests.fakes import INDEX, fake_jax_repository

SLOW_MARKERS = ("integration", "docker", "slurm")


def pytest_collection_modifyitems(config, items):
    here = config.rootpath / "tests" / "unit"
    for item in items:
        if not item.path.is_relative_to(here):
            continue
        slow = [name for name in SLOW_MARKERS if item.get_closest_marker(name)]
        if slow:
            raise pytest.UsageError(f"{item.nodeid} is marked {', '.join(slow)}: move it to tests/integration/")


@pytest.fixture(scope="module")
def fake_jax(tmp_path_factory):
    """The synthetic git repository of a fake `jax` (tests/fakes.py), one per module (a test may push to
    its upstream): {"repo": the bare clone, "bad": the set-ordered commit, "broken", "fix"}."""
    return fake_jax_repository(tmp_path_factory.mktemp("fake-jax"), tmp_path_factory.mktemp("bare") / "jax.git")


@pytest.fixture
def fake_index(monkeypatch):
    """The harness's package index is tests/fakes.py's INDEX (0.4.25-0.4.31), never PyPI."""
    from harness import service  # a second to import: not at the top, test_folders.py collects copies of this file

    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
