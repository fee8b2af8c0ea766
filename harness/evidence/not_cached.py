"""Modules JAX never writes (pure): which, why (JAX's words), the tests that compiled them, the line that put a host
callback into the module, and what recompiling them costs each fresh process.

JAX refuses to write a module that uses host callbacks (`jax.debug.print`, `jax.pure_callback`, ...), and, as a
program runs with its own or JAX's default thresholds, one that compiles faster than the minimum compile time.
Such a module is compiled again in every fresh process whatever the cache holds: not a key that moved (the same
key each run), a module no persistent cache serves. Its cost per start is the compile seconds JAX logged, or,
where JAX refuses before timing (host callbacks), the seconds between its cache miss and its refusal in the
recorder's timestamped messages (`refusal_seconds`). The line is read from the module's own locations in its
lowered dump (`callback_sites`), bounded on any text: a line of megabytes (a constant's bytes) is never parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from harness.core.jaxlog import Outcome
from harness.core.kinds import NothingCached, Verdict
from harness.core.model import CellResult
from harness.core.runs import RunRecord
from harness.evidence.keys import counted, never_written_keys

# JAX's words (jax/_src/compiler.py, 0.4.26 to 0.10.2): "it uses host callbacks (e.g. from jax.debug.print or
# breakpoint)"; "it took < 1.00 seconds to compile (0.28s)"; "its size (N bytes) is < ... min entry size".
_CALLBACK_WORDS = "host callback"
_THRESHOLD_WORDS = ("to compile", "entry size")
# The custom calls JAX lowers a host callback to (`xla_ffi_python_cpu_callback`, `xla_python_gpu_callback`, ...),
# and the host transfers of a callback lowered to send/recv (TPU, older releases).
_CALLBACK_TARGET = "callback"
_HOST_TRANSFER = "is_host_transfer = true"
_MAX_LOC_LINE = 4096  # a location's definition is short; a longer line is no location (and is never parsed)
_LOC_DEF_RE = re.compile(r"#(loc\d*) = loc\((.*)\)")
_CALLSITE_RE = re.compile(r"callsite\((#loc\d*) at (#loc\d*)\)")
_NAMED_RE = re.compile(r'"([^"]*)"\((#loc\d*)\)')
_FILE_RE = re.compile(r'"([^"]*)":(\d+):\d+')
_REF_RE = re.compile(r"#loc\d*")
# A callback primitive's name in a location ("jit(step)/debug_print") -> what the user wrote.
_API = {"debug_print": "jax.debug.print", "debug_callback": "jax.debug.callback", "pure_callback": "jax.pure_callback",
        "io_callback": "jax.experimental.io_callback", "callback": "a host callback"}
_SITE_PACKAGES = "site-packages/"
UNNAMED_API = "a host callback"  # a site's API where its location names none JAX's words map
MAX_DEPTH = 64  # locations followed from one op (a chain is one per frame; a cycle is never followed forever)


class NotCachedModule(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One module the runs compiled that JAX never wrote (not one of its keys written, hit or on disk)."""

    module: str
    why: NothingCached  # HOST_CALLBACKS, THRESHOLDS, or NOT_WRITTEN (another reason JAX gave)
    jax_says: str  # JAX's words
    tests: list[str] = []  # the pytest ids that compiled it (the first named on each of its keys)
    runs: list[int] = []  # the later runs that compiled it again
    site: str = ""  # the line that put the callback there (`jaxopt/_src/zoom_linesearch.py:132 jax.debug.print`)
    seconds: float | None = None  # what compiling it again costs each later start (None: not known)
    # its key differs between runs at the same test and argument types (a callback's address on older releases):
    # never written either way, so it costs what it would cost had it stayed
    moved: bool = False

    @property
    def reason_phrase(self) -> str:
        """`uses a host callback (tests/t.py:5 jax.debug.print)`, `compiles under the threshold (0.28 s)`."""
        if self.why == NothingCached.HOST_CALLBACKS:
            unnamed = site_label(self.site)  # the line alone where the API is not known
            return "uses a host callback" + (f" (at {unnamed})" if unnamed != self.site else
                                             f" ({self.site})" if self.site else "")
        if self.why == NothingCached.THRESHOLDS:
            return f'is under a threshold (JAX: "{self.jax_says}")'
        return f'JAX: "{self.jax_says}"'


def kind_of(jax_says: str) -> NothingCached:
    if _CALLBACK_WORDS in jax_says:
        return NothingCached.HOST_CALLBACKS
    if any(w in jax_says for w in _THRESHOLD_WORDS):
        return NothingCached.THRESHOLDS
    return NothingCached.NOT_WRITTEN


def not_cached_modules(runs: Sequence[RunRecord], sites: Mapping[str, str] | None = None,
                       refusal_s: Mapping[str, float] | None = None) -> list[NotCachedModule]:
    """Each module the successful runs compiled and JAX never wrote, most costly first. `sites`: module -> the line
    that put its callback there; `refusal_s`: module -> seconds per later start where JAX logged no compile time
    (both read from the run's files by the report layer, harness/report/sources.py)."""
    good = sorted(counted(runs), key=lambda r: r.index)
    never = never_written_keys(good)
    if not never:
        return []
    refused: dict[str, str] = {}  # module -> JAX's reason, for the modules with a key it never wrote
    for k in never.values():
        refused.setdefault(k.module, k.reason)
    out = []
    for module, says in sorted(refused.items()):
        tests: list[str] = []
        later: list[int] = []
        logged: dict[int, float] = {}  # later run -> its compile seconds of the module, where JAX logged them
        for number, run in enumerate(good):
            for k in run.keys.keys if run.keys is not None else ():
                if k.key not in never or k.outcome == Outcome.HIT:  # by key: a written namesake is not this one
                    continue
                for test in k.tests[:1]:
                    if test not in tests:
                        tests.append(test)
                if number > 0:
                    if run.index not in later:
                        later.append(run.index)
                    if k.compile_time_s is not None:
                        logged[run.index] = logged.get(run.index, 0.0) + k.compile_time_s
        seconds = (round(sum(logged.values()) / len(logged), 3) if logged
                   else (refusal_s or {}).get(module))
        out.append(NotCachedModule(module=module, why=kind_of(says), jax_says=says, tests=tests, runs=later,
                                   site=(sites or {}).get(module, ""), seconds=seconds,
                                   moved=_moved(good, module, never)))
    return sorted(out, key=lambda m: (-(m.seconds or 0.0), m.module))


# The verdicts whose modules JAX never wrote are findings: a `not cached` cell's, and a `reproduced` one's beside its
# moved key (each a line of the first screen and a row of the per-test table); a failure is the finding elsewhere.
NOT_CACHED_TOLD = frozenset({Verdict.NOT_CACHED, Verdict.REPRODUCED})


def cell_not_cached(cell: CellResult) -> list[NotCachedModule]:
    """A `not cached` or `reproduced` cell's modules JAX never wrote, with what its runs' files showed when it was
    finished (none for another verdict: NOT_CACHED_TOLD)."""
    if cell.verdict not in NOT_CACHED_TOLD:
        return []
    return not_cached_modules(cell.runs, cell.callback_sites, cell.refusal_seconds)


def _moved(runs: Sequence[RunRecord], module: str, never: Mapping[str, object]) -> bool:
    """Whether the module's never-written keys differ between runs where the same test compiled it at the same
    argument types."""
    seen: dict[tuple[str, tuple[str, ...]], set[frozenset[str]]] = {}
    for run in runs:
        mine: dict[tuple[str, tuple[str, ...]], set[str]] = {}
        for k in run.keys.keys if run.keys is not None else ():
            if k.module == module and k.key in never:
                mine.setdefault((k.tests[0] if k.tests else "", k.arg_types), set()).add(k.key)
        for where, keys in mine.items():
            seen.setdefault(where, set()).add(frozenset(keys))
    return any(len(found) > 1 for found in seen.values())


def lost_per_start(modules: Iterable[NotCachedModule]) -> float | None:
    """The seconds the modules cost each fresh process together; None when none was timed."""
    timed = [m.seconds for m in modules if m.seconds is not None]
    return round(sum(timed), 3) if timed else None


def not_cached_phrase(modules: Sequence[NotCachedModule], limit: int = 3) -> str:
    """`jit_while (uses a host callback (zoom_linesearch.py:132 jax.debug.print)), jit_update (...): never written,
    compiled again in every fresh process: 0.42 s lost per start`."""
    shown = "; ".join(f"{m.module} {m.reason_phrase}" for m in modules[:limit])
    more = f" (and {len(modules) - limit} more)" if len(modules) > limit else ""
    lost = lost_per_start(modules)
    cost = f": {lost:.2f} s lost per start" if lost is not None else ""
    moved = [m.module for m in modules[:limit] if m.moved]
    also = (f" ({', '.join(moved)}: {'its key differs' if len(moved) == 1 else 'their keys differ'} between runs too, "
            "which costs nothing more: never written either way)") if moved else ""
    return f"{shown}{more}; never written by JAX, so every fresh process compiles {_them(modules)} again{cost}{also}"


def _them(modules: Sequence[NotCachedModule]) -> str:
    return "it" if len(modules) == 1 else "them"


# ---- the line that put a callback into a module, from its lowered dump's locations ------------------------------

def callback_sites(text: str) -> list[str]:
    """Each host callback in one lowered module, as `path:line api` (`tests/t.py:5 jax.debug.print`), in the
    module's order, distinct; empty when the module has none or its dump carries no locations. Linear in the text:
    an op line is only searched with `in` and `rfind`, and only short location lines are matched."""
    locs: dict[str, str] = {}
    ops: list[str] = []  # each callback op's location (`#loc85`, or the expression written inline)
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#loc"):
            if len(stripped) <= _MAX_LOC_LINE and (m := _LOC_DEF_RE.fullmatch(stripped)):
                locs["#" + m[1]] = m[2]
            continue
        if "custom_call" in line and _CALLBACK_TARGET in line.partition("(")[0] or _HOST_TRANSFER in line:
            at = line.rfind(" loc(")
            if at >= 0 and len(line) - at <= _MAX_LOC_LINE:
                ops.append(line[at + len(" loc("):].rstrip().removesuffix(")"))
    out: list[str] = []
    for op in ops:
        site = _resolve(op, locs)
        if site and site not in out:
            out.append(site)
    return out


def _resolve(expr: str, locs: Mapping[str, str]) -> str:
    """A callback op's location -> `path:line api`: the first frame of its call stack, innermost first, outside JAX
    and the libraries' machinery (machinery_frame), else the innermost; and the primitive named on the way
    (`jit(step)/debug_print`)."""
    api = ""
    frames: list[tuple[str, str]] = []  # innermost first
    pending = [expr]
    seen = 0
    while pending and seen < MAX_DEPTH:
        seen += 1
        current = pending.pop()
        current = locs.get(current, current) if _REF_RE.fullmatch(current) else current
        if (m := _CALLSITE_RE.fullmatch(current)) is not None:
            pending += [m[2], m[1]]  # the callee, the inner frames, first; then its caller
            continue
        if (m := _NAMED_RE.fullmatch(current)) is not None:
            name = m[1].rstrip(":").rsplit("/", 1)[-1]
            if not api and name in _API:
                api = _API[name]
            pending.append(m[2])
            continue
        if (m := _FILE_RE.match(current)) is not None:
            frames.append((m[1], m[2]))
    if not frames:
        return ""
    path, line = next((f for f in frames if not machinery_frame(f[0])), frames[0])
    path = path.split(_SITE_PACKAGES, 1)[1] if _SITE_PACKAGES in path else path
    return f"{path}:{line} {api or UNNAMED_API}"


# A frame of JAX's own, or of a library's machinery (equinox/internal/_primitive.py binds every equinox primitive): not
# the line that put a callback there, which is the first frame outside them (a library's own code, or the program's).
_JAX_PACKAGES = ("jax", "jaxlib")
_MACHINERY_FOLDERS = ("internal", "_internal")


def machinery_frame(path: str) -> bool:
    """Whether a frame's file is JAX's (jax/, jaxlib/ in site-packages) or in a library's `internal` folder."""
    if _SITE_PACKAGES not in path:
        return False
    parts = path.split(_SITE_PACKAGES, 1)[1].split("/")
    return parts[0] in _JAX_PACKAGES or any(p in _MACHINERY_FOLDERS for p in parts[1:-1])


def site_label(site: str) -> str:
    """A site as a phrase reads it: `t.py:5 jax.debug.print`, or the line alone where its API is not known."""
    return site.removesuffix(" " + UNNAMED_API)


# ---- the line that put a callback into a module, from the recorder's record of each callback API call ------------

CALLBACK_MESSAGE = "Host callback "  # harness/inside/startup/jax_cache_harness_recorder.py writes it (standard library)
_REFUSAL = "Not writing persistent cache entry for '"
# Test runners whose frames call a library's tests: never what "reached from" names.
_RUNNERS = frozenset({"_pytest", "pytest", "pluggy", "absl"})


def recorded_sites(messages: Iterable[str]) -> dict[str, str]:
    """module -> its callback's site from one thread's recorded messages, in order: each callback API call the
    recorder saw (its API and stack) belongs to the next module JAX refused to write for host callbacks (a callback is
    traced and lowered before its module's key, and a module without one is never refused for it); the first call
    of each such module names it (recorded_site)."""
    calls: list[tuple[str, list[str]]] = []
    out: dict[str, str] = {}
    for text in messages:
        if text.startswith(CALLBACK_MESSAGE):
            api, _, frames = text[len(CALLBACK_MESSAGE):].partition(": ")
            try:
                stack = msgspec.json.decode(frames, type=list[str])
            except msgspec.ValidationError:
                continue
            calls.append((api, stack))
        elif text.startswith(_REFUSAL) and _CALLBACK_WORDS in text and calls:
            module = text[len(_REFUSAL):].partition("'")[0]
            site = next((s for api, stack in calls if (s := recorded_site(api, stack))), "")
            if site and module not in out:
                out[module] = site
            calls = []
    return out


def recorded_site(api: str, stack: Sequence[str]) -> str:
    """`equinox/_errors.py:111 jax.pure_callback, reached from lineax/_solve.py:125`: the innermost frame outside JAX
    and a library's machinery (JAX's own frames are never recorded), and where it lies in a library, the first frame
    further out in another package that called into it (not a test runner's; none once the library's own tests
    are reached); "" for an empty stack."""
    frames = [f for f in stack if f.rpartition(":")[2].isdigit()]
    if not frames:
        return ""
    at = next((i for i, f in enumerate(frames) if not machinery_frame(f.rpartition(":")[0])), 0)
    site = frames[at]
    package = _package(site)
    reached = ""
    if package:
        for frame in frames[at + 1:]:
            other = _package(frame)
            if other == package:
                if _test_file(frame):
                    break  # the library's own test called it
                continue
            if other in _RUNNERS or machinery_frame(frame.rpartition(":")[0]):
                continue
            reached = frame
            break
    text = f"{_relative(site)} {api or UNNAMED_API}"
    return text + (f", reached from {_relative(reached)}" if reached else "")


def _package(frame: str) -> str:
    """The top-level package of a frame in an installed library (`equinox`); "" for the program's own files."""
    return frame.split(_SITE_PACKAGES, 1)[1].split("/", 1)[0] if _SITE_PACKAGES in frame else ""


def _relative(frame: str) -> str:
    return frame.split(_SITE_PACKAGES, 1)[1] if _SITE_PACKAGES in frame else frame


def _test_file(frame: str) -> bool:
    name = frame.rpartition(":")[0].rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py")


def short_site(site: str, cwd: str = "") -> str:
    """A site with the program's folder left off its path (`tests/t.py:5 jax.debug.print`)."""
    prefix = cwd.rstrip("/") + "/" if cwd else ""
    if not prefix:
        return site
    site = site.replace(", reached from " + prefix, ", reached from ")
    return site.removeprefix(prefix)


# ---- what a refusal JAX logged no time for costs, from the recorder's timestamped messages ----------------------

def refusal_seconds(messages: Iterable[tuple[float | None, str]]) -> dict[str, float]:
    """module -> the seconds from the last message naming it before JAX's refusal to write it (its cache miss) to
    that refusal, summed over its refusals in one run: the compile JAX does not time for a module it never writes
    (host callbacks). `messages`: (time, text) in order, as the run's recorder wrote them."""
    last: dict[str, float] = {}
    out: dict[str, float] = {}
    for time, text in messages:
        if time is None:
            continue
        module = _quoted_module(text)
        if module is None:
            continue
        if text.startswith("Not writing persistent cache entry") and module in last:
            out[module] = round(out.get(module, 0.0) + max(time - last.pop(module), 0.0), 3)
        else:
            last[module] = time
    return out


def _quoted_module(text: str) -> str | None:
    """The module a cache message names in quotes (`... for 'jit_step' ...`); None when it names none."""
    start = text.find(" for '")
    if start < 0:
        return None
    end = text.find("'", start + len(" for '"))
    return text[start + len(" for '"):end] if end > 0 else None
