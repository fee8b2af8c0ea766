"""How a factor's run is judged, and what the factors do to a cell's verdict (pure: records in, data out).

A factor's run has the reference run's hash seed and one change of environment. Against the reference
(the cell's first run, in the plain environment), using what each run computed (JAX's log; the cache
folder's new entries where the log names no key):

- hit: it computed no key the reference did not;
- miss: it computed new keys of the reference's modules; the components that moved (JAX's log) say
  why. A miss whose only moved components are ones JAX hashes on purpose for that factor
  (`factors.KEYED_BY_DESIGN`: zstandard or not) is `keyed by design`, never a regression;
- not judged: its run failed, or it compiled other modules than the reference.

A miss only counts once a control run, the plain environment with the same seed again, hits: when
the control misses too, the keys move without the factor (an address, a time) and no factor is blamed.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.evidence.keys import cell_comparison, run_keys
from harness.core.factors import KEYED_BY_DESIGN, WHEN, Factor, FactorOutcome
from harness.core.jaxlog import LoggedKey, differing_components
from harness.core.listing import Entry
from harness.core.model import CellResult
from harness.core.findings import CellVariation, FactorResult
from harness.core.runs import RunRecord
from harness.core.kinds import Verdict


def _modules(found: frozenset[Entry]) -> list[str]:
    return sorted({e.module for e in found})


def _logged(run: RunRecord) -> dict[str, LoggedKey]:
    return run.keys.by_key() if run.keys is not None else {}


def moved_components(reference: RunRecord, run: RunRecord, new: frozenset[Entry]) -> list[str] | None:
    """The key components that differ between each new key and its closest counterpart among the
    reference's keys of the same module, in JAX's order; None when a log names no components."""
    mine, theirs = _logged(reference), _logged(run)
    moved: list[str] = []
    for entry in sorted(new, key=lambda e: e.key):
        key = theirs.get(entry.key)
        counterparts = [k for k in mine.values() if k.module == entry.module and k.components]
        if key is None or not key.components or not counterparts:
            return None
        closest = min(counterparts, key=lambda k: (len(differing_components(k, key)), k.key))
        moved += [c for c in differing_components(closest, key) if c not in moved]
    return moved


def judge_factor(factor: Factor, reference: RunRecord, run: RunRecord, change: str = "",
                 on_disk: frozenset[str] | None = None) -> FactorResult:
    """One factor's run against the reference run (both with the same hash seed). `on_disk`: the entry
    keys in the factor run's cache folder after it ran; a hit its log claims on a key never there is
    not believed (nothing was there to hit)."""
    result = FactorResult(factor, FactorOutcome.NOT_JUDGED, change=change, run=run)
    if not run.ok:
        result.reason = f"its run failed ({run.reason or run.exit_code}): the factor could not be measured"
        return result
    ref, mine = run_keys(reference), run_keys(run, on_disk)
    # An entry that appeared during the factor's run is a key the folder did not hold, whatever its log
    # says: a cut or silenced log never hides a miss.
    new, fewer = mine.appeared - ref.known(), frozenset[Entry]()
    if ref.computed is not None and mine.computed is not None:  # both logs named their keys
        new, fewer = new | (mine.computed - ref.computed), ref.computed - mine.computed
    ref_modules = _modules(ref.known())
    result.modules_total = len(ref_modules)
    if not new:
        if fewer:
            result.reason = (f"it computed fewer keys than the reference ("
                             f"{len(fewer)} key(s) not computed): nothing to compare")
            return result
        result.outcome = FactorOutcome.HIT
        result.reason = f"every module the reference computed was hit ({len(ref_modules)} of {len(ref_modules)})"
        return result
    missed = [m for m in _modules(new) if m in ref_modules]
    if not missed:
        result.reason = f"it compiled other modules than the reference ({', '.join(_modules(new))})"
        return result
    result.modules = missed
    count = f"{len(missed)} of {len(ref_modules)} module{'' if len(ref_modules) == 1 else 's'}"
    components = moved_components(reference, run, new)
    if components is None:
        result.outcome = FactorOutcome.MISS
        result.reason = f"new keys for {count}; JAX's log names no key components"
        return result
    result.components = components
    moved = ", ".join(components) or "no component"
    by_design = KEYED_BY_DESIGN.get(factor, frozenset())
    if components and set(components) <= by_design:
        result.outcome = FactorOutcome.KEYED_BY_DESIGN
        result.reason = f"hosts sharing a cache must agree on it ({moved} moved, {count})"
    else:
        result.outcome = FactorOutcome.MISS
        result.reason = f"{moved} moved, {count}"
    return result


def cannot_vary(factor: Factor, why: str) -> FactorResult:
    return FactorResult(factor, FactorOutcome.CANNOT_VARY, reason=why)


def not_judged(factor: Factor, why: str) -> FactorResult:
    return FactorResult(factor, FactorOutcome.NOT_JUDGED, reason=why)


def control_missed(reference: RunRecord, control: RunRecord) -> str:
    """Why the control run (plain environment, the reference's seed) shows the keys moving without any
    factor, or "" when it hit every key the reference computed."""
    if not control.ok:
        return f"the control run (the plain environment, seed {control.seed}) failed ({control.reason})"
    judged = judge_factor(Factor.CWD, reference, control)  # any factor: only hit or not matters here
    if judged.outcome == FactorOutcome.HIT:
        return ""
    return (f"the control run (the plain environment, seed {control.seed} again) missed too "
            f"({judged.reason}): the keys move without any factor")


def with_control(variation: CellVariation, reference: RunRecord, control: RunRecord,
                 moved_folder: FactorResult | None = None) -> CellVariation:
    """The variation once its control ran: a factor's miss (and the moved folder's) stands only if the
    control hit."""
    variation.control = control
    why = control_missed(reference, control)
    if why:
        for factor in [*variation.factors, *([moved_folder] if moved_folder is not None else [])]:
            if factor.outcome in (FactorOutcome.MISS, FactorOutcome.KEYED_BY_DESIGN):
                factor.outcome = FactorOutcome.NOT_JUDGED
                factor.reason = f"{factor.reason}; not the factor's: {why}"
        variation.note = why
    return variation


def needs_control(variation: CellVariation, moved_folder: FactorResult | None = None,
                  verdict: Verdict = Verdict.CLEAN) -> bool:
    """Whether a control run must follow: a factor missed, or the moved folder missed on a cell whose own
    fresh processes did not all hit. A clean cell's later runs already hit in the plain folder, so its keys
    do not move without the path; a reproduced cell's keys may move by themselves (an address, a clock)."""
    if variation.control is not None:
        return False
    moved_missed = (moved_folder is not None and moved_folder.missed and verdict != Verdict.CLEAN
                    and not moved_folder.planned_run)  # (a planned run's moved run had its own control)
    return moved_missed or any(f.outcome in (FactorOutcome.MISS, FactorOutcome.KEYED_BY_DESIGN)
                               for f in variation.factors)


def miss_phrase(factor: FactorResult) -> str:
    """`misses when the cache folder is reached by another path (compile_options moved, 3 of 3 modules)`."""
    return f"misses when {WHEN[factor.factor]} ({factor.reason})"


def verdict_with(verdict: Verdict, reason: str, variation: CellVariation | None) -> tuple[Verdict, str]:
    """The cell's verdict and reason once its factors are judged. A clean cell that misses under a
    factor that should not matter is `reproduced`, its reason naming the factor; a cell reproduced by
    its seeds stays so (the factors' misses are added); error and unsupported cells are unchanged."""
    if variation is None:
        return verdict, reason
    missed = variation.missed()
    unjudged = [f for f in variation.factors if f.outcome == FactorOutcome.NOT_JUDGED]
    if verdict == Verdict.CLEAN and variation.note and variation.control is not None:
        return Verdict.REPRODUCED, variation.note
    if verdict == Verdict.CLEAN and missed:
        return Verdict.REPRODUCED, "; ".join(miss_phrase(f) for f in missed)
    if verdict == Verdict.REPRODUCED and missed:
        return verdict, reason + "; also " + "; ".join(miss_phrase(f) for f in missed)
    if verdict == Verdict.CLEAN and unjudged:
        names = ", ".join(str(f.factor) for f in unjudged)
        return verdict, f"{reason}; --vary: {names} not judged ({unjudged[0].reason})"
    return verdict, reason


def vary_column(variation: CellVariation | None) -> str:
    """The table's column: the factors that missed, or how many hit."""
    if variation is None:
        return "-"
    if variation.note and not variation.factors:
        return "not judged"
    missed = [str(f.factor) for f in variation.missed()]
    if missed:
        return "miss: " + ", ".join(missed)
    parts = []
    for outcome in FactorOutcome:
        named = [str(f.factor) for f in variation.factors if f.outcome == outcome]
        if named:
            parts.append(f"{len(named)} hit" if outcome == FactorOutcome.HIT else f"{outcome}: {', '.join(named)}")
    return "; ".join(parts) or "-"


def reference_of(records: Sequence[RunRecord]) -> RunRecord | None:
    """The run factors are compared with: the cell's first run."""
    ordered = sorted(records, key=lambda r: r.index)
    return ordered[0] if ordered else None


def why_not_varied(reference: RunRecord | None, verdict: Verdict) -> str:
    """Why a cell's factors are not run at all, or "" when they are."""
    if reference is None:
        return "no run was made"
    if not reference.ok:
        return f"the reference run (run {reference.index}) failed"
    if not verdict.compared:
        return f"the cell is {verdict}: there is nothing to compare"
    if not run_keys(reference).known():
        return f"the reference run (run {reference.index}) computed no key"
    return ""


def by_factors_only(cell: CellResult) -> bool:
    """A reproduced cell whose own runs agree: only a factor (or the control run) missed, so the
    evidence and commands of its runs have nothing to show; the variation section has."""
    return (cell.verdict == Verdict.REPRODUCED and cell.variation is not None
            and not cell_comparison(cell).reproduced)


# ---- the default check's moved folder: the cache-path factor's run, beside the verdict (issue 47.3) ----

MOVED_FOLDER = "moved folder"  # its column and its line's head


def moved_folder_column(result: FactorResult | None) -> str:
    """`hit`, `every module missed (compile_options)`, `1 of 3 modules missed (...)`, `not judged`, `not
    made`; "-" where no such run was planned (an error or unsupported cell, --no-moved-folder)."""
    if result is None:
        return "-"
    if result.outcome == FactorOutcome.HIT:
        return "hit"
    if result.outcome == FactorOutcome.CANNOT_VARY:
        return "not made"
    if result.outcome != FactorOutcome.MISS:
        return str(FactorOutcome.NOT_JUDGED)
    whole = bool(result.modules) and len(result.modules) == result.modules_total
    count = "every module" if whole else f"{len(result.modules) or 'some'} of {result.modules_total or '?'} modules"
    moved = f" ({', '.join(result.components)})" if result.components else ""
    return f"{count} missed{moved}"


def path_in_keys(result: FactorResult) -> bool | None:
    """Whether the cache folder's path is in the keys on the release measured, as its moved-folder run showed:
    every key hit (not in them), or every module missed in its compile options alone (in them: JAX 0.4.36 until
    0.11.0 put `<cache dir>/xla_gpu_per_fusion_autotune_cache_dir` there); None where the run says neither."""
    if result.outcome == FactorOutcome.HIT:
        return False
    whole = bool(result.modules) and len(result.modules) == result.modules_total
    if result.outcome == FactorOutcome.MISS and whole and tuple(result.components) == ("compile_options",):
        return True
    return None


def moved_folder_line(result: FactorResult | None) -> str:
    """`moved folder: every module missed (compile_options)`, with the reason where it was not judged or
    not made; "" where no such run was planned."""
    if result is None:
        return ""
    said = moved_folder_column(result)
    why = result.reason if result.outcome not in (FactorOutcome.HIT, FactorOutcome.MISS) and result.reason else ""
    return f"{MOVED_FOLDER}: {said}" + (f" ({why})" if why else "")


def moved_folder_finding(result: FactorResult | None) -> str:
    """The moved folder's line with what it shows of the release: `moved folder: hit: the cache folder's path is
    not in the keys on this release` (the progress, the report, the CI outputs)."""
    line = moved_folder_line(result)
    in_keys = None if result is None else path_in_keys(result)
    if in_keys is None:
        return line
    return f"{line}: the cache folder's path is {'' if in_keys else 'not '}in the keys on this release"


# ---- the moved run in a planned later run's place (issue 51 item 7): one process fewer per clean cell ----

def counts_as_planned_run(moved: FactorResult) -> bool:
    """Whether the moved run, made with a planned later run's seed in a copy of run 1's folder, is that later run:
    it ran to its end and every key it computed hit (it compiled none: a key compiled again though its entry was in
    the copy was not served, a miss in the cell's own folder too). Such a run computed run 1's keys with another
    seed, what a later run in the cell's folder shows, and reading them through another path hit."""
    run = moved.run
    return moved.outcome == FactorOutcome.HIT and run is not None and run.ok and not run_keys(run).compiled


def as_planned_run(moved: FactorResult) -> FactorResult:
    """The moved run counted as the planned run whose index and seed it had."""
    assert moved.run is not None, "a moved run counted without its run"
    moved.planned_run, moved.counted = moved.run.index, True
    moved.run.in_moved_folder = True
    moved.reason = f"{moved.reason}; counted as run {moved.run.index}"
    return moved


def with_planned_control(moved: FactorResult, reference: RunRecord, control: RunRecord) -> FactorResult:
    """The moved run (a planned run's seed, not counted) once that planned run was made in the cell's own folder with
    the same seed: where that hit, the seed moves no key and the moved run's miss is the path's; where it missed
    too, the seed (or the program) moved the keys and whether the path does was not measured (`not judged`). A moved
    run that failed or was not judged stays so: the control only made the planned run."""
    moved.planned_run = control.index
    same = f"run {control.index}, seed {control.seed} again in the cell's own folder"
    if moved.outcome not in (FactorOutcome.MISS, FactorOutcome.KEYED_BY_DESIGN):
        moved.reason = f"{moved.reason}; {same}, is the cell's run {control.index}"
        return moved
    if not control.ok:
        why = f"{same}, failed ({control.reason or control.exit_code})"
    else:
        judged = judge_factor(moved.factor, reference, control)  # only whether every key hit matters here
        if judged.outcome == FactorOutcome.HIT:
            moved.reason = f"{moved.reason}; {same}, hit: the path moved them"
            return moved
        why = f"{same}, missed too ({judged.reason}): the seed or the program moved the keys"
    moved.outcome = FactorOutcome.NOT_JUDGED
    moved.reason = f"{moved.reason}; not the path's: {why}, so whether the path moves them was not measured"
    return moved


def without_planned_control(moved: FactorResult, planned_run: int, why: str) -> FactorResult:
    """The moved run (`planned_run`'s seed, not counted) whose planned run was not made again (`why`): a miss is
    then not known to be the path's (`not judged`)."""
    moved.planned_run = planned_run
    if moved.outcome in (FactorOutcome.MISS, FactorOutcome.KEYED_BY_DESIGN):
        moved.outcome = FactorOutcome.NOT_JUDGED
        why = f"not known to be the path's: {why}"
    moved.reason = f"{moved.reason}; {why}"
    return moved


def moved_run_detail(moved: FactorResult) -> str:
    """What a moved run in a planned run's place measured, in words, for the report: its folder and seed (`change`)
    and what became of it (`reason`, where `moved_folder_line` does not say it already); "" for one with run 1's
    seed, which the section's text describes."""
    if not moved.planned_run:
        return ""
    said = moved.reason if moved.outcome in (FactorOutcome.HIT, FactorOutcome.MISS) else ""
    return "; ".join(part for part in (moved.change, said) if part)
