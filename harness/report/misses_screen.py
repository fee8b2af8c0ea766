"""report.md's first screen for a program with tests or several functions (pure): which tests and functions missed
and why, in a table whose row holds the tests that missed the same functions in the same category and runs (tests,
functions, category, component, runs); under it each function once, at the argument types it missed at, and for a
moved key how its lowered module differs from the first run's; the tests that ran differently between runs. The rest
of the report (and the cache listings, in evidence/listings.md) follows."""

from __future__ import annotations

import msgspec

from harness.core.kinds import NothingCached
from harness.evidence.beside_keys import compared_phrase
from harness.evidence.cost import seconds
from harness.core import markdown as md
from harness.core.model import CellResult
from harness.evidence.keys import cell_comparison
from harness.evidence.not_cached import cell_not_cached, site_label
from harness.evidence.misses import Category, Follows, FunctionMiss, SuiteFindings, suite_findings
from harness.report.evidence import Evidence, MissingEvidence, what_differs

MAX_ROWS = 10  # a longer table or list is cut (report.md stays under 20 KB): results.json (--json) has every row
LISTINGS_FILE = "listings.md"  # in evidence/, beside report.md: each cell's cache folder after its last run

_WHY = {
    Category.MOVED_KEY: "a later run computed another key for the same function at the same argument types "
                        "(the hash seed, or the program's own randomness baked into the module)",
    Category.NEW_INPUT: "a later run compiled the function at argument types the first run never compiled it at "
                        "(or at its types with other values baked in, where the seed control says the program drew them: "
                        "a static argument's value, a random constant, a clock): the program computed something new, not a key that moved "
                        "(fails only with `--fail-on new-input`)",
    Category.NOT_SERVED: "a later run compiled again a key whose entry the first run wrote, instead of loading it",
    Category.NOT_CACHED: "JAX never writes the module (a host callback in it, or as the program runs a threshold), "
                         "so every fresh process compiles the same key again: no key moved, and no cache can serve "
                         "it (fails only with `--fail-on not-cached`)",
}
_FOLLOWS = {
    Follows.HASH_SEED: "run again with run 1's own hash seed and with a later run's, each in a fresh folder holding "
                       "that run's entries, every control computed its run's keys again: the hash seed moves them (a "
                       "set's order, `hash()` of a string), with the bound the row says on mistaking the program's "
                       "own randomness for it",
    Follows.PROCESS: "run again with a run's own hash seed, its key moved again, and only components other than the "
                     "computation moved: JAX put a per-process value into the key (a path, a device assignment)",
}


def priority(miss: FunctionMiss) -> int:
    """The order of the first screen and of the table: keys that follow the hash seed, entries not served, keys
    moved otherwise (JAX's per-process values, or not decided), modules JAX never writes, new input."""
    if miss.category == Category.MOVED_KEY:
        return 0 if miss.follows == Follows.HASH_SEED else 2
    return {Category.NOT_SERVED: 1, Category.NOT_CACHED: 3, Category.NEW_INPUT: 4}[miss.category]


def cell_findings(cell: CellResult) -> SuiteFindings:
    return suite_findings(cell.runs, cell_comparison(cell), cell_not_cached(cell))


def jax_label(cell: CellResult) -> str:
    """`jax 0.4.31`, or `jax@<sha>` for a commit's cell."""
    return cell.label if cell.commit is not None else f"jax {cell.label}"


def _label(cell: CellResult) -> str:
    return f"{jax_label(cell)}, {cell.spec.mesh_label}, {cell.spec.devices_label}"


# CellSpec.key -> module -> its moved keys' modules compared, one per (test, argument types) (report/sources.py)
FunctionEvidence = dict[str, dict[str, list[Evidence | MissingEvidence]]]
MAX_TESTS_NAMED = 1  # tests a row of the table names; the rest are counted (--json has them all)
MAX_FAILING_NAMED = 3  # tests failing in every run named under a cell (the verdict's reason names five)
MAX_FUNCTIONS_NAMED = 5  # functions a row names
MAX_DIFF_LINES = 4  # changed lines shown under a moved function (evidence/ and the Evidence section have more)
MAX_COMPARED = 2  # a moved function's comparisons (one per test and argument types) given a line; the rest counted
MAX_DIFFS = 2  # diffs shown under the section's functions, every cell's together (the first comparisons)
FUNCTION_BYTES = 2_500  # the section's function lines, every cell's together, past this give their first line only
# (--json and evidence/ have every comparison): report.md stays under 20 KB (issue 60)


class _Row(msgspec.Struct, frozen=True):
    """One row of the table: the tests that missed the same functions, in the same category and component."""

    functions: tuple[str, ...]
    category: str
    component: str


def _rows(found: SuiteFindings) -> dict[_Row, dict[str, tuple[int, ...]]]:
    """Row -> its tests, each with the later runs it missed in, in the order of the misses: each test's functions of
    one category and component that missed in the same runs are one row, and the tests of alike rows share it."""
    per_test: dict[tuple[str, str, str, tuple[int, ...]], list[str]] = {}
    for miss in found.misses:
        component = ", ".join(miss.components) or ("-" if miss.category != Category.MOVED_KEY else "unknown")
        if miss.category == Category.NOT_CACHED:  # no key component moved: JAX's reason, and where
            component = not_cached_why(miss, words=False)
        category = f"{miss.category}: {miss.follows}" if miss.follows else str(miss.category)
        for test in miss.tests or ["(outside any test)" if found.tests else "-"]:
            runs = tuple(sorted(miss.runs_by_test.get(test, miss.runs)))
            per_test.setdefault((test, category, component, runs), []).append(miss.module)
    rows: dict[_Row, dict[str, tuple[int, ...]]] = {}
    for (test, category, component, runs), modules in per_test.items():
        rows.setdefault(_Row(tuple(dict.fromkeys(modules)), category, component), {})[test] = runs
    return rows


def _named(items: list[str], limit: int) -> str:
    shown = ", ".join(md.code(i) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _row(row: _Row, tests: dict[str, tuple[int, ...]]) -> list[str]:
    """The table's cells; a test's own runs beside its name where the row's tests missed in different runs."""
    alike = len(set(tests.values())) == 1
    named = [md.code(t) + ("" if alike else f" ({', '.join(map(str, runs))})")
             for t, runs in list(tests.items())[:MAX_TESTS_NAMED]]
    more = f" and {len(tests) - MAX_TESTS_NAMED} more" if len(tests) > MAX_TESTS_NAMED else ""
    runs = sorted({r for rs in tests.values() for r in rs})
    return [md.cell(", ".join(named) + more), md.cell(_named(list(row.functions), MAX_FUNCTIONS_NAMED)),
            row.category, md.cell(row.component), ", ".join(map(str, runs))]


def not_cached_why(miss: FunctionMiss, words: bool = True) -> str:
    """`host callback at tests/t.py:5 jax.debug.print`, `threshold as it runs (JAX: "it took < 1.00 seconds ...")`;
    without JAX's `words` where they differ module by module (its compile time), so alike modules share a row."""
    if miss.why == NothingCached.HOST_CALLBACKS:
        return "host callback" + (f" at {site_label(miss.site)}" if miss.site else "")
    if miss.why == NothingCached.THRESHOLDS:
        return "threshold as it runs" + (f' (JAX: "{miss.jax_says}")' if words else "")
    return f'not written (JAX: "{miss.jax_says}")'


def _not_cached_line(miss: FunctionMiss) -> str:
    """`jit_while` (not cached, `t.py::test_ls`): host callback at zoom_linesearch.py:132 jax.debug.print; 0.42 s
    per start`."""
    tests = f", {_named(miss.tests, 1)}" if miss.tests else ""
    cost = (f"{seconds(miss.seconds)} lost per start" if miss.seconds is not None
            else "its seconds not known (JAX logs no compile time for a module it never writes)")
    return f"- {md.code(miss.module)} ({miss.category}{tests}): {md.text(not_cached_why(miss))}; {cost}"


def _function_line(miss: FunctionMiss, compared: list[Evidence | MissingEvidence],
                   below: tuple[str, str | None] | None, diffs: list[int] | None = None,
                   most: int = MAX_COMPARED) -> list[str]:
    """`jit_mse` (new input): float32[6]; run 1 compiled it at float32[2] and float32[4]` and, for a moved key whose
    modules were compared, what differs and the first changed lines (`below`: the Evidence section shows them); a
    function whose keys moved in several tests or at several argument types, each on its own line under it (the
    first MAX_COMPARED; the rest counted). `diffs`: the cell's diffs still to show (one item, decremented), so a
    suite of many moved functions keeps report.md small; None: no limit."""
    if miss.category == Category.NOT_CACHED:
        return [_not_cached_line(miss)]
    category = f"{miss.category}: {miss.follows}" if miss.follows else str(miss.category)
    tests = f", {_named(miss.tests, 1)}" if miss.tests else ""
    types = miss.types_label if miss.arg_types else "argument types unknown"
    if miss.category == Category.NEW_INPUT:
        types += (f"; run 1 compiled it at {miss.first_types_label}" if miss.first_run_types
                  else "; run 1 never compiled it")
    line = f"- {md.code(miss.module)} ({category}{tests}): {md.text(types)}"
    if not compared:
        return [line]
    def shown_below(item: Evidence | MissingEvidence) -> bool:
        return (below is not None and isinstance(item, Evidence) and below[0] == item.module
                and below[1] in (None, item.key_b))
    if len(compared) == 1:
        return _compared(line, compared[0], shown_below(compared[0]), diffs)
    out = [line]
    for item in compared[:most]:
        out += [f"  {part}" if part else "" for part in _compared(f"- {_where(item)}", item, shown_below(item), diffs)]
    if len(compared) > most:  # a function compiled by many tests at many types: counted, by what differs
        rest = compared[most:]
        said = {(md.text(c.why) if isinstance(c, MissingEvidence) else what_differs(c)) for c in rest}
        alike = f": {said.pop()}" if len(said) == 1 else f" ({len(said)} kinds of difference)"
        out.append(f"  - and {len(rest)} more tests or argument types compared{alike} (`harness check --json`, "
                   "evidence/)")
    return out


def _its_own(miss: FunctionMiss, compared: list[Evidence | MissingEvidence]) -> list[Evidence | MissingEvidence]:
    """The module comparisons of a moved key's own tests (a module whose keys moved apart is two misses), and of a
    key the controls found the program's own randomness moved (new input: what it baked in differs)."""
    if miss.category != Category.MOVED_KEY and not (miss.category == Category.NEW_INPUT and miss.disagreed is not None):
        return []
    return [c for c in compared if not c.test or not miss.tests or c.test in miss.tests]


def _where(item: Evidence | MissingEvidence) -> str:
    """`at float32[4] in t.py::test_a` (Markdown): which of a function's moved keys an item compares."""
    types, test = ((item.types, item.test) if isinstance(item, MissingEvidence)
                   else (item.arguments or "its argument types", item.test))
    return md.text(f"at {types}") + (f" in {md.code(test)}" if test else "")


def _compared(line: str, compared: Evidence | MissingEvidence, below: bool, diffs: list[int] | None = None) -> list[str]:
    if isinstance(compared, MissingEvidence):
        return [f"{line}; {md.text(compared.why)}"]
    against = f"{line}; run {compared.run_b.index} against run {compared.run_a.index}: {what_differs(compared)}"
    if below:
        return [f"{against} (the diff: under Evidence below)"]
    if diffs is not None:
        if diffs[0] <= 0:
            return [against]
        diffs[0] -= 1
    changed = [d for d in compared.diff if d[:1] in "-+" and not d.startswith(("---", "+++"))]
    shown = [d if len(d) <= 160 else d[:157] + "..." for d in changed[:MAX_DIFF_LINES]]
    more = [f"... {len(changed) - MAX_DIFF_LINES} more changed lines"] if len(changed) > MAX_DIFF_LINES else []
    return [against, *(["", *md.fence([*shown, *more], "diff"), ""] if shown else [])]


def per_test_section(cells: list[CellResult], compared: FunctionEvidence | None = None,
                     diffed_below: dict[str, tuple[str, str | None]] | None = None, rows: int = MAX_ROWS) -> list[str]:
    """`## What missed, per test and function`: empty when no cell has a miss or a test that ran differently.
    `compared`: per cell, the moved functions' lowered modules against the first run's (report/sources.py);
    `diffed_below`: per cell, the module and new key whose diff the Evidence section shows (said, not repeated);
    `rows`: a cell's rows and function lines shown (fewer where report.md would pass its budget: render.py)."""
    lines: list[str] = []
    spent, diffs = [0], [MAX_DIFFS]  # one budget for the whole section, every cell's functions together
    named: list[SuiteFindings] = []
    for cell in cells:
        found = cell_findings(cell)
        found = msgspec.structs.replace(found, misses=sorted(found.misses, key=priority))  # the most important first
        failing = [t.id for t in found.tests if t.status == "failing"]
        if not found.misses and not found.changed and not failing:
            continue
        lines += [f"### {md.text(_label(cell))}: {md.text(cell.verdict)}", ""]
        lines += _function_lines(cell, found, compared, diffed_below, spent, diffs, rows)
        named.append(found)
        if found.changed:
            lines += ["Tests that ran differently between runs (random order, a flaky test; not read as cache "
                      "misses): " + "; ".join(f"{md.code(c.id)} ("
                                              + ", ".join(f"run {r}: {o}" for r, o in c.outcomes.items()) + ")"
                                              for c in found.changed[:MAX_ROWS]), ""]
        if failing:
            lines += ["Tests that failed in every run (the program's own failure, not a cache miss; the cell is judged "
                      "on the tests that passed): " + ", ".join(md.code(t) for t in failing[:MAX_FAILING_NAMED])
                      + (f" and {len(failing) - MAX_FAILING_NAMED} more (`harness check --json`)"
                         if len(failing) > MAX_FAILING_NAMED else ""), ""]
        clean = [t for t in found.tests if t.status == "clean"]
        if found.tests:
            uncached = sum(t.status == "not cached" for t in found.tests)
            also = (f"; {uncached} {'is' if uncached == 1 else 'are'} `not cached` (a function {'it' if uncached == 1 else 'each'} "
                    "compiled is one JAX never writes; the rest hit)") if uncached else ""
            lines += [f"{len(clean)} of {len(found.tests)} tests are clean (every function they compiled hit){also}.",
                      ""]
        by_key = compared_phrase(cell.runs)
        if by_key:  # where run 2 is listed: its hits are by key, not served
            lines += [f"{md.text(by_key[0].upper() + by_key[1:])}.", ""]
    if not lines:
        return []
    return ["## What missed, per test and function", "", *lines, *_legend(named)]


def _function_lines(cell: CellResult, found: SuiteFindings, compared: FunctionEvidence | None,
                    diffed_below: dict[str, tuple[str, str | None]] | None, spent: list[int],
                    diffs: list[int], limit: int = MAX_ROWS) -> list[str]:
    """A cell's table of misses per test and function, then each function's line and comparisons, in the budget
    every cell of the section shares: `spent`, the bytes of function lines the cells before this one took;
    `diffs`, the diffs they left to show."""
    rows = [_row(row, tests) for row, tests in _rows(found).items()]
    if not rows:
        return []
    lines: list[str] = []
    shown = rows[:limit]
    lines += [md.pipe_table(shown, ["tests", "functions", "category", "component", "runs"]), ""]
    if len(rows) > limit:
        lines += [f"... and {len(rows) - limit} more rows (every one in `harness check --json`).", ""]
    mine = (compared or {}).get(cell.spec.key, {})
    lines += ["Each function that missed, at the argument types of its missed keys:", ""]
    used = spent[0]
    for miss in found.misses[:limit]:
        # past half the budget a function gets one comparison, past all of it its first line only
        told = _function_line(miss, _its_own(miss, mine.get(miss.module, [])),
                              (diffed_below or {}).get(cell.spec.key), diffs,
                              MAX_COMPARED if used <= FUNCTION_BYTES // 2 else 1)
        if used + sum(len(t.encode()) + 1 for t in told) > FUNCTION_BYTES and len(told) > 1:
            told = [told[0] + (" (its modules compared: `harness check --json`, evidence/)"
                               if miss.category == Category.MOVED_KEY else "")]
        used += sum(len(t.encode()) + 1 for t in told)
        lines += told
    spent[0] = used
    if len(found.misses) > limit:
        lines.append(f"- ... and {len(found.misses) - limit} more functions (`harness check --json`)")
    lines.append("")
    return lines


def _legend(found: list[SuiteFindings]) -> list[str]:
    """What each category the section's tables name means, once under every cell's (in Category's order)."""
    misses = [m for f in found for m in f.misses]
    lines = [f"- **{md.text(c)}**: {_WHY[c]}." for c in Category if any(m.category == c for m in misses)]
    lines += [f"- **moved key: {f}**: {_FOLLOWS[f]}." for f in Follows if any(m.follows == f for m in misses)]
    return [*lines, ""] if lines else []


def listings_note() -> list[str]:
    return ["## Cache listings", "",
            f"Each cell's cache folder after its last run (`ls -1`) is in `evidence/{LISTINGS_FILE}`."]
