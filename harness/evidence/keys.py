"""What a cell's runs computed (pure): each run's keys per module, the cache folder over the logs, and
the comparison of the later runs with the first (new keys, fewer keys).

The cache folder outranks JAX's log: a script can silence or reconfigure the `jax` loggers, print so
much that its output is cut, or print lines that look like JAX's. An entry that appeared while a run
ran and that no run's log names is a key that run computed, whatever its log says; a log that
disagrees with the folder is not trusted for that run (said in the reason) and never drops an entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Collection, Iterable, Sequence

from harness.core.comparison import Comparison
from harness.core.jaxlog import LoggedKey, Outcome, refused_for_no_cache
from harness.core.listing import Entry, entries, keys_by_module
from harness.core.model import CellResult
from harness.core.runs import RunRecord


@dataclass(frozen=True)
class RunKeys:
    """What is known of the keys one successful run computed.

    `appeared`: entries that appeared in the cache folder while it ran. A cache hit writes nothing, so
    this alone cannot tell a run that hit every key from one that compiled fewer things; and with
    overlapping runs (--jobs) it may hold a neighbour's entries. `computed`: every key the run
    computed, hits included, when its own log says so (JAX's debug log); None when not known."""

    index: int
    appeared: frozenset[Entry]
    computed: frozenset[Entry] | None = None
    # False when the run's log disagrees with the cache folder: it may be missing lines (a script that
    # silenced the `jax` loggers, output cut) or hold lines JAX never wrote, so it cannot show `fewer`.
    log_trusted: bool = True
    # The keys its log says it compiled (a miss, however it ended), not loaded; None when not known (no log,
    # or a job's run, whose log merges its processes'). A key on disk that a later run compiled was not served.
    compiled: frozenset[Entry] | None = None
    # key -> the argument types its log says it was compiled at (`float32[2]`), where the recorder saw them
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # key -> the result types of the module its run dumped for it, where known (harness/core/ir_results.py)
    results: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a pytest run's: key -> the tests whose messages named it, and each test's outcome
    tests: dict[str, tuple[str, ...]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    # Another of the harness's runs ran beside it (RunRecord.overlapped): an entry that appeared meanwhile and
    # that no run's account names may be that process's, so it is not this run's.
    overlapped: bool = False

    def known(self, claimed: frozenset[Entry] = frozenset()) -> frozenset[Entry]:
        """Its keys: its account's, and every entry that appeared while it ran that no run's account
        (`claimed`: all of them together) names, where it ran alone (its process wrote it); the listing alone
        when it has no account."""
        if self.computed is None:
            return self.appeared
        return self.computed if self.overlapped else self.computed | (self.appeared - claimed)


_FAILING = frozenset({"failed", "error"})
PYTEST_TESTS_FAILED = 1  # pytest's exit status when its session ran to its end and some tests failed


def _ended_with_failures(run: RunRecord) -> bool:
    """A pytest session that ran to its end with tests failing (its own exit status), not one stopped by a timeout."""
    return not run.timed_out and run.exit_code == PYTEST_TESTS_FAILED


def counted(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs whose keys count: those that succeeded, and a pytest run that ran to its end (exit status 1) with
    failing tests that are all flaky, or while some test passed in every run: a test that failed in some runs is flaky, one that failed in
    every run is failing (both named: misses.test_changes, failing_tests), never a failed run; the cell is judged
    on the tests that passed. A run where no test passed in every run fails (an error: the suite is broken here)."""
    recorded = [r for r in runs if r.tests]
    steady = any(all(o.tests.get(t) == "passed" for o in recorded) for t in (recorded[0].tests if recorded else ()))
    out = []
    for run in runs:
        failing = {t for t, outcome in run.tests.items() if outcome in _FAILING}
        ran_to_end = not run.ok and _ended_with_failures(run) and bool(failing)
        flaky = all(any(o.tests.get(t, "not run") != run.tests[t] for o in recorded if o is not run) for t in failing)
        if run.ok or (ran_to_end and (flaky or steady)):
            out.append(run)
    return out


def failing_tests(runs: Sequence[RunRecord]) -> list[str]:
    """The tests that failed (or errored) in every run that recorded its tests, in the first run's order."""
    recorded = [r for r in runs if r.tests]
    if not recorded:
        return []
    return [t for t in recorded[0].tests if all(r.tests.get(t) in _FAILING for r in recorded)]


def run_keys(run: RunRecord, on_disk: frozenset[str] | None = None) -> RunKeys:
    """What a stored run shows: its listing, and when JAX's log named its keys, every key it computed
    (hits and entries never written included): the log ties each key to its own run. With `on_disk`
    (every entry key that was ever in the cell's folder) a logged hit on a key never there is dropped:
    nothing was there to hit, so JAX did not write that line."""
    computed = compiled = None
    if run.keys is not None:
        computed = frozenset(Entry(k.module, k.key) for k in run.keys.keys
                             if on_disk is None or k.outcome != Outcome.HIT or k.key in on_disk)
        if not run.ranks:
            compiled = frozenset(Entry(k.module, k.key) for k in run.keys.keys if k.outcome != Outcome.HIT)
    types = {k.key: k.arg_types for k in run.keys.keys if k.arg_types} if run.keys is not None else {}
    tests = {k.key: k.tests for k in run.keys.keys if k.tests} if run.keys is not None else {}
    results = {k.key: k.result_types for k in run.keys.keys if k.result_types} if run.keys is not None else {}
    return RunKeys(run.index, frozenset(entries(run.new_entries)), computed, compiled=compiled, types=types,
                   results=results, tests=tests, outcomes=dict(run.tests), overlapped=run.overlapped)


def untrusted_logs(runs: Sequence[RunRecord]) -> dict[int, str]:
    """run index -> why its JAX log cannot be trusted, for each successful run whose log named keys but
    disagrees with the cache folder: an entry appeared while it ran that no run's log names (lines
    missing: the script changed the `jax` loggers' levels or handlers, or its output was cut), or it
    logged a hit or a write of a key that never was in the folder (lines JAX did not write)."""
    good = counted(runs)
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    claimed = {k.key for r in good if r.keys is not None for k in r.keys.keys}
    out: dict[int, str] = {}
    for run in good:
        if run.keys is None:
            continue
        # (beside another process, an entry no account names may be that process's: written_by_no_run says it)
        unnamed = [] if run.overlapped else sorted(e.key for e in entries(run.new_entries) if e.key not in claimed)
        phantom = sorted(k.key for k in run.keys.with_outcome(Outcome.HIT, Outcome.WRITTEN) if k.key not in on_disk)
        why = []
        if unnamed:
            why.append(f"{plural(len(unnamed), 'entry')} appeared in the cache folder while it ran that it does "
                       f"not name ({unnamed[0]}{', ...' if len(unnamed) > 1 else ''})")
        if phantom:
            why.append(f"it logged a hit or a write of {plural(len(phantom), 'key')} never in the cache folder "
                       f"({phantom[0]}{', ...' if len(phantom) > 1 else ''})")
        if why:
            out[run.index] = "; ".join(why)
    return out


def written_by_no_run(runs: Sequence[RunRecord]) -> list[str]:
    """The entries charged to no run, in words: each appeared only while a run ran beside another of the harness's
    runs (overlapping runs, the moved-folder run, the seed control), and no run's own account (its recorder
    or JAX's log) computed it. Every run's own entries are those its account computed; such an entry may be the
    other process's, so it is never a new key of the run beside it."""
    good = counted(runs)
    claimed = {k.key for r in good if r.keys is not None for k in r.keys.keys}
    # an entry of a run that ran alone is its process's; one of a run with no account, the folder charges to it
    alone = {e.key for r in good if not r.overlapped or r.keys is None for e in entries(r.new_entries)}
    out: dict[str, int] = {}
    for run in good:
        for e in entries(run.new_entries):
            if run.overlapped and e.key not in claimed and e.key not in alone:
                out.setdefault(e.key, run.index)
    return [f"{key}: in the cache folder, written by no run (no run's recorder or JAX log computed it; it appeared "
            f"while run {index} ran beside another of the harness's runs)" for key, index in sorted(out.items())]


def observed_keys(runs: Sequence[RunRecord]) -> list[RunKeys]:
    """What each successful run is known to have computed, the cache folder over the logs (see the module)."""
    on_disk = frozenset(e.key for r in runs for e in entries(r.new_entries))
    untrusted = untrusted_logs(runs)
    return [replace(run_keys(r, on_disk), log_trusted=r.index not in untrusted) for r in counted(runs)]


def nothing_cached(runs: Sequence[RunRecord]) -> bool:
    """Every run succeeded, wrote no cache entry and (where its JAX log was read) computed no key: later
    runs of the same program cannot change the verdict, which is `unsupported`."""
    if not runs or not all(r.ok for r in runs):
        return False
    known = [run_keys(r) for r in runs]
    return not any(k.appeared or k.computed for k in known)


def _by_module(found: Iterable[Entry]) -> dict[str, list[str]]:
    return keys_by_module(set(found))


def longest_compiles(runs: Sequence[RunRecord]) -> dict[str, float]:
    """module -> the longest compile JAX logged for it in these runs: how large a program each module is."""
    out: dict[str, float] = {}
    for run in runs:
        for k in run.keys.keys if run.keys is not None else ():
            if k.compile_time_s is not None:
                out[k.module] = max(out.get(k.module, 0.0), k.compile_time_s)
    return out


# What decides a later run's key at argument types run 1 had whose module returns other types: a static argument's
# value drawn at random (the program computed something new: `new input`), or a mesh whose axis names come from a set,
# whose shards' shapes follow the hash seed (a moved key, the seed's own bug class). Only the seed control tells them
# apart (the first run's seed again: run 1's key again -> the hash seed's; another -> the program's): with its keys,
# new input only where it computed another key than the first run's there; without (no control made yet, or none
# at all: the built-in repro, a job, harness reduce's candidates; or it failed), a moved key. A check that stopped at
# such a key goes on with its planned runs once the control says new input (harness/verdicts/judge.py Tally).


def compare_with_first_run(runs: Sequence[RunKeys], control: RunKeys | None = None) -> Comparison:
    """The rule, over the successful runs in order: the first one's keys are the baseline; a later run's
    key that no earlier run computed is new; a first-run key a later run is known not to have computed
    (only its log can say: a hit writes nothing) is `fewer`; an entry the first run wrote (on disk from then
    on, as the first run finishes alone) that a later run's trusted log says it compiled rather than loaded
    is `unserved`: the same key, a miss all the same (an entry JAX cannot read back, a folder emptied).

    A new key at argument types the first run never compiled its module at is `new_input`; one at the first run's
    argument types whose module returns other types is too, where the seed `control` says the program moved it (see
    above). Where the control says, each moved key it found following the hash seed is in `seed_moved`.

    From the listing alone an entry appears once, but with overlapping runs it can appear while two
    runs ran: both are named, as it is not known which of them computed it. An entry that some run's
    log names is that run's; one that no log names is a key of every run it appeared during, whatever
    their logs say (a log can be silenced or cut; the folder cannot)."""
    runs = sorted(runs, key=lambda r: r.index)
    if not runs:
        return Comparison(None, {}, [])
    claimed = frozenset().union(*(r.computed for r in runs if r.computed is not None))
    first, later = runs[0], runs[1:]
    baseline = first.known(claimed)
    seen = set(baseline)
    new: dict[int, dict[str, list[str]]] = {}
    fewer: dict[int, dict[str, list[str]]] = {}
    unserved: dict[int, dict[str, list[str]]] = {}
    new_input: dict[int, dict[str, list[str]]] = {}
    first_types = _types_by_module(first, baseline)
    first_results = _results_by_types(first, baseline)
    first_keys = {e.key for e in baseline}

    def reshaped(e: Entry, run: RunKeys) -> bool:  # the program computed something new
        return _new_input(e, run, first_types) or _drawn_by_program(e, run, first_results, control, first_keys)
    moved_by: list[tuple[RunKeys, Entry]] = []
    compiled_by = _compiled_by(later)
    for run in later:
        known = run.known(claimed)
        borrowed = _hit_beside(run, known - seen, compiled_by)
        brought = known - seen - borrowed
        other_input = {e for e in brought if reshaped(e, run)}
        if brought - other_input:
            new[run.index] = _by_module(brought - other_input)
            moved_by += [(run, e) for e in brought - other_input]
        if other_input:
            new_input[run.index] = _by_module(other_input)
        if run.computed is not None:
            # a module this run compiled at argument types run 1 never had (new here, or drawn by an earlier later
            # run: random shapes), or at its types with other results, need not compute the first run's shapes again
            reshapen = {e.module for e in known - baseline if reshaped(e, run)}
            missing = {e for e in baseline - known if e.module not in reshapen and not _ran_alike(e, first, run)}
            if run.log_trusted and missing:
                fewer[run.index] = _by_module(missing)
            seen |= run.computed - borrowed  # known exactly: a later run that computes these again hits them
        if run.compiled is not None and run.log_trusted and run.compiled & first.appeared:
            unserved[run.index] = _by_module(run.compiled & first.appeared)
    seed_moved = _seed_moved(moved_by, control, first_keys) if control is not None else frozenset()
    return Comparison(first.index, _by_module(baseline), [r.index for r in later], new, fewer, unserved, new_input,
                      seed_moved)


def _compiled_by(runs: Sequence[RunKeys]) -> dict[Entry, set[int]]:
    """entry -> the runs whose logs say they compiled it (not loaded it)."""
    out: dict[Entry, set[int]] = {}
    for run in runs:
        for e in run.compiled or ():
            out.setdefault(e, set()).add(run.index)
    return out


def _hit_beside(run: RunKeys, fresh: frozenset[Entry], compiled_by: dict[Entry, set[int]]) -> frozenset[Entry]:
    """The keys new to the cell that `run` only hit, where another later run compiled them: runs beside each other
    (--jobs) share the cell's folder, so a run may hit an entry a later-numbered run wrote a moment before. Such a key
    is the run's that compiled it, with its tests (one that only hit it named the test it was in then: optax's masked
    tests on 0.10.2, `test_mask_similarity1` for `test_mask_distance1`'s key)."""
    if run.compiled is None:
        return frozenset()
    return frozenset(e for e in fresh if e not in run.compiled and compiled_by.get(e, set()) - {run.index})


def _drawn_by_program(entry: Entry, run: RunKeys,
                      first_results: dict[tuple[str, tuple[str, ...]], set[tuple[str, ...]] | None],
                      control: RunKeys | None, first_keys: Collection[str]) -> bool:
    """Other result types at run 1's argument types (`_new_results`), where the seed control computed another key
    than the first run's there (the program drew them, not the hash seed)."""
    if control is None or not _new_results(entry, run, first_results):
        return False
    return seed_control_follows(control, first_keys, entry.module, [run.types[entry.key]],
                                run.tests.get(entry.key, ("",))[0]) is False


def seed_control_follows(control: RunKeys, first_keys: Collection[str], module: str,
                         types: Collection[tuple[str, ...]] = (), test: str = "") -> bool | None:
    """The seed control's word on `module`'s moved keys at argument types `types` (any, where empty), from `test` (any,
    where ""): True where every key it computed there is one the first run had (its seed again gave run 1's key: the
    hash seed moved it), False where one is not (the program's own randomness), None where it computed none there."""
    mine = [e.key for e in control.computed or () if e.module == module
            and (not types or control.types.get(e.key) in types)
            and (not test or control.tests.get(e.key, ("",))[0] == test)]
    if not mine:
        return None
    return all(k in first_keys for k in mine)


def _seed_moved(moved: Sequence[tuple[RunKeys, Entry]], control: RunKeys, first_keys: Collection[str]
                ) -> frozenset[str]:
    """The moved keys the seed control says the hash seed moved: each by its own test and argument types, and where
    the control computed none there, by its module at the types of those keys (as the per-test table says them,
    harness/evidence/misses.py function_misses)."""
    out: set[str] = set()
    unknown: dict[str, list[tuple[str, tuple[str, ...] | None]]] = {}
    for run, e in moved:
        types = run.types.get(e.key)
        said = (seed_control_follows(control, first_keys, e.module, [types], run.tests.get(e.key, ("",))[0])
                if types else None)
        if said:
            out.add(e.key)
        elif said is None:
            unknown.setdefault(e.module, []).append((e.key, types))
    for module, keys in unknown.items():
        if seed_control_follows(control, first_keys, module, [t for _, t in keys if t]):
            out.update(k for k, _ in keys)
    return frozenset(out)


def _ran_alike(entry: Entry, first: RunKeys, run: RunKeys) -> bool:
    """Whether every test that named the first run's key ran in `run` too, to the same outcome: pytest says that
    test did its work (a test drawing random shapes among the first run's need not draw this one again), so its
    key's absence is no sign of a run that did fewer things."""
    tests = first.tests.get(entry.key, ())
    return bool(tests) and all(first.outcomes.get(t) not in (None, "not run")
                               and run.outcomes.get(t) == first.outcomes.get(t) for t in tests)


def _types_by_module(first: RunKeys, baseline: frozenset[Entry]) -> dict[str, set[tuple[str, ...]]]:
    """module -> every argument types the first run compiled it at (those its log named)."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for e in baseline:
        if e.key in first.types:
            out.setdefault(e.module, set()).add(first.types[e.key])
    return out


def _results_by_types(first: RunKeys, baseline: frozenset[Entry]
                      ) -> dict[tuple[str, tuple[str, ...]], set[tuple[str, ...]] | None]:
    """(module, argument types) -> the result types the first run's modules had there; None where one of them is not
    known (then nothing is told from results)."""
    out: dict[tuple[str, tuple[str, ...]], set[tuple[str, ...]] | None] = {}
    for e in baseline:
        types = first.types.get(e.key)
        if not types:
            continue
        where = (e.module, types)
        results = first.results.get(e.key)
        if results is None or out.get(where, set()) is None:
            out[where] = None
        else:
            mine = out.setdefault(where, set())
            assert mine is not None
            mine.add(results)
    return out


def _new_results(entry: Entry, run: RunKeys,
                 first_results: dict[tuple[str, tuple[str, ...]], set[tuple[str, ...]] | None]) -> bool:
    """A later run's key at argument types the first run had, whose module returns types none of the first run's
    there did (every one of them known): a static argument's value (a size drawn at random), or a mesh's shard shapes
    that follow the hash seed; the seed control tells which (compare_with_first_run)."""
    types, results = run.types.get(entry.key), run.results.get(entry.key)
    if not types or not results:
        return False
    before = first_results.get((entry.module, types))
    return before is not None and bool(before) and results not in before


def _new_input(entry: Entry, run: RunKeys, first_types: dict[str, set[tuple[str, ...]]]) -> bool:
    """A later run's key of a module at argument types the first run never compiled it at (or a module the first
    run never compiled), both known from the logs (the first run's named some types): the program computed
    something new, not the same computation under another key."""
    types = run.types.get(entry.key)
    return bool(types) and bool(first_types) and types not in first_types.get(entry.module, set())


def control_keys(control: RunRecord | None) -> RunKeys | None:
    """The seed control's keys as its JAX log named them; None where it was not made, failed or logged none. A pytest
    control that ran to its end with failing tests, some passing (a suite whose tests fail in every run), counts."""
    if control is None or control.keys is None:
        return None
    ran_to_end = _ended_with_failures(control) and "passed" in control.tests.values()
    return run_keys(control) if control.ok or ran_to_end else None


def comparison_of(runs: Sequence[RunRecord], control: RunRecord | None = None) -> Comparison:
    """The comparison of a cell's stored runs (the failed ones left out), with its seed control's word where made."""
    return compare_with_first_run(observed_keys(runs), control_keys(control))


def cell_comparison(cell: CellResult) -> Comparison:
    """`comparison_of(cell.runs, cell.seed_control)`, kept on the cell: the one its verdict was judged from (Tally.cell keeps it),
    or, for a cell read from a file, derived the first time it is asked for; never again on every rewrite of
    the folder's files."""
    if cell.comparison is None:
        cell.comparison = comparison_of(cell.runs, cell.seed_control)
    return cell.comparison


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def logged_keys(runs: Sequence[RunRecord]) -> list[LoggedKey]:
    return [k for r in runs if r.keys is not None for k in r.keys.keys]


def logs_complete(runs: Sequence[RunRecord]) -> bool:
    """Whether every successful run's log named its keys: then each key is tied to its own run."""
    good = counted(runs)
    return bool(good) and all(r.keys is not None for r in good)


def never_written(runs: Sequence[RunRecord]) -> dict[str, str]:
    """module -> JAX's reason, for each module that the successful runs' logs say was compiled and
    never written (not one of its keys written, hit, or on disk). A module refused because JAX had no
    cache yet (compiled before the script set its folder) is left out: that is the process's state at
    the time, not the module's (a cell where nothing at all was cached is told by harness/verdicts/uncached.py)."""
    good = counted(runs)
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = logged_keys(good)
    refused = {k.module: k.reason for k in logged
               if k.outcome == Outcome.NOT_WRITTEN and not refused_for_no_cache(k.reason)}
    kept = {k.module for k in logged if k.outcome != Outcome.NOT_WRITTEN or k.key in on_disk}
    return {module: reason for module, reason in sorted(refused.items()) if module not in kept}


def inconsistencies(runs: Sequence[RunRecord]) -> list[str]:
    """Where the cache folder and the runs' JAX logs disagree: an entry no run's log computed, or a
    key a log wrote (or hit) that never was in the folder. Said, never dropped; only where every
    successful run's log named its keys."""
    if not logs_complete(runs):
        return []
    on_disk = {e.key: e for r in runs for e in entries(r.new_entries)}
    logged: dict[str, tuple[int, LoggedKey]] = {}
    for run in runs:
        for k in run.keys.keys if run.keys is not None else []:
            logged.setdefault(k.key, (run.index, k))
    unowned = {line.partition(":")[0]: line for line in written_by_no_run(runs)}
    out = [unowned.get(key, f"{key}: in the cache folder, but no run's log computed it")
           for key in sorted(set(on_disk) - set(logged))]
    for key, (index, k) in sorted(logged.items()):
        if key in on_disk or k.outcome == Outcome.NOT_WRITTEN:
            continue
        what = {Outcome.WRITTEN: "logged writing it", Outcome.HIT: "logged a hit on it",
                Outcome.MISS: "compiled it and logged neither a write nor why not"}[k.outcome]
        out.append(f"{key}: run {index}'s JAX {what}, but it never was in the cache folder")
    return out
