"""A user's script's own cache settings (pure): the start-up hook's record in, facts and sentences out.

The hook (harness/inside/startup/jax_cache_harness_hook.py) runs inside each run and appends one JSON line
per setting the script made, and one `final` line with the cache JAX used at exit. Here those lines
become a ScriptCache per run, and a cell's runs become the notes the report shows ("the script set its
cache folder to /jaxcache; the harness redirected it") and, when nothing was cached, the one line that
says what the script did instead of calling the release unsupported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Iterator

from harness.core.bounded_read import read_bounded
from harness.core.jaxlog import Outcome, refused_for_no_cache
from harness.core.records import replace
from harness.core.runs import CacheSetting, RunRecord, ScriptCache
from harness.core.model import CellResult
from harness.core.findings import ScriptCacheFacts
from harness.core.kinds import ThresholdMode
from harness.inside.startup.jax_cache_harness_hook import (CACHE_DIR, ENABLE, HARNESS_THRESHOLDS, LATE_ENVIRON,
                                                           MIN_COMPILE_TIME, MIN_ENTRY_SIZE)

THRESHOLD_NAMES = {MIN_COMPILE_TIME: "minimum compile time (s)", MIN_ENTRY_SIZE: "minimum entry size (bytes)"}
# The hook writes a line per setting the script made and one at exit: kilobytes. Past this bound it was not the hook.
RECORD_MAX_BYTES = 16 << 20


def read_script_settings(path: Path) -> ScriptCache | None:
    """The hook's record of one run; None when there is none (the script never imported jax). A record that is not
    a regular file (a pipe, a folder, a link) is not read, and one past RECORD_MAX_BYTES is read in part: either
    is one of the record's problems, which the report says."""
    found = read_bounded(path, RECORD_MAX_BYTES)
    if found.missing:
        return None
    why = found.note("the cache-settings record", RECORD_MAX_BYTES)
    record = parse_record(found.text())
    return replace(record, problems=(*record.problems, why)) if why else record


def with_script_cache(cell: CellResult, mode: ThresholdMode) -> CellResult:
    """The cell with what its runs' scripts did to their cache (why that cached nothing is
    harness/verdicts/uncached.py's)."""
    facts = cell_facts(cell.runs, mode)
    return cell if facts is None else replace(cell, script_cache=facts)


def _events(text: str) -> Iterator[dict[str, Any]]:
    """The hook's JSON lines as events, in the order they happened; a line that is not one (a run killed
    mid-write) is skipped."""
    for line in text.split("\n"):
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested past the parser's depth
            continue
        if isinstance(event, dict):
            yield event


def parse_record(text: str) -> ScriptCache:
    """The hook's JSON lines; a line that is not one (a run killed mid-write) is skipped."""
    settings: list[CacheSetting] = []
    final: dict[str, Any] = {}
    problems: list[str] = []
    for event in _events(text):
        kind = event.get("kind")
        if kind == "setting":
            then = event.get("cache_then")
            settings.append(CacheSetting(str(event.get("option")), str(event.get("api")),
                                         event.get("requested"), event.get("applied"),
                                         then if isinstance(then, dict) else None))
        elif kind == "final":
            final = {k: v for k, v in event.items() if k != "kind"}
        elif kind == "problem":
            problems.append(str(event.get("detail")))
    return ScriptCache(tuple(settings), final, tuple(problems))


def cell_facts(runs: Iterable[RunRecord], mode: ThresholdMode) -> ScriptCacheFacts | None:
    """What the runs' scripts did to their cache, with the report's notes; None when they did nothing."""
    folders: dict[tuple[str, str], None] = {}
    thresholds: dict[str, CacheSetting] = {}
    disabled = escaped = uninitialised = None
    problems: dict[str, None] = {}
    for run in runs:
        cache = run.script_cache
        if cache is None:
            continue
        problems.update(dict.fromkeys(cache.problems))
        late = uninitialised_setting(cache.settings)
        if late is not None and uninitialised is None:
            uninitialised = _call(late)
        for s in cache.settings:
            if s.option == CACHE_DIR:
                if s.requested:
                    folders[(str(s.requested), s.api)] = None
                elif disabled is None:
                    disabled = f"{_call(s)} (no cache folder, so no cache)"
            elif s.option == ENABLE and not s.requested and disabled is None:
                disabled = _call(s)
            elif s.option in HARNESS_THRESHOLDS:
                thresholds[s.option] = s
        final = cache.final
        used = final.get("cache_path")
        if escaped is None and used and final.get("target") and used != final["target"]:
            escaped = str(used)
    facts = ScriptCacheFacts(tuple(folders), disabled, escaped, tuple(thresholds.values()), tuple(problems), mode,
                             uninitialised=uninitialised)
    return replace(facts, notes=tuple(notes(facts))) if facts.any else None


def uninitialised_setting(settings: Iterable[CacheSetting]) -> CacheSetting | None:
    """The folder setting made after JAX had initialised its cache without a folder (jax#25768):
    JAX never looks at the folder again, so nothing is cached."""
    for s in settings:
        then = s.cache_then
        if s.option == CACHE_DIR and s.requested and then and then.get("initialized") and not then.get("path"):
            return s
    return None


def restrictive_thresholds(facts: ScriptCacheFacts) -> tuple[CacheSetting, ...]:
    """Thresholds that were applied and can keep a module out of the cache."""
    return tuple(s for s in facts.thresholds if _number(s.applied) > 0)


def notes(facts: ScriptCacheFacts) -> list[str]:
    """Sentences for the report, one per thing the script did."""
    out = []
    for folder, api in facts.folders:
        if api == LATE_ENVIRON:
            out.append(f"the script set JAX_COMPILATION_CACHE_DIR to {folder} in os.environ after importing jax: "
                       "only processes it starts read it, never its own JAX")
            continue
        out.append(f"the script set its cache folder to {folder} ({api}); the harness redirected it to "
                   "the cell's folder, so nothing was written to yours")
    if facts.uninitialised:
        out.append(f"the script set its cache folder after JAX had initialised its cache without one "
                   f"({facts.uninitialised}): JAX never used it")
    if facts.disabled:
        out.append(f"the script turned its cache off: {facts.disabled}")
    if facts.escaped:
        out.append(f"the script's cache went to {facts.escaped}, which the harness could not redirect")
    if facts.thresholds:
        if facts.mode == ThresholdMode.HARNESS:
            out.append(f"the script sets {_thresholds(facts.thresholds, 'requested')}; replaced by the "
                       "harness's zeros (--cache-thresholds harness)")
        else:
            restrictive = restrictive_thresholds(facts)
            text = f"the script sets {_thresholds(facts.thresholds, 'requested')}, kept"
            if restrictive:
                text += ("; modules below them are never cached, so never measured "
                         "(--cache-thresholds harness caches every module)")
            out.append(text)
    out.extend(f"the harness's cache hook: {p}" for p in facts.problems)
    return out


def _call(s: CacheSetting) -> str:
    if s.api == "os.environ":
        return f"os.environ set {s.option} to {s.requested!r}"
    if s.api == "jax.config.update":
        return f"jax.config.update({s.option!r}, {s.requested!r})"
    return f"{s.api}({s.requested!r})"


def _thresholds(settings: Iterable[CacheSetting], which: str = "applied") -> str:
    return ", ".join(f"{THRESHOLD_NAMES.get(s.option, s.option)} {getattr(s, which)!r}" for s in settings)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def first_use(path: Path) -> tuple[bool, bool]:
    """From the hook's record: whether the first-use fallback gave the cell's folder (at JAX's first
    compilation, the script having set none by then), and whether the script set its own folder after that
    (it compiled before setting it: a run as written differs, jax#25768). Its lines are in the order things
    happened."""
    found = read_bounded(path, RECORD_MAX_BYTES)
    if not found.read:
        return False, False
    text = found.text()
    fallback = False
    for event in _events(text):
        if event.get("kind") == "fallback":
            fallback = True
        elif event.get("kind") == "setting" and event.get("option") == CACHE_DIR:
            return fallback, fallback
    return fallback, False


def sets_own_folder(cache: ScriptCache | None) -> str | None:
    """How a run's script set its own cache folder (`set_cache_dir`, `jax.config.update`, ...), None, a
    folder of None included (turning the cache off is the script's own setup too), when it set none."""
    for s in cache.settings if cache is not None else ():
        if s.option == CACHE_DIR:
            return s.api
    return None


def compiled_without_the_folder(run: RunRecord) -> bool:
    """Whether a run in which the hook gave the cell's folder at JAX's first compilation (the script set none) logged
    keys JAX had no cache for: another process of the program computed them, one without the hook (a child started
    with `python -I` or a minimal environment), which the later runs' environment (JAX_COMPILATION_CACHE_DIR) would
    have given the folder. Such a run 1 is not the later runs' equal: it runs again with the folder from the
    environment (OpenCell._first_run)."""
    return run.keys is not None and any(
        k.outcome == Outcome.NOT_WRITTEN and refused_for_no_cache(k.reason) for k in run.keys.keys)
