"""The cache folder watched by the harness itself as each run goes (harness/measure/folder_watch.py), weighed against
the runs' own accounts (harness/evidence/keys.py), and a planned run's folder of its own (harness/measure/own_folder.py).

A program can print JAX's lines and write the hook's records; it cannot rewrite what the kernel saw happen in the
folder: an entry written and deleted again within a run is a key it computed, a hit needs the entry read, and a miss
on an entry already on disk needs the entry written or deleted."""

import os
import subprocess
import sys

import pytest

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Verdict
from harness.core.runs import FolderSeen, RunRecord
from harness.evidence.keys import untrusted_logs
from harness.measure.folder_watch import watch_problem, watched
from harness.measure.own_folder import merge_back, prepare
from harness.verdicts.verdict import judge

pytestmark = pytest.mark.skipif(bool(watch_problem()), reason="inotify is not available here")

F1, F2, G1 = f"jit_f-{1:064x}", f"jit_f-{2:064x}", f"jit_g-{1:064x}"


def key(name: str, outcome: Outcome) -> LoggedKey:
    return LoggedKey(name.rsplit("-", 1)[0], name, outcome)


def run(index: int, new: list[str], logged: list[LoggedKey] | None, seen: FolderSeen | None = None) -> RunRecord:
    return RunRecord(index, index, 0, 0.5, new, keys=RunLog(logged) if logged is not None else None, seen=seen)


def first() -> RunRecord:
    written = [f"{F1}-cache", f"{F1}-atime", f"{G1}-cache", f"{G1}-atime"]
    return run(1, written, [key(F1, Outcome.WRITTEN), key(G1, Outcome.WRITTEN)], FolderSeen(written=written))


def test_the_watch_sees_a_write_deleted_again_a_read_and_a_deletion(tmp_path):
    old = tmp_path / f"{F1}-cache"
    old.write_bytes(b"entry")

    def program() -> None:  # another process, as a run's is
        code = (f"import pathlib; d = pathlib.Path({str(tmp_path)!r}); n = d / '{F2}-cache'; n.write_bytes(b'x');"
                f" n.unlink(); (d / '{F1}-cache').read_bytes(); (d / '{F1}-atime').write_bytes(b't')")
        subprocess.run([sys.executable, "-c", code], check=True)
    _, seen = watched(tmp_path, program)
    assert seen is not None and not seen.lost and not seen.shared
    assert seen.written_keys == {F2} and seen.read_keys == {F1} and seen.deleted_keys == {F2}
    assert f"{F1}-atime" in seen.written  # a hit's timestamp: no write of the entry


def test_entries_written_and_deleted_with_hits_printed_for_what_was_there_reproduce():
    """Issue 73, break 3: each later run deletes the entries it wrote, empties its recorder and prints JAX's hit line
    for every entry that was there. The folder saw the writes, and never saw run 1's jit_f entry read."""
    later = [run(i, [], [key(F1, Outcome.HIT), key(G1, Outcome.HIT)],
                 FolderSeen(written=[f"{F2}-cache", f"{F2}-atime"], read=[f"{G1}-cache"],
                            deleted=[f"{F2}-cache", f"{F2}-atime"])) for i in (2, 3)]
    runs = [first(), *later]
    judgement = judge(runs, expected_runs=3)
    assert judgement.verdict == Verdict.REPRODUCED, judgement.reason
    assert judgement.comparison.new[2] == {"jit_f": [F2]}
    assert "never saw read (" + F1 in untrusted_logs(runs)[2]
    # The same runs before the watch (no history): every key a hit, clean
    blind = [run(r.index, r.new_entries, r.keys.keys if r.keys else None) for r in runs]
    assert judge(blind, expected_runs=3).verdict == Verdict.CLEAN


def test_a_silenced_run_whose_written_entries_are_gone_is_judged_from_the_folder():
    """Entries deleted, stderr silenced, the recorder emptied (or run 1's replayed, not read): no account at all."""
    later = run(2, [], None, FolderSeen(written=[f"{F2}-cache"], deleted=[f"{F2}-cache"]))
    judgement = judge([first(), later], expected_runs=2)
    assert judgement.verdict == Verdict.REPRODUCED and judgement.comparison.new == {2: {"jit_f": [F2]}}


def test_a_printed_miss_and_write_of_an_entry_on_disk_that_the_folder_saw_only_read_is_no_miss():
    """Issue 73, break 4: a clean program prints `PERSISTENT COMPILATION CACHE MISS` and `Writing ...` for the key run
    1 left: the folder saw it read (JAX loaded it) and never written: the printed miss is not taken."""
    seen = FolderSeen(read=[f"{F1}-cache", f"{G1}-cache"], written=[f"{F1}-atime", f"{G1}-atime"])
    later = run(2, [], [key(F1, Outcome.WRITTEN), key(G1, Outcome.HIT)], seen)
    runs = [first(), later]
    judgement = judge(runs, expected_runs=2)
    assert judgement.verdict == Verdict.CLEAN, judgement.reason
    assert "never saw written (" + F1 in untrusted_logs(runs)[2]
    assert "run 2: it logged compiling or writing 1 key already in the cache folder" in judgement.reason
    assert "hits not observed" not in judgement.reason  # the folder saw them read
    # An entry the program spoils (written in place) or removes, then compiled again: a miss the folder shows
    for touched in (FolderSeen(read=[f"{F1}-cache"], written=[f"{F1}-cache"]), FolderSeen(deleted=[f"{F1}-cache"])):
        spoiled = run(2, [], [key(F1, Outcome.WRITTEN), key(G1, Outcome.HIT)],
                      FolderSeen(touched.written, [*touched.read, f"{G1}-cache"], touched.deleted))
        assert judge([first(), spoiled], expected_runs=2).verdict == Verdict.REPRODUCED


def test_reads_of_a_child_with_no_account_are_the_run_s_keys():
    """A child started with `python -I` (no hook, no recorder) loads run 1's jit_g: the folder saw it read, so the
    run did not compute fewer things than run 1 (`unsupported`, before)."""
    child_wrote = FolderSeen(written=[f"{G1}-cache"])
    one = run(1, [f"{F1}-cache", f"{G1}-cache"], [key(F1, Outcome.WRITTEN)], child_wrote)
    two = run(2, [], [key(F1, Outcome.HIT)], FolderSeen(read=[f"{F1}-cache", f"{G1}-cache"]))
    judgement = judge([one, two], expected_runs=2)
    assert judgement.verdict == Verdict.CLEAN, judgement.reason
    assert judge([one, run(2, [], [key(F1, Outcome.HIT)])], expected_runs=2).verdict != Verdict.CLEAN


def test_a_history_shared_with_another_run_or_not_whole_outvotes_nothing():
    later = run(2, [], [key(F1, Outcome.HIT), key(G1, Outcome.HIT)], FolderSeen(lost=True))
    assert 2 not in untrusted_logs([first(), later])
    assert judge([first(), later], expected_runs=2).verdict == Verdict.CLEAN


def test_a_run_s_own_folder_holds_the_cell_s_entries_and_its_changes_go_back(tmp_path):
    cell, own = tmp_path / "cell", tmp_path / "cell.own-run-03"
    cell.mkdir()
    for name in ("kept", "deleted", "replaced", "in-place"):
        (cell / name).write_text(name)
    given = prepare(cell, own)
    assert sorted(p.name for p in own.iterdir()) == ["deleted", "in-place", "kept", "replaced"]
    (own / "new").write_text("mine")
    (own / "deleted").unlink()
    (own / "tmp").write_text("other")
    os.replace(own / "tmp", own / "replaced")
    with open(own / "in-place", "a") as out:
        out.write("+")
    (cell / "beside").write_text("another run's")  # put there meanwhile by a run beside it
    assert merge_back(own, cell, given) == ["new"]
    assert {p.name: p.read_text() for p in cell.iterdir()} == {
        "kept": "kept", "replaced": "other", "in-place": "in-place+", "new": "mine", "beside": "another run's"}
    assert not own.exists()


def test_jax_s_temporary_file_while_it_writes_an_entry_is_no_key():
    """Up to 0.4.30 JAX writes `_temp_<module>-<hash>` and renames it to the entry's name: not a key nobody named
    (examples/unreadable_entries.py read `clean` on 0.4.28, every log untrusted)."""
    written = [f"_temp_{F1}", F1]
    one = run(1, [F1], [key(F1, Outcome.WRITTEN)], FolderSeen(written=written, deleted=[f"_temp_{F1}"]))
    two = run(2, [], [key(F1, Outcome.HIT)], FolderSeen(read=[F1]))
    assert untrusted_logs([one, two]) == {}
    assert judge([one, two], expected_runs=2).verdict == Verdict.CLEAN
