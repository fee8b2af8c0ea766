"""Planted symbolic links in a results folder are never written, removed or emptied through (issue 49, 2):
`caches/<cell>` linked to another folder had every file of that folder deleted and replaced by cache entries
on --resume (exit 0); `.writer.holder` linked to a file had it overwritten, even when the resume then exited 2;
`reduced.py` linked in a reduce folder had its target overwritten. One rule (harness/core/files.py): the
folder's own parts are checked for links before anything is written, and every write, removal or emptying
there replaces a link or refuses it, never follows it."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from harness.cli import commands as cli
from harness.core.errors import UserError
from harness.core.files import open_fresh, refuse_links, remove_path, write_atomic
from harness.core.model import CellSpec
from harness.core.kinds import Platform
from harness.measure.sweep import fresh_folders
from harness.results.document import WRITER_HOLDER_FILE, lock_results_folder

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "smoke-run"


@pytest.fixture
def victim(tmp_path) -> Path:
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_text("precious\n")
    return folder


def contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


@pytest.fixture
def results(tmp_path) -> Path:
    folder = tmp_path / "results" / "run"
    shutil.copytree(FIXTURE, folder)
    return folder


@pytest.mark.parametrize("planted", ["caches/CELL", "caches", "logs", "logs/CELL", "evidence", ".writer.lock",
                                     WRITER_HOLDER_FILE, "results.json", "reduced.py", "logs/CELL/run-01.log"])
def test_a_resume_of_a_folder_with_a_planted_link_is_refused_before_anything_is_written(planted, results, victim,
                                                                                      capsys):
    slug = next(p.name for p in (results / "caches").iterdir()) if (results / "caches").is_dir() else "c"
    link = results / planted.replace("CELL", slug)
    if link.exists() or link.is_symlink():
        remove_path(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    target = victim / "precious.txt" if "." in link.name and not link.name.startswith("jax") else victim
    if planted == "results.json":  # read through (a read is no write): the same document, elsewhere
        target = victim / "results.json"
        shutil.copy(FIXTURE / "results.json", target)
    link.symlink_to(target)
    before = contents(victim)
    assert cli.main(["run", "configs/smoke.yaml", "--resume", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"harness: error: {results}: {link.relative_to(results)} is a symbolic link; "
                                        "the harness writes nothing through a link in a results folder (remove it)"]
    assert contents(victim) == before and link.is_symlink()


def test_the_writers_lock_refuses_a_planted_holder_before_writing_it(results, victim):
    (results / WRITER_HOLDER_FILE).unlink(missing_ok=True)
    (results / WRITER_HOLDER_FILE).symlink_to(victim / "precious.txt")
    with pytest.raises(UserError, match="is a symbolic link"):
        lock_results_folder(results)
    assert (victim / "precious.txt").read_text() == "precious\n"


def test_a_cells_folders_made_afresh_replace_a_link_and_leave_its_target(tmp_path, victim):
    spec = CellSpec("0.4.31", Platform.CPU, 8, None)
    (tmp_path / "caches").mkdir()
    (tmp_path / "caches" / spec.slug).symlink_to(victim)
    cache_dir, _ = fresh_folders(spec, tmp_path)
    assert not cache_dir.exists() and contents(victim) == {"precious.txt": "precious\n"}


def test_writes_replace_a_link_or_refuse_it_and_never_follow_it(tmp_path, victim):
    link = tmp_path / "reduced.py"
    link.symlink_to(victim / "precious.txt")
    write_atomic(link, "print(1)\n")  # reduce's reduced.py, the holder, results.json: the link is replaced
    assert not link.is_symlink() and link.read_text() == "print(1)\n"
    log = tmp_path / "run-01.log"
    log.symlink_to(victim / "precious.txt")
    with pytest.raises(OSError) as refused:
        open_fresh(log)
    assert refused.value.errno == errno.ELOOP
    remove_path(log)
    assert not log.is_symlink() and contents(victim) == {"precious.txt": "precious\n"}


def test_links_below_the_harness_own_parts_are_a_programs_or_a_copys_and_are_left(tmp_path, victim):
    """--vary script-path copies a project with its own links (logs/<cell>/vary-script-path/script/...):
    such a folder still resumes; a link among the folder's own parts does not."""
    copy = tmp_path / "logs" / "cell" / "vary-script-path" / "script" / "proj"
    copy.mkdir(parents=True)
    (copy / "data").symlink_to(victim)
    refuse_links(tmp_path)
    os.symlink(victim, tmp_path / "logs" / "cell" / "run.ir")
    with pytest.raises(UserError, match="logs/cell/run.ir is a symbolic link"):
        refuse_links(tmp_path)


def test_report_and_merge_refuse_a_folder_with_a_planted_link(results, victim, tmp_path, capsys):
    """`harness report` writes report.md and evidence/ into the folder; `merge` copies a shard's caches and
    logs (a link would bring its target's files into the merged folder)."""
    (results / "evidence").symlink_to(victim)
    assert cli.main(["report", str(results)]) == 2
    assert "evidence is a symbolic link" in capsys.readouterr().err
    assert cli.main(["merge", str(results), "--out", str(tmp_path / "merged")]) == 2
    assert "evidence is a symbolic link" in capsys.readouterr().err
    assert contents(victim) == {"precious.txt": "precious\n"} and not (tmp_path / "merged").exists()
