"""Environments made ahead of the cell being measured, a bounded number, in order; a failure is that
environment's value (its cells say `error`), a bug of the harness is raised where the cell needs it."""

import threading

import pytest

from harness.environments.base import Backend
from harness.core.errors import EnvironmentUnavailable
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform
from harness.measure.sweep import Preparations

MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))


def cells(*versions):
    return [CellSpec(v, Platform.CPU, 8, MESH) for v in versions]


class Messages:
    def __init__(self):
        self.lines = []

    def say(self, message):
        self.lines.append(message)


class GatedBackend(Backend):
    """prepare(v) records v, says a line, then waits for its gate (opened by the test)."""

    name = "venv"

    def __init__(self, fail=()):
        self.started, self.gates, self.fail = [], {}, fail

    def gate(self, version):
        return self.gates.setdefault(version, threading.Event())

    def prepare(self, jax_version, platform, say=None):
        self.started.append(jax_version)
        say(f"installing jax {jax_version}")
        assert self.gate(jax_version).wait(10)
        if jax_version in self.fail:
            raise self.fail[jax_version]
        return f"env-{jax_version}"


def test_environments_are_made_in_order_a_bounded_number_ahead():
    backend, messages = GatedBackend(), Messages()
    planned = cells("0.4.25", "0.4.26", "0.4.27", "0.4.28")
    preparations = Preparations(backend, messages, ahead=1)
    try:
        preparations.want(planned)
        for version in ("0.4.25", "0.4.26", "0.4.27"):
            backend.gate(version).set()
        assert preparations.get(planned[0]) == "env-0.4.25"
        assert preparations.get(planned[1]) == "env-0.4.26"  # made while the first cell would run
        assert backend.started == ["0.4.25", "0.4.26"]  # not 0.4.27: one ahead only
        preparations.want(planned[1:])
        assert preparations.get(planned[2]) == "env-0.4.27"
        assert backend.started == ["0.4.25", "0.4.26", "0.4.27"]
    finally:
        backend.gate("0.4.28").set()
        preparations.close()
    assert "  (preparing jax 0.4.26 ahead) installing jax 0.4.26" in messages.lines
    assert "installing jax 0.4.25" in messages.lines  # the cell being measured: said as before


def test_two_meshes_of_one_version_share_one_environment():
    backend = GatedBackend()
    backend.gate("0.4.28").set()
    two = [CellSpec("0.4.28", Platform.CPU, 8, MESH),
           CellSpec("0.4.28", Platform.CPU, 8, Mesh((4, 2, 1, 1), MESH.axis_names))]
    preparations = Preparations(backend, Messages(), ahead=2)
    preparations.want(two)
    assert preparations.get(two[0]) == preparations.get(two[1]) == "env-0.4.28"
    preparations.close()
    assert backend.started == ["0.4.28"]


def test_a_failed_preparation_is_the_value_and_a_bug_is_raised():
    unavailable = EnvironmentUnavailable("no wheels")
    backend = GatedBackend(fail={"0.4.25": unavailable, "0.4.26": RuntimeError("a bug")})
    backend.gate("0.4.25").set()
    backend.gate("0.4.26").set()
    planned = cells("0.4.25", "0.4.26")
    preparations = Preparations(backend, Messages(), ahead=1)
    preparations.want(planned)
    assert preparations.get(planned[0]) is unavailable
    with pytest.raises(RuntimeError, match="a bug"):
        preparations.get(planned[1])
    preparations.close()
