"""A cell's misses per function and per test (pure): every module that missed, the tests that compiled it, the
key component that moved, the argument types; the tests that ran differently between runs; the clean tests.

From the runs' keys as the in-process recorder read them (harness/core/recorder.py: each key with the pytest ids
whose JAX messages named it and the argument types it was compiled at) and the comparison the verdict was judged
from. A plain script has no test ids: its misses are still listed per function, with no test.

Categories (`Category`):
- `moved key`: a later run computed a key its test's function never had in run 1, and the cause controls say the
  hash seed moved it, whatever its argument types (a set's order: the seed's bug class), or JAX's per-process value
  (only components other than the computation moved); where no control decided, one at argument types run 1 had.
- `new input`: a later run computed a key the cause controls say something other than the hash seed moved (the
  program's own randomness: random shapes, constants, a clock), or, where no control decided, at argument types
  run 1 never compiled that function at in that test (`jit_mse at float32[6]; run 1 compiled [2] and [4]`): the
  program computed something new, a miss no cache can serve (harness/evidence/keys.py).
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
from harness.core.comparison import Moved
from harness.evidence.keys import counted, failing_tests
from harness.evidence.not_cached import NotCachedModule


SEED_CONTROL = "seed-control"  # the cell runner's QueuedRun.check for a cause control's run
_FAILED = frozenset({"failed", "error"})  # a test's outcomes that failed it (pytest's words)


class Follows(enum.StrEnum):
    """What a moved key follows, from the cause controls (harness/evidence/controls.py): runs' own seeds again, each
    in a fresh folder with its run's entries (the same seed, the same program: only what the seed does not fix can
    differ)."""

    HASH_SEED = "hash seed"  # every control computed its run's keys again: the hash seed moved it (a set's order)
    # a control moved it again, and JAX's log says only components other than the computation moved: JAX put a
    # per-process value into the key (a path, a device assignment)
    PROCESS = "process"


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
    follows: Follows | None = None  # moved key: what the cause controls say moved it (None: not decided)
    # the cause controls that decided it (moved key, new input): how many, the bound on calling the program's own
    # randomness the hash seed (a hash-seed decision), the run whose seed a control repeated and got other keys
    controls: int = 0
    bound: float | None = None
    disagreed: int | None = None
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


def function_misses(runs: Sequence[RunRecord], comparison: Comparison) -> list[FunctionMiss]:
    """Every module that missed in a later run, per category, in the order of the first run that missed it;
    a moved key says what moved it where the cause controls decided (the comparison's decisions)."""
    good = {r.index: r for r in counted(runs)}
    first = good.get(comparison.baseline_run) if comparison.baseline_run is not None else None
    first_keys = [k for k in first.keys.keys] if first is not None and first.keys is not None else []
    out: dict[tuple[str, Category, Follows | None], FunctionMiss] = {}
    sources = ((Category.MOVED_KEY, comparison.new), (Category.NEW_INPUT, comparison.new_input),
               (Category.NOT_SERVED, comparison.unserved))
    for category, by_run in sources:
        for index in sorted(by_run):
            logged = _by_key(good[index]) if index in good else {}
            for module, keys in sorted(by_run[index].items()):
                mine = [k for k in first_keys if k.module == module]
                for key in keys:
                    k = logged.get(key)
                    # each moved key by what moved it: a set-ordered test's beside a per-process value's, apart
                    follows = _moved_by(comparison, module, k) if category == Category.MOVED_KEY else None
                    miss = out.setdefault((module, category, follows),
                                          FunctionMiss(module=module, category=category, follows=follows))
                    if index not in miss.runs:
                        miss.runs.append(index)
                    miss.first_run_types = _distinct(list(k.arg_types) for k in mine if k.arg_types)
                    if key not in miss.keys:
                        miss.keys.append(key)
                    if k is not None:
                        _add_logged_key(miss, k, index, category, mine)
                    _add_decision(miss, comparison, module, k)
    order = {c: i for i, c in enumerate(Category)}
    followed = {Follows.HASH_SEED: 0, None: 1, Follows.PROCESS: 2}
    return sorted(out.values(), key=lambda m: (min(m.runs), order[m.category], m.module, followed[m.follows]))


def _moved_by(comparison: Comparison, module: str, k: LoggedKey | None) -> Follows | None:
    """What the controls say moved a moved key of `module` (its own test's decision): the hash seed, or (decided
    otherwise, yet a moved key) JAX's per-process value; None where they did not decide."""
    test = k.tests[0] if k is not None and k.tests else ""
    decision = comparison.decision(module, test)
    if decision is None or decision.moved == Moved.UNDECIDED:
        return None
    return Follows.HASH_SEED if decision.moved == Moved.HASH_SEED else Follows.PROCESS


def controls_phrase(miss: FunctionMiss) -> str:
    """How the cause controls decided a miss: `5 controls, each a run's own hash seed again, computed that run's keys
    again (chance of that from the program's own randomness: at most 0.035)`, `a control with run 3's own hash seed
    computed another key`; "" where none decided it."""
    if miss.bound is not None:
        return (f"{miss.controls} controls, each a run's own hash seed again in a fresh folder, computed that run's "
                f"keys again (chance of that from the program's own randomness: at most {miss.bound:.2g})")
    if miss.disagreed is not None:
        return f"a control with run {miss.disagreed}'s own hash seed computed another key"
    return ""


def _add_decision(miss: FunctionMiss, comparison: Comparison, module: str, k: LoggedKey | None) -> None:
    """The cause controls' decision on the missed key's own function and test, where they made one."""
    decision = comparison.decision(module, k.tests[0] if k is not None and k.tests else "")
    if decision is None or decision.moved == Moved.UNDECIDED or miss.category == Category.NOT_SERVED:
        return
    miss.controls = max(miss.controls, decision.controls)
    if decision.moved == Moved.HASH_SEED:
        miss.bound = max(miss.bound or 0.0, decision.bound)
    elif miss.disagreed is None:
        miss.disagreed = decision.disagreed


def _add_logged_key(miss: FunctionMiss, k: LoggedKey, index: int, category: Category, mine: list[LoggedKey]) -> None:
    """What JAX's log says of one missed key: the test that compiled it (it names it first; the ones after it hit the
    entry it wrote), its argument types, and for a moved key the components that moved against run 1's key of the
    same function in the same test at the same argument types (none where run 1 never compiled it there: no other
    test's key is its counterpart)."""
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
    if (category == Category.NEW_INPUT and k.result_types and at in miss.first_run_types
            and not any(m.arg_types == k.arg_types and m.result_types == k.result_types for m in mine)):
        at.append("-> " + ", ".join(k.result_types))  # run 1's argument types, other results
    if at and at not in miss.arg_types:
        miss.arg_types.append(at)
    if category == Category.MOVED_KEY and k.components:
        same = [m for m in mine if m.arg_types == k.arg_types and m.tests[:1] == k.tests[:1]]
        if same:
            counterpart = min(same, key=lambda m: (len(differing_components(m, k)), m.key))
            moved = differing_components(counterpart, k)
            miss.components = list(dict.fromkeys([*miss.components, *moved]))


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
                   not_cached: Sequence[NotCachedModule] = ()) -> SuiteFindings:
    """Misses per function, the tests that ran differently, and each test's result (a --pytest program's);
    `not_cached`: the modules JAX never wrote (harness/evidence/not_cached.py), their own category."""
    misses = function_misses(runs, comparison) + not_cached_misses(not_cached)
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
        if m.disagreed is not None:  # the controls decided it: the program's own randomness
            at = f" at {m.types_label}" if m.arg_types else ""
            parts.append(f"{m.module}{at} ({where}): {controls_phrase(m)}, so the program's own randomness moved it")
            continue
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
