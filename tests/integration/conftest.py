"""tests/integration/: real JAX releases, Docker, Slurm. Every test here is `integration` by its folder;
one marked `docker` or `slurm` keeps that marker (`-m docker`, `-m slurm` select them in CI and the docs)."""

import pytest


def pytest_collection_modifyitems(config, items):
    here = config.rootpath / "tests" / "integration"
    for item in items:
        if item.path.is_relative_to(here) and not any(item.get_closest_marker(m) for m in ("docker", "slurm")):
            item.add_marker(pytest.mark.integration)
