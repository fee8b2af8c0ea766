"""What a run leaves is read within bounds, on a real release (issues 60.1, 61.5): a 2 MiB random constant in every
run's module is said by its size and digest (the check sat 12 minutes and more in the attribute pattern before),
and a named pipe in place of the run's recorder file or cache-settings record is one line in the row (the harness
blocked in open() before)."""

import json

import pytest

from harness.cli import commands as cli

pytestmark = pytest.mark.integration

VERSION = "0.10.2"

# The constant follows the hash seed (a str's hash seeds it), so its key is the hash seed's: reproduced, with its
# Evidence diffed (an unseeded constant is the program's own randomness: new input, whose diff is shorter).
BIG_CONSTANT = """\
import jax, numpy as np
c = np.random.default_rng(hash("constant") & 0xFFFFFFFF).random(262_144).astype(np.float32)
print(jax.jit(lambda x: x + c)(np.float32(1.0)).sum())
"""

PIPES = """\
import os
import jax, jax.numpy as jnp
jax.jit(lambda x: x * 2)(jnp.arange(4.0)).block_until_ready()
for name in ("HARNESS_RECORDER", "HARNESS_CACHE_RECORD"):
    if os.path.lexists(os.environ[name]):
        os.unlink(os.environ[name])
    os.mkfifo(os.environ[name])
"""


def test_a_2_mib_random_constant_is_said_by_its_size_and_digest(tmp_path, capsys, write):
    script = write("big_const.py", BIG_CONSTANT)
    assert cli.main(["check", str(script), "--versions", VERSION, "--runs", "2", "--quiet",
                     "--out", str(tmp_path / "r")]) == 1, capsys.readouterr().err
    (folder,) = (tmp_path / "r").iterdir()
    report = (folder / "report.md").read_text()
    assert "a 2.0 MiB constant differs (#sha256_" in report and len(report) < 100_000
    diff = (folder / "evidence" / "jax-0.10.2-cpu8-script.diff").read_text()
    assert max(len(line) for line in diff.splitlines()) < 1000


def test_pipes_in_place_of_the_recorder_and_the_settings_record_are_said(tmp_path, capsys, write):
    script = write("pipes.py", PIPES)
    assert cli.main(["check", str(script), "--versions", VERSION, "--runs", "2", "--quiet",
                     "--out", str(tmp_path / "r")]) == 0, capsys.readouterr().err
    (folder,) = (tmp_path / "r").iterdir()
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    assert cell["verdict"] == "clean"
    run = cell["runs"][0]
    assert "the recorder file is a named pipe, not a regular file: not read" in run["log_note"]
    assert "the cache-settings record is a named pipe, not a regular file: not read" in \
        run["script_cache"]["problems"]
