"""A sweep under faults, with a fake backend (pure logic of the CLI's ending, no JAX): bad input found
late leaves no folder, a full disk keeps the cells saved before it, and says so in one line."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

import harness.cli.commands as cli
import harness.service as service
import harness.output.results_folder as results_folder
from harness.environments import BackendChoice
from harness.environments.base import Backend, Environment
from harness.core.errors import BackendUnavailable
from harness.core.runs import ProcessOutcome
from tests.fakes import FakeBackend

# Two cells (two meshes) of one version.
CONFIG = ("name: faults\nrepro: shard_map_grad\njax_versions: ['0.4.29']\nruns: 2\ndevice_count: 2\n"
          "meshes: [{shape: [2, 1], axis_names: [a, b]}, {shape: [1, 2], axis_names: [a, b]}]\n")


class WritesOneKey(Environment):
    """Every run writes the same cache entry: a clean cell."""

    def __init__(self, version: str):
        self.jax_version = version

    def run(self, program, env, cache_dir, log_path, timeout_s) -> ProcessOutcome:
        Path(log_path).write_text("ok\n")
        (Path(cache_dir) / ("jit_f-" + "1" * 64)).write_text("")
        return ProcessOutcome(0, 0.01)

    def describe(self):
        return {"backend": "fake", "python": "3.11"}


def local(**options) -> FakeBackend:
    """A local backend (the CLI asks it for its version, 0.4.29, instead of the package index) whose
    runs all write one key."""
    return FakeBackend(name="local", installed="0.4.29", default=WritesOneKey, **options)


@pytest.fixture
def sweep(monkeypatch, tmp_path, write):
    config = write("c.yaml", CONFIG)

    def run(backend: Backend, *extra: str) -> int:
        monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(backend, "test"))
        return cli.main(["run", str(config), "--backend", "local", "--seeds", "random", "--quiet",
                         "--out", str(tmp_path / "out"), *extra])
    return run


def test_a_backend_that_cannot_run_found_late_leaves_no_results_folder(sweep, tmp_path, capsys):
    code = sweep(local(failure=BackendUnavailable("--backend local: this interpreter has no jax")))
    err = capsys.readouterr().err
    assert code == 2 and err.strip().splitlines() == ["harness: error: --backend local: this interpreter has no jax"]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_full_disk_keeps_the_cells_saved_before_it_and_says_so_in_one_line(sweep, tmp_path, capsys,
                                                                            monkeypatch):
    real = results_folder.write_atomic
    writes = {"n": 0}

    def fills_up(path, text):
        writes["n"] += Path(path).name == "results.json"
        if writes["n"] > 2:  # written when the folder is made and after the first cell; then full
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, text)

    monkeypatch.setattr(results_folder, "write_atomic", fills_up)
    code = sweep(local())
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err  # the harness could not finish: its failure code
    assert err.strip().splitlines()[-1].startswith("harness: error: No space left on device"), err
    (folder,) = (tmp_path / "out").iterdir()
    saved = json.loads((folder / "results.json").read_text())
    assert saved["status"] == "running" and len(saved["cells"]) == 1  # as saved after the first cell



def test_a_full_disk_names_the_file_it_could_not_write(sweep, tmp_path, capsys, monkeypatch):
    """Issue 27, item 10: a write that fails on a full disk names no file itself (only open() does); the
    one line says which file could not be written, as docs/signals-and-concurrency.md promises."""
    import harness.core.files as files

    real_write, real_fsync = results_folder.write_atomic, files.os.fsync
    writes = {"n": 0}

    def full_fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")  # as the kernel says it: no file name

    def fills_up(path, text):
        writes["n"] += Path(path).name == "results.json"
        if writes["n"] > 2:
            monkeypatch.setattr(files.os, "fsync", full_fsync)
        try:
            real_write(path, text)
        finally:
            monkeypatch.setattr(files.os, "fsync", real_fsync)

    monkeypatch.setattr(results_folder, "write_atomic", fills_up)
    code = sweep(local())
    err = capsys.readouterr().err
    (folder,) = (tmp_path / "out").iterdir()
    assert code == 3 and err.strip().splitlines()[-1] == (
        f"harness: error: No space left on device ({folder / 'results.json'}); the results keep every cell "
        "saved before it"), err
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]  # the temporary file is gone
