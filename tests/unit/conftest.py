"""tests/unit/: no JAX release, no Docker engine, no Slurm. A test here that carries one of the slow markers
is refused at collection, so a slow test cannot hide among the fast ones (`make test-unit`)."""

import pytest

SLOW_MARKERS = ("integration", "docker", "slurm")


def pytest_collection_modifyitems(config, items):
    here = config.rootpath / "tests" / "unit"
    for item in items:
        if not item.path.is_relative_to(here):
            continue
        slow = [name for name in SLOW_MARKERS if item.get_closest_marker(name)]
        if slow:
            raise pytest.UsageError(f"{item.nodeid} is marked {', '.join(slow)}: move it to tests/integration/")
