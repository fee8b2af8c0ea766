"""Programs that write odd files, print without end or close their pipes, against real runs of a real
JAX release (issue 27): each leaves a verdict, a report and nothing lost."""

import json

import pytest

from harness.cli import commands as cli
from tests.helpers import outside_fences, unescaped_pipes

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
    assert "odd-\\xff\\xfe-name" in (folder / "evidence" / "listings.md").read_text()  # the listing, beside report.md
    assert cli.main(["report", str(folder)]) == 0


@pytest.mark.parametrize("lines", [3, 9])
def test_a_closed_progress_pipe_stops_the_printing_not_the_sweep(tmp_path, lines):
    """`harness check ... 2>&1 | head -N`: the sweep finishes, saves every run and exits 0."""
    import subprocess
    import sys

    out = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "check", "examples/stable_script.py", "--versions",
                             VERSION, "--runs", "3", "--all-runs", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for _ in range(lines):
        proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=300) == 0
    (folder,) = out.iterdir()
    data = json.loads((folder / "results.json").read_text())
    assert data["status"] == "complete"
    (cell,) = data["cells"]
    assert cell["verdict"] == "clean" and len(cell["runs"]) == 3
    assert (folder / "report.md").is_file()


PLANTED_NAMES = """\
import os, random
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
folder = os.environ["JAX_COMPILATION_CACHE_DIR"]
digest = "%064x" % random.getrandbits(256)  # a new "key" in every run: this module is the one that moves
open(os.path.join(folder, "jit_a|b|c<img src=x>```<!-- -" + digest + "-cache"), "w").close()
"""


def test_file_names_a_program_plants_cannot_inject_markdown(tmp_path, capsys, write):
    """Issue 27, item 5: the planted module name is the cell's finding, shown as text, never as HTML."""

    script = write("planted.py", PLANTED_NAMES)
    assert cli.main(["check", str(script), "--versions", VERSION, "--runs", "3", "--quiet",
                     "--out", str(tmp_path / "r")]) == 1, capsys.readouterr().err  # reproduced: check fails
    (folder,) = (tmp_path / "r").iterdir()
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    assert cell["verdict"] == "reproduced" and "jit_a|b|c<img src=x>```<!-- " in cell["keys"]
    for name in ("report.md", "table.md"):
        text = (folder / name).read_text()
        markdown = outside_fences(text)
        assert "<img" not in markdown and "<!--" not in markdown, name
        header, _, row = [line for line in text.splitlines() if line.startswith("|")][:3]
        assert unescaped_pipes(row) == unescaped_pipes(header), row


THREADS = """\
import threading
import jax, jax.numpy as jnp

functions = []
for i in range(12):
    def f(x, i=i):
        return x * (i + 1) + i
    f.__name__ = f"fn{i}"
    functions.append(jax.jit(f))
start = threading.Barrier(12)

def warm_up(i):
    start.wait()  # all at once: their cache messages interleave
    functions[i](jnp.ones(4)).block_until_ready()

threads = [threading.Thread(target=warm_up, args=(i,)) for i in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_twelve_threads_compiling_at_once_read_clean(tmp_path, capsys, write, version):
    """Issue 61 item 1: a deterministic concurrent jit warm-up is clean; each compilation's messages are read
    apart (by thread), so no key is made of another thread's running hash."""
    script = write("threads.py", THREADS)
    assert cli.main(["check", str(script), "--versions", version, "--runs", "3", "--quiet",
                     "--out", str(tmp_path / "r")]) == 0, capsys.readouterr().err
    (folder,) = (tmp_path / "r").iterdir()
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert all(len(run["keys"]["keys"]) == 14 for run in cell["runs"])
