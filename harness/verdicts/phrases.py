"""The sentences a verdict's reason is made of (pure): run numbers as a reader counts them, the new keys
of a module and where they were seen, fewer keys than the first run.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.comparison import dispatch_helper
from harness.core.jaxlog import Outcome
from harness.core.listing import entries
from harness.core.runs import RunRecord
from harness.core.comparison import Comparison
from harness.evidence.keys import counted, folder_entries, logged_keys, plural


def run_ranges(indices: Sequence[int]) -> str:
    """`2-4`, `2, 5-7`: run numbers as a reader counts them."""
    parts: list[str] = []
    ordered = sorted(indices)
    start = prev = ordered[0] if ordered else 0
    for i in ordered[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts) if ordered else ""


def new_key_phrase(comparison: Comparison, module: str) -> str:
    """`jit_f: a new key in each of runs 2-4`, `jit_f: 3 new keys in run 2`."""
    runs = comparison.runs_with_new(module)
    count = len(comparison.new_keys(module))
    where = f"run {runs[0]}" if len(runs) == 1 else f"runs {run_ranges(runs)}"
    if count == len(runs):
        text = f"a new key in {where}" if len(runs) == 1 else f"a new key in each of {where}"
    else:  # several keys in one run, or (overlapping runs) one key seen appearing while several ran
        text = f"{plural(count, 'new key')} in {where}"
    if module not in comparison.baseline:
        text += " (a module the first run did not compile)"
    return f"{module}: {text}"


def fewer_phrase(comparison: Comparison) -> str:
    run, by_module = next(iter(sorted(comparison.fewer.items())))
    module = max(sorted(by_module), key=lambda m: (len(by_module[m]), m == "jit_f"))
    missing = len(by_module[module])
    return (f"run {run} compiled fewer things than run {comparison.baseline_run} ({module}: "
            f"{plural(missing, 'key')} of {len(comparison.baseline.get(module, []))} not computed): "
            "the runs cannot be compared")


def _quoted(reason: str, limit: int = 120) -> str:
    return f'JAX: "{reason if len(reason) <= limit else reason[: limit - 1] + "…"}"'


def where_seen(comparison: Comparison, module: str, runs: Sequence[RunRecord]) -> str:
    """Where the new keys of `module` were seen: the cache folder, JAX's log, or both; and when they
    were never written, JAX's reason."""
    new = set(comparison.new_keys(module))
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = {k.key: k for k in logged_keys(counted(runs))}
    in_log = new & set(logged)
    if not in_log:
        return ""  # the listing's word alone, as without logs
    if new & on_disk:
        return " (on disk and in JAX's log)"
    refused = [logged[k].reason for k in sorted(in_log) if logged[k].outcome == Outcome.NOT_WRITTEN]
    return f" (in JAX's log only, never written; {_quoted(refused[0])})" if refused else " (in JAX's log only)"


def unserved_module(comparison: Comparison, compile_s: dict[str, float]) -> str | None:
    """Of the modules a later run compiled while their entry was on disk, the user's own function (not a
    dispatch helper where another exists), the largest by JAX's compile time, then jit_f."""
    modules = comparison.unserved_modules()
    own = [m for m in modules if not dispatch_helper(m)] or modules
    return max(own, key=lambda m: (compile_s.get(m, -1.0), m == "jit_f", m), default=None)


def unserved_phrase(comparison: Comparison, module: str, runs: Sequence[RunRecord]) -> str:
    """`jit_g: the entry run 1 wrote was on disk, yet each of runs 2-4 compiled the same key again instead
    of loading it (JAX could not read it back: "error: ..."; and 4 other modules)`."""
    later = comparison.runs_unserved(module)
    where = f"run {later[0]}" if len(later) == 1 else f"each of runs {run_ranges(later)}"
    keys = {k for r in later for k in comparison.unserved[r][module]}
    errors = sorted({k.read_error for r in runs if r.index in later and r.keys is not None
                     for k in r.keys.keys if k.key in keys and k.read_error})
    why = (f"JAX could not read it back: {_quoted(errors[0])[len('JAX: '):]}" if errors
           else "JAX logged no hit and no read error: the entry was gone or not found when the run looked")
    others = [m for m in comparison.unserved_modules() if m != module]
    more = f"; and {plural(len(others), 'other module')}" if others else ""
    entry = "the entry" if len(keys) == 1 else f"the {len(keys)} entries"
    return (f"{module}: {entry} run {comparison.baseline_run} wrote {'was' if len(keys) == 1 else 'were'} on "
            f"disk, yet {where} compiled the same key again instead of loading it ({why}{more})")


def _seen_loading(run: RunRecord, first: set[str]) -> bool:
    """The run's folder, watched whole as it ran, saw every entry of the first run's read: its hits were observed."""
    seen = run.seen
    return (bool(first) and seen is not None and not seen.lost and not seen.shared and not run.overlapped
            and first <= seen.read_keys)


def unobserved_hits_phrase(runs: Sequence[RunRecord], untrusted: dict[int, str]) -> str:
    """For a clean cell: the later runs whose hits JAX's log did not show (no key named, or a log that
    disagrees with the folder), so only their keys' agreement on disk was measured; "" when every later
    run's log showed its hits."""
    good = sorted(counted(runs), key=lambda r: r.index)
    baseline = {e.key for e in folder_entries(good[0])} if good else set()
    blind = [r for r in good[1:] if (r.keys is None or r.index in untrusted) and not _seen_loading(r, baseline)]
    if not blind:
        return ""
    which = f"run {blind[0].index}" if len(blind) == 1 else f"runs {run_ranges([r.index for r in blind])}"
    first, their = blind[0], "its" if len(blind) == 1 else "their"
    why = first.log_note if first.keys is None and first.log_note else (
        f"{their} JAX log named no key" if first.keys is None else f"{their} JAX log is not trusted")
    return (f"hits not observed in {which} ({why}): the cache folder shows no new key, not that the "
            f"entries were loaded")
