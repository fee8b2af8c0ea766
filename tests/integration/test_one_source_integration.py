"""One source for every output, on a real release (issue 47.5): `harness check --json --junit-xml` prints one
summary line, and --json's summary, its boundaries' line and the JUnit suite's summary say the same; a folder
the user gives the program (`--env JAX_COMPILATION_CACHE_DIR=DIR`) is honoured: the no-folder note goes, DIR
is never written, and the runs still measure in a fresh folder."""

import json
import xml.etree.ElementTree as ET

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

PROGRAM = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return x * 2 + 1


print(f(jnp.ones(4)))
"""


def test_every_output_says_one_line_and_a_users_own_folder_is_honoured(tmp_path, capsys, write):
    script = write("prog.py", PROGRAM)
    mine = tmp_path / "my-cache"
    code = cli.main(["check", str(script), "--versions", "0.4.31", "--runs", "2", "--quiet", "--out",
                     str(tmp_path / "r"), "--json", "--junit-xml", str(tmp_path / "junit.xml"),
                     "--env", f"JAX_COMPILATION_CACHE_DIR={mine}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    printed = err.rstrip().splitlines()
    line = summary["summary"]
    assert line in printed and line.startswith(summary["boundaries"]["line"])
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite.find("properties/property[@name='summary']").get("value") == line
    (cell,) = summary["cells"]
    assert cell["verdict"] == "clean", cell
    assert "sets no cache folder" not in cell["detail"] and not mine.exists()
    (folder,) = (tmp_path / "r").iterdir()
    assert "You set JAX_COMPILATION_CACHE_DIR for the program (--env)" in (folder / "report.md").read_text()
