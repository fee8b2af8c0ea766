"""Programs that write odd files, print without end or close their pipes, against real runs of a real
JAX release (issue 27): each leaves a verdict, a report and nothing lost."""

import json

import pytest

from harness import cli

pytestmark = pytest.mark.integration

VERSION = "0.4.31"

ODD_FILE_NAME = """\
import os
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
folder = os.environ["JAX_COMPILATION_CACHE_DIR"].encode()
open(os.path.join(folder, b"odd-\\xff\\xfe-name"), "wb").close()  # not UTF-8
"""


def test_a_file_name_that_is_not_utf8_in_the_cache_folder(tmp_path, capsys, write):
    script = write("odd.py", ODD_FILE_NAME)
    assert cli.main(["check", str(script), "--versions", VERSION, "--runs", "2", "--quiet",
                     "--out", str(tmp_path / "r")]) == 0, capsys.readouterr().err
    (folder,) = (tmp_path / "r").iterdir()
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean" and "odd-\\xff\\xfe-name" in cell["listing"]
    assert "odd-\\xff\\xfe-name" in (folder / "report.md").read_text()
    assert cli.main(["report", str(folder)]) == 0
