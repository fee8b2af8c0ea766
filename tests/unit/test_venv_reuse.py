"""A ready venv is reused only where its dependencies were resolved as of the date wanted now: one made by a caller
that knew no release date (numpy and ml_dtypes of the day it was made) is rebuilt once the date is known, not reused
by every later sweep whatever it measures."""

import json
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.core.errors import UserError
from harness.core.kinds import Platform
from harness.environments import venv as venv_module
from harness.environments.venv import READY_MARKER, VenvBackend, resolved_otherwise

RELEASED = datetime(2024, 5, 21, 18, 0, tzinfo=timezone.utc)
CUTOFF = "2024-05-22T18:00:00Z"


def ready_venv(backend: VenvBackend, made_with: str | None) -> Path:
    """A venv folder as `prepare` leaves it (an interpreter, a jax package, the marker), its cutoff `made_with`."""
    python = backend.pythons.choose("0.4.28")
    path = backend.env_path("0.4.28", Platform.CPU, python.version)
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").symlink_to(sys.executable)
    jax = path / "lib" / "python3.11" / "site-packages" / "jax"
    jax.mkdir(parents=True)
    (jax / "__init__.py").write_text("")
    (path / READY_MARKER).write_text(json.dumps({"jax": "0.4.28", "exclude_newer": made_with, "distributions": {}}))
    return path


class Rebuilt(Exception):
    pass


def refuse_to_build(monkeypatch):
    """A rebuild stops at its first step (no uv here), after saying why: what the test reads."""
    def no_uv() -> str:
        raise Rebuilt
    monkeypatch.setattr(venv_module, "find_uv", no_uv)


@pytest.mark.parametrize("made_with", [None, "2026-01-01T00:00:00Z"])
def test_a_venv_resolved_otherwise_is_rebuilt_saying_why(tmp_path, monkeypatch, made_with):
    refuse_to_build(monkeypatch)
    backend = VenvBackend(root=tmp_path, release_date=lambda _v: RELEASED)
    ready_venv(backend, made_with)
    said: list[str] = []
    with pytest.raises(Rebuilt):
        backend.prepare("0.4.28", Platform.CPU, said.append)
    (line,) = [s for s in said if s.startswith("rebuilding")]
    assert f"not as of {CUTOFF}" in line
    assert ("with no release date" if made_with is None else f"as of {made_with}") in line


def test_a_venv_of_the_same_date_is_reused(tmp_path, monkeypatch):
    refuse_to_build(monkeypatch)
    backend = VenvBackend(root=tmp_path, release_date=lambda _v: RELEASED)
    path = ready_venv(backend, CUTOFF)
    environment = backend.prepare("0.4.28", Platform.CPU)
    assert environment.path == path and environment.facts["reused"] is True


@pytest.mark.parametrize("release_date", [None, lambda _v: None])
def test_without_a_date_to_check_against_what_is_there_is_reused(tmp_path, monkeypatch, release_date):
    refuse_to_build(monkeypatch)
    backend = VenvBackend(root=tmp_path, release_date=release_date)
    ready_venv(backend, CUTOFF)
    assert backend.prepare("0.4.28", Platform.CPU).facts["reused"] is True


def test_an_index_that_cannot_be_reached_reuses_what_is_there(tmp_path, monkeypatch):
    """Offline, with no copy of the index's page: a ready venv is still usable (a new one would fail to install)."""
    refuse_to_build(monkeypatch)

    def unreachable(_version):
        raise UserError("cannot reach the package index for jax")

    backend = VenvBackend(root=tmp_path, release_date=unreachable)
    ready_venv(backend, None)
    assert backend.prepare("0.4.28", Platform.CPU).facts["reused"] is True


def test_resolved_otherwise_reads_the_marker():
    assert resolved_otherwise({"exclude_newer": CUTOFF}, CUTOFF) == ""
    assert resolved_otherwise({"exclude_newer": None}, None) == ""
    assert resolved_otherwise({}, CUTOFF) == f"its dependencies were resolved with no release date, not as of {CUTOFF}"


def _dangling_python(path: Path) -> None:
    (path / "bin" / "python").unlink()
    (path / "bin" / "python").symlink_to(path / "gone" / "python3")


def _python_not_executable(path: Path) -> None:
    (path / "bin" / "python").unlink()
    (path / "bin" / "python").write_text("")


def _jax_deleted(path: Path) -> None:
    shutil.rmtree(path / "lib" / "python3.11" / "site-packages" / "jax")


def _half_made(path: Path) -> None:
    (path / READY_MARKER).unlink()  # as if an install was interrupted: everything there but the marker


@pytest.mark.parametrize("damage, why", [
    (_half_made, "half-made"),
    (_dangling_python, "damaged: bin/python is missing or a dangling link"),
    (_python_not_executable, "damaged: bin/python is not executable"),
    (_jax_deleted, "damaged: the jax package is missing"),
], ids=["half-made", "dangling-python", "python-not-executable", "jax-deleted"])
def test_a_half_made_or_damaged_venv_is_rebuilt_saying_why(tmp_path, monkeypatch, damage, why):
    """Each damage the reuse check looks for, and a venv without its ready marker, without a process
    (tests/integration/test_faults_integration.py rebuilds a damaged one for real: the same rebuild)."""
    refuse_to_build(monkeypatch)
    backend = VenvBackend(root=tmp_path, release_date=lambda _v: RELEASED)
    path = ready_venv(backend, CUTOFF)
    assert backend.prepare("0.4.28", Platform.CPU).facts["reused"] is True
    damage(path)
    said: list[str] = []
    with pytest.raises(Rebuilt):
        backend.prepare("0.4.28", Platform.CPU, said.append)
    assert [s for s in said if s.startswith("rebuilding")] == [f"rebuilding {path.name} ({why})"]
