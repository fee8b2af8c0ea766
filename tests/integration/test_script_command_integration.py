"""A script run as its author runs it, on a real release (venv and docker): a script that exits 1 unless
it gets its argument and its variable, and a module started with `-m` from a package in a temporary folder."""

import json
import os

import pytest

from harness.cli import commands as cli
from harness.environments.docker import docker_available

pytestmark = pytest.mark.integration

VERSION = "0.4.31"
NEEDY = """\
import os, sys
import jax, jax.numpy as jnp
if sys.argv[1:] != ["--model", "tiny one"] or os.environ.get("MODEL_SIZE") != "it's small":
    print("usage: needy.py --model NAME (with MODEL_SIZE set)", sys.argv, file=sys.stderr)
    sys.exit(1)
assert "--xla_dump_hlo_as_text" in os.environ["XLA_FLAGS"] and jax.device_count() == 4
open("marker.txt").read()  # a file in its working folder
print(jax.jit(lambda x: x + 1)(jnp.ones(2)))
"""
MAIN = """\
import os, sys
import jax, jax.numpy as jnp
from pkg import helper
if sys.argv[1:] != ["--steps", "1"]:
    sys.exit(1)
print(helper.VALUE, jax.jit(lambda x: x * 3)(jnp.ones(2)))
"""


def check(argv, out, capsys):
    split = argv.index("--") if "--" in argv else len(argv)  # the harness's options go before `--`
    code = cli.main(["check", *argv[:split], "--out", str(out), "--quiet", "--versions", VERSION, "--runs", "2",
                     "--device-count", "4", *argv[split:]])
    _, err = capsys.readouterr()
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()] if out.exists() else [None]
    return code, err, run_dir


def backends():
    return ["venv", pytest.param("docker", marks=pytest.mark.docker)]


def _docker_or_skip(backend):
    if backend != "docker":
        return
    ok, reason = docker_available()
    if not ok:
        if os.environ.get("HARNESS_REQUIRE_DOCKER") == "1":
            pytest.fail(f"HARNESS_REQUIRE_DOCKER=1 but {reason}")
        pytest.skip(reason)


@pytest.mark.parametrize("backend", backends())
def test_a_script_that_needs_its_argument_and_its_variable(backend, tmp_path, capsys, write):
    _docker_or_skip(backend)
    script = write("code/needy.py", NEEDY)
    write("data/marker.txt", "here")
    base = [str(script), "--backend", backend]
    code, err, run_dir = check(base, tmp_path / "bare", capsys)
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert code == 1 and cell["verdict"] == "error" and "exit code 1" in cell["reason"]  # check fails on error

    code, err, run_dir = check([*base, "--env", "MODEL_SIZE=it's small", "--env", "XLA_FLAGS=--xla_dump_hlo_as_text",
                                "--cwd", str(tmp_path / "data"), "--", "--model", "tiny one"],
                               tmp_path / "given", capsys)
    assert code == 0, err
    document = json.loads((run_dir / "results.json").read_text())
    (cell,) = document["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["command"]["argv"] == [str(script.resolve()), "--model", "tiny one"]
    assert cell["command"]["cwd"] == str((tmp_path / "data").resolve())
    assert cell["command"]["env"] == {"MODEL_SIZE": "it's small",
                                      "XLA_FLAGS": "--xla_dump_hlo_as_text --xla_force_host_platform_device_count=4"}
    report = (run_dir / "report.md").read_text()
    assert "export MODEL_SIZE='it'\"'\"'s small'" in report
    assert "--env 'MODEL_SIZE=it'\"'\"'s small'" in report and "-- --model 'tiny one'" in report


@pytest.mark.parametrize("backend", backends())
def test_a_module_run_with_dash_m_from_its_package_folder(backend, tmp_path, capsys, write, monkeypatch):
    _docker_or_skip(backend)
    write("proj/pkg/__init__.py", "")
    write("proj/pkg/helper.py", "VALUE = 'helped'\n")
    write("proj/pkg/train.py", MAIN)
    monkeypatch.chdir(tmp_path / "proj")
    code, err, run_dir = check(["-m", "pkg.train", "--backend", backend, "--", "--steps", "1"], tmp_path / "r",
                               capsys)
    assert code == 0, err
    (cell,) = json.loads((run_dir / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert cell["command"]["argv"] == ["-m", "pkg.train", "--steps", "1"]
    log = (run_dir / cell["runs"][0]["log"]).read_text()
    assert "helped" in log
    assert "harness check -m pkg.train" in (run_dir / "report.md").read_text()
