"""Run 2 beside run 1 (pure): its keys compared with run 1's entries, as a run after run 1 in the cell's folder
would have found them (issue 51, item 7).

Run 2 runs at the same time as run 1, in an empty folder of its own at the cell folder's path (the path is in
every key from JAX 0.4.36 until 0.11.0), so nothing is served to it: it compiles and writes every key it
computes. JAX's file names are its keys, so what it would have met in the cell's folder is known from the keys:
a key run 1 wrote (an entry run 1 left in the cell's folder) is a hit there; a key run 1 computed and did not
write (under the compile-time threshold) is compiled there too, as it was; a key run 1 never computed is a miss,
its entry the one it would have added. That is a comparison of keys, not a measured hit: whether an entry can
be read back and served (`not served`) only the runs after it measure, in the cell's folder
(harness/measure/beside.py makes a cell pair its first two runs only where runs follow them).
"""

from __future__ import annotations

from harness.core.jaxlog import LoggedKey, Outcome
from harness.core.listing import entries, parse_name
from harness.core.records import replace
from harness.core.runs import ComparedByKey, RunRecord
from harness.evidence.keys import counted


def written_keys(first: RunRecord) -> frozenset[str]:
    """The keys whose entries run 1 left in the cell's folder (the folder's word: entries that appeared while it
    ran, alone in that folder), what a run after it there would have found."""
    return frozenset(e.key for e in entries(first.new_entries))


def _as_hit(key: LoggedKey) -> LoggedKey:
    """A key run 1 wrote, as a run after it would have logged it in the cell's folder: a hit, nothing compiled."""
    return replace(key, outcome=Outcome.HIT, reason="", compile_time_s=None, read_error="")


def compared_by_key(run: RunRecord, first: RunRecord, own_entries: list[str], folder: str) -> RunRecord:
    """Run 2's record as compared with run 1's entries: each key run 1 wrote a hit (`compared_by_key.hits` of
    them), every other key as it was; `new_entries` the files of its own folder (`own_entries`: those that
    appeared while it ran) whose key run 1 did not write, the entries it would have added to the cell's folder."""
    wrote = written_keys(first)
    hits = 0
    keys = run.keys
    if keys is not None:
        compared = []
        for key in keys.keys:
            if key.key in wrote:
                compared.append(_as_hit(key))
                hits += 1
            else:
                compared.append(key)
        keys = replace(keys, keys=compared)
    added = sorted(name for name in own_entries if name not in first.new_entries
                   and ((entry := parse_name(name)) is None or entry.key not in wrote))
    return replace(run, keys=keys, new_entries=added,
                   compared_by_key=ComparedByKey(baseline=first.index, folder=folder, hits=hits))


def why_not_compared(first: RunRecord | None, first_ran_again: bool, beside: RunRecord | None = None) -> str:
    """Why run 2's keys cannot be compared with run 1's entries (run 2 is then run again in the cell's folder, as
    it would have been without the pairing), or "" when they can. `beside`: run 2 as it ran; a pytest run 1 that ran
    to its end with a test failing in it and in run 2 while another passed in both counts as a run (keys.counted)."""
    if first is None:
        return "run 1 did not end with a record"
    if first_ran_again:  # its first attempt's entries were removed: run 2 ran beside a run that does not count
        return "run 1 ran again (its script set its own cache folder after its first compilation)"
    counts = beside is not None and any(r is first for r in counted([first, beside]))
    if not first.ok and not counts:  # no baseline in the cell's folder: run 2 may be the first that counts
        return "run 1 failed"
    return ""


def compared_phrase(runs: list[RunRecord]) -> str:
    """The verdict's words for a run compared by key: `run 2 ran beside run 1 in an empty folder of its own:
    its keys were compared with run 1's entries, not served (runs 3-6 were served from the cell's folder)`, the
    runs after it named where any were made; empty when no run was compared so."""
    compared = [r for r in runs if r.compared_by_key is not None]
    if not compared:
        return ""
    run = compared[0]
    assert run.compared_by_key is not None
    later = [r for r in runs if r.compared_by_key is None and r.index != run.compared_by_key.baseline]
    served = _runs_named(sorted(r.index for r in later if not r.in_moved_folder), "served from the cell's folder")
    moved = _runs_named(sorted(r.index for r in later if r.in_moved_folder),
                        "served from a copy of it at another path (the moved folder)")
    where = f" ({'; '.join(part for part in (served, moved) if part)})" if served or moved else ""
    return (f"run {run.index} ran beside run {run.compared_by_key.baseline} in an empty folder of its own: its keys "
            f"were compared with run {run.compared_by_key.baseline}'s entries, not served{where}")


def _runs_named(indices: list[int], what: str) -> str:
    """`runs 4-6 were <what>`, `runs 3, 5 were ...`, `run 3 was ...`; "" for none."""
    if not indices:
        return ""
    if len(indices) == 1:
        return f"run {indices[0]} was {what}"
    contiguous = indices == list(range(indices[0], indices[-1] + 1))
    named = f"{indices[0]}-{indices[-1]}" if contiguous else ", ".join(map(str, indices))
    return f"runs {named} were {what}"
