"""A cell as its program really runs (pure): why nothing was cached, and what the program's own
thresholds would keep out of the cache (docs/as-it-runs.md).

A cell whose runs cached nothing is `unsupported`, never `clean`, and its reason says why, from the
start-up hook's record (the script turned its cache off; it set its folder after JAX had initialised
its cache without one; the cache went elsewhere) and from JAX's own log (every module was refused:
host callbacks, thresholds, another reason JAX gave), or the release (no CPU persistent cache before
0.4.26). Separately, the compile times JAX logs say which modules the script's own minimum compile
time (or JAX's default of 1 s where it sets none) would keep out of the cache: measured with the
harness's zeros, that is what the user would not see, so it leads the cell's detail. Each module is told
under its real reason: one compiled before the script set its folder was refused because JAX had no
cache yet, whatever the threshold; and a script that sets no folder at all keeps no cache as written
(the harness measures it with JAX_COMPILATION_CACHE_DIR), so that comes before any threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from harness.core.records import replace
from harness.evidence.keys import counted, longest_compiles, never_written
from harness.core.jaxlog import NO_CACHE_YET, Outcome, refused_for_no_cache
from harness.core.listing import entries
from harness.core.model import CellResult
from harness.core.kinds import AsYouRunIt, NothingCached, Platform, Verdict
from harness.core.runs import RunRecord
from harness.core.findings import ScriptCacheFacts
from harness.evidence.not_cached import NotCachedModule, lost_per_start, not_cached_modules, not_cached_phrase
from harness.evidence.script_settings import sets_own_folder
from harness.inside.startup.jax_cache_harness_hook import LATE_ENVIRON, MIN_COMPILE_TIME, MIN_ENTRY_SIZE

# JAX's default for jax_persistent_cache_min_compile_time_secs, the same in every release from 0.4.26
# to 0.10.2 (jax/_src/config.py).
JAX_DEFAULT_MIN_COMPILE_TIME_S = 1.0
FIRST_CPU_PERSISTENT_CACHE = Version("0.4.26")
# What the tally adds to a reason when a cell stopped early: kept after the cause's sentence.
_STOP_NOTE = "; stopped after "
_LISTED = 3  # modules named in a sentence before "and N more"
# A script that sets no folder, as its author runs it (the harness gives its runs one to measure keys).
CACHE_DIR_VARIABLE = "JAX_COMPILATION_CACHE_DIR"
NO_FOLDER = ("the script sets no cache folder, so JAX keeps no persistent cache unless JAX_COMPILATION_CACHE_DIR "
             "is set (the harness set it to measure)")


@dataclass(frozen=True)
class Threshold:
    """The minimum compile time the program runs with as written: its own, or JAX's default."""

    seconds: float
    own: bool  # the script set it

    def phrase(self, named: bool = True) -> str:
        """`JAX's default 1 s threshold (jax_persistent_cache_min_compile_time_secs)`; `named`: with the option."""
        whose = "your" if self.own else "JAX's default"
        return f"{whose} {_seconds(self.seconds)} threshold" + (f" ({MIN_COMPILE_TIME})" if named else "")


def explain(cell: CellResult, tell_thresholds: bool = True) -> CellResult:
    """The cell with why nothing was cached (an unsupported cell that wrote nothing), and what its
    own thresholds would not write (`tell_thresholds`: a user's program; the built-in repro is the
    harness's own, measured with zeros by design)."""
    if cell.interrupted:
        return cell
    facts = cell.script_cache
    good = counted(cell.runs)
    threshold = own_threshold(facts)
    slow = compile_times(good)
    early = compiled_before_any_cache(good)  # never written whatever the threshold
    below = {m: t for m, t in slow.items() if t < threshold.seconds and m not in early}
    # A folder the user gives the program (`--env JAX_COMPILATION_CACHE_DIR=...`) is one as it runs, too.
    no_folder = sets_no_folder(good, facts) and not user_sets_folder(cell)
    as_run = ""
    # Told wherever the program's own threshold keeps a module out while others were written (where
    # nothing was, the reason says it); not over a failure, which is the finding.
    if tell_thresholds and below and written_any(good) and len(good) == len(cell.runs):
        as_run = as_you_run_it(below, slow, threshold, facts, early, no_folder)
    why_as_run = (AsYouRunIt.NO_FOLDER if no_folder else AsYouRunIt.THRESHOLDS) if as_run else None
    cause = why_nothing_cached(cell, facts, below, threshold, no_folder)
    if cause is None:
        uncached = not_cached_modules(cell.runs, cell.callback_sites, cell.refusal_seconds)
        if (cell.verdict == Verdict.NOT_CACHED and as_run and uncached
                and all(m.module in below for m in uncached)):
            # Some modules written, the rest kept out by the program's own threshold as it runs: that is the
            # finding, and its headline (not a note beside it).
            return replace(cell, nothing_cached=NothingCached.THRESHOLDS, as_you_run_it="", as_you_run_it_why=None,
                           reason=as_run + _lost_and_fix(uncached, threshold) + _kept_notes(cell.reason))
        return replace(cell, as_you_run_it=as_run, as_you_run_it_why=why_as_run)
    kind, sentence, measured = cause
    stop = cell.reason.find(_STOP_NOTE)
    return replace(cell, nothing_cached=kind, as_you_run_it=as_run, as_you_run_it_why=why_as_run,
                   verdict=cell.verdict if measured else Verdict.UNSUPPORTED,
                   reason=sentence + (cell.reason[stop:] if stop >= 0 else ""))


def _kept_notes(reason: str) -> str:
    """What the tally added after the judged reason (a stop, hits compared by key), kept after a new headline."""
    stop = reason.find(_STOP_NOTE)
    return reason[stop:] if stop >= 0 else ""


def _lost_and_fix(modules: Sequence[NotCachedModule], threshold: Threshold) -> str:
    """`; 3.12 s lost per start; `jax_persistent_cache_min_compile_time_secs=0` would keep them`."""
    lost = lost_per_start(modules)
    cost = f"; {lost:.2f} s lost per start" if lost is not None else ""
    them = "it" if len(modules) == 1 else "them"
    return f"{cost}; `{MIN_COMPILE_TIME}=0` would keep {them}"


def own_threshold(facts: ScriptCacheFacts | None) -> Threshold:
    for s in facts.thresholds if facts else ():
        if s.option == MIN_COMPILE_TIME:
            return Threshold(_number(s.requested), own=True)
    return Threshold(JAX_DEFAULT_MIN_COMPILE_TIME_S, own=False)


def compile_times(runs: Sequence[RunRecord]) -> dict[str, float]:
    """module -> the longest compile JAX logged for it in these runs (the kindest to a threshold)."""
    return longest_compiles(runs)


def compiled_before_any_cache(runs: Sequence[RunRecord]) -> list[str]:
    """The modules JAX refused only because it had no cache yet (compiled before the script set its
    folder, from 0.5.1 on), none of whose keys was written or hit in any run."""
    on_disk = {e.key for r in runs for e in entries(r.new_entries)}
    logged = [k for r in runs if r.keys is not None for k in r.keys.keys]
    refused = {k.module for k in logged if k.outcome == Outcome.NOT_WRITTEN and refused_for_no_cache(k.reason)}
    kept = {k.module for k in logged if k.outcome in (Outcome.WRITTEN, Outcome.HIT) or k.key in on_disk}
    return sorted(refused - kept)


def user_sets_folder(cell: CellResult) -> bool:
    """The user's own variables (`--env`, a config's `env:`) give the program a cache folder: as they run it,
    it has one (the runs got the cell's folder in its place)."""
    return cell.command is not None and CACHE_DIR_VARIABLE in cell.command.env


def sets_no_folder(runs: Sequence[RunRecord], facts: ScriptCacheFacts | None) -> bool:
    """The hook's records say the script set no cache folder of any kind (in code, in os.environ, for the
    processes it starts) and JAX used no other: as written it has no cache unless the environment gives one."""
    recorded = [r.script_cache for r in runs if r.script_cache is not None]
    return (bool(recorded) and all(sets_own_folder(c) is None for c in recorded)
            and not (facts is not None and (facts.folders or facts.disabled or facts.escaped)))


def written_any(runs: Sequence[RunRecord]) -> bool:
    return any(r.new_entries for r in runs) or any(
        k.outcome in (Outcome.WRITTEN, Outcome.HIT) for r in runs if r.keys is not None for k in r.keys.keys)


def as_you_run_it(below: dict[str, float], times: dict[str, float], threshold: Threshold,
                  facts: ScriptCacheFacts | None, early: Sequence[str] = (), no_folder: bool = False) -> str:
    """`as you run it, nothing is written: jit_f compiles in 0.02 s, below JAX's default 1 s threshold`;
    `early`: modules refused because JAX had no cache yet, told apart; `no_folder`: the script sets none,
    which comes first (`as you run it, nothing is cached: the script sets no cache folder, ...; even with
    it, jit_f compiles in ...`)."""
    above = sorted(m for m in times if m not in below and m not in early)
    timed = len(below) + len(above)
    head = "nothing is written" if not above else (
        f"{_count(len(below), 'module')} of {timed} {'is' if len(below) == 1 else 'are'} never written")
    below_phrase = f"{_compiles(below)}, below {threshold.phrase()}"
    if no_folder:
        text = f"as you run it, nothing is cached: {NO_FOLDER}; even with it, " + (
            below_phrase if not above else f"{head}: {below_phrase}")
    else:
        text = f"as you run it, {head}: {below_phrase}"
    if above:  # the participle said: a sentence ending in "would be" reads as one cut off
        text += (f"; {_names(above)} {'compiles' if len(above) == 1 else 'compile'} slower and "
                 f"{'is' if len(above) == 1 else 'are'} written")
    if early:
        text += f"; {_before_any_cache(early)}"
    return text + _entry_size_note(facts)


def _before_any_cache(modules: Sequence[str]) -> str:
    return (f"{_names(modules)} {'was' if len(modules) == 1 else 'were'} compiled before the script set its folder, "
            f'when JAX had no cache yet, and {"is" if len(modules) == 1 else "are"} never written whatever the '
            f'threshold (JAX: "{NO_CACHE_YET}")')


def why_nothing_cached(cell: CellResult, facts: ScriptCacheFacts | None, below: dict[str, float],
                       threshold: Threshold, no_folder: bool = False) -> tuple[NothingCached, str, bool] | None:
    """(cause, the cell's reason, whether the runs measured it) for an unsupported or `not cached` cell whose runs
    wrote nothing; None otherwise. Measured: JAX refused each module it compiled (the same keys every run, never
    written: the cell stays `not cached`); any other cause measured nothing (`unsupported`).
    `no_folder`: the script sets no cache folder (sets_no_folder)."""
    good = counted(cell.runs)
    if cell.verdict not in (Verdict.UNSUPPORTED, Verdict.NOT_CACHED) or cell.keys or not good or written_any(good):
        return None
    found = _why_unwritten(cell, facts, below, threshold, no_folder)
    if found is None:
        return None
    kind, sentence = found
    return kind, sentence, bool(never_written(good)) and _refused_first(cell, facts)


def _refused_first(cell: CellResult, facts: ScriptCacheFacts | None) -> bool:
    """No cause that comes before JAX's refusals holds (the cache off, uninitialised, elsewhere, set too late)."""
    return not (facts is not None and (facts.disabled or facts.uninitialised or facts.escaped
                                       or any(api == LATE_ENVIRON for _, api in facts.folders))
                or _before_cpu_cache(cell))


def _why_unwritten(cell: CellResult, facts: ScriptCacheFacts | None, below: dict[str, float],
                   threshold: Threshold, no_folder: bool = False) -> tuple[NothingCached, str] | None:
    good = counted(cell.runs)
    if facts is not None and facts.disabled:
        return NothingCached.DISABLED, f"nothing is cached, because the script turned its cache off: {facts.disabled}"
    if facts is not None and facts.uninitialised:
        return NothingCached.UNINITIALISED, (
            f"nothing is cached, because JAX's cache was never initialised: a computation ran before the "
            f"script set its folder ({facts.uninitialised}), and JAX {cell.spec.jax_version} then keeps no "
            "cache for the whole process")
    if facts is not None and facts.escaped:
        return NothingCached.ELSEWHERE, (f"nothing is cached here, because the script's cache went to "
                                         f"{facts.escaped}, which the harness could not redirect")
    late = next((f for f, api in facts.folders if api == LATE_ENVIRON), None) if facts is not None else None
    if late is not None:
        return NothingCached.SET_TOO_LATE, (
            f"nothing is cached, because the script set JAX_COMPILATION_CACHE_DIR={late} in os.environ after "
            "importing jax, which had already read its options: JAX never sees that folder (set it before "
            "`import jax`, or with jax.config.update('jax_compilation_cache_dir', ...))")
    if _before_cpu_cache(cell):
        return NothingCached.NO_PERSISTENT_CACHE, (
            f"nothing is cached, because JAX {cell.spec.jax_version} has no persistent cache on CPU "
            f"(it starts at {FIRST_CPU_PERSISTENT_CACHE}): nothing measured")
    if cell.cache_folder is not None and compiled_nothing_with_jax(good):  # a user's script (the hook ran)
        return NothingCached.NO_JAX, ("nothing is cached, because the program compiled nothing with JAX: JAX's log "
                                      "named no key and the harness's start-up hook saw no `import jax` in any run: "
                                      "nothing measured")
    refused = never_written(good)
    if refused:
        return _refused(refused, below, threshold, no_folder,
                        not_cached_modules(cell.runs, cell.callback_sites, cell.refusal_seconds))
    if _initialised_without_folder(good) or _no_cache_logged(good):
        return NothingCached.UNINITIALISED, (
            "nothing is cached, because JAX's cache was never initialised with a folder (a computation ran "
            f'before any folder was set; JAX: "{NO_CACHE_YET}"), so nothing is written in the whole process')
    unknown = "runs succeeded but the cache stayed empty: nothing measured"
    in_force = _threshold_in_force(facts)
    if in_force and not compile_times(good):  # JAX's log said nothing (silenced): its likely cause, not certain
        unknown += (f" (JAX logged no compile times to tell why; {Threshold(in_force, own=True).phrase()} was in "
                    "force, and keeps out every module that compiles faster)")
    return NothingCached.UNKNOWN, unknown


def compiled_nothing_with_jax(runs: Sequence[RunRecord]) -> bool:
    """A user's script's runs (the start-up hook in each) none of which imported jax as the hook saw it (it
    records nothing, or no setting and no cache at exit, where jax was never imported) and whose JAX logs
    named no key."""
    return bool(runs) and all(
        (r.script_cache is None or not (r.script_cache.final or r.script_cache.settings))
        and (r.keys is None or not r.keys.keys) for r in runs)


def _threshold_in_force(facts: ScriptCacheFacts | None) -> float:
    """The script's own minimum compile time as its runs got it (0 when zeroed by the harness or unset)."""
    for s in facts.thresholds if facts else ():
        if s.option == MIN_COMPILE_TIME:
            return max(_number(s.applied), 0.0)
    return 0.0


def _refused(refused: dict[str, str], below: dict[str, float], threshold: Threshold,
             no_folder: bool = False, modules: Sequence[NotCachedModule] = ()) -> tuple[NothingCached, str]:
    """Every module JAX compiled was refused a write: the cause JAX gave for most of them, as a headline (`as you
    run it, nothing is cached: every module compiles under JAX's default 1 s threshold (...); 3.12 s lost per
    start; `jax_persistent_cache_min_compile_time_secs=0` would keep them`); a script that sets no folder has no
    cache at all as written, which comes before a threshold. `modules`: the refused modules with their sites and
    seconds (harness/evidence/not_cached.py)."""
    slow = {m: t for m, t in below.items() if m in refused}
    callbacks = sorted(m for m, why in refused.items() if "host callback" in why)
    if len(slow) >= max(len(callbacks), 1):
        every = "every module compiles" if len(slow) == len(refused) else (
            f"{_names(sorted(slow))} {'compiles' if len(slow) == 1 else 'compile'}")
        below_phrase = f"{every} under {threshold.phrase(named=False)} ({_compiles(slow, verb=False)})"
        if no_folder:
            kind, text = NothingCached.UNINITIALISED, (f"as you run it, nothing is cached: {NO_FOLDER}; even with it, "
                                                       f"{below_phrase}")
        else:
            kind, text = NothingCached.THRESHOLDS, f"as you run it, nothing is cached: {below_phrase}"
        if callbacks:
            text += f"; {_names(callbacks)} {'uses' if len(callbacks) == 1 else 'use'} host callbacks"
        return kind, text + _lost_and_fix([m for m in modules if m.module in slow] or modules, threshold)
    module = next(iter(refused))
    quoted = f'JAX: "{refused[module]}"'
    if callbacks:
        said = [m for m in modules if m.why == NothingCached.HOST_CALLBACKS]
        return NothingCached.HOST_CALLBACKS, (
            f"nothing is cached: {not_cached_phrase(said)}" if said else
            f"nothing is cached, because JAX never writes a module that uses host callbacks: {_names(callbacks)} "
            f"({quoted})")
    return NothingCached.NOT_WRITTEN, f"nothing is cached, because JAX wrote no module: {_names(sorted(refused))} ({quoted})"


def _no_cache_logged(runs: Sequence[RunRecord]) -> bool:
    """JAX's log said it had no cache when it would have written (0.5.0 and later)."""
    return any(refused_for_no_cache(k.reason) for r in runs if r.keys is not None for k in r.keys.keys)


def _initialised_without_folder(runs: Sequence[RunRecord]) -> bool:
    """The hook saw JAX's cache initialised with no folder at exit, in every run that says."""
    finals = [r.script_cache.final for r in runs if r.script_cache is not None and r.script_cache.final]
    return bool(finals) and all(f.get("cache_initialized") and not f.get("cache_path") for f in finals)


def _before_cpu_cache(cell: CellResult) -> bool:
    if cell.spec.platform != Platform.CPU:
        return False
    try:
        return Version(cell.spec.jax_version) < FIRST_CPU_PERSISTENT_CACHE
    except InvalidVersion:
        return False


def _entry_size_note(facts: ScriptCacheFacts | None) -> str:
    for s in facts.thresholds if facts else ():
        if s.option == MIN_ENTRY_SIZE and _number(s.requested) > 0:
            return (f" (your minimum entry size, {s.requested!r} bytes, keeps smaller entries out too; "
                    "entry sizes are not measured)")
    return ""


def _compiles(times: dict[str, float], verb: bool = True) -> str:
    """`jit_f compiles in 0.02 s`, `jit_f compiles in 0.02 s, jit_g in 0.01 s (and 2 more)`; without the `verb`,
    `jit_f in 0.02 s, ...`."""
    ordered = sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ordered[:_LISTED]
    text = ", ".join(f"{m} {'compiles ' if i == 0 and verb else ''}in {_seconds(t)}" for i, (m, t) in enumerate(shown))
    return text + (f" (and {len(ordered) - _LISTED} more)" if len(ordered) > _LISTED else "")


def _names(modules: Sequence[str]) -> str:
    shown = ", ".join(modules[:_LISTED])
    return shown + (f" (and {len(modules) - _LISTED} more)" if len(modules) > _LISTED else "")


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
