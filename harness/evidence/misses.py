"""A cell's misses per function and per test (pure): every module that missed, the tests that compiled it, the
key component that moved, the argument types; the tests that ran differently between runs; the clean tests.

From the runs' keys as the in-process recorder read them (harness/core/recorder.py: each key with the pytest ids
whose JAX messages named it and the argument types it was compiled at) and the comparison the verdict was judged
from. A plain script has no test ids: its misses are still listed per function, with no test.

Categories (`Category`):
- `moved key`: a later run computed a new key at argument types the first run compiled the module at: the same
  computation under another key (the hash seed, or the program's own randomness baked into the module).
- `new input`: a later run compiled the module at argument types the first run never had (`jit_mse at
  float32[6]; run 1 compiled [2] and [4]`), or at its types returning other types where the seed control says the
  program drew them (a static size: harness/evidence/keys.py): the program computed something new, a miss no cache
  can serve.
- `not served`: a later run compiled a key whose entry the first run wrote (on disk), instead of loading it.
- `not cached`: JAX never wrote the module (host callbacks, or a threshold as the program runs), so every later run
  compiled the same key again (harness/evidence/not_cached.py): with JAX's reason, the line that put the callback
  there and the seconds per start. A test whose only misses are these is `not cached`, not `clean`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

import msgspec

from harness.core.comparison import Comparison
from harness.core.jaxlog import LoggedKey, differing_components
from harness.core.runs import RunRecord
from harness.core.kinds import NothingCached
from harness.evidence.keys import comparison_of, control_keys, counted, failing_tests, seed_control_follows
from harness.evidence.not_cached import NotCachedModule


SEED_CONTROL = "seed-control"
_FAILED = frozenset({"failed", "error"})  # a test's outcomes that failed it (pytest's words)  # the cell runner's QueuedRun.check for the seed control run


class Follows(enum.StrEnum):
    """What a moved key follows, from the seed control: the first run's seed again, in a fresh folder with the
    first run's entries (the same seed, the same program: only what the seed does not fix can differ)."""

    HASH_SEED = "hash seed"  # the control computed the first run's key again: the hash seed moved it (a set's order)
    PROGRAM = "program"  # the control moved it again: the program's own randomness (random constants, a clock)


class Category(enum.StrEnum):
    MOVED_KEY = "moved key"
    NEW_INPUT = "new input"
    NOT_SERVED = "not served"
    NOT_CACHED = "not cached"


class FunctionMiss(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One module that missed in later runs, in one category."""

    module: str
    category: Category
    runs: list[int] = []  # the later runs that missed it
    tests: list[str] = []  # the pytest ids that compiled the missed keys (not the ones that then hit them)
    runs_by_test: dict[str, list[int]] = {}  # test -> the later runs in which it compiled a missed key
    types_by_test: dict[str, list[list[str]]] = {}  # test -> the argument types of the missed keys it compiled
    arg_types: list[list[str]] = []  # the argument types of the missed keys, distinct
    first_run_types: list[list[str]] = []  # what run 1 compiled the module at
    components: list[str] = []  # moved key: the key components that differ from run 1's key at those types
    keys: list[str] = []  # the missed keys
    follows: Follows | None = None  # moved key: what the seed control says it follows (None: no control made)
    # not cached: JAX's reason in words (`host callbacks`, `thresholds`), JAX's own words, the line that put the
    # callback there, and the seconds compiling it again costs each later start (None: not known)
    why: NothingCached | None = None
    jax_says: str = ""
    site: str = ""
    seconds: float | None = None

    @property
    def types_label(self) -> str:
        return types_label(self.arg_types, MAX_TYPES)

    @property
    def first_types_label(self) -> str:
        return types_label(self.first_run_types, MAX_TYPES)

    def test_types_label(self, test: str) -> str:
        """The argument types of the missed keys `test` compiled (all of them when not known per test)."""
        return types_label(self.types_by_test.get(test) or self.arg_types, MAX_TYPES)


class TestChange(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A test that was selected, skipped or ended differently between runs (random order, a flaky test):
    named as such, never read as a cache miss."""

    id: str
    outcomes: dict[str, str] = {}  # run index (as text: JSON's keys) -> its outcome there ("not run": absent)


class TestResult(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One test of the suite, as CI shows it: `clean` (every function it compiled hit), `missed` (it compiled a
    module that missed: the categories), `not cached` (its only misses are modules JAX never writes), `changed` (it
    ran differently between runs: flaky), `failing` (it failed in every run: the program's own failure)."""

    id: str
    status: str
    categories: list[str] = []
    modules: list[str] = []
    outcome: str = ""  # its outcome in the first run


class SuiteFindings(msgspec.Struct, omit_defaults=True, kw_only=True):
    misses: list[FunctionMiss] = []
    changed: list[TestChange] = []
    tests: list[TestResult] = []

    @property
    def missing_tests(self) -> list[str]:
        return [t.id for t in self.tests if t.status == "missed"]


MAX_TYPES = 4  # argument types a label names (a suite compiles helpers at dozens); results.json has them all


def types_label(types: Sequence[Sequence[str]], limit: int | None = None) -> str:
    """`float32[6]`, `float32[2] and float32[4]`, `(float32[2], int32[])` for several arguments; past `limit`,
    `float32[1], float32[2], float32[3] and 5 more`."""
    shown = [", ".join(t) if len(t) == 1 else f"({', '.join(t)})" for t in types]
    if limit is not None and len(shown) > limit:
        return ", ".join(shown[:limit]) + f" and {len(shown) - limit} more"
    if len(shown) <= 1:
        return "".join(shown) or "unknown types"
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _by_key(run: RunRecord) -> dict[str, LoggedKey]:
    return run.keys.by_key() if run.keys is not None else {}


def function_misses(runs: Sequence[RunRecord], comparison: Comparison,
                    control: RunRecord | None = None) -> list[FunctionMiss]:
    """Every module that missed in a later run, per category, in the order of the first run that missed it;
    a moved key says what it follows when the seed control (`control`) computed its module."""
    good = {r.index: r for r in counted(runs)}
    first = good.get(comparison.baseline_run) if comparison.baseline_run is not None else None
    first_keys = [k for k in first.keys.keys] if first is not None and first.keys is not None else []
    out: dict[tuple[str, Category, Follows | None], FunctionMiss] = {}
    # the seed control runs the suite as a run does: it counts as a run would (a test failing in every run: exit 1)
    controlled = (control is not None and control.keys is not None
                  and any(r is control for r in counted([*good.values(), control])))
    sources = ((Category.MOVED_KEY, comparison.new), (Category.NEW_INPUT, comparison.new_input),
               (Category.NOT_SERVED, comparison.unserved))
    for category, by_run in sources:
        for index in sorted(by_run):
            logged = _by_key(good[index]) if index in good else {}
            for module, keys in sorted(by_run[index].items()):
                mine = [k for k in first_keys if k.module == module]
                for key in keys:
                    k = logged.get(key)
                    # each moved key by what it follows: a set-ordered test's beside a random constant's, apart
                    follows = (_key_follows(k, control, set(comparison.baseline.get(module, [])))
                               if controlled and control is not None and k is not None
                               and category == Category.MOVED_KEY else None)
                    miss = out.setdefault((module, category, follows),
                                          FunctionMiss(module=module, category=category, follows=follows))
                    if index not in miss.runs:
                        miss.runs.append(index)
                    miss.first_run_types = _distinct(list(k.arg_types) for k in mine if k.arg_types)
                    if key not in miss.keys:
                        miss.keys.append(key)
                    if k is not None:
                        _add_logged_key(miss, k, index, category, mine)
    if controlled and control is not None:
        for miss in out.values():
            if miss.category == Category.MOVED_KEY and miss.follows is None:
                miss.follows = _follows(miss, control, set(comparison.baseline.get(miss.module, [])))
    order = {c: i for i, c in enumerate(Category)}
    followed = {Follows.HASH_SEED: 0, None: 1, Follows.PROGRAM: 2}
    return sorted(out.values(), key=lambda m: (min(m.runs), order[m.category], m.module, followed[m.follows]))


def _add_logged_key(miss: FunctionMiss, k: LoggedKey, index: int, category: Category, mine: list[LoggedKey]) -> None:
    """What JAX's log says of one missed key: the test that compiled it (it names it first; the ones after it hit the
    entry it wrote), its argument types, and for a moved key the components that moved against run 1's."""
    for test in k.tests[:1]:
        if test not in miss.tests:
            miss.tests.append(test)
        ran = miss.runs_by_test.setdefault(test, [])
        if index not in ran:
            ran.append(index)
        compiled_at = miss.types_by_test.setdefault(test, [])
        if k.arg_types and list(k.arg_types) not in compiled_at:
            compiled_at.append(list(k.arg_types))
    at = list(k.arg_types)
    if category == Category.NEW_INPUT and k.result_types and at in miss.first_run_types:
        at.append("-> " + ", ".join(k.result_types))  # run 1's argument types, other results
    if at and at not in miss.arg_types:
        miss.arg_types.append(at)
    if category == Category.MOVED_KEY and k.components:
        same = [m for m in mine if m.arg_types == k.arg_types] or mine
        if same:
            counterpart = min(same, key=lambda m: (len(differing_components(m, k)), m.key))
            moved = differing_components(counterpart, k)
            miss.components = list(dict.fromkeys([*miss.components, *moved]))


def _key_follows(k: LoggedKey, control: RunRecord, first_keys: set[str]) -> Follows | None:
    """One moved key's: the control's key of its module from the same test at the same argument types is the first
    run's -> the hash seed's; another -> the program's; none computed -> not known (then the module's, `_follows`)."""
    keys = control_keys(control)
    if keys is None or not k.arg_types:
        return None
    return _said(seed_control_follows(keys, first_keys, k.module, [k.arg_types], k.tests[0] if k.tests else ""))


def _follows(miss: FunctionMiss, control: RunRecord, first_keys: set[str]) -> Follows | None:
    """The control's keys of the module at the missed argument types: all the first run's -> the hash seed's; one
    the first run never had -> the program's; none computed -> not known."""
    keys = control_keys(control)
    if keys is None:
        return None
    return _said(seed_control_follows(keys, first_keys, miss.module, [tuple(t) for t in miss.arg_types]))


def _said(follows_seed: bool | None) -> Follows | None:
    """harness/evidence/keys.py seed_control_follows's word (the one rule the comparison's `seed_moved` uses too)."""
    return None if follows_seed is None else Follows.HASH_SEED if follows_seed else Follows.PROGRAM


def control_baseline(runs: Sequence[RunRecord]) -> RunRecord | None:
    """The run whose seed the seed control repeats (the first successful run), when a later run's key moved at
    argument types it had; None when no key moved."""
    comparison = comparison_of(runs)
    if not comparison.new or comparison.baseline_run is None:
        return None
    return next((r for r in runs if r.index == comparison.baseline_run), None)


def _distinct(items: Iterable[list[str]]) -> list[list[str]]:
    out: list[list[str]] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def test_changes(runs: Sequence[RunRecord]) -> list[TestChange]:
    """The tests whose outcome (or whether they ran at all) differs between the successful runs... and the failed
    ones: a flaky test fails a run (its exit status) without being a cache miss."""
    recorded = [r for r in runs if r.tests]
    if len(recorded) < 2:
        return []
    ids = list(dict.fromkeys(t for r in recorded for t in r.tests))
    out = []
    for test in ids:
        seen = {str(r.index): r.tests.get(test, "not run") for r in recorded}
        if len(set(seen.values())) > 1:
            out.append(TestChange(id=test, outcomes=seen))
    return out


def not_cached_misses(modules: Sequence[NotCachedModule]) -> list[FunctionMiss]:
    """The modules JAX never wrote, as the table's misses (each test that compiled one, in the later runs)."""
    return [FunctionMiss(module=m.module, category=Category.NOT_CACHED, runs=list(m.runs), tests=list(m.tests),
                         why=m.why, jax_says=m.jax_says, site=m.site, seconds=m.seconds) for m in modules]


def suite_findings(runs: Sequence[RunRecord], comparison: Comparison,
                   control: RunRecord | None = None, not_cached: Sequence[NotCachedModule] = ()) -> SuiteFindings:
    """Misses per function, the tests that ran differently, and each test's result (a --pytest program's);
    `not_cached`: the modules JAX never wrote (harness/evidence/not_cached.py), their own category."""
    misses = function_misses(runs, comparison, control) + not_cached_misses(not_cached)
    changed = test_changes(runs)
    changed_ids = {c.id for c in changed}
    failing = set(failing_tests(runs))
    first = next((r for r in sorted(runs, key=lambda r: r.index) if r.tests), None)
    ids = list(dict.fromkeys([*(first.tests if first else {}), *(t for r in runs for t in r.tests)]))
    tests = []
    for test in ids:
        mine = [m for m in misses if test in m.tests]
        outcome = first.tests.get(test, "not run") if first else ""
        if test in failing:
            status = "failing"  # failed in every run: the program's own failure, not measured
        elif test in changed_ids:
            status = "changed"
        elif mine and all(m.category == Category.NOT_CACHED for m in mine):
            status = "not cached"  # every function it compiled hit, but one JAX never writes
        elif mine:
            status = "missed"
        else:
            status = "clean"
        tests.append(TestResult(id=test, status=status, categories=list(dict.fromkeys(m.category for m in mine)),
                                modules=list(dict.fromkeys(m.module for m in mine)), outcome=outcome))
    return SuiteFindings(misses=misses, changed=changed, tests=tests)


def new_input_phrase(misses: Sequence[FunctionMiss], first_run: int | None = 1) -> str:
    """`jit_mse at float32[6] (run 3, t.py::test_random); run 1 compiled it at float32[2] and float32[4]`."""
    parts = []
    for m in misses[:1]:  # one in full: a suite's helpers at a dozen shapes each would fill a screen
        runs = ", ".join(map(str, m.runs))
        where = f"run{'s' if len(m.runs) > 1 else ''} {runs}" + (f", {m.tests[0]}" if m.tests else "")
        before = (f"run {first_run} compiled it at {m.first_types_label}" if m.first_run_types
                  else f"run {first_run} never compiled it")
        parts.append(f"{m.module} at {m.types_label} ({where}); {before}")
    others = list(dict.fromkeys(m.module for m in misses[1:]))
    if others:
        more = f" and {len(others) - MAX_NAMED} more" if len(others) > MAX_NAMED else ""
        parts.append(f"also new input: {', '.join(others[:MAX_NAMED])}{more}")
    return "; ".join(parts)


MAX_NAMED = 5  # functions or tests a one-line reason names; report.md and --json have them all


def others_missed(misses: Sequence[FunctionMiss], named: str) -> str:
    """`; also missed: jit_mse (new input), jit_g (moved key)`: the functions besides the one a reason names."""
    others = [m for m in misses if not (m.module == named and m.category == Category.MOVED_KEY)]
    if not others:
        return ""
    shown = ", ".join(f"{m.module} ({m.category})" for m in others[:MAX_NAMED])
    more = f" and {len(others) - MAX_NAMED} more" if len(others) > MAX_NAMED else ""
    return f"; also missed: {shown}{more}"


def changed_phrase(changed: Sequence[TestChange]) -> str:
    """`tests that ran differently between runs (not cache misses): t.py::test_x (run 1: passed, run 2: failed)`;
    one that failed in some runs, `flaky tests (...)`."""
    if not changed:
        return ""
    if all(any(o in _FAILED for o in c.outcomes.values()) for c in changed):
        shown = "; ".join(f"{c.id} (" + ", ".join(f"run {r}: {o}" for r, o in c.outcomes.items()) + ")"
                          for c in changed[:MAX_NAMED])
        more = f" and {len(changed) - MAX_NAMED} more" if len(changed) > MAX_NAMED else ""
        return f"flaky tests, failing in some runs (not cache misses): {shown}{more}"
    shown = "; ".join(f"{c.id} (" + ", ".join(f"run {r}: {o}" for r, o in c.outcomes.items()) + ")"
                      for c in changed[:MAX_NAMED])
    more = f" and {len(changed) - MAX_NAMED} more" if len(changed) > MAX_NAMED else ""
    return f"tests that ran differently between runs (not cache misses): {shown}{more}"
