"""Verdicts and boundaries (pure): runs -> a cell's verdict; cells -> where a regression appears.

A cell reproduces when its runs disagree: a later run computes a key that the cell's earlier runs
did not (a miss that should have been a hit). The first successful run's keys, however many per
module (a function compiled at two shapes has two), are the baseline. A crash is never `clean`, and
a cell where nothing was cached is `unsupported`, not clean: in both cases nothing was measured.

The cache folder outranks JAX's log: a script can silence or reconfigure the `jax` loggers, print so
much that its output is cut, or print lines that look like JAX's. An entry that appeared while a run
ran and that no run's log names is a key that run computed, whatever its log says; a log that
disagrees with the folder is not trusted for that run (said in the reason) and never drops an entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

from packaging.version import Version

from harness.core.jaxlog import LoggedKey, Outcome, differing_components, refused_for_no_cache
from harness.core.listing import Entry, entries, keys_by_module, parse_name
from harness.core.model import (Attribution, CellResult, JobFacts, NothingCached, ProcessVerdict, RankSplit, RunRecord,
                           Verdict)
from harness.verdicts.ranks import first_split, host_components, local_differences, local_note, split_phrase, unattributed, writers


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

    def known(self, claimed: frozenset[Entry] = frozenset()) -> frozenset[Entry]:
        """Its keys: the log's, and every entry that appeared while it ran that no run's log
        (`claimed`: all of them together) names; the listing alone when it has no log."""
        if self.computed is None:
            return self.appeared
        return self.computed | (self.appeared - claimed)


def run_keys(run: RunRecord, on_disk: frozenset[str] | None = None) -> RunKeys:
    """What a stored run shows: its listing, and when JAX's log named its keys, every key it computed
    (hits and entries never written included): the log ties each key to its own run. With `on_disk`
    (every entry key that was ever in the cell's folder) a logged hit on a key never there is dropped:
    nothing was there to hit, so JAX did not write that line."""
    computed = None
    if run.keys is not None:
        computed = frozenset(Entry(k.module, k.key) for k in run.keys.keys
                             if on_disk is None or k.outcome != Outcome.HIT or k.key in on_disk)
    return RunKeys(run.index, frozenset(entries(run.new_entries)), computed)


def untrusted_logs(runs: Sequence[RunRecord]) -> dict[int, str]:
    """run index -> why its JAX log cannot be trusted, for each successful run whose log named keys but
    disagrees with the cache folder: an entry appeared while it ran that no run's log names (lines
    missing: the script changed the `jax` loggers' levels or handlers, or its output was cut), or it
    logged a hit or a write of a key that never was in the folder (lines JAX did not write)."""
    good = [r for r in runs if r.ok]
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    claimed = {k.key for r in good if r.keys is not None for k in r.keys.keys}
    out: dict[int, str] = {}
    for run in good:
        if run.keys is None:
            continue
        unnamed = sorted(e.key for e in entries(run.new_entries) if e.key not in claimed)
        phantom = sorted(k.key for k in run.keys.with_outcome(Outcome.HIT, Outcome.WRITTEN) if k.key not in on_disk)
        why = []
        if unnamed:
            why.append(f"{_plural(len(unnamed), 'entry')} appeared in the cache folder while it ran that it does "
                       f"not name ({unnamed[0]}{', ...' if len(unnamed) > 1 else ''})")
        if phantom:
            why.append(f"it logged a hit or a write of {_plural(len(phantom), 'key')} never in the cache folder "
                       f"({phantom[0]}{', ...' if len(phantom) > 1 else ''})")
        if why:
            out[run.index] = "; ".join(why)
    return out


def observed_keys(runs: Sequence[RunRecord]) -> list[RunKeys]:
    """What each successful run is known to have computed, the cache folder over the logs (see the module)."""
    on_disk = frozenset(e.key for r in runs for e in entries(r.new_entries))
    untrusted = untrusted_logs(runs)
    return [replace(run_keys(r, on_disk), log_trusted=r.index not in untrusted) for r in runs if r.ok]


def nothing_cached(runs: Sequence[RunRecord]) -> bool:
    """Every run succeeded, wrote no cache entry and (where its JAX log was read) computed no key: later
    runs of the same program cannot change the verdict, which is `unsupported`."""
    if not runs or not all(r.ok for r in runs):
        return False
    known = [run_keys(r) for r in runs]
    return not any(k.appeared or k.computed for k in known)


def _by_module(found: Iterable[Entry]) -> dict[str, list[str]]:
    return keys_by_module(set(found))


@dataclass(frozen=True)
class Comparison:
    """A cell's later runs against its first: which keys were new, which were not computed again."""

    baseline_run: int | None  # index of the first successful run; None when no run succeeded
    baseline: dict[str, list[str]]  # module -> the keys the first run computed
    later_runs: list[int]  # indices of the successful runs after it
    # later run -> module -> keys no earlier run computed
    new: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    # later run -> module -> the first run's keys it did not compute (known only from `computed`)
    fewer: dict[int, dict[str, list[str]]] = field(default_factory=dict)

    @property
    def reproduced(self) -> bool:
        return bool(self.new)

    def new_keys(self, module: str) -> list[str]:
        """The distinct keys of `module` that later runs brought."""
        return sorted({k for by_module in self.new.values() for k in by_module.get(module, [])})

    def runs_with_new(self, module: str) -> list[int]:
        return [run for run, by_module in self.new.items() if module in by_module]

    def moved_module(self) -> str | None:
        """The module with the most new keys (the seed's, jit_f, on a tie); None when none has one."""
        modules = {m for by_module in self.new.values() for m in by_module}
        return max(sorted(modules), key=lambda m: (len(self.new_keys(m)), m == "jit_f"), default=None)

    def widest_module(self) -> str | None:
        """The first run's module with the most keys (jit_f on a tie)."""
        return max(sorted(self.baseline), key=lambda m: (len(self.baseline[m]), m == "jit_f"), default=None)

    def main_module(self, compile_s: dict[str, float] | None = None) -> str | None:
        """The user's own function among the first run's modules: not one JAX compiles for a single operation
        run outside a jit (jit_broadcast_in_dim has the most keys only because it is compiled at every shape),
        where another exists; of those, the largest program by the longest compile JAX logged for it
        (`compile_s`), then the most keys."""
        own = [m for m in self.baseline if not dispatch_helper(m)] or list(self.baseline)
        timed = compile_s or {}
        return max(sorted(own), key=lambda m: (timed.get(m, -1.0), len(self.baseline[m]), m == "jit_f"), default=None)


# The modules JAX compiles for one jax.numpy/lax operation run eagerly (outside any jit): `jit_` and the
# primitive's name. They are JAX's, never the user's function (seen in the recorded logs: iota, reshape,
# _multi_slice, broadcast_in_dim, convert_element_type; the rest are primitives a script commonly runs eagerly).
_DISPATCH_PRIMITIVES = frozenset((
    "broadcast_in_dim", "convert_element_type", "iota", "reshape", "_multi_slice", "concatenate", "squeeze",
    "transpose", "select_n", "dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter-add",
    "slice", "pad", "add", "sub", "mul", "div", "neg", "integer_pow", "pow", "exp", "log", "tanh",
    "reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin", "dot_general", "clamp", "max", "min",
    "eq", "ne", "lt", "gt", "le", "ge", "and", "or", "not", "copy", "expand_dims", "_where", "_reduce_sum",
    "_mean", "_var", "sqrt", "rsqrt", "abs", "sign", "floor", "ceil", "round", "cumsum", "sort", "rng_bit_generator",
    "random_bits", "random_wrap", "random_unwrap", "random_seed", "threefry2x32", "_threefry_split",
    "_uniform", "_normal", "_normal_real", "_truncated_normal", "_randint", "_bernoulli", "_gamma",
))


def dispatch_helper(module: str) -> bool:
    """A module JAX compiled for one operation run eagerly (`jit_broadcast_in_dim`), not a user's function."""
    return module.startswith("jit_") and module[len("jit_"):] in _DISPATCH_PRIMITIVES


def longest_compiles(runs: Sequence[RunRecord]) -> dict[str, float]:
    """module -> the longest compile JAX logged for it in these runs: how large a program each module is."""
    out: dict[str, float] = {}
    for run in runs:
        for k in run.keys.keys if run.keys is not None else ():
            if k.compile_time_s is not None:
                out[k.module] = max(out.get(k.module, 0.0), k.compile_time_s)
    return out


def compare_with_first_run(runs: Sequence[RunKeys]) -> Comparison:
    """The rule, over the successful runs in order: the first one's keys are the baseline; a later run's
    key that no earlier run computed is new; a first-run key a later run is known not to have computed
    (only its log can say: a hit writes nothing) is `fewer`.

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
    for run in later:
        known = run.known(claimed)
        brought = known - seen
        if brought:
            new[run.index] = _by_module(brought)
        if run.computed is not None:
            if run.log_trusted and baseline - known:
                fewer[run.index] = _by_module(baseline - known)
            seen |= run.computed  # known exactly: a later run that computes these again hits them
    return Comparison(first.index, _by_module(baseline), [r.index for r in later], new, fewer)


def comparison_of(runs: Sequence[RunRecord]) -> Comparison:
    """The comparison of a cell's stored runs (the failed ones left out)."""
    return compare_with_first_run(observed_keys(runs))


def run_ranges(indices: Sequence[int]) -> str:
    """`2-4`, `2, 5-7`: run numbers as a reader counts them."""
    parts: list[str] = []
    ordered = sorted(indices)
    start = prev = ordered[0] if ordered else 0
    for i in ordered[1:] + [None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts) if ordered else ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def new_key_phrase(comparison: Comparison, module: str) -> str:
    """`jit_f: a new key in each of runs 2-4`, `jit_f: 3 new keys in run 2`."""
    runs = comparison.runs_with_new(module)
    count = len(comparison.new_keys(module))
    where = f"run {runs[0]}" if len(runs) == 1 else f"runs {run_ranges(runs)}"
    if count == len(runs):
        text = f"a new key in {where}" if len(runs) == 1 else f"a new key in each of {where}"
    else:  # several keys in one run, or (overlapping runs) one key seen appearing while several ran
        text = f"{_plural(count, 'new key')} in {where}"
    if module not in comparison.baseline:
        text += " (a module the first run did not compile)"
    return f"{module}: {text}"


def fewer_phrase(comparison: Comparison) -> str:
    run, by_module = next(iter(sorted(comparison.fewer.items())))
    module = max(sorted(by_module), key=lambda m: (len(by_module[m]), m == "jit_f"))
    missing = len(by_module[module])
    return (f"run {run} compiled fewer things than run {comparison.baseline_run} ({module}: "
            f"{_plural(missing, 'key')} of {len(comparison.baseline.get(module, []))} not computed): "
            "the runs cannot be compared")


def _quoted(reason: str, limit: int = 120) -> str:
    return f'JAX: "{reason if len(reason) <= limit else reason[: limit - 1] + "…"}"'


def _logged(runs: Sequence[RunRecord]) -> list[LoggedKey]:
    return [k for r in runs if r.keys is not None for k in r.keys.keys]


def logs_complete(runs: Sequence[RunRecord]) -> bool:
    """Whether every successful run's log named its keys: then each key is tied to its own run."""
    good = [r for r in runs if r.ok]
    return bool(good) and all(r.keys is not None for r in good)


def never_written(runs: Sequence[RunRecord]) -> dict[str, str]:
    """module -> JAX's reason, for each module that the successful runs' logs say was compiled and
    never written (not one of its keys written, hit, or on disk). A module refused because JAX had no
    cache yet (compiled before the script set its folder) is left out: that is the process's state at
    the time, not the module's (a cell where nothing at all was cached is told by harness/verdicts/uncached.py)."""
    good = [r for r in runs if r.ok]
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = _logged(good)
    refused = {k.module: k.reason for k in logged
               if k.outcome == Outcome.NOT_WRITTEN and not refused_for_no_cache(k.reason)}
    kept = {k.module for k in logged if k.outcome != Outcome.NOT_WRITTEN or k.key in on_disk}
    return {module: reason for module, reason in sorted(refused.items()) if module not in kept}


def where_seen(comparison: Comparison, module: str, runs: Sequence[RunRecord]) -> str:
    """Where the new keys of `module` were seen: the cache folder, JAX's log, or both; and when they
    were never written, JAX's reason."""
    new = set(comparison.new_keys(module))
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = {k.key: k for k in _logged([r for r in runs if r.ok])}
    in_log = new & set(logged)
    if not in_log:
        return ""  # the listing's word alone, as without logs
    if new & on_disk:
        return " (on disk and in JAX's log)"
    refused = [logged[k].reason for k in sorted(in_log) if logged[k].outcome == Outcome.NOT_WRITTEN]
    return f" (in JAX's log only, never written; {_quoted(refused[0])})" if refused else " (in JAX's log only)"


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
    out = [f"{key}: in the cache folder, but no run's log computed it" for key in sorted(set(on_disk) - set(logged))]
    for key, (index, k) in sorted(logged.items()):
        if key in on_disk or k.outcome == Outcome.NOT_WRITTEN:
            continue
        what = {Outcome.WRITTEN: "logged writing it", Outcome.HIT: "logged a hit on it",
                Outcome.MISS: "compiled it and logged neither a write nor why not"}[k.outcome]
        out.append(f"{key}: run {index}'s JAX {what}, but it never was in the cache folder")
    return out


def attribute(comparison: Comparison, runs: Sequence[RunRecord]) -> tuple[Attribution | None, str]:
    """Which key components moved: the first later run's new key of the moved module against its
    counterpart among the first run's keys (the one it differs from least, preferring those the later
    run did not compute again). (None, why) when the logs cannot say."""
    module = comparison.moved_module()
    if module is None:
        return None, ""
    by_index = {r.index: r for r in runs}
    first, later = by_index[comparison.baseline_run], by_index[comparison.runs_with_new(module)[0]]
    for run in (first, later):
        if run.keys is None:
            return None, f"run {run.index}: {run.log_note or 'its log was not read'}"
    new_key = comparison.new[later.index][module][0]
    moved = later.keys.by_key().get(new_key)
    mine = [k for k in first.keys.keys if k.module == module]
    if moved is None:
        return None, f"run {later.index}'s log does not name {new_key} (it was seen only in the cache folder)"
    if not mine:
        return None, f"the first run (run {first.index}) compiled no {module}: there is nothing to compare with"
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


def judge(runs: list[RunRecord], expected_runs: int | None = None,
          observed: Sequence[RunKeys] | None = None) -> Judgement:
    """The verdict of one cell from its runs (see `compare_with_first_run` for the rule). `observed`: what
    each successful run is known to have computed; by default its listing and its log (`observed_keys`)."""
    good = [r for r in runs if r.ok]
    keys = keys_by_module(entries({name for r in good for name in r.new_entries}))
    comparison = compare_with_first_run(observed if observed is not None else observed_keys(runs))
    disagree = inconsistencies(runs)
    untrusted = untrusted_logs(runs)
    module = comparison.moved_module()

    def judgement(verdict: Verdict, reason: str, **more) -> Judgement:
        if disagree:
            reason += f"; the cache folder and JAX's log disagree on {_plural(len(disagree), 'key')}"
        if untrusted:
            which = sorted(untrusted)
            whose = f"run {which[0]}'s JAX log" if len(which) == 1 else f"the JAX logs of runs {run_ranges(which)}"
            reason += (f"{',' if disagree else ';'} so {whose} {'is' if len(which) == 1 else 'are'} not trusted "
                       "(the cache folder's entries count)")
        return Judgement(verdict, keys, reason, comparison, inconsistencies=disagree, untrusted_logs=untrusted, **more)

    split = first_split(runs)
    if split is not None:  # certain from one launch, even one that then hung or died
        return judgement(Verdict.REPRODUCED, split_phrase(split), rank_split=split)
    if module is not None:
        attribution, unavailable = attribute(comparison, good)
        return judgement(Verdict.REPRODUCED, new_key_phrase(comparison, module) + where_seen(comparison, module, runs),
                         attribution=attribution, attribution_unavailable=unavailable)
    failed = [r for r in runs if not r.ok]
    if failed:
        first = failed[0]
        why = first.reason or ("timed out" if first.timed_out else f"exit code {first.exit_code}")
        return judgement(Verdict.ERROR, f"{len(failed)} of {len(runs)} runs failed (run {first.index}: {why})")
    if not runs or (expected_runs is not None and len(runs) < expected_runs):
        return judgement(Verdict.ERROR, f"only {len(runs)} of {expected_runs} runs were made")
    refused = never_written(good)
    if refused:  # compiled in every run, the same key each time, but never cached: nothing to hit
        module, why = next(iter(refused.items()))
        others = f" (and {_plural(len(refused) - 1, 'other module')})" if len(refused) > 1 else ""
        return judgement(Verdict.UNSUPPORTED, f"{module}{others}: never written to the cache, {_quoted(why)}; "
                                              f"no module's keys differ between the {len(good)} runs")
    if not keys:
        return judgement(Verdict.UNSUPPORTED, "runs succeeded but the cache stayed empty: nothing measured")
    if comparison.fewer:
        return judgement(Verdict.UNSUPPORTED, fewer_phrase(comparison))
    jobs = [r for r in good if r.ranks]
    if jobs and not any(rank.joined for r in jobs for rank in r.ranks):
        return judgement(Verdict.UNSUPPORTED, f"no process called jax.distributed.initialize(): the "
                                              f"{len(jobs[0].ranks)} processes of each run were separate "
                                              "programs, not one job")
    widest = comparison.main_module(longest_compiles(good))
    if jobs:
        return judgement(Verdict.CLEAN, f"{widest}: the same keys in all {len(good)} runs, in each of their "
                                        f"{len(jobs[0].ranks)} processes")
    per_run = _plural(len(comparison.baseline[widest]), "key")
    return judgement(Verdict.CLEAN, f"{widest}: {per_run} per run, the same in all {len(good)} runs")


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
    logged = _logged([r for r in runs if r.ok])
    return bool(logged) and all(k.outcome == Outcome.NOT_WRITTEN and "process_id" in k.reason for k in logged)


def job_facts(runs: Sequence[RunRecord], processes: int, expected_runs: int | None = None) -> JobFacts:
    """A multi-process cell's runs per process (each judged by the rule alone, against its own first run),
    which processes wrote, and the ranks' key differences that name only their devices."""
    per_process = []
    for rank in range(processes):
        mine = rank_runs(runs, rank)
        judgement = judge(mine, expected_runs)
        verdict, reason = judgement.verdict, judgement.reason
        if verdict == Verdict.UNSUPPORTED and _refused_as_not_first(mine):  # the same keys, never written
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


@dataclass(frozen=True)
class Uncached:
    """Consecutive releases whose every cell cached nothing (`unsupported` with a `nothing_cached` cause),
    told as a boundary is: where it starts, the release before it that cached, where caching comes back.
    Releases that measured nothing for another reason (an error) are stepped over, as boundaries() does."""

    first: str
    last: str
    causes: tuple[NothingCached, ...]
    cached_before: str | None  # the last release before it that cached (clean or reproduced)
    cached_after: str | None  # the first release after it that cached

    def phrase(self) -> str:
        """`nothing is cached in 0.4.25 (no persistent cache; no release before it cached); cached from 0.4.26`."""
        span = self.first if self.first == self.last else f"{self.first} to {self.last}"
        if self.causes == (NothingCached.NO_JAX,):  # not the release's doing: nothing to cache at all
            return f"the program compiled nothing with JAX ({span}: it never imported jax): nothing measured"
        why = ", ".join(self.causes)
        if self.cached_before is None and self.cached_after is None:
            return f"nothing is cached on any release measured ({span}: {why})"
        before = f"last cached {self.cached_before}" if self.cached_before else "no release before it cached"
        text = f"nothing is cached in {span} ({why}; {before})"
        if self.cached_after is None:
            return text + "; not cached again in this range"
        return text + f"; cached {'again ' if self.cached_before else ''}from {self.cached_after}"


# (the measured release before a gap, the one after it) -> the command that measures the gap (the options
# registry spells it, above this layer: harness/report/reproduce.py's `narrowing`).
Narrowing = Callable[[str, str], str]


@dataclass(frozen=True)
class Boundaries:
    appears_in: str | None
    last_clean_before: str | None
    fixed_in: str | None
    # The releases measured (clean or reproduced), in order: where every one of them reproduced, there is no
    # boundary to tell (empty: not known, as for a bisection's own line, which has its known-good release).
    measured: tuple[str, ...] = ()
    uncached: tuple[Uncached, ...] = ()  # ranges of releases that cached nothing
    last_reproduced_before_fix: str | None = None  # the last reproduced release before `fixed_in`
    # Every release known to exist in the range (the index's, as the sweep recorded it, and those of the
    # cells): a boundary between two measured releases with others between them is told as a range.
    releases: tuple[str, ...] = ()
    # Where no release was measured at all (nothing is claimed): how many cells, and the first failed one's
    # reason (None where every release cached nothing: the `uncached` phrases say why).
    unmeasured: tuple[int, str | None] | None = None

    def not_measured_between(self, low: str, high: str) -> list[str]:
        """The known releases strictly between two measured ones that were not measured (clean or reproduced)."""
        done = set(self.measured)
        return [v for v in sorted(set(self.releases), key=Version)
                if Version(low) < Version(v) < Version(high) and v not in done]

    def to_json(self) -> dict:
        return {"appears_in": self.appears_in, "last_clean_before": self.last_clean_before,
                "fixed_in": self.fixed_in, "line": self.line()}

    @property
    def no_boundary(self) -> bool:
        """Every release measured reproduced, the earliest included, and none was clean: the range shows
        no boundary (a program's own nondeterminism differs on every release)."""
        return bool(self.measured) and self.appears_in is not None and not self.last_clean_before and not self.fixed_in

    def _gap(self, low: str | None, high: str, narrowing: Narrowing | None) -> str:
        """`, with 0.4.29-0.4.30 not measured (narrow it: harness ...)`; "" where no known release lies between."""
        missing = self.not_measured_between(low, high) if low else []
        if not missing:
            return ""
        span = missing[0] if len(missing) == 1 else f"{missing[0]}-{missing[-1]}"
        narrow = f" (narrow it: {narrowing(low, high)})" if narrowing else ""
        return f", with {span} not measured{narrow}"

    def line(self, narrowing: Narrowing | None = None) -> str:
        """The summary line. `narrowing`: spells the command that measures the releases a boundary leaves
        unmeasured (without it the gap is still said, with no command)."""
        if self.unmeasured is not None:  # no "not reproduced": nothing was
            cells, why = self.unmeasured
            said = [] if why is None else [f"nothing was measured: {'the only cell' if cells == 1 else f'all {cells} cells'} "
                                           f"failed or cached nothing ({why})"]
            return "; ".join([*said, *(u.phrase() for u in self.uncached)])
        if self.appears_in is None:
            text = "not reproduced in this range"
        elif self.no_boundary:
            first, last = self.measured[0], self.measured[-1]
            if first == last:
                text = (f"keys differ between fresh processes on {first}, the only release measured, so the range "
                        "shows no boundary (measure an earlier release for one)")
            else:
                text = (f"keys differ between fresh processes on every release measured, {first} to {last}, so the "
                        f"range shows no boundary: likely the program's own nondeterminism (or a regression older "
                        f"than {first})")
        else:
            appears_gap = self._gap(self.last_clean_before, self.appears_in, narrowing)
            if appears_gap:
                text = f"regression appears after {self.last_clean_before}, by {self.appears_in}{appears_gap}"
            elif self.last_clean_before:
                text = f"regression appears in {self.appears_in} (last clean {self.last_clean_before})"
            else:
                text = (f"regression present from the first measured release, {self.appears_in} "
                        "(no clean release before it)")
            fixed_gap = self._gap(self.last_reproduced_before_fix, self.fixed_in, narrowing) if self.fixed_in else ""
            if fixed_gap:
                text += f"; fixed after {self.last_reproduced_before_fix}, by {self.fixed_in}{fixed_gap}"
            else:
                text += f"; fixed in {self.fixed_in}" if self.fixed_in else "; not fixed in this range"
        return "; ".join([text, *(u.phrase() for u in self.uncached)])


def version_verdicts(cells: Iterable[CellResult]) -> dict[str, Verdict]:
    """One verdict per JAX version over all its cells (meshes): reproduced if any cell reproduced,
    clean only if every cell is clean, else error (if any) or unsupported. Releases only: a commit
    measured beside them (`nightly --jax-repo`) is compared on its own, never a release boundary."""
    by_version: dict[str, list[Verdict]] = {}
    for cell in cells:
        if cell.commit is not None:
            continue
        by_version.setdefault(cell.spec.jax_version, []).append(cell.verdict)
    out = {}
    for version, verdicts in by_version.items():
        if Verdict.REPRODUCED in verdicts:
            out[version] = Verdict.REPRODUCED
        elif all(v == Verdict.CLEAN for v in verdicts):
            out[version] = Verdict.CLEAN
        elif Verdict.ERROR in verdicts:
            out[version] = Verdict.ERROR
        else:
            out[version] = Verdict.UNSUPPORTED
    return dict(sorted(out.items(), key=lambda kv: Version(kv[0])))


def release_boundaries(cells: Sequence[CellResult], releases: Sequence[str] = ()) -> Boundaries:
    """The releases' boundaries (boundaries()), with which releases were measured and the ranges of
    releases that cached nothing: what every summary line of a sweep says. `releases`: every release
    known to exist in the range (the index's, recorded by the sweep; the cells' own are added), so a
    boundary between two measured releases with others between them is said as a range, not a release."""
    verdicts = version_verdicts(cells)
    measured = tuple(v for v, verdict in verdicts.items() if verdict in (Verdict.CLEAN, Verdict.REPRODUCED))
    known = tuple(sorted({*releases, *verdicts}, key=Version))
    found = replace(boundaries(verdicts), measured=measured, uncached=uncached_ranges(cells, verdicts),
                    releases=known)
    releases_only = [c for c in cells if c.commit is None]
    if releases_only and not measured:
        failed = [c for c in releases_only if c.verdict == Verdict.ERROR or
                  (c.verdict == Verdict.UNSUPPORTED and c.nothing_cached is None)]  # not told by `uncached`
        first = min(failed, key=lambda c: Version(c.spec.jax_version), default=None)
        found = replace(found, unmeasured=(len(releases_only),
                                           f"jax {first.spec.jax_version}: {first.reason}" if first else None))
    return found


def uncached_ranges(cells: Sequence[CellResult], verdicts: dict[str, Verdict]) -> tuple[Uncached, ...]:
    """The runs of consecutive releases (errors stepped over) whose every cell cached nothing."""
    causes: dict[str, list[NothingCached | None]] = {}
    for cell in cells:
        if cell.commit is None:
            causes.setdefault(cell.spec.jax_version, []).append(cell.nothing_cached)
    states: list[tuple[str, tuple[NothingCached, ...] | None]] = []  # (release, its causes, or None: it cached)
    for version, verdict in verdicts.items():  # in version order
        found = causes.get(version, [])
        if verdict in (Verdict.CLEAN, Verdict.REPRODUCED):
            states.append((version, None))
        elif verdict == Verdict.UNSUPPORTED and found and all(c is not None for c in found):
            states.append((version, tuple(dict.fromkeys(c for c in found if c is not None))))
    out: list[Uncached] = []
    i = 0
    while i < len(states):
        if states[i][1] is None:
            i += 1
            continue
        j = i
        while j + 1 < len(states) and states[j + 1][1] is not None:
            j += 1
        why = tuple(dict.fromkeys(c for _, found in states[i:j + 1] for c in found or ()))
        out.append(Uncached(states[i][0], states[j][0], why, states[i - 1][0] if i > 0 else None,
                            states[j + 1][0] if j + 1 < len(states) else None))
        i = j + 1
    return tuple(out)


def boundaries(verdicts: dict[str, Verdict]) -> Boundaries:
    """Where the first regression appears (after its nearest clean release) and where it is fixed.

    Versions that are `error` or `unsupported` say nothing and are stepped over.
    """
    ordered = [(v, verdicts[v]) for v in sorted(verdicts, key=Version)
               if verdicts[v] in (Verdict.CLEAN, Verdict.REPRODUCED)]
    appears = last_clean = fixed = last_reproduced = None
    for version, verdict in ordered:
        if appears is None:
            if verdict == Verdict.CLEAN:
                last_clean = version
            else:
                appears = last_reproduced = version
        elif verdict == Verdict.CLEAN:
            fixed = version
            break
        else:
            last_reproduced = version
    return Boundaries(appears, last_clean if appears else None, fixed,
                      last_reproduced_before_fix=last_reproduced if fixed else None)
