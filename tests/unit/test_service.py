"""The application service through `harness run`: what a sweep keeps and says when an environment
cannot be made, on Ctrl-C and on a failure of the harness, and with an interpreter of another JAX.
A fake backend and a fake index: no venvs, no JAX, no network."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest

from harness import service
from harness.cli import commands as cli
from harness.environments import BackendChoice
from harness.environments.local import LocalBackend
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.kinds import Platform, ThresholdMode
from harness.core.factors import Factor
from harness.inputs.config import load_config
from tests.fakes import INDEX, FakeBackend, ScriptedEnvironment


@pytest.fixture
def backend(monkeypatch):
    fake = FakeBackend({})
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(fake, "test"))
    return fake


def sweep(argv, tmp_path, capsys):
    code = cli.main(["run", *argv, "--seeds", "random", "--out", str(tmp_path / "out"), "-q"])
    out, err = capsys.readouterr()
    (folder,) = (tmp_path / "out").iterdir()
    return code, json.loads((folder / "results.json").read_text()), out, err


def test_an_environment_failure_is_remembered_for_every_mesh_of_that_version(backend, tmp_path, capsys, write):
    config = write("two-meshes.yaml", "name: two\nrepro: shard_map_grad\njax_versions: ['0.4.28', '0.4.29']\n"
                                      "meshes:\n  - {shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}\n"
                                      "  - {shape: [4, 2, 1, 1], axis_names: [a, b, c, d]}\nruns: 2\n")
    backend.plan["0.4.28"] = EnvironmentUnavailable("no wheels for this Python", log_tail="pip said no")
    code, data, _, _ = sweep([str(config)], tmp_path, capsys)
    assert code == 0 and data["status"] == "complete"
    assert backend.prepared == ["0.4.28", "0.4.29"]  # asked once per version, not once per mesh
    cells = {(c["spec"]["jax_version"], tuple(c["spec"]["mesh"]["shape"])): c for c in data["cells"]}
    for shape in ((8, 1, 1, 1), (4, 2, 1, 1)):
        failed = cells[("0.4.28", shape)]
        assert failed["verdict"] == "error" and failed.get("runs", []) == []  # no run: nothing written
        assert failed["reason"] == "environment: no wheels for this Python" and failed["log_tail"] == "pip said no"
        assert cells[("0.4.29", shape)]["verdict"] == "clean"


def test_ctrl_c_keeps_what_was_measured_and_prints_the_resume_command(backend, tmp_path, capsys):
    backend.plan["0.4.29"] = KeyboardInterrupt()
    code, data, out, err = sweep(["configs/smoke.yaml", "--runs", "2"], tmp_path, capsys)
    assert code == 130 and out == ""
    assert data["status"] == "interrupted" and data["finished"]
    assert [c["spec"]["jax_version"] for c in data["cells"]] == ["0.4.28"]
    (folder,) = (tmp_path / "out").iterdir()
    # (0.4.29's environment was being made while 0.4.28's first run went: that cell was cut short)
    assert (f"interrupted: 0 cell(s) kept in {folder / 'results.json'}; 0.4.28 cut short (its finished runs kept "
            "to read; measured again on resume); no run started after it") in err
    resume = shlex.split(err.split("resume with: ", 1)[1].strip())
    assert resume == ["harness", "run", "configs/smoke.yaml", "--runs", "2", "--seeds", "random", "--quiet",
                      "--resume", str(folder)]


class InterruptedOnRun(ScriptedEnvironment):
    """Clean runs, until Ctrl-C arrives during run number `at`."""

    def __init__(self, at):
        super().__init__(key_for=lambda seed: 1)
        self.at, self.started = at, 0

    def run(self, program, env, cache_dir, log_path, timeout_s):
        self.started += 1
        if self.started == self.at:
            raise KeyboardInterrupt
        return super().run(program, env, cache_dir, log_path, timeout_s)


def test_ctrl_c_inside_a_cell_saves_the_runs_it_finished(backend, tmp_path, capsys):
    backend.plan["0.4.29"] = InterruptedOnRun(3)
    code, data, _, _ = sweep(["configs/smoke.yaml", "--runs", "4", "--jobs", "1"], tmp_path, capsys)
    assert code == 130 and data["status"] == "interrupted"
    cut = data["cells"][-1]
    assert cut["spec"]["jax_version"] == "0.4.29" and cut["interrupted"] is True
    assert [r["index"] for r in cut["runs"]] == [1, 2] and cut["reason"] == "interrupted after 2 of 4 runs"
    assert len(cut["seeds"]["seeds"]) == 4  # the plan is recorded with the partial cell too


def test_a_failure_of_the_harness_says_failed_in_the_results_and_exits_3(backend, tmp_path, capsys):
    backend.plan["0.4.29"] = RuntimeError("a bug")
    code, data, _, err = sweep(["configs/smoke.yaml", "--runs", "2"], tmp_path, capsys)
    assert code == 3 and "RuntimeError: a bug" in err  # the harness broke, not JAX: not a regression's 1
    assert data["status"] == "failed" and [c["spec"]["jax_version"] for c in data["cells"]] == ["0.4.28"]


@pytest.fixture
def python_with_jax_0_4_30(tmp_path):
    """An 'interpreter' that answers the version probe as one with jax 0.4.30 would."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\necho '{\"python\": \"3.11.7\", \"jax\": \"0.4.30\", \"jaxlib\": \"0.4.30\", "
                    "\"numpy\": \"1.26.4\"}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_local_backend_refuses_another_version(python_with_jax_0_4_30):
    backend = LocalBackend(python_with_jax_0_4_30)
    assert backend.installed_version() == "0.4.30"
    with pytest.raises(EnvironmentUnavailable, match="the local interpreter has jax 0.4.30, not 0.4.28"):
        backend.prepare("0.4.28", Platform.CPU)
    assert backend.prepare("0.4.30", Platform.CPU).describe()["jax"] == "0.4.30"


def test_a_sweep_with_the_local_backend_names_the_version_to_pass(python_with_jax_0_4_30, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(["run", "configs/smoke.yaml", "--backend", "local", "--python", python_with_jax_0_4_30,
                     "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1] == ("harness: error: configs/smoke.yaml: jax_versions: the local interpreter has "
                                     "jax 0.4.30, which 0.4.28, 0.4.29 does not include (pass --versions 0.4.30)")
    assert not out.exists()


def test_every_measuring_command_opens_with_the_options_replacements_of_the_config(backend):
    config = load_config(Path("configs/smoke.yaml"))
    opened = service.measurement.open(config, service.MeasureOptions(cache_thresholds=ThresholdMode.SCRIPT))
    assert opened.config.cache_thresholds == ThresholdMode.SCRIPT and opened.backend is backend
    assert opened.versions(("0.4.28",), None) == ["0.4.28"]
    with pytest.raises(UserError, match="--processes 2: the built-in repro"):  # checked as the key is
        service.measurement.open(config, service.MeasureOptions(processes=2, vary=(Factor.CWD,)))


class Quiet:
    def say(self, message):
        pass


def test_fingerprint_runs_with_the_cache_thresholds_it_was_given(backend, monkeypatch, tmp_path):
    """--cache-thresholds is a fingerprint option: its runs take it (they ran with the config's before)."""
    measured = []

    def runner(environment, config, runs):
        measured.append(config.cache_thresholds)
        raise KeyboardInterrupt  # the config is what this test reads; no run is needed

    monkeypatch.setattr(service.fingerprinting, "cell_runner", runner)
    config = load_config(Path("configs/smoke.yaml"))
    options = service.FingerprintOptions(cache_thresholds=ThresholdMode.SCRIPT, out=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        service.fingerprint(config, options, Quiet())
    assert measured == [ThresholdMode.SCRIPT]
