"""The sentences a verdict's reason is made of (pure): run numbers as a reader counts them, the new keys
of a module and where they were seen, fewer keys than the first run.
"""

from __future__ import annotations

from typing import Sequence

from harness.core.jaxlog import Outcome
from harness.core.listing import entries
from harness.core.model import RunRecord
from harness.verdicts.keys import Comparison, _logged, _plural


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
        text = f"{_plural(count, 'new key')} in {where}"
    if module not in comparison.baseline:
        text += " (a module the first run did not compile)"
    return f"{module}: {text}"


def fewer_phrase(comparison: Comparison) -> str:
    run, by_module = next(iter(sorted(comparison.fewer.items())))
    module = max(sorted(by_module), key=lambda m: (len(by_module[m]), m == "jit_f"))
    missing = len(by_module[module])
    return (f"run {run} compiled fewer things than run {comparison.baseline_run} ({module}: "
            f"{_plural(missing, 'key')} of {len(comparison.baseline.get(module, []))} not computed): "
            "the runs cannot be compared")


def _quoted(reason: str, limit: int = 120) -> str:
    return f'JAX: "{reason if len(reason) <= limit else reason[: limit - 1] + "…"}"'


def where_seen(comparison: Comparison, module: str, runs: Sequence[RunRecord]) -> str:
    """Where the new keys of `module` were seen: the cache folder, JAX's log, or both; and when they
    were never written, JAX's reason."""
    new = set(comparison.new_keys(module))
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = {k.key: k for k in _logged([r for r in runs if r.ok])}
    in_log = new & set(logged)
    if not in_log:
        return ""  # the listing's word alone, as without logs
    if new & on_disk:
        return " (on disk and in JAX's log)"
    refused = [logged[k].reason for k in sorted(in_log) if logged[k].outcome == Outcome.NOT_WRITTEN]
    return f" (in JAX's log only, never written; {_quoted(refused[0])})" if refused else " (in JAX's log only)"
