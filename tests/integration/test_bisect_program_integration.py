"""`harness bisect --pytest` and `harness bisect -m MODULE` (issue 60.6) on real releases: a test (a module) that
lowers a set-ordered shard_map psum, as the seed's repro does (tests/fixtures/sm.py), reproduces on 0.4.28 and is
clean from 0.4.29; bisected as `harness check` runs it, the state replayed by its reproduce line."""

from __future__ import annotations

import json
import shlex

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

# The seed's program (tests/fixtures/sm.py) with no cache folder of its own and nothing printed: psum over two axis
# names, which 0.4.27 and 0.4.28 lower in a set's order (the hash seed's).
PSUM = ("from functools import partial\n"
        "import jax, jax.numpy as jnp\n"
        "from jax.sharding import Mesh, PartitionSpec as P\n"
        "from jax.experimental import mesh_utils\n"
        "from jax.experimental.shard_map import shard_map\n\n\n"
        "def grad_of_psum():\n"
        "    devices = mesh_utils.create_device_mesh((jax.device_count(), 1, 1, 1))\n"
        "    mesh = Mesh(devices, axis_names=('a', 'b', 'c', 'd'))\n"
        "    g = shard_map(lambda x: jax.lax.psum(jnp.sin(x), ('a', 'b')), mesh=mesh, in_specs=(P('a', 'b'),),\n"
        "                  out_specs=P(None, None))\n"
        "    a = jnp.arange(float(jax.device_count())).reshape(jax.device_count(), 1)\n"
        "    return jax.jit(jax.grad(lambda x: jnp.sum(g(x))))(a)\n")
RANGE = ["--versions", ">=0.4.28,<=0.4.29", "--runs", "4"]
FOUND = "regression present from the first measured release, 0.4.28 (no clean release before it); fixed in 0.4.29"


def bisected(argv, capsys, out):
    code = cli.main(["bisect", *RANGE, "--out", str(out), "-q", *argv])  # argv last: its `--` ends the options
    printed, err = capsys.readouterr()
    assert code == 0, err
    [folder] = [p for p in out.iterdir() if p.name.startswith("bisect-")]
    return printed, folder


def replayed(printed, capsys, folder):
    """The reproduce line, run again: the same answer from the sealed state, nothing measured again."""
    line = printed.strip().splitlines()[-1].removeprefix("Reproduce with: ").strip("`")
    before = json.loads((folder / "results.json").read_text())["bisect"]["steps"]
    assert cli.main(shlex.split(line)[1:]) == 0
    again = capsys.readouterr().out
    assert json.loads((folder / "results.json").read_text())["bisect"]["steps"] == before
    return line, again


def test_bisect_pytest_finds_the_fix_in_a_test_suite(tmp_path, capsys, write):
    write("suite/tests/test_psum.py", PSUM + "\n\ndef test_psum():\n    assert grad_of_psum().shape == (8, 1)\n")
    printed, folder = bisected(["--pytest", "tests/test_psum.py", "--cwd", str(tmp_path / "suite"), "--", "-q"],
                               capsys, tmp_path / "out")
    assert FOUND in printed, printed
    data = json.loads((folder / "results.json").read_text())
    assert data["config"]["module"] == "pytest" and data["config"]["args"] == ["tests/test_psum.py", "-q"]
    verdicts = {s["point"]: s["verdict"] for s in data["bisect"]["steps"]}
    assert verdicts == {"0.4.28": "reproduced", "0.4.29": "clean"}
    [moved] = [k for c in data["cells"] if c["spec"]["jax_version"] == "0.4.28"
               for k in c["runs"][0]["keys"]["keys"] if k["module"] == "jit__lambda_"]
    assert moved["tests"] == ["tests/test_psum.py::test_psum"]  # the key, tied to the test that compiled it
    line, again = replayed(printed, capsys, folder)
    assert line.startswith("harness bisect -m pytest --pytest ") and line.endswith("-- tests/test_psum.py -q")
    assert FOUND in again


def test_bisect_a_module_finds_the_fix(tmp_path, capsys, write):
    write("proj/psumpkg/__init__.py", "")
    write("proj/psumpkg/step.py", PSUM + "\n\nif __name__ == '__main__':\n    grad_of_psum()\n")
    printed, folder = bisected(["-m", "psumpkg.step", "--cwd", str(tmp_path / "proj")], capsys, tmp_path / "out")
    assert FOUND in printed, printed
    data = json.loads((folder / "results.json").read_text())
    assert data["config"]["module"] == "psumpkg.step"
    assert {s["point"]: s["verdict"] for s in data["bisect"]["steps"]} == {"0.4.28": "reproduced", "0.4.29": "clean"}
    line, again = replayed(printed, capsys, folder)
    assert line.startswith("harness bisect -m psumpkg.step ")
    assert FOUND in again
