"""`clean` means the later fresh processes loaded the entries (issue 47, item 1), on real releases: a program
whose entries cannot be read back, or that empties its folder before compiling, computes the same keys in
every run and compiles them all again. It used to read `clean`, exit 0, beside "4 of 4 modules missed"."""

from pathlib import Path

import pytest

from tests.sweeps import check

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).parents[2] / "examples"
SILENT = """\
import logging
logging.disable(logging.WARNING)  # JAX's debug log goes nowhere, as far as the program can tell

import jax
import jax.numpy as jnp

print(jax.jit(lambda x: x * 2)(jnp.ones(4)))
"""


@pytest.mark.parametrize("version", ["0.4.28", "0.4.31", "0.10.2"])
def test_entries_that_cannot_be_read_back_are_a_miss(tmp_path, capsys, version):
    swept = check([str(EXAMPLES / "unreadable_entries.py"), "--versions", version, "--runs", "3"], tmp_path, capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert "wrote was on disk, yet run 2 compiled the same key again instead of loading it" in cell["reason"]
    assert 'JAX could not read it back: "error: Error -3 while decompressing data' in cell["reason"]
    assert len(cell["runs"]) == 2  # a miss is certain at once: the cell stops
    assert "compiled again" in (swept.run_dir / "table.md").read_text()


def test_a_program_that_empties_its_folder_before_compiling_is_a_miss(tmp_path, capsys):
    swept = check([str(EXAMPLES / "empties_its_cache.py"), "--versions", "0.4.31", "--runs", "3"], tmp_path, capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "reproduced", cell["reason"]
    assert cell["reason"].startswith("jit_f: the entry run 1 wrote was on disk, yet run 2 compiled the same key")
    assert "JAX logged no hit and no read error" in cell["reason"]


def test_a_program_that_silences_jax_s_log_is_still_seen_to_hit(tmp_path, capsys):
    """JAX's messages are read in the process (the start-up hook's recorder), not from stderr: a program that
    disables logging before importing JAX is measured all the same. Before the recorder, its row ended "hits not
    observed in runs 2-3"; now the later runs' hits are in the log the harness read."""
    script = tmp_path / "silent.py"
    script.write_text(SILENT)
    swept = check([str(script), "--versions", "0.4.31", "--runs", "3"], tmp_path / "r", capsys)
    (cell,) = swept.data["cells"]
    assert cell["verdict"] == "clean", cell["reason"]
    assert "hits not observed" not in cell["reason"]
    for run in cell["runs"][1:]:
        outcomes = {key["outcome"] for key in (run.get("keys") or {}).get("keys", [])}
        assert outcomes == {"hit"}, run