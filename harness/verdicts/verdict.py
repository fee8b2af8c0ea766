"""Runs -> a cell's verdict and its reason (pure), for one process or each process of a job.

A cell reproduces when its runs disagree: a later run computes a key that the cell's earlier runs
did not (a miss that should have been a hit). The first successful run's keys, however many per
module (a function compiled at two shapes has two), are the baseline. A crash is never `clean`, and
a cell where nothing was cached is `unsupported`, not clean: in both cases nothing was measured. A module
JAX refused to write (host callbacks, a threshold as the program runs) computed the same key in every run: that
is measured, and the cell is `not cached` (harness/evidence/not_cached.py), whatever the other modules did.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Sequence

from harness.core.jaxlog import Outcome, differing_components
from harness.core.listing import entries, keys_by_module, parse_name
from harness.core.findings import Attribution, JobFacts, ProcessVerdict, RankSplit
from harness.core.runs import RunRecord
from harness.core.kinds import Verdict
from harness.core.comparison import Comparison
from harness.evidence.keys import (WATCHED, RunKeys, logged_keys, plural, compare_with_first_run, counted, failing_tests,
                                   inconsistencies, longest_compiles, observed_keys, untrusted_logs,
                                   written_by_no_run)
from harness.verdicts.phrases import (fewer_phrase, new_key_phrase, run_ranges, unobserved_hits_phrase,
                                     unserved_module, unserved_phrase, where_seen)
from harness.evidence.misses import (MAX_NAMED, Category, changed_phrase, function_misses, new_input_phrase, others_missed,
                                      test_changes)
from harness.evidence.not_cached import NotCachedModule, not_cached_modules, not_cached_phrase
from harness.evidence.ranks import first_split, host_components, local_differences, local_note, split_phrase, unattributed, writers


def attribute(comparison: Comparison, runs: Sequence[RunRecord]) -> tuple[Attribution | None, str]:
    """Which key components moved: the first later run's new key of the moved module against its
    counterpart among the first run's keys (the one it differs from least, preferring those the later
    run did not compute again). (None, why) when the logs cannot say."""
    module = comparison.moved_module()
    if module is None:
        return None, ""
    by_index = {r.index: r for r in runs}
    if comparison.baseline_run is None:  # no first run: nothing moved from it
        return None, ""
    first, later = by_index[comparison.baseline_run], by_index[comparison.runs_with_new(module)[0]]
    if first.keys is None or later.keys is None:
        run = first if first.keys is None else later
        return None, f"run {run.index}: {run.log_note or 'its log was not read'}"
    new_key = comparison.new[later.index][module][0]
    moved = later.keys.by_key().get(new_key)
    if moved is None:
        return None, f"run {later.index}'s log does not name {new_key} (it was seen only in the cache folder)"
    # only run 1's key of the same function in the same test at the same argument types is its counterpart
    test = moved.tests[:1]
    mine = [k for k in first.keys.keys if k.module == module and k.tests[:1] == test and k.arg_types == moved.arg_types]
    if not mine:
        where = (f" in {test[0]}" if test else "") + (f" at {', '.join(moved.arg_types)}" if moved.arg_types else "")
        return None, (f"run {first.index} never compiled {module}{where}: no key of run {first.index} is this "
                      "key's counterpart")
    again = set(later.keys.by_key())
    candidates = [k for k in mine if k.key not in again] or mine
    counterpart = min(candidates, key=lambda k: (len(differing_components(k, moved)), k.key))
    if not counterpart.components or not moved.components:
        return None, f"JAX logged no key components for {module} (this release logs only the keys)"
    names = list(counterpart.components) + [n for n in moved.components if n not in counterpart.components]
    hashes = [(n, counterpart.components.get(n), moved.components.get(n)) for n in names]
    return Attribution(module, first.index, later.index, counterpart.key, moved.key, hashes), ""


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    keys: dict[str, list[str]]
    reason: str
    comparison: Comparison | None = None
    attribution: Attribution | None = None
    attribution_unavailable: str = ""  # why a reproduced cell has no attribution
    inconsistencies: list[str] = field(default_factory=list)
    untrusted_logs: dict[int, str] = field(default_factory=dict)  # run index -> why its log is not trusted
    rank_split: RankSplit | None = None  # a job's processes computed different keys for one module


# A phase's finding: the verdict, its reason, and the Judgement's other facts (rank_split, attribution...).
Found = tuple[Verdict, str, dict[str, Any]]


def judge(runs: list[RunRecord], expected_runs: int | None = None,
          observed: Sequence[RunKeys] | None = None, controls: Sequence[RunKeys] = ()) -> Judgement:
    """The verdict of one cell from its runs (see `compare_with_first_run` for the rule). `observed`: what
    each successful run is known to have computed; by default its listing and its log (`observed_keys`);
    `controls`: the cause controls' keys, which decide what moved each changed key (harness/evidence/controls.py).
    Phases in order, the first that finds ends it: a miss, runs that failed, what measured no miss of the
    cache, clean; then the notes every verdict's reason carries."""
    good = counted(runs)
    keys = keys_by_module(entries({name for r in good for name in r.new_entries}))
    comparison = compare_with_first_run(observed if observed is not None else observed_keys(runs), controls)
    disagree, untrusted = inconsistencies(runs), untrusted_logs(runs)
    verdict, reason, facts = (_missed(runs, good, comparison) or _failed(runs, good, expected_runs)
                              or _no_miss(good, comparison, keys) or _clean(good, comparison, untrusted))
    reason += _notes(verdict, runs, good, disagree, untrusted)
    return Judgement(verdict, keys, reason, comparison, inconsistencies=disagree, untrusted_logs=untrusted, **facts)


def _missed(runs: list[RunRecord], good: list[RunRecord], comparison: Comparison) -> Found | None:
    """Reproduced: a job's processes split, a key that moved, or a key a later run compiled again."""
    split = first_split(runs)
    if split is not None:  # certain from one launch, even one that then hung or died
        return Verdict.REPRODUCED, split_phrase(split), {"rank_split": split}
    module = comparison.moved_module()
    if module is not None:
        attribution, unavailable = attribute(comparison, good)
        return (Verdict.REPRODUCED, new_key_phrase(comparison, module) + where_seen(comparison, module, runs)
                + others_missed(function_misses(good, comparison), module) + _also_not_cached(good),
                {"attribution": attribution, "attribution_unavailable": unavailable})
    if comparison.unserved:  # the same keys, but a later run compiled one that was on disk: a miss all the same
        missed = unserved_module(comparison, longest_compiles(good))
        assert missed is not None
        return (Verdict.REPRODUCED, unserved_phrase(comparison, missed, runs),
                {"attribution_unavailable": "no key component moved: the later runs computed the first "
                                            "run's keys and compiled them again instead of loading them"})
    return None


def _failed(runs: list[RunRecord], good: list[RunRecord], expected_runs: int | None) -> Found | None:
    """Error: a run that failed (and was not counted), or fewer runs than planned."""
    failed = [r for r in runs if r not in good]
    if failed:
        first = failed[0]
        why = first.reason or ("timed out" if first.timed_out else f"exit code {first.exit_code}")
        changed = changed_phrase(test_changes(runs))
        return (Verdict.ERROR, f"{len(failed)} of {len(runs)} runs failed (run {first.index}: {why})"
                + (f"; {changed}" if changed else ""), {})
    if not runs or (expected_runs is not None and len(runs) < expected_runs):
        return Verdict.ERROR, f"only {len(runs)} of {expected_runs} runs were made", {}
    return None


def _no_miss(good: list[RunRecord], comparison: Comparison, keys: dict[str, list[str]]) -> Found | None:
    """No key moved, yet no clean cell: modules never written (not cached), nothing measured (unsupported), or
    the program's own new inputs (new input)."""
    uncached = not_cached_modules(good)
    if uncached:  # compiled in every run, the same key each time, but never written: measured, not a moved key
        return (Verdict.NOT_CACHED, not_cached_phrase(uncached) + "; " + _the_rest(comparison, uncached, good)
                + _also_new_input(good, comparison), {})
    if not keys:
        return Verdict.UNSUPPORTED, "runs succeeded but the cache stayed empty: nothing measured", {}
    if comparison.fewer:
        return Verdict.UNSUPPORTED, fewer_phrase(comparison), {}
    if comparison.new_input:  # no key moved: the program compiled something new (its own random shapes)
        misses = [m for m in function_misses(good, comparison) if m.category == Category.NEW_INPUT]
        return (Verdict.NEW_INPUT, new_input_phrase(misses, comparison.baseline_run)
                + ": the program computed something new, not a key that moved", {})
    groups = [r for r in good if r.ranks]
    if groups and not any(rank.joined for r in groups for rank in r.ranks):
        return (Verdict.UNSUPPORTED, (f"no process called jax.distributed.initialize(): the {len(groups[0].ranks)} "
                                     "processes of each run were separate programs, not one job"), {})
    return None


def _clean(good: list[RunRecord], comparison: Comparison, untrusted: dict[int, str]) -> Found:
    """Clean: the same keys in every run (in each process of a job's)."""
    widest = comparison.main_module(longest_compiles(good))
    groups = [r for r in good if r.ranks]
    if groups:
        return (Verdict.CLEAN, (f"{widest}: the same keys in all {len(good)} runs, in each of their "
                               f"{len(groups[0].ranks)} processes"), {})
    assert widest is not None  # keys were computed (checked above): the first run has a module
    unobserved = unobserved_hits_phrase(good, untrusted)
    tests = suite_size(good)
    if tests:  # a suite: one helper's count says nothing of it
        what = f"{plural(tests, 'test')}: {suite_keys_label(comparison)}"
    else:
        what = f"{widest}: {plural(len(comparison.baseline[widest]), 'key')}"
    return (Verdict.CLEAN, f"{what} per run, the same in all {len(good)} runs"
            + (f"; {unobserved}" if unobserved else ""), {})


def _notes(verdict: Verdict, runs: list[RunRecord], good: list[RunRecord], disagree: list[str],
           untrusted: dict[int, str]) -> str:
    """What every verdict's reason adds: runs counted beside failing tests, the folder and the log at odds, entries
    no run wrote, a run whose accounts of JAX's cache disagree."""
    reason = ""
    flaky = [r.index for r in good if not r.ok]  # a pytest run that ran to its end beside failing tests: counted
    if flaky and verdict != Verdict.ERROR:
        changed = changed_phrase(test_changes(runs))
        broken = failing_phrase(failing_tests(runs), [r for r in good if not r.ok])
        reason += "".join(f"; {p}" for p in (changed, broken) if p) + \
            f" (run{'s' if len(flaky) > 1 else ''} {run_ranges(flaky)} counted: pytest ran to its end; judged " \
            "on the tests that passed)"
    if disagree:
        reason += f"; the cache folder and JAX's log disagree on {plural(len(disagree), 'key')}"
    if untrusted:
        which = sorted(untrusted)
        whose = f"run {which[0]}'s JAX log" if len(which) == 1 else f"the JAX logs of runs {run_ranges(which)}"
        reason += (f"{',' if disagree else ';'} so {whose} {'is' if len(which) == 1 else 'are'} not trusted "
                   "(the cache folder's entries count)")
        # what the folder, watched as the runs went, says their accounts made up: said plainly
        forged = [(i, why) for i, why in sorted(untrusted.items()) if WATCHED in why]
        if forged:
            reason += f"; run {forged[0][0]}: {forged[0][1]}" + (
                f" (and {plural(len(forged) - 1, 'other run')})" if len(forged) > 1 else "")
    unowned = written_by_no_run(runs)  # said, never a new key of the run it appeared beside
    if unowned:
        reason += f"; {unowned[0]}" + (f" (and {plural(len(unowned) - 1, 'other entry')})" if len(unowned) > 1 else "")
    disputed = [r for r in runs if r.sources]  # the run's own accounts of JAX's cache disagree: named
    if disputed:
        more = f" (and in {plural(len(disputed) - 1, 'other run')})" if len(disputed) > 1 else ""
        reason += f"; run {disputed[0].index}: {disputed[0].sources[0]}{more}"
    return reason


def _the_rest(comparison: Comparison, uncached: Sequence[NotCachedModule], good: Sequence[RunRecord]) -> str:
    """What the modules JAX wrote did: `the other 4 modules' keys hit: the same in all 3 runs`."""
    never = {m.module for m in uncached}
    written = [m for m in comparison.baseline if m not in never]
    if not written:
        return f"no module's keys differ between the {len(good)} runs, and none was written"
    tests = suite_size(good)
    whose = f"{plural(tests, 'test')}: " if tests else ""
    return (f"{whose}the other {plural(len(written), 'module')} hit, the same keys in all {len(good)} runs")


def _also_not_cached(good: Sequence[RunRecord]) -> str:
    """`; also not cached: jit_solve uses a host callback (...); never written by JAX, ...`: a reproduced cell's
    modules JAX never writes, which no fix of the moved key makes hit (harness/verdicts/finish.py fills in the line)."""
    uncached = not_cached_modules(good)
    return f"; also not cached: {not_cached_phrase(uncached)}" if uncached else ""


def _also_new_input(good: Sequence[RunRecord], comparison: Comparison) -> str:
    if not comparison.new_input:
        return ""
    misses = [m for m in function_misses(good, comparison) if m.category == Category.NEW_INPUT]
    return f"; also new input: {new_input_phrase(misses, comparison.baseline_run)}"


def failing_phrase(tests: Sequence[str], failed_runs: Sequence[RunRecord]) -> str:
    """`failing in every run (not cache misses): t.py::test_x (pytest: 1 failed, 68 passed in 3.21s; FAILED ...)`."""
    if not tests:
        return ""
    shown = ", ".join(tests[:MAX_NAMED]) + (f" and {len(tests) - MAX_NAMED} more" if len(tests) > MAX_NAMED else "")
    said = next((r.reason.split(": ", 1)[-1] for r in failed_runs if r.reason), "")
    return f"failing in every run (not cache misses): {shown}" + (f" (pytest: {said})" if said else "")


def suite_size(runs: Sequence[RunRecord]) -> int:
    """The tests a --pytest program's first run recorded (0 for a plain script)."""
    return next((len(r.tests) for r in runs if r.tests), 0)


def suite_keys_label(comparison: Comparison) -> str:
    """`187 keys of 46 functions`: what a suite's first run computed."""
    keys = sum(len(k) for k in comparison.baseline.values())
    return f"{plural(keys, 'key')} of {plural(len(comparison.baseline), 'function')}"


def rank_runs(runs: Sequence[RunRecord], rank: int) -> list[RunRecord]:
    """One process of a job's runs, as if it had run alone: its seed, its end, its own log's keys, and the
    entries of the folder that are its keys (JAX writes from process 0 only)."""
    out = []
    for run in runs:
        mine = next((r for r in run.ranks if r.rank == rank), None)
        if mine is None:
            continue
        computed = {k.key for k in mine.keys.keys} if mine.keys is not None else set()
        written = [n for n in run.new_entries if (e := parse_name(n)) is not None and e.key in computed]
        out.append(RunRecord(run.index, mine.seed, mine.exit_code, mine.duration_s, written, mine.timed_out,
                             mine.reason, mine.log, mine.script_cache, mine.keys, mine.log_note))
    return out


def _refused_as_not_first(runs: Sequence[RunRecord]) -> bool:
    """Every key these runs' logs name was refused because the process is not process 0."""
    logged = logged_keys(counted(runs))
    return bool(logged) and all(k.outcome == Outcome.NOT_WRITTEN and "process_id" in k.reason for k in logged)


def group_facts(runs: Sequence[RunRecord], processes: int, expected_runs: int | None = None) -> JobFacts:
    """A multi-process cell's runs per process (each judged by the rule alone, against its own first run),
    which processes wrote, and the ranks' key differences that name only their devices."""
    per_process = []
    for rank in range(processes):
        mine = rank_runs(runs, rank)
        # Not judged here whether a process loaded what process 0 wrote: a job's cell is judged by its keys.
        observed = [replace(k, compiled=None) for k in observed_keys(mine)]
        judgement = judge(mine, expected_runs, observed=observed)
        verdict, reason = judgement.verdict, judgement.reason
        if verdict == Verdict.NOT_CACHED and _refused_as_not_first(mine):  # the same keys, never written
            verdict = Verdict.CLEAN
            module = judgement.comparison.widest_module() if judgement.comparison else None
            reason = (f"{module}: the same keys in all {len(mine)} runs; never written "
                      f"(JAX writes from process 0 only)")
        per_process.append(ProcessVerdict(rank, verdict, reason))
    notes = []
    host = host_components(runs)
    wrote = writers(runs)
    if host:
        notes.append(f"the processes' keys of one module differ in {', '.join(host)} only (the key names the "
                     "process's own devices): a process other than the writer never hits what it wrote")
    if local := local_differences(runs):
        notes.append(local_note(local))
    if wrote == (0,) and processes > 1:
        notes.append("only process 0 wrote to the cache (JAX writes from process 0 only)")
    for run in runs:
        notes += [f"run {run.index}, process {r.rank}: {r.reason}" for r in run.ranks if r.ok and r.reason]
    if blind := unattributed(runs):
        notes.append(f"{', '.join(blind)}: the processes' keys differ, and this release logs no key components "
                     "to say whether the programs or only the devices differ")
    return JobFacts(processes, tuple(per_process), wrote, host, tuple(notes))
