"""Where a run's lowered module is on disk: the built-in repro prints it into the run's log; a user's
script gets it from JAX's own IR dump (`JAX_DUMP_IR_TO`, set for each run) in the folder beside the log,
one file per compilation (a function compiled at two shapes has two)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.core.comparison import Comparison
from harness.evidence.keys import cell_comparison, counted, logs_complete
from harness.core.model import CellResult
from harness.core.runs import RunRecord
from harness.core import recorder
from harness.core.bounded_read import Bounded, read_bounded, size_words
from harness.core.ir_lines import condense
from harness.core.ir_results import paired_in_order
from harness.core.ir_names import extract_lowered
from harness.core.jaxlog import LoggedKey
from harness.core.kinds import NothingCached
from harness.evidence.not_cached import (callback_sites, not_cached_modules, recorded_sites, refusal_seconds,
                                         short_site)
from harness.core.findings import RankSplit
from harness.evidence.misses import Category, suite_findings, types_label
from harness.report.evidence import (Evidence, MissingEvidence, Seeds, compare_ranks, compare_runs, counterpart,
                                     key_seeds, module_seeds, new_texts)
from harness.inputs.process_variables import ir_dump_dir

_DUMP_RE = re.compile(r"^jax_ir(?P<n>\d+)_(?P<module>.+)_compile\.mlir$")
# A module's text is read up to this (a function that closes over a model's weights dumps them): past it, its start.
MODULE_MAX_BYTES = 256 << 20
LOG_MAX_BYTES = 64 << 20  # a run's log, read for the module the built-in repro printed into it
MAX_DUMPS = 1000  # compilations of one module read from a run's dump (a function compiled at more shapes: its first)
DUMPS_TOTAL_BYTES = 512 << 20  # and at most this much of them in all (condensed, as kept)


def lowered_texts(results_dir: Path, run: RunRecord, module: str) -> list[str]:
    """Each compilation of `module` in `run`, in the order it compiled them, condensed (a long constant as its
    size and digest: harness/core/ir_lines.py); empty when none was kept. Each file is read within bounds: one
    that is not a regular file (a pipe, a folder, a link put there) is left out."""
    if not run.log:
        return []
    log = results_dir / run.log
    dumped = _from_dump(ir_dump_dir(log), module)
    if dumped:
        return dumped
    found = read_bounded(log, LOG_MAX_BYTES)
    printed = extract_lowered(found.text()) if found.read else None
    return [condense(printed)] if printed is not None else []


def _module_text(found: Bounded, limit: int) -> str | None:
    if not found.read:
        return None
    text = condense(found.text())
    if found.capped:  # said in the module itself, so a diff of two cut modules shows it
        text += f"\n// [the harness read the first {size_words(limit)} of {size_words(found.size)}]\n"
    return text


def _from_dump(folder: Path, module: str) -> list[str]:
    # JAX names dumps `jax_ir<counter>_<module>_compile.mlir`: one per compilation, counted in order.
    safe = re.sub(r"[^\w.)( -]", "", module)
    if folder.is_symlink():
        return []  # the run's own folder only: a link put in its place is not followed
    try:
        found = [(int(m["n"]), p) for p in folder.iterdir()
                 if (m := _DUMP_RE.match(p.name)) and m["module"] == safe]
    except OSError:
        return []
    texts: list[str] = []
    left = DUMPS_TOTAL_BYTES  # read in all (1,000 sparse dumps of a module, each read to its bound: 256 GB)
    for _, path in sorted(found)[:MAX_DUMPS]:
        if left <= 0:
            break
        limit = min(MODULE_MAX_BYTES, left)
        read = read_bounded(path, limit)
        left -= len(read.data)  # what was read, kept or not
        text = _module_text(read, limit)
        if text is not None:
            texts.append(text)
    return texts


def uncached_facts(results_dir: Path, cell: CellResult) -> tuple[dict[str, str], dict[str, float]]:
    """A `not cached` cell's modules as its runs' files show them (harness/verdicts/finish.py: UncachedReader):
    module -> the line that put a host callback into it (the first run's lowered module that has one, its path
    left relative to the program's folder), and module -> seconds per later start where JAX logged no compile time
    (the recorder's timestamps between its miss and its refusal, the mean over the later runs that say)."""
    modules = not_cached_modules(cell.runs)
    good = sorted(counted(cell.runs), key=lambda r: r.index)  # a pytest run beside a failing test counts too
    cwd = cell.command.cwd if cell.command is not None else ""
    sites: dict[str, str] = {}
    wanted = {m.module for m in modules if m.why == NothingCached.HOST_CALLBACKS}
    for run in good if wanted else []:  # the recorder's record of each callback API call: the call's own stack
        recording = recorder.read(recorder.recorder_path(results_dir / run.log)) if run.log else None
        for module, site in _recorded_sites(recording).items():
            if module in wanted and module not in sites:
                sites[module] = short_site(site, cwd)
        if wanted <= set(sites):
            break
    for m in modules:
        if m.why != NothingCached.HOST_CALLBACKS or m.module in sites:
            continue
        for run in good:  # else the module's own locations in its dump
            found = next((s for text in lowered_texts(results_dir, run, m.module) for s in callback_sites(text)), "")
            if found:
                sites[m.module] = short_site(found, cwd)
                break
    untimed = [m.module for m in modules if m.seconds is None]
    per_run: dict[str, list[float]] = {}
    for run in good[1:] if untimed else []:
        recording = recorder.read(recorder.recorder_path(results_dir / run.log)) if run.log else None
        if recording is None:
            continue
        timed = refusal_seconds((msg.time, msg.message) for msg in recording.messages)
        for module in untimed:
            if module in timed:
                per_run.setdefault(module, []).append(timed[module])
    return sites, {m: round(sum(s) / len(s), 3) for m, s in per_run.items()}


def _recorded_sites(recording: recorder.Recording | None) -> dict[str, str]:
    """module -> its callback's site, each thread's messages read in order (recorded_sites)."""
    if recording is None:
        return {}
    by_thread: dict[tuple[int, int | None], list[str]] = {}
    for m in recording.messages:
        by_thread.setdefault((m.pid, m.thread), []).append(m.message)
    out: dict[str, str] = {}
    for messages in by_thread.values():
        for module, site in recorded_sites(messages).items():
            out.setdefault(module, site)
    return out


def collect(results_dir: Path, cell: CellResult, overlapped: bool = False) -> tuple[Evidence | MissingEvidence,
                                                                                 Seeds | None]:
    """A reproduced cell's evidence and the seeds of the runs that brought new keys, its logs read once.

    `overlapped`: the later runs ran in parallel (--jobs N>1), so a run's new_entries may hold a
    neighbour's key; which later run brought a new key is then told by the modules it compiled."""
    if cell.rank_split is not None:
        return _rank_evidence(results_dir, cell, cell.rank_split), None
    comparison = cell_comparison(cell)
    module = comparison.moved_module()
    if module is None:
        return MissingEvidence(None, "no later run computed a key the first run did not"), None
    runs = counted(cell.runs)  # a pytest run beside a test failing in every run counts too (issue 60.6)
    # Each run's own JAX log ties its keys to it: overlapping runs are then told apart exactly.
    overlapped = overlapped and not logs_complete(cell.runs)
    first = next(r for r in runs if r.index == comparison.baseline_run)
    if not overlapped:
        later = comparison.runs_with_new(module)
        if cell.attribution is not None and cell.attribution.run_b in later:  # the runs the attribution shows
            later.remove(cell.attribution.run_b)
            later.insert(0, cell.attribution.run_b)
        paired = paired_evidence(results_dir, comparison, first, {r.index: r for r in runs}, module, later)
        if paired:  # the first diff (a key the hash seed moved before one the program did, as the first screen's
            diffs = [e for e in paired if isinstance(e, Evidence)]  # order), else why there is none
            chosen = next((e for e in diffs if e.key_b in comparison.seed_moved), diffs[0] if diffs else paired[0])
            return chosen, key_seeds(cell, module)
    texts = [(run, lowered_texts(results_dir, run, module)) for run in runs]
    if overlapped:
        seeds = module_seeds(texts)
        candidates = [run for run, _ in texts if run.index != first.index]
    else:
        seeds = key_seeds(cell, module)
        candidates = [next(r for r in runs if r.index == index) for index in later]
    return _evidence(module, comparison, first, candidates, {r.index: t for r, t in texts}, overlapped), seeds


MAX_FUNCTION_DIFFS = 5  # moved functions whose lowered modules report.md's first screen compares, per cell
MAX_PAIRS = 4  # a moved function's (test, argument types) compared, each against its own first-run module


def keyed_texts(results_dir: Path, run: RunRecord, module: str) -> dict[str, str]:
    """key -> the lowered `module` JAX dumped for it in `run` (harness/core/ir_results.py: paired in order)."""
    keys = [k.key for k in run.keys.keys if k.module == module] if run.keys is not None else []
    return paired_in_order(keys, lowered_texts(results_dir, run, module)) if keys else {}


def paired_evidence(results_dir: Path, comparison: Comparison, first: RunRecord, runs: dict[int, RunRecord],
                    module: str, later: list[int], new_input: bool = False) -> list[Evidence | MissingEvidence] | None:
    """Each moved key of `module` in the `later` runs, one per (test, argument types), diffed against the first run's
    key of the same function from the same test at the same argument types, and only that one (issue 60.3: another
    test's module at other shapes read `unknown` where an address differed); where the first run has none, the
    report says so. None where the keys cannot be tied to their modules (no argument types logged, no dump):
    the caller then pairs by the modules' texts. `new_input`: the keys the program's own randomness moved too, those
    with a counterpart (what they baked in differs); one at argument types its test never had is not compared."""
    first_keys = [k for k in first.keys.keys if k.module == module] if first.keys is not None else []
    first_texts: dict[str, str] | None = None
    out: list[Evidence | MissingEvidence] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    several = len(first_keys) > 1
    for index in later:
        run = runs.get(index)
        if run is None or run.keys is None:
            continue
        logged = run.keys.by_key()
        later_texts: dict[str, str] | None = None
        drawn = comparison.new_input.get(index, {}).get(module, []) if new_input else []
        for key in _in_log_order(comparison.new.get(index, {}).get(module, []) + drawn, run):
            k = logged.get(key)
            if k is None or not k.arg_types:
                if key in drawn:
                    continue
                return None
            test = k.tests[0] if k.tests else ""
            if (test, k.arg_types) in seen or len(out) >= MAX_PAIRS:
                continue
            seen.add((test, k.arg_types))
            # the first run's key at these types that this test compiled (named first), else one it hit: the one
            # compiled at the same place among them (`_same_place`)
            same = _same_place(k, run, sorted((f for f in first_keys if f.arg_types == k.arg_types
                                               and (not test or test in f.tests)),
                                              key=lambda f: f.tests[:1] != (test,)))
            if not same and key in drawn:
                continue  # new argument types in its test: nothing to compare it with
            if not same:
                others = [f for f in first_keys if f.arg_types == k.arg_types]
                elsewhere = (f" (it did in {others[0].tests[0]}, another test: not compared)"
                             if others and others[0].tests else "")
                out.append(MissingEvidence(module, f"run {first.index} never compiled it at these types"
                                                   f"{' in this test' if test else ''}{elsewhere}",
                                           types_label([k.arg_types]), test))
                continue
            if first_texts is None:
                first_texts = keyed_texts(results_dir, first, module)
            if later_texts is None:
                later_texts = keyed_texts(results_dir, run, module)
            text_a, text_b = first_texts.get(same[0].key), later_texts.get(key)
            if text_a is None or text_b is None:
                return None
            several = several or len(later_texts) > 1
            out.append(compare_runs(module, first, run, text_a, text_b, same[0].key, key, several,
                                    types_label([k.arg_types]), test))
    return out or None


def _in_log_order(keys: list[str], run: RunRecord) -> list[str]:
    """A run's new keys of a module in the order its log computed them (a comparison lists them by name: their
    digests' order)."""
    order = {k.key: n for n, k in enumerate(run.keys.keys)} if run.keys is not None else {}
    return sorted(keys, key=lambda key: order.get(key, len(order)))


def _same_place(k: LoggedKey, run: RunRecord, same: list[LoggedKey]) -> list[LoggedKey]:
    """`same` (the first run's keys of k's function at k's argument types) with the one compiled at k's place first:
    the n-th of them where k is the n-th such key of its own run. A function compiled twice at the same argument
    types (a training step's first call, on the initial state, then with the state it returned: other shardings,
    other weak types) has two keys a run; the later run's second is the first run's second, never its first (their
    diff is the two calls' own difference, `unknown`, wherever the digests put the second key first)."""
    if run.keys is None:
        return same
    mine = [x.key for x in run.keys.keys if x.module == k.module and x.arg_types == k.arg_types
            and (not k.tests or k.tests[0] in x.tests)]
    place = mine.index(k.key) if k.key in mine else 0
    return [same[place], *same[:place], *same[place + 1:]] if place < len(same) else same


def function_evidence(results_dir: Path, cell: CellResult) -> dict[str, list[Evidence | MissingEvidence]]:
    """Each function whose key moved at argument types the first run had (a suite's `moved key`, the first
    MAX_FUNCTION_DIFFS): its new lowered modules against the first run's, paired by test and argument types
    (`paired_evidence`), else by the modules' texts; {} when none."""
    comparison = cell_comparison(cell)
    moved = [m for m in suite_findings(cell.runs, comparison).misses if m.category == Category.MOVED_KEY
             or (m.category == Category.NEW_INPUT and m.disagreed is not None)]  # (the program's: what it baked in)
    runs = {r.index: r for r in counted(cell.runs)}
    first = runs.get(comparison.baseline_run) if comparison.baseline_run is not None else None
    if first is None or cell.rank_split is not None:
        return {}
    out: dict[str, list[Evidence | MissingEvidence]] = {}
    trusted = logs_complete(cell.runs) or not any(r.overlapped for r in cell.runs)
    later: dict[str, list[int]] = {}  # a module's keys can move apart (the hash seed's, the program's): one account
    for miss in moved:
        later.setdefault(miss.module, [])
        later[miss.module] += [i for i in miss.runs if i not in later[miss.module]]
    for module, indices in list(later.items())[:MAX_FUNCTION_DIFFS]:
        indices.sort()
        paired = paired_evidence(results_dir, comparison, first, runs, module, indices, new_input=True) \
            if trusted else None
        if paired:
            out[module] = paired
            continue
        if not any(m.module == module and m.category == Category.MOVED_KEY for m in moved):
            continue  # new input alone: no module of another shape or test is its counterpart
        candidates = [runs[i] for i in indices if i in runs]
        texts = {r.index: lowered_texts(results_dir, r, module) for r in (first, *candidates)}
        out[module] = [_evidence(module, comparison, first, candidates, texts, False)]
    return out


def _evidence(module: str, comparison: Comparison, first: RunRecord, candidates: list[RunRecord],
              texts: dict[int, list[str]], overlapped: bool) -> Evidence | MissingEvidence:
    first_texts = texts[first.index]
    kept = [run for run in candidates if texts[run.index]]
    if not first_texts or not kept:
        return MissingEvidence(module, f"the lowered {module} of run {first.index} (the first) and of the later runs "
                                       "was not kept (this script does not print it, and this JAX release wrote no "
                                       "IR dump)")
    key_a = _only(comparison.baseline.get(module, []))  # the first run ran alone: its keys are its own
    for run in kept:
        moved = new_texts(texts[run.index], first_texts)
        if moved:
            several = len(first_texts) > 1 or len(texts[run.index]) > 1
            key_b = None if overlapped else _only(comparison.new.get(run.index, {}).get(module, []))
            return compare_runs(module, first, run, counterpart(moved[0], first_texts, texts[run.index]), moved[0],
                                key_a, key_b, several)
    if overlapped:
        return MissingEvidence(module, f"the runs overlapped (--jobs), so their keys cannot be tied to them, and no "
                                       f"later run kept a lowered {module} the first run did not (the modules are "
                                       "the same and the keys differ for another reason)")
    # The new key came with modules the first run also compiled: the key moved for another reason.
    run = kept[0]
    same = texts[run.index][0]  # equal to one of the first run's: the diff is empty, and the note says why
    return compare_runs(module, first, run, same, same, key_a, _only(comparison.new.get(run.index, {}).get(module, [])))


def _rank_evidence(results_dir: Path, cell: CellResult, split: RankSplit) -> Evidence | MissingEvidence:
    """The two processes' lowered modules of the run whose processes disagreed, paired."""
    run = cell.split_run
    ranks = {r.rank: r for r in run.ranks} if run is not None else {}
    if run is None or any(rank not in ranks for rank in split.ranks):
        return MissingEvidence(split.module, f"run {split.run}'s processes are not in the results")
    texts = []
    for rank in split.ranks:
        stand_in = RunRecord(split.run, ranks[rank].seed, ranks[rank].exit_code, 0.0, [], log=ranks[rank].log)
        found = lowered_texts(results_dir, stand_in, split.module)
        if not found:
            return MissingEvidence(split.module, f"the lowered {split.module} of run {split.run}, process {rank} "
                                                 "was not kept (this JAX release wrote no IR dump)")
        texts.append(found)
    a = texts[0][0]
    b = counterpart(a, texts[1], [])
    return compare_ranks(split.module, run, split.ranks, (ranks[split.ranks[0]].seed, ranks[split.ranks[1]].seed),
                         a, b, split.keys)


def _only(keys: list[str]) -> str | None:
    return keys[0] if len(keys) == 1 else None
