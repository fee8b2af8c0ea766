"""report.md's (and the terminal's) first screen for a suite (issue 60.5, pure): one line per finding, most important
first, each with the test, the function, the cause in words, the cost per start and what to do. The order: keys that
follow the hash seed (a fix in the program makes every start hit), entries on disk not served, keys the program's own
randomness moves, modules JAX never writes, then new input (the program computed something new: no cache serves it).

The cause is the per-test table's own (its category, and where the lowered modules were compared, the diff's likely
cause: report/sources.py function_evidence), so the first screen and the table below it never disagree."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from harness.core import markdown as md
from harness.core.comparison import dispatch_helper
from harness.core.kinds import Cause, NothingCached
from harness.core.model import CellResult
from harness.evidence.cost import seconds
from harness.evidence.misses import Category, Follows, FunctionMiss, controls_phrase
from harness.evidence.not_cached import site_label
from harness.report.evidence import Evidence, MissingEvidence
from harness.report.misses_screen import FunctionEvidence, cell_findings, jax_label, not_cached_why, priority

MAX_FINDINGS = 10  # lines the first screen names; the per-test table below has every miss


def _cause(miss: FunctionMiss, compared: Sequence[Evidence | MissingEvidence]) -> Cause | None:
    """The likely cause of the miss's own modules' diff (its tests'), where one was compared."""
    for item in compared:
        if isinstance(item, Evidence) and (not item.test or not miss.tests or item.test in miss.tests):
            return item.cause
    return None


def cause_and_action(miss: FunctionMiss, cause: Cause | None) -> tuple[str, str]:
    """The cause in words and what to do, for one miss."""
    module = miss.module
    if miss.category == Category.NOT_SERVED:
        return ("the entry the first run wrote was on disk, yet a later start compiled it again",
                "read JAX's words on why it could not load it (the per-test table and the Evidence below)")
    if miss.category == Category.NOT_CACHED:
        why = not_cached_why(miss)
        if miss.why == NothingCached.HOST_CALLBACKS:
            where = f"the callback at {site_label(miss.site)}" if miss.site else "a host callback"
            return why, f"{where} keeps {module} out of the cache: move it out of the jitted code, or accept a compile per start"
        if miss.why == NothingCached.THRESHOLDS:
            return why, "jax_persistent_cache_min_compile_time_secs=0 would keep it"
        return why, "no cache can serve it as it is"
    decided = controls_phrase(miss)
    if miss.category == Category.NEW_INPUT and miss.disagreed is not None:
        action = "make what the program draws the same every start (seed its generators) if every start should hit"
        if any(t and t[-1].startswith("-> ") for t in miss.arg_types):
            at = (f"at run 1's argument types returning other types ({miss.types_label}): a static argument's value "
                  "changed what it computes")
        elif any(t not in miss.first_run_types for t in miss.arg_types):
            at = f"compiled at {miss.types_label}, argument types run 1 never had"
        else:
            at = "at run 1's argument types: other values baked in (random constants, a clock)"
            action = ("pass what the program draws anew each start (a PRNG key, an array) to the jitted function as an "
                      "argument instead of closing over it, or seed its generators, if every start should hit")
        return f"the program's own randomness moved it, not the hash seed ({decided}); {at}", action
    if miss.category == Category.NEW_INPUT and any(t and t[-1].startswith("-> ") for t in miss.arg_types):
        why = (f"compiled at run 1's argument types returning other types ({miss.types_label}): a static argument's "
               "value (a size drawn at random) changed what it computes")
        return (why,
                "fix the value the test draws (seed its generator) if every start should hit")
    if miss.category == Category.NEW_INPUT:
        had = f"; run 1 compiled it at {miss.first_types_label}" if miss.first_run_types else ""
        return (f"compiled at {miss.types_label}, argument types run 1 never had{had}",
                "fix the shapes the test draws (seed its generator) if every start should hit")
    if miss.follows == Follows.HASH_SEED or cause == Cause.ORDER:
        why = ("its key follows the hash seed: a set's order (or hash() of a string) is traced into the module"
               + (f" ({decided})" if decided else ""))
        return why, ("iterate a sorted list, not a set, where the function is traced (a mesh's axis names, a "
                     "PartitionSpec's, a dict's keys)")
    if miss.follows == Follows.PROCESS:
        components = ", ".join(miss.components) or "a component other than the computation"
        why = (f"JAX put a per-process value into its key: only {components} moved, and the same hash seed moved "
               f"it again ({decided})")
        return why, "report it to JAX with the diff below: the program cannot fix it"
    if cause == Cause.CONSTANT:
        return ("a constant baked into the module differs each start (random data closed over)",
                "seed the test's numpy generator (or pass the array as an argument)")
    if cause == Cause.ADDRESS:
        return ("an address baked into the module differs each start (an object's address, a host callback's)",
                "keep the address out of the traced code: such a key never repeats")
    components = ", ".join(miss.components) or "a component"
    return f"its key moved ({components})", "read the diff below"


def _cost(miss: FunctionMiss, cell: CellResult) -> str:
    """Seconds per start: JAX's compile time of the missed keys (the mean over the later runs), a module JAX never
    writes its own; "cost not logged" where JAX said none."""
    if miss.category == Category.NOT_CACHED:
        return f"{seconds(miss.seconds)} per start" if miss.seconds is not None else "cost not logged"
    times = [k.compile_time_s for r in cell.runs if r.index in miss.runs and r.keys is not None
             for k in r.keys.keys if k.key in miss.keys and k.compile_time_s is not None]
    return f"{seconds(sum(times) / len(times))} per start" if times else "cost not logged"


class Finding(msgspec.Struct, frozen=True):
    """One line of the first screen."""

    rank: int
    test: str  # the first test that compiled it ("" for a plain script)
    more: int  # the other tests that did
    module: str
    on: str  # the release, where several cells are listed
    cause: str
    cost: str
    action: str

    @property
    def short_cause(self) -> str:
        """The cause's head (`its key follows the hash seed`), for a line whose cause and action a line above said."""
        return self.cause.split(":", 1)[0].split(" (", 1)[0]

    def plain(self, repeated: bool = False) -> str:
        where = (f"{self.test}{f' and {self.more} more' if self.more else ''}: " if self.test else "") + self.module
        if repeated:
            return f"{where}{f' ({self.on})' if self.on else ''}: the same ({self.short_cause}); {self.cost}"
        return f"{where}{f' ({self.on})' if self.on else ''}: {self.cause}; {self.cost}: {self.action}"

    def markdown(self, repeated: bool = False) -> str:
        where = (f"{md.code(self.test)}{f' and {self.more} more' if self.more else ''}: " if self.test else "")
        on = f" ({md.text(self.on)})" if self.on else ""
        if repeated:
            return f"{where}{md.code(self.module)}{on}: the same ({md.text(self.short_cause)}); {md.text(self.cost)}"
        return (f"{where}{md.code(self.module)}{on}: {md.text(self.cause)}; {md.text(self.cost)}: "
                f"**{md.text(self.action)}**")


def findings(cells: Sequence[CellResult], compared: FunctionEvidence | None = None) -> list[Finding]:
    """Every miss of every cell, most important first (within a rank the user's functions first, then stable: the
    cells in the order given, each miss in the per-test table's order)."""
    out: list[Finding] = []
    for cell in cells:
        mine = (compared or {}).get(cell.spec.key, {})
        for miss in cell_findings(cell).misses:
            cause, action = cause_and_action(miss, _cause(miss, mine.get(miss.module, [])))
            out.append(Finding(priority(miss), miss.tests[0] if miss.tests else "", max(len(miss.tests) - 1, 0),
                               miss.module, jax_label(cell) if len(cells) > 1 else "", cause, _cost(miss, cell),
                               action))
    return in_order(out)


def in_order(found: Sequence[Finding]) -> list[Finding]:
    """Most important kind first; within a kind the user's own functions before the modules JAX compiles for an
    eager operation (a set-ordered mesh's jit__multi_slice was said whole above jit_body); else as given."""
    return sorted(found, key=lambda f: (f.rank, dispatch_helper(f.module)))


def shown(found: Sequence[Finding]) -> list[Finding]:
    """The findings the first screen names, most important first: the first of each kind (rank) whatever the others
    (a module JAX never writes is said beside a suite's dozens of moved keys), then the rest in order."""
    firsts = [i for i, f in enumerate(found) if all(g.rank != f.rank for g in found[:i])][:MAX_FINDINGS]
    rest = [i for i in range(len(found)) if i not in firsts][:MAX_FINDINGS - len(firsts)]
    return [found[i] for i in sorted([*firsts, *rest])]  # (found is in rank order)


def _listed(found: Sequence[Finding]) -> list[tuple[Finding, bool]]:
    """The findings shown, each with whether a line above said its cause and action (a script whose six modules all
    follow the hash seed said the same long sentence six times): then it says "the same" and its own cost only."""
    said: set[tuple[str, str, str]] = set()
    out = []
    for f in shown(found):
        # the cause's words but its parentheses (the controls that decided it, their bound: each miss's own)
        said_as = (re.sub(r" \([^()]*\)", "", f.cause), f.action, f.on)
        out.append((f, said_as in said))
        said.add(said_as)
    return out


def first_screen(cells: Sequence[CellResult], compared: FunctionEvidence | None = None) -> list[str]:
    """`## What to do`: one Markdown line per finding; empty when no cell has one."""
    found = findings(cells, compared)
    if not found:
        return []
    lines = [f"- {f.markdown(repeated)}" for f, repeated in _listed(found)]
    more = [f"- ... and {len(found) - MAX_FINDINGS} more (the per-test table below)"] if len(found) > MAX_FINDINGS else []
    return ["## What to do", "", *lines, *more]


def as_you_run_it_lines(cells: Sequence[CellResult]) -> list[str]:
    """Where the program's own settings keep JAX from writing what was measured with the harness's (its threshold,
    no cache folder): beside `clean` that is why every start compiles as its author runs it. report.md says it in
    its first lines; the terminal had it only at the end of a long detail, where a newcomer read past it."""
    said: dict[str, list[str]] = {}
    for cell in cells:
        if cell.as_you_run_it:
            said.setdefault(cell.as_you_run_it, []).append(jax_label(cell))
    return [f"- {', '.join(on)}: {text}" for text, on in said.items()]


def terminal_lines(cells: Sequence[CellResult], compared: FunctionEvidence | None = None) -> list[str]:
    """The same findings as plain text for the terminal, under the table, then how the program differs as its
    author runs it (report.md's first lines)."""
    found = findings(cells, compared)
    lines = [f"- {f.plain(repeated)}" for f, repeated in _listed(found)]
    more = [f"- ... and {len(found) - MAX_FINDINGS} more (report.md)"] if len(found) > MAX_FINDINGS else []
    lines = [*lines, *more, *as_you_run_it_lines(cells)]
    return ["What to do:", *lines] if lines else []
