"""Result files: atomic, readable by others, host facts not overwritten, tables in version order."""

import os
import stat

from harness.model import CellResult, CellSpec, Platform, Verdict
from harness.files import write_atomic
from harness.results import host_facts
from harness.table import render


def test_write_atomic_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "results.json"
        write_atomic(path, "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left


def test_backend_facts_do_not_overwrite_the_hosts():
    facts = host_facts({"backend": "docker", "python": "3.11", "docker_version": "20.10"})
    assert facts["python"].count(".") == 2  # the host's full version, e.g. 3.11.7
    assert facts["backend_python"] == "3.11" and facts["docker_version"] == "20.10"


def test_table_rows_in_version_order():
    cells = [CellResult(CellSpec(v, Platform.CPU, 8, None), Verdict.CLEAN, {})
             for v in ("0.4.9", "0.4.31", "0.4.10", "0.4.27")]
    text = render(cells)
    order = [line.split("|")[1].strip() for line in text.splitlines()[2:]]
    assert order == ["0.4.9", "0.4.10", "0.4.27", "0.4.31"]
