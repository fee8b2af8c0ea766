"""report.md's first screen for a program with tests or several functions (pure): which tests and functions missed
and why, one row each (test, function, category, component, argument types, runs), and the tests that ran
differently between runs; the rest of the report (and the cache listings, in evidence/listings.md) follows."""

from __future__ import annotations

from tabulate import tabulate

from harness.core import markdown as md
from harness.core.model import CellResult
from harness.evidence.keys import cell_comparison
from harness.evidence.per_test import Category, Follows, SuiteFindings, suite_findings, types_label

MAX_ROWS = 40  # a longer table is cut: results.json (--json) has every row
LISTINGS_FILE = "listings.md"  # in evidence/, beside report.md: each cell's cache folder after its last run

_WHY = {
    Category.MOVED_KEY: "a later run computed another key for the same function at the same argument types "
                        "(the hash seed, or the program's own randomness baked into the module)",
    Category.NEW_INPUT: "a later run compiled the function at argument types the first run never compiled it at: "
                        "the program computed something new, not a key that moved (fails only with "
                        "`--fail-on new-input`)",
    Category.NOT_SERVED: "a later run compiled again a key whose entry the first run wrote, instead of loading it",
}
_FOLLOWS = {
    Follows.HASH_SEED: "run again with the first run's own hash seed (a fresh folder holding its entries), it "
                       "computed the first run's key: the hash seed moves it (a set's order, `hash()` of a string)",
    Follows.PROGRAM: "run again with the first run's own hash seed (a fresh folder holding its entries), its key "
                     "moved again: it follows the program's own randomness (random data or PRNG keys baked in as "
                     "constants, a clock, an address, a counter), not the hash seed",
}


def cell_findings(cell: CellResult) -> SuiteFindings:
    return suite_findings(cell.runs, cell_comparison(cell), cell.seed_control)


def jax_label(cell: CellResult) -> str:
    """`jax 0.4.31`, or `jax@<sha>` for a commit's cell."""
    return cell.label if cell.commit is not None else f"jax {cell.label}"


def _label(cell: CellResult) -> str:
    return f"{jax_label(cell)}, {cell.spec.mesh_label}, {cell.spec.devices_label}"


def per_test_section(cells: list[CellResult]) -> list[str]:
    """`## What missed, per test and function`: empty when no cell has a miss or a test that ran differently."""
    lines: list[str] = []
    for cell in cells:
        found = cell_findings(cell)
        if not found.misses and not found.changed:
            continue
        lines += [f"### {md.text(_label(cell))}: {md.text(cell.verdict)}", ""]
        rows = []
        for miss in found.misses:
            component = ", ".join(miss.components) or ("-" if miss.category != Category.MOVED_KEY else "unknown")
            # run 1's types once per row, two of them: the table repeats them for each test (--json has them all)
            first = (f"; run 1: {types_label(miss.first_run_types, 2)}"
                     if miss.first_run_types and miss.category == Category.NEW_INPUT else "")
            for test in miss.tests or ["(outside any test)" if found.tests else "-"]:
                types = miss.test_types_label(test) + first if miss.arg_types else "-"
                category = f"{miss.category}: {miss.follows}" if miss.follows else str(miss.category)
                rows.append([md.cell(md.code(test)), md.cell(md.code(miss.module)), category,
                             md.cell(component), md.cell(types),
                             ", ".join(map(str, sorted(miss.runs_by_test.get(test, miss.runs))))])
        if rows:
            shown = rows[:MAX_ROWS]
            lines += [tabulate(shown, ["test", "function", "category", "component", "argument types", "runs"],
                               tablefmt="github", disable_numparse=True), ""]
            if len(rows) > MAX_ROWS:
                lines += [f"... and {len(rows) - MAX_ROWS} more rows (every one in `harness check --json`).", ""]
            lines += [f"- **{md.text(c)}**: {_WHY[c]}." for c in Category
                      if any(m.category == c for m in found.misses)]
            lines += [f"- **moved key: {f}**: {_FOLLOWS[f]}." for f in Follows
                      if any(m.follows == f for m in found.misses)]
            lines.append("")
        if found.changed:
            lines += ["Tests that ran differently between runs (random order, a flaky test; not read as cache "
                      "misses): " + "; ".join(f"{md.code(c.id)} ("
                                              + ", ".join(f"run {r}: {o}" for r, o in c.outcomes.items()) + ")"
                                              for c in found.changed[:MAX_ROWS]), ""]
        clean = [t for t in found.tests if t.status == "clean"]
        if found.tests:
            lines += [f"{len(clean)} of {len(found.tests)} tests are clean (every function they compiled hit).", ""]
    if not lines:
        return []
    return ["## What missed, per test and function", "", *lines]


def listings_note() -> list[str]:
    return ["## Cache listings", "",
            f"Each cell's cache folder after its last run (`ls -1`) is in `evidence/{LISTINGS_FILE}`."]
