import sys

import pytest

# pytest keeps the test modules it rewrote for its assertions as bytecode unless bytecode is off: these machines set
# PYTHONDONTWRITEBYTECODE, and every pytest process (each xdist worker, each stage) rewrote every test module again,
# about 5 s of CPU a process for tests/unit. On for this process only: the programs the tests start keep the variable.
sys.dont_write_bytecode = False


@pytest.fixture
def write(tmp_path):
    """Write a text file under tmp_path and return its path."""
    def _write(name: str, text: str):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path
    return _write


@pytest.fixture(autouse=True)
def no_real_tools_in_unit_tests(request, monkeypatch):
    """Only tests marked `integration` or `docker` may install JAX or talk to Docker: a unit test
    that reaches for uv or the daemon by accident fails here instead of quietly doing real work."""
    if any(request.node.get_closest_marker(name) for name in ("integration", "docker", "slurm")):
        return

    def refuse(*args, **kwargs):
        raise AssertionError("a unit test tried to use a real tool (uv or Docker); mark it integration/docker")

    import docker

    import harness.environments.interpreters as interpreters
    import harness.environments.venv as venv

    monkeypatch.setattr(venv, "find_uv", refuse)
    monkeypatch.setattr(interpreters, "find_uv", refuse)
    monkeypatch.setattr(docker, "from_env", refuse)
    # The machine's own Pythons are not a unit test's input: only the harness's, unless a test says.
    monkeypatch.setattr(interpreters, "machine_sources", lambda search=(): {})


@pytest.fixture(autouse=True)
def runs_may_start():
    """A test that interrupted a measurement leaves this process refusing to start runs (as the harness does
    after a signal, until its next command): each test starts as a command does."""
    from harness.core import signals

    signals._stopping.clear()
