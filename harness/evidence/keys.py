"""What a cell's runs computed (pure): each run's keys per module, the cache folder over the logs, and
the comparison of the later runs with the first (new keys, fewer keys).

The cache folder outranks JAX's log: a script can silence or reconfigure the `jax` loggers, print so
much that its output is cut, or print lines that look like JAX's. An entry that appeared while a run
ran and that no run's log names is a key that run computed, whatever its log says; a log that
disagrees with the folder is not trusted for that run (said in the reason) and never drops an entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from collections.abc import Collection, Iterable, Mapping, Sequence

from harness.core.comparison import CauseDecision, Comparison, Moved
from harness.core.jaxlog import LoggedKey, Outcome, differing_components, refused_for_no_cache
from harness.core.listing import Entry, entries, keys_by_module
from harness.core.model import CellResult
from harness.core.runs import FolderSeen, RunRecord
from harness.evidence.controls import CAUSE_BOUND, Group, decide, next_repeat
from harness.evidence.ranks import COMPUTATION


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
    # a pytest run's: key -> the tests whose messages named it, and each test's outcome
    tests: dict[str, tuple[str, ...]] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    # Another of the harness's runs ran beside it (RunRecord.overlapped): an entry that appeared meanwhile and
    # that no run's account names may be that process's, so it is not this run's.
    overlapped: bool = False
    # key -> what its log said of it (components, tests, types), where its log named it
    logged: dict[str, LoggedKey] = field(default_factory=dict)
    # Entries the harness's own watch saw read in its folder while it ran (RunRecord.seen): hits of its process or
    # of a child of it that has no account of its own (a `python -I` child, a minimal environment); empty where
    # the folder was not watched or was shared with another run.
    read: frozenset[Entry] = frozenset()

    def known(self, claimed: frozenset[Entry] = frozenset()) -> frozenset[Entry]:
        """Its keys: its account's, every entry the folder saw it read, and every entry that appeared while it ran
        (written ones it deleted again included) that no run's account (`claimed`: all of them together) names,
        where it ran alone (its process wrote it); the listing alone when it has no account."""
        if self.computed is None:
            return self.appeared | self.read
        return self.computed if self.overlapped else self.computed | (self.appeared - claimed) | self.read


_FAILING = frozenset({"failed", "error"})
WATCHED = "watched as it ran"  # in what untrusted_logs says of an account the folder's own history contradicts
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


def folder_entries(run: RunRecord) -> set[Entry]:
    """The entries a run left in its folder or, where the folder was watched, was seen to write there (one it
    deleted again before it ended included)."""
    found = entries(run.new_entries)
    seen = _seen(run)
    if seen is not None:
        found |= entries(seen.entry_files(seen.written))
    return found


def _seen(run: RunRecord) -> FolderSeen | None:
    """What the watch saw of the run's folder; None for run 2 beside run 1, whose hits are by key, in a folder of its
    own that never held run 1's entries (harness/evidence/beside_keys.py)."""
    return run.seen if run.compared_by_key is None else None


def _watched(run: RunRecord) -> bool:
    """The folder's history is whole and the run's own: the watch can outvote its accounts."""
    seen = _seen(run)
    return seen is not None and not seen.lost and not seen.shared and not run.overlapped


def unread_hits(run: RunRecord) -> list[str]:
    """The keys its account says it hit that its folder, watched as it ran, never saw read (nothing was loaded:
    a line the program printed or a record it wrote), sorted; [] where the folder was not watched whole."""
    if run.keys is None or run.seen is None or not _watched(run):
        return []
    read = run.seen.read_keys
    return sorted({k.key for k in run.keys.with_outcome(Outcome.HIT) if k.key not in read})


def unseen_misses(run: RunRecord, before: Collection[str]) -> list[str]:
    """The keys on disk before it ran (`before`) that its account says it compiled or wrote, where its folder,
    watched as it ran, saw that entry neither written nor deleted (JAX writes an entry it could not load again only
    where it is gone, and a program that spoils its entries writes them): a miss the folder does not show."""
    if run.keys is None or run.seen is None or not _watched(run):
        return []
    touched = run.seen.written_keys | run.seen.deleted_keys
    return sorted({k.key for k in run.keys.with_outcome(Outcome.MISS, Outcome.WRITTEN)
                   if k.key in before and k.key not in touched})


def run_keys(run: RunRecord, on_disk: frozenset[str] | None = None, before: Collection[str] = ()) -> RunKeys:
    """What a stored run shows: its listing (and what its watched folder saw it write and read), and when JAX's
    log named its keys, every key it computed (hits and entries never written included): the log ties each key to
    its own run. With `on_disk` (every entry key that was ever in the cell's folder) a logged hit on a key never
    there is dropped: nothing was there to hit, so JAX did not write that line. Where the folder was watched, a hit
    it never saw read is dropped too, and so is a miss on an entry on disk `before` it ran that it never saw
    written or deleted (`unseen_misses`): a hit needs the folder's word that the entry was read."""
    computed = compiled = None
    unread, unseen = set(unread_hits(run)), set(unseen_misses(run, before))
    if run.keys is not None:
        computed = frozenset(Entry(k.module, k.key) for k in run.keys.keys
                             if (on_disk is None or k.outcome != Outcome.HIT or k.key in on_disk)
                             and k.key not in unread)
        if not run.ranks:
            compiled = frozenset(Entry(k.module, k.key) for k in run.keys.keys
                                 if k.outcome != Outcome.HIT and k.key not in unseen)
    types = {k.key: k.arg_types for k in run.keys.keys if k.arg_types} if run.keys is not None else {}
    tests = {k.key: k.tests for k in run.keys.keys if k.tests} if run.keys is not None else {}
    read = entries(run.seen.entry_files(run.seen.read)) if run.seen and _watched(run) else set()
    return RunKeys(run.index, frozenset(folder_entries(run)), computed, compiled=compiled, types=types,
                   tests=tests, outcomes=dict(run.tests), overlapped=run.overlapped,
                   read=frozenset(read), logged=run.keys.by_key() if run.keys is not None else {})


def untrusted_logs(runs: Sequence[RunRecord]) -> dict[int, str]:
    """run index -> why its JAX log cannot be trusted, for each successful run whose log named keys but
    disagrees with the cache folder: an entry appeared while it ran that no run's log names (lines
    missing: the script changed the `jax` loggers' levels or handlers, or its output was cut), or it
    logged a hit or a write of a key that never was in the folder (lines JAX did not write)."""
    good = counted(runs)
    on_disk = {e.key for r in runs for e in folder_entries(r)}
    claimed = {k.key for r in good if r.keys is not None for k in r.keys.keys}
    out: dict[int, str] = {}
    for run in good:
        if run.keys is None:
            continue
        # (beside another process, an entry no account names may be that process's: written_by_no_run says it)
        unnamed = [] if run.overlapped else sorted(e.key for e in folder_entries(run) if e.key not in claimed)
        phantom = sorted(k.key for k in run.keys.with_outcome(Outcome.HIT, Outcome.WRITTEN) if k.key not in on_disk)
        unread = [k for k in unread_hits(run) if k in on_disk]
        unseen = unseen_misses(run, on_disk_before(runs, run.index))
        why = []
        if unnamed:
            why.append(f"{plural(len(unnamed), 'entry')} appeared in the cache folder while it ran that it does "
                       f"not name ({unnamed[0]}{', ...' if len(unnamed) > 1 else ''})")
        if phantom:
            why.append(f"it logged a hit or a write of {plural(len(phantom), 'key')} never in the cache folder "
                       f"({phantom[0]}{', ...' if len(phantom) > 1 else ''})")
        if unread:
            why.append(f"it logged a hit on {plural(len(unread), 'key')} the cache folder, {WATCHED}, never "
                       f"saw read ({unread[0]}{', ...' if len(unread) > 1 else ''})")
        if unseen:
            why.append(f"it logged compiling or writing {plural(len(unseen), 'key')} already in the cache folder "
                       f"that the folder, {WATCHED}, never saw written ({unseen[0]}"
                       f"{', ...' if len(unseen) > 1 else ''})")
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
    alone = {e.key for r in good if not r.overlapped or r.keys is None for e in folder_entries(r)}
    out: dict[str, int] = {}
    for run in good:
        for e in folder_entries(run):
            if run.overlapped and e.key not in claimed and e.key not in alone:
                out.setdefault(e.key, run.index)
    return [f"{key}: in the cache folder, written by no run (no run's recorder or JAX log computed it; it appeared "
            f"while run {index} ran beside another of the harness's runs)" for key, index in sorted(out.items())]


def observed_keys(runs: Sequence[RunRecord]) -> list[RunKeys]:
    """What each successful run is known to have computed, the cache folder over the logs (see the module). A key JAX
    never writes (never_written_keys) is left out: no persistent cache serves it, moved or not, so it is `not
    cached` (harness/evidence/not_cached.py), never a moved key nor one a later run computed fewer of."""
    on_disk = frozenset(e.key for r in runs for e in folder_entries(r))
    untrusted = untrusted_logs(runs)
    never = frozenset(never_written_keys(runs))
    return [_without(replace(run_keys(r, on_disk, on_disk_before(runs, r.index)), log_trusted=r.index not in untrusted),
                     never) for r in counted(runs)]


def on_disk_before(runs: Sequence[RunRecord], index: int) -> frozenset[str]:
    """The keys the runs before run `index` left or were seen to write in the folder."""
    return frozenset(e.key for r in runs if r.index < index for e in folder_entries(r))


def _without(run: RunKeys, keys: frozenset[str]) -> RunKeys:
    if not keys:
        return run
    return replace(run, computed=None if run.computed is None else frozenset(e for e in run.computed
                                                                             if e.key not in keys),
                   compiled=None if run.compiled is None else frozenset(e for e in run.compiled if e.key not in keys))


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


# What moved a later run's key that run 1 did not compute (new argument types or not, other results or not), or
# a function run 1 compiled and a later run did not: the hash seed, JAX's per-process values, or the program's own
# randomness. The cause controls decide, per function and test (harness/evidence/controls.py); where none was made
# (the built-in repro, a job, harness reduce's candidates, or before the cell's runs have ended) or they could not
# decide, the keys alone: a key at argument types run 1 never compiled that function at in that test is new input,
# any other a moved key.


def key_test(run: RunKeys, key: str) -> str:
    """The test that compiled `key` in `run` (the first whose messages named it); "" outside any test."""
    return next(iter(run.tests.get(key, ())), "")


def group_keys(run: RunKeys) -> dict[Group, frozenset[str]]:
    """(module, test) -> the keys `run` computed there, as its account says (a key every test that named it)."""
    out: dict[Group, set[str]] = {}
    for e in run.computed or ():
        for test in run.tests.get(e.key) or ("",):
            out.setdefault((e.module, test), set()).add(e.key)
    return {group: frozenset(keys) for group, keys in out.items()}


def compare_with_first_run(runs: Sequence[RunKeys], controls: Sequence[RunKeys] = (),
                           bound: float = CAUSE_BOUND) -> Comparison:
    """The rule, over the successful runs in order: the first one's keys are the baseline; a later run's
    key that no earlier run computed is new; a first-run key a later run is known not to have computed
    (only its log can say: a hit writes nothing) is `fewer`; an entry the first run wrote (on disk from then
    on, as the first run finishes alone) that a later run's trusted log says it compiled rather than loaded
    is `unserved`: the same key, a miss all the same (an entry JAX cannot read back, a folder emptied).

    Each new key, and each function in a test with fewer keys, is then the cause controls' (`controls`: each a run's
    seed repeated; see above and harness/evidence/controls.py): the hash seed's keys are `new` (a moved key, in
    `seed_moved`), whatever their argument types; keys something else moved are `new_input` (the program computed
    something new), unless JAX's log says only components other than the computation moved (JAX put a per-process
    value into the key: `new`); a function with fewer keys the controls decided either way is no `fewer`.

    From the listing alone an entry appears once, but with overlapping runs it can appear while two
    runs ran: both are named, as it is not known which of them computed it. An entry that some run's
    log names is that run's; one that no log names is a key of every run it appeared during, whatever
    their logs say (a log can be silenced or cut; the folder cannot)."""
    plain = _compare(runs, {})
    if not controls or plain.baseline_run is None:
        return plain
    questioned, by_run, made = _controls_view(runs, controls, plain)
    return _compare(runs, {group: decide(group, by_run, made, bound) for group in questioned})


def _controls_view(runs: Sequence[RunKeys], controls: Sequence[RunKeys], plain: Comparison
                   ) -> tuple[dict[Group, int], dict[int, dict[Group, frozenset[str]]],
                              list[tuple[int, dict[Group, frozenset[str]]]]]:
    """What the controls decide on: the questioned functions and tests, each run's keys and each control's by them."""
    ordered = sorted(runs, key=lambda r: r.index)
    return (questioned_groups(ordered, plain), {r.index: group_keys(r) for r in ordered},
            [(c.index, group_keys(c)) for c in controls if c.computed is not None])


def questioned_groups(runs: Sequence[RunKeys], plain: Comparison) -> dict[Group, int]:
    """Each function and test whose keys a later run changed (a key new to the cell, or fewer than run 1's), in the
    order of the runs -> the first later run that changed it: what the controls must decide. A key no run's account
    names (only the folder saw it written: a child without the hook) is left out: no control can say what computed
    it, so it stays a moved key (undecided), and no control is made for it."""
    by_index = {r.index: r for r in runs}
    first = by_index.get(plain.baseline_run) if plain.baseline_run is not None else None
    out: dict[Group, int] = {}
    for index in sorted({*plain.new, *plain.new_input, *plain.fewer}):
        run = by_index[index]
        accounted = {e.key for e in run.computed or ()}
        for by_module in (plain.new.get(index, {}), plain.new_input.get(index, {})):
            for module, keys in by_module.items():
                for key in keys:
                    if key in accounted:
                        out.setdefault((module, key_test(run, key)), index)
        for module, keys in plain.fewer.get(index, {}).items():
            for key in keys:
                out.setdefault((module, key_test(first, key) if first is not None else ""), index)
    return out


def next_control(runs: Sequence[RunKeys], controls: Sequence[RunKeys], bound: float = CAUSE_BOUND) -> int | None:
    """The run whose seed the next cause control repeats (its index), or None when none is needed: no function's keys
    changed, every one is decided, or the controls made are enough (harness/evidence/controls.py)."""
    plain = _compare(runs, {})
    if plain.baseline_run is None:
        return None
    if any(r.computed is None for r in runs):
        return None  # a run with no account of its keys: no control can repeat what it computed
    questioned, by_run, made = _controls_view(runs, controls, plain)
    return next_repeat(questioned, plain.baseline_run, by_run, made, bound) if questioned else None


def _compare(runs: Sequence[RunKeys], decisions: Mapping[Group, CauseDecision]) -> Comparison:
    """compare_with_first_run with the controls' `decisions` (none: the keys alone)."""
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
    seed_moved: set[str] = set()
    first_types = _types_by_group(first, baseline)

    def moved_by(e: Entry, run: RunKeys) -> Moved:
        decision = decisions.get((e.module, key_test(run, e.key)))
        return decision.moved if decision is not None else Moved.UNDECIDED

    def reshaped(e: Entry, run: RunKeys) -> bool:  # the program computed something new
        moved = moved_by(e, run)
        if moved == Moved.HASH_SEED:
            return False
        if moved == Moved.NOT_SEED:
            return not _jax_moved(e, run, first, baseline)
        return _new_input(e, run, first_types)
    compiled_by = _compiled_by(later)
    for run in later:
        known = run.known(claimed)
        borrowed = _hit_beside(run, known - seen, compiled_by)
        brought = known - seen - borrowed
        other_input = {e for e in brought if reshaped(e, run)}
        if brought - other_input:
            new[run.index] = _by_module(brought - other_input)
            seed_moved.update(e.key for e in brought - other_input if moved_by(e, run) == Moved.HASH_SEED)
        if other_input:
            new_input[run.index] = _by_module(other_input)
        if run.computed is not None:
            # a function this run compiled at argument types run 1 never had it at (new here, or drawn by an earlier
            # later run: random shapes) need not compute the first run's shapes again; nor one whose keys the
            # controls decided (the hash seed or the program chose what it compiled)
            reshapen = {e.module for e in known - baseline if reshaped(e, run)}
            decided = {(e.module, key_test(first, e.key)) for e in baseline
                       if (d := decisions.get((e.module, key_test(first, e.key)))) and d.moved != Moved.UNDECIDED}
            missing = {e for e in baseline - known if e.module not in reshapen and not _ran_alike(e, first, run)
                       and (e.module, key_test(first, e.key)) not in decided}
            if run.log_trusted and missing:
                fewer[run.index] = _by_module(missing)
            seen |= run.computed - borrowed  # known exactly: a later run that computes these again hits them
        if run.compiled is not None and run.log_trusted and run.compiled & first.appeared:
            unserved[run.index] = _by_module(run.compiled & first.appeared)
    return Comparison(first.index, _by_module(baseline), [r.index for r in later], new, fewer, unserved, new_input,
                      frozenset(seed_moved), tuple(decisions.values()))


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


def _jax_moved(entry: Entry, run: RunKeys, first: RunKeys, baseline: frozenset[Entry]) -> bool:
    """JAX's log says only components other than the computation moved `entry`'s key against run 1's key of the same
    function in the same test at the same argument types: JAX put a per-process value (a path, a device assignment)
    into the key, not the program into the module. False where run 1 had no such key or the log named no components."""
    types, test = run.types.get(entry.key), key_test(run, entry.key)
    mine = run.logged.get(entry.key)
    theirs = [first.logged[e.key] for e in baseline if e.module == entry.module and e.key in first.logged
              and key_test(first, e.key) == test and first.types.get(e.key) == types]
    if mine is None or not mine.components or not theirs:
        return False
    counterpart = min(theirs, key=lambda k: (len(differing_components(k, mine)), k.key))
    moved = differing_components(counterpart, mine)
    return bool(moved) and COMPUTATION not in moved


def _ran_alike(entry: Entry, first: RunKeys, run: RunKeys) -> bool:
    """Whether every test that named the first run's key ran in `run` too, to the same outcome: pytest says that
    test did its work (a test drawing random shapes among the first run's need not draw this one again), so its
    key's absence is no sign of a run that did fewer things."""
    tests = first.tests.get(entry.key, ())
    return bool(tests) and all(first.outcomes.get(t) not in (None, "not run")
                               and run.outcomes.get(t) == first.outcomes.get(t) for t in tests)


def _types_by_group(first: RunKeys, baseline: frozenset[Entry]) -> dict[Group, set[tuple[str, ...]]]:
    """(module, test) -> every argument types the first run compiled it at there (those its log named)."""
    out: dict[Group, set[tuple[str, ...]]] = {}
    for e in baseline:
        if e.key in first.types:
            out.setdefault((e.module, key_test(first, e.key)), set()).add(first.types[e.key])
    return out


def _new_input(entry: Entry, run: RunKeys, first_types: dict[Group, set[tuple[str, ...]]]) -> bool:
    """A later run's key of a function at argument types the first run never compiled it at in the same test (or a
    function it never compiled there), both known from the logs (the first run's named some types): the program
    computed something new, not the same computation under another key."""
    types = run.types.get(entry.key)
    return (bool(types) and bool(first_types)
            and types not in first_types.get((entry.module, key_test(run, entry.key)), set()))


def control_keys(control: RunRecord | None) -> RunKeys | None:
    """A cause control's keys as its JAX log named them; None where it failed or logged none. A pytest control that
    ran to its end with failing tests, some passing (a suite whose tests fail in every run), counts."""
    if control is None or control.keys is None:
        return None
    ran_to_end = _ended_with_failures(control) and "passed" in control.tests.values()
    if not (control.ok or ran_to_end):
        return None
    # a key JAX refused for host callbacks is never written, whatever moves it: no control's word (observed_keys)
    refused = frozenset(k.key for k in control.keys.keys
                        if k.outcome == Outcome.NOT_WRITTEN and HOST_CALLBACKS in k.reason)
    return _without(run_keys(control), refused)


def controls_keys(controls: Sequence[RunRecord]) -> list[RunKeys]:
    """The cause controls that count (control_keys), in the order they were made."""
    return [k for k in map(control_keys, controls) if k is not None]


def comparison_of(runs: Sequence[RunRecord], controls: Sequence[RunRecord] = ()) -> Comparison:
    """The comparison of a cell's stored runs (the failed ones left out), with its cause controls' word where made."""
    return compare_with_first_run(observed_keys(runs), controls_keys(controls))


def cell_comparison(cell: CellResult) -> Comparison:
    """`comparison_of(cell.runs, cell.controls)`, kept on the cell: the one its verdict was judged from (Tally.cell
    keeps it), or, for a cell read from a file, derived the first time it is asked for; never again on every
    rewrite of the folder's files."""
    if cell.comparison is None:
        cell.comparison = comparison_of(cell.runs, cell.controls)
    return cell.comparison


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def logged_keys(runs: Sequence[RunRecord]) -> list[LoggedKey]:
    return [k for r in runs if r.keys is not None for k in r.keys.keys]


def logs_complete(runs: Sequence[RunRecord]) -> bool:
    """Whether every successful run's log named its keys: then each key is tied to its own run."""
    good = counted(runs)
    return bool(good) and all(r.keys is not None for r in good)


HOST_CALLBACKS = "host callbacks"  # JAX's refusal of a module with a host callback ("it uses host callbacks ...")
NOT_PROCESS_0 = "process_id"  # JAX's refusal on a process other than 0 ("process_id != 0")


def never_written_keys(runs: Sequence[RunRecord]) -> dict[str, LoggedKey]:
    """key -> its first logged account, for each key the successful runs' logs say was compiled and never written:
    JAX refused it in every run that computed it (none of them wrote or hit it, and it never was on disk). By key,
    not by module name: a callback's `jit__lambda` beside a plain `jit__lambda` that is written is never written
    all the same. A key refused because JAX had no cache yet (compiled before the script set its folder) is left
    out: that is the process's state at the time, not the module's (a cell where nothing at all was cached is
    told by harness/verdicts/uncached.py)."""
    good = counted(runs)
    on_disk = {e.key for r in runs for e in folder_entries(r)}
    logged = logged_keys(good)
    refused: dict[str, LoggedKey] = {}
    for run in good:
        for k in run.keys.keys if run.keys is not None else ():
            # a job's process other than 0 never writes (JAX writes from process 0 only): by design, judged per
            # process (harness/verdicts/verdict.py group_facts), not a module JAX never writes
            if (k.outcome == Outcome.NOT_WRITTEN and not refused_for_no_cache(k.reason)
                    and not (run.ranks and NOT_PROCESS_0 in k.reason)):
                refused.setdefault(k.key, k)
    kept = {k.key for k in logged if k.outcome != Outcome.NOT_WRITTEN}
    return {key: k for key, k in refused.items() if key not in kept and key not in on_disk}


def never_written(runs: Sequence[RunRecord]) -> dict[str, str]:
    """module -> JAX's reason, for each module with a key JAX never wrote (never_written_keys)."""
    out: dict[str, str] = {}
    for k in never_written_keys(runs).values():
        out.setdefault(k.module, k.reason)
    return dict(sorted(out.items()))


def inconsistencies(runs: Sequence[RunRecord]) -> list[str]:
    """Where the cache folder and the runs' JAX logs disagree: an entry no run's log computed, or a
    key a log wrote (or hit) that never was in the folder. Said, never dropped; only where every
    successful run's log named its keys."""
    if not logs_complete(runs):
        return []
    on_disk = {e.key: e for r in runs for e in folder_entries(r)}
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
