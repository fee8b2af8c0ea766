"""JAX's own account of its persistent cache, read from a run's log (pure: text in, typed data out).

With `JAX_DEBUG_LOG_MODULES=jax._src.cache_key,jax._src.compiler,jax._src.compilation_cache` and
`JAX_LOGGING_LEVEL=DEBUG` (both needed from 0.9.1; before 0.4.36 the level is ignored) JAX logs, for each
compilation, every component of the cache key:

    get_cache_key hash of serialized <component>: <64 hex>      (that component alone)
    get_cache_key hash after serializing <component>: <64 hex>  (the running hash; the last one is the key)

and what became of the key: `PERSISTENT COMPILATION CACHE MISS for 'M' with key 'K'` and `Persistent
compilation cache hit for 'M' with key 'K'` (from 0.4.31; before, the hit names no key and a miss shows only
as `'M' took at least ... to compile`), `Writing M to persistent compilation cache with key K`, and
`Not writing persistent cache entry for 'M' because <reason>`. An entry on disk that JAX cannot read back
is a warning before the miss, worded alike from 0.4.28 to 0.10.2 (seen): `UserWarning: Error reading
persistent compilation cache entry for 'M': error: Error -3 while decompressing data: incorrect header check`.

Just before a key, `jax._src.compiler` logs the devices the computation is compiled for (0.4.26 to 0.10.2):
`get_compile_options: num_replicas=1 num_partitions=8 device_assignment=[[CpuDevice(id=0) ...` (numpy
prints a long assignment over several lines, each continuation indented). Each key keeps its devices' ids.

The line prefix (`DEBUG:<time>:<logger>:<lineno>:`) changes between releases, and newer releases print
some lines twice: the messages are searched for anywhere in a line, and a repeated line changes nothing.
Component names contain spaces (`jax_lib version`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable

import msgspec
from packaging.version import InvalidVersion, Version


# The loggers to turn on, and the level newer releases need as well (a run's environment gets both).
LOG_ENV = {
    "JAX_DEBUG_LOG_MODULES": "jax._src.cache_key,jax._src.compiler,jax._src.compilation_cache",
    "JAX_LOGGING_LEVEL": "DEBUG",
}

_HEX = r"[0-9a-f]{64}"
_COMPONENT_RE = re.compile(rf"get_cache_key hash of serialized (?P<name>.+?): (?P<hash>{_HEX})\s*$")
_RUNNING_RE = re.compile(rf"get_cache_key hash after serializing (?P<name>.+?): (?P<hash>{_HEX})\s*$")
_MISS_RE = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '(?P<module>[^']+)' with key '(?P<key>[^']+)'")
_HIT_RE = re.compile(r"Persistent compilation cache hit for '(?P<module>[^']+)'(?: with key '(?P<key>[^']+)')?")
_WRITE_RE = re.compile(r"Writing (?P<module>\S+) to persistent compilation cache with key '?(?P<key>[^'\s]+?)'?\.?\s*$")
_NOT_WRITTEN_RE = re.compile(r"Not writing persistent cache entry for '(?P<module>[^']+)' because (?P<reason>.*\S)\s*$")
_NOT_WRITTEN_KEY_RE = re.compile(r"Not writing persistent cache entry with key '(?P<key>[^']+)' since (?P<reason>.*\S)\s*$")
# A process other than 0 of a multi-process job never writes (JAX: "Only write cache entries from the first
# process"); the message names no key: it is the refusal of the key this process just computed.
_NOT_WRITTEN_SINCE_RE = re.compile(r"Not writing persistent cache entry since (?P<reason>.*\S)\s*$")
# An entry JAX found and could not read back (a UserWarning, before the miss of the same module).
_READ_ERROR_RE = re.compile(r"Error reading persistent compilation cache entry for '(?P<module>[^']+)': (?P<error>.*\S)\s*$")
_COMPILED_RE = re.compile(r"'(?P<module>[^']+)' took at least \S+ seconds to compile(?: \((?P<secs>[\d.]+)s\))?")
# How long a compile took, where JAX says (both with and below the minimum compile time).
_COMPILE_TIME_RE = re.compile(r"seconds to compile \((?P<secs>[\d.]+)s\)")
_EXCLUDED_FLAG_RE = re.compile(r"Not including XLA flag in cache key: (?P<flag>\S+)")
_COMPILE_OPTIONS_RE = re.compile(r"get_compile_options: num_replicas=(?P<replicas>\d+) num_partitions=(?P<partitions>\d+) "
                                 r"device_assignment=(?P<devices>.*)$")
# A device in an assignment, whatever the platform prints: CpuDevice(id=0), CudaDevice(id=3), TpuDevice(id=2, ...).
_DEVICE_MARK = "Device(id="
_DEVICE_ID_RE = re.compile(r"Device\(id=(?P<id>\d+)")

# Every message above holds one of these: a line without any is not JAX's cache talking.
_MARKERS = ("get_cache_key", "ompilation cache", "COMPILATION CACHE MISS", "persistent cache entry", "to compile",
            "XLA flag in cache key", "get_compile_options:", _DEVICE_MARK)


class Outcome(enum.StrEnum):
    """What became of one key in one run, as JAX logged it."""

    HIT = "hit"
    MISS = "miss"  # compiled; neither a write nor a refusal was logged (yet)
    WRITTEN = "written"
    NOT_WRITTEN = "not written"  # JAX said why (`reason`)


# A later message about the same key says more than an earlier one.
_STRENGTH = {Outcome.HIT: 0, Outcome.MISS: 1, Outcome.WRITTEN: 2, Outcome.NOT_WRITTEN: 3}


class LoggedKey(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """One key a run computed: its module, what became of it, and each component's own hash."""

    module: str
    key: str
    outcome: Outcome
    reason: str = ""  # JAX's words when it did not write the entry
    # component (JAX's spelling) -> hash, JAX's order
    components: dict[str, str] = {}
    # as JAX logs it (two decimals), when it compiled and said
    compile_time_s: float | None = None
    # The ids of the devices it was compiled for, in the assignment's order; () when JAX's log did not say
    # them all (a release that logs no assignment, a summarised or cut one, results from before).
    devices: tuple[int, ...] = ()
    # JAX's words when it found this key's entry and could not read it back (then it compiled the key)
    read_error: str = ""
    # Read in-process (harness/core/recorder.py): the pytest ids of the tests whose JAX messages named this
    # key, in order (empty: not a pytest run, or named outside any test), and the argument types it was
    # compiled at (`float32[2]`), from JAX's `Compiling f with global shapes and types` message.
    tests: tuple[str, ...] = ()
    arg_types: tuple[str, ...] = ()
    # The result types of the module JAX dumped for it (`tensor<3xf32>`; harness/core/ir_results.py), where its
    # run's dump and log paired: the same arguments with other results is something new (a static size drawn at
    # random), not a key that moved. () where not known (no dump, results from before).
    result_types: tuple[str, ...] = ()


class RunLog(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """What one run's log says of the persistent cache. `keys` in the order JAX first named them, each with its
    module (results.json of schema 3: {"keys": [{module, key, outcome, ...}]}; earlier, module -> key -> {...})."""

    keys: list[LoggedKey] = []
    # XLA flags JAX left out of the key (this run's reading; written only where there were any)
    excluded_flags: list[str] = []

    @property
    def empty(self) -> bool:
        return not self.keys

    def by_key(self) -> dict[str, LoggedKey]:
        return {k.key: k for k in self.keys}

    def modules(self) -> dict[str, list[str]]:
        """module -> its keys, sorted."""
        out: dict[str, list[str]] = {}
        for k in sorted(self.keys, key=lambda k: k.key):
            out.setdefault(k.module, []).append(k.key)
        return out

    def with_outcome(self, *outcomes: Outcome) -> list[LoggedKey]:
        return [k for k in self.keys if k.outcome in outcomes]


# JAX's reason when it had no cache at that moment (from 0.5.1: a computation before the folder was set):
# a fact about the process then, not about the module.
NO_CACHE_YET = "cache is disabled/not initialized"


def refused_for_no_cache(reason: str) -> bool:
    return NO_CACHE_YET in reason


def is_cache_line(line: str) -> bool:
    """Whether a log line is one this parser reads (what a capped log always keeps)."""
    return any(marker in line for marker in _MARKERS)


class _Reader:
    def __init__(self) -> None:
        self.keys: dict[str, LoggedKey] = {}
        self.last_key_of: dict[str, str] = {}  # module -> the key of its compilation under way
        self.block: dict[str, str] = {}  # the components of the key being computed
        self.running: str | None = None  # its running hash
        # a computed key no message has named yet: its components, its running hash, its devices
        self.pending: tuple[dict[str, str], str, tuple[int, ...]] | None = None
        self.block_devices: tuple[int, ...] = ()  # the devices of the key being computed
        self.next_devices: tuple[int, ...] = ()  # the assignment logged last, for the next key computed
        self.assignment: list[int] | None = None  # an assignment still being read (numpy wraps long ones)
        self.assignment_size = 0  # how many devices it has (num_replicas x num_partitions)
        self.excluded: list[str] = []
        self.last_key: str | None = None  # the key named last, whatever its module
        self.read_errors: dict[str, str] = {}  # module -> an entry read error not yet tied to its key
        # module -> the key its last miss named (0.4.31 and later, where every compile names its key first): a
        # message that names only the module ("took at least", "Not writing ... because", printed twice by some
        # releases) is about that key, not about the running hash logged last, which in a log of concurrent
        # compilations (threads) may be another module's
        self.named_miss: dict[str, str] = {}

    def compile_options(self, size: int, text: str) -> None:
        self.assignment, self.assignment_size, self.next_devices = [], size, ()
        self.assignment_continues(text)

    def assignment_continues(self, text: str) -> None:
        """More of the assignment being read; once every device is named, the next key's."""
        assert self.assignment is not None
        self.assignment += [int(m["id"]) for m in _DEVICE_ID_RE.finditer(text)]
        if len(self.assignment) >= self.assignment_size:
            if len(self.assignment) == self.assignment_size:
                self.next_devices = tuple(self.assignment)
            self.assignment = None

    def component(self, name: str, digest: str) -> None:
        if self.block.get(name, digest) != digest:  # a component seen again, changed: a new key
            self._close_block()
        if not self.block:  # a key's first component: it is compiled for the devices just logged
            self.block_devices, self.next_devices = self.next_devices, ()
        self.block[name] = digest

    def running_hash(self, digest: str) -> None:
        self.running = digest
        self.pending = (dict(self.block), digest, self.block_devices)

    def _close_block(self) -> None:
        self.block, self.running = {}, None

    def event(self, module: str, key: str | None, outcome: Outcome, reason: str = "",
              compile_time_s: float | None = None) -> None:
        components: dict[str, str] = {}
        devices: tuple[int, ...] | None = None
        if key is None and module in self.named_miss:
            key = self.named_miss[module]
        elif outcome == Outcome.MISS and key is not None:
            self.named_miss[module] = key
        if self.pending is not None:
            block, digest, block_devices = self.pending
            if key is None:
                key = f"{module}-{digest}"
            if key == f"{module}-{digest}":
                components, devices = block, block_devices
                self.pending = None
                self._close_block()
        if key is None:
            key = self.last_key_of.get(module)
        if key is None:
            return  # a message about a key this log never computed (logging turned on mid-run)
        self.last_key_of[module] = key
        self.last_key = key
        read_error = self.read_errors.pop(module, "") if outcome != Outcome.HIT else ""
        known = self.keys.get(key)
        if known is None:
            if devices is None:  # a release that logs no components: the assignment logged just before
                devices, self.next_devices = self.next_devices, ()
            self.keys[key] = LoggedKey(module, key, outcome, reason, components, compile_time_s, devices, read_error)
            return
        known.read_error = known.read_error or read_error
        if compile_time_s is not None:
            known.compile_time_s = compile_time_s
        if components and not known.components:
            known.components = components
        if _STRENGTH[outcome] >= _STRENGTH[known.outcome]:
            known.outcome = outcome
            known.reason = reason or known.reason


def parse(text: str | Iterable[str]) -> RunLog:
    """The keys a run's log names, with their outcomes and components; empty when JAX logged none."""
    lines = text.splitlines() if isinstance(text, str) else text
    reader = _Reader()
    for line in lines:
        if reader.assignment is not None:
            if line[:1].isspace() and _DEVICE_MARK in line:
                reader.assignment_continues(line)
                continue
            reader.assignment = None  # it ended unread (numpy summarised it): its devices stay unknown
        if not is_cache_line(line):
            continue
        if m := _COMPILE_OPTIONS_RE.search(line):
            reader.compile_options(int(m["replicas"]) * int(m["partitions"]), m["devices"])
        elif m := _COMPONENT_RE.search(line):
            reader.component(m["name"], m["hash"])
        elif m := _RUNNING_RE.search(line):
            reader.running_hash(m["hash"])
        elif m := _READ_ERROR_RE.search(line):
            reader.read_errors[m["module"]] = m["error"]
        elif m := _MISS_RE.search(line):
            reader.event(m["module"], m["key"], Outcome.MISS)
        elif m := _HIT_RE.search(line):
            reader.event(m["module"], m["key"], Outcome.HIT)
        elif m := _WRITE_RE.search(line):
            reader.event(m["module"], m["key"], Outcome.WRITTEN)
        elif m := _NOT_WRITTEN_RE.search(line):
            reader.event(m["module"], None, Outcome.NOT_WRITTEN, m["reason"], _compile_time(m["reason"]))
        elif m := _NOT_WRITTEN_KEY_RE.search(line):
            module = m["key"].rpartition("-")[0]
            reader.event(module, m["key"], Outcome.NOT_WRITTEN, m["reason"])
        elif m := _NOT_WRITTEN_SINCE_RE.search(line):
            if reader.last_key is not None:
                module = reader.keys[reader.last_key].module
                reader.event(module, reader.last_key, Outcome.NOT_WRITTEN, m["reason"])
        elif m := _COMPILED_RE.search(line):
            reader.event(m["module"], None, Outcome.MISS, compile_time_s=float(m["secs"]) if m["secs"] else None)
        elif (m := _EXCLUDED_FLAG_RE.search(line)) and m["flag"] not in reader.excluded:
            reader.excluded.append(m["flag"])
    return RunLog(list(reader.keys.values()), reader.excluded)


def _compile_time(text: str) -> float | None:
    m = _COMPILE_TIME_RE.search(text)
    return float(m["secs"]) if m else None


def merged(logs: Iterable[RunLog]) -> RunLog:
    """The keys of several processes' logs together (a job's): each key once, with the strongest outcome
    any process logged for it (one process wrote what the others were refused) and its components."""
    keys: dict[str, LoggedKey] = {}
    flags: list[str] = []
    for log in logs:
        for k in log.keys:
            known = keys.get(k.key)
            if known is None:
                keys[k.key] = msgspec.structs.replace(k, components=dict(k.components))
                continue
            if k.components and not known.components:
                known.components = dict(k.components)
            if k.outcome == Outcome.WRITTEN or (known.outcome != Outcome.WRITTEN
                                                 and _STRENGTH[k.outcome] > _STRENGTH[known.outcome]):
                known.outcome, known.reason = k.outcome, k.reason
        flags += [f for f in log.excluded_flags if f not in flags]
    return RunLog(list(keys.values()), flags)


def named_keys(lines: Iterable[str]) -> set[str]:
    """The keys a log names in so many words (a miss from 0.4.31, a hit, a write, a refusal by key), as opposed to
    the keys the parser puts together from a running hash and a module named later: in a log several processes or
    threads wrote at once, those may pair one compilation's hash with another's module."""
    out: set[str] = set()
    for line in lines:
        if "ompilation cache" in line or "COMPILATION CACHE MISS" in line or "persistent cache entry" in line:
            for pattern in (_MISS_RE, _HIT_RE, _WRITE_RE, _NOT_WRITTEN_KEY_RE):
                m = pattern.search(line)
                if m and m["key"]:
                    out.add(m["key"])
    return out


def combined(recorded: RunLog, stderr: RunLog, named: set[str] | None = None) -> tuple[RunLog, list[str]]:
    """One run's two accounts of JAX's cache read together, neither deciding a hit alone: the recorder's (read in
    the process per thread, its lines chained) and JAX's log on stderr (the program's own). Every key the recorder
    names, and every key JAX's log on stderr shows computed (a miss, a write, a refusal), each with the outcome
    furthest from a hit that either says (a miss that one shows is a miss); a hit that only stderr shows is not
    taken (nothing but the program's own output says it), nor, where `named` is given (named_keys), a key only
    stderr shows that it never named in so many words (one put together from another thread's hash: said, not
    read). Returns the keys (the recorder's record of each where it has one: its components, tests and types) and,
    where both named keys, how they disagree, in words."""
    if recorded.empty or stderr.empty:  # one account alone (pytest keeps stderr; the built-in repro has no
        return (stderr if recorded.empty else recorded), []  # recorder): nothing to weigh it against
    by_key = {k.key: msgspec.structs.replace(k, components=dict(k.components)) for k in recorded.keys}
    shown = stderr.by_key()
    only_stderr: list[str] = []
    outcomes: list[str] = []
    for key, k in shown.items():
        known = by_key.get(key)
        if known is None:
            only_stderr.append(key)
            if k.outcome != Outcome.HIT and (named is None or key in named):
                by_key[key] = msgspec.structs.replace(k, components=dict(k.components))
            continue
        if (k.outcome == Outcome.HIT) != (known.outcome == Outcome.HIT):
            outcomes.append(f"{key} ({'a hit' if known.outcome == Outcome.HIT else 'a miss'} in the recorder, "
                            f"{'a hit' if k.outcome == Outcome.HIT else 'a miss'} on stderr)")
        if _STRENGTH[k.outcome] > _STRENGTH[known.outcome]:
            known.outcome, known.reason = k.outcome, k.reason or known.reason
            known.compile_time_s = known.compile_time_s if known.compile_time_s is not None else k.compile_time_s
    flags = recorded.excluded_flags + [f for f in stderr.excluded_flags if f not in recorded.excluded_flags]
    out = RunLog(list(by_key.values()), flags)
    only_recorded = [k.key for k in recorded.keys if k.key not in shown]
    said = []
    if only_stderr:
        said.append(f"JAX's log on stderr names {_count(only_stderr)} the recorder does not ({_first(only_stderr)})")
    if only_recorded:
        said.append(f"the recorder names {_count(only_recorded)} JAX's log on stderr does not ({_first(only_recorded)})")
    if outcomes:
        said.append(f"they differ on {_count(outcomes)}: {_first(outcomes)}")
    return out, said


def _count(keys: list[str]) -> str:
    return f"{len(keys)} key" + ("" if len(keys) == 1 else "s")


def _first(items: list[str]) -> str:
    return items[0] + (", ..." if len(items) > 1 else "")


def differing_components(a: LoggedKey, b: LoggedKey) -> list[str]:
    """The components whose own hashes differ between two keys, in JAX's order (a component only one
    of them has counts as differing: a release that hashes more)."""
    names = list(a.components) + [n for n in b.components if n not in a.components]
    return [n for n in names if a.components.get(n) != b.components.get(n)]


# A run's log is kept whole up to this size; past it, the head and the tail (the script's own output,
# a traceback), every line this parser reads and the harness's own notes (what the run supervisor cut)
# are kept, the rest of JAX's debug chatter is cut.
LOG_CAP_BYTES = 2 * 1024 * 1024
CAP_KEEP_LINES = 500
NOTE_PREFIX = "[harness: "  # the harness's notes in a log (the supervisor's too: supervise.NOTE_PREFIX)


# A line of a kept log past this is shortened (a program's one-line megabytes: the cut keeps whole lines, and one
# line of 64 MiB was kept whole), its end replaced by a note; JAX's cache lines are a few hundred characters.
LINE_CAP_CHARS = 16 << 10


def shortened(line: str) -> str:
    if len(line) <= LINE_CAP_CHARS:
        return line
    return f"{line[:LINE_CAP_CHARS]} {NOTE_PREFIX}{len(line) - LINE_CAP_CHARS:,} characters of this line cut]"


def _within(lines: Iterable[str], budget: int) -> list[str]:
    """The leading `lines` whose UTF-8 (a newline each) fits in `budget` bytes."""
    out = []
    for line in lines:
        budget -= len(line.encode("utf-8", "replace")) + 1
        if budget < 0:
            break
        out.append(line)
    return out


def capped(lines: list[str], keep: int = CAP_KEEP_LINES, budget: int = LOG_CAP_BYTES) -> list[str]:
    """The first and last `keep` lines, and between them only the cache lines and the harness's notes, with a line
    saying how many were cut; each line shortened to LINE_CAP_CHARS, and all of it within `budget` bytes whatever
    the lines (a quarter for the first lines, a quarter for the last, the rest for what is kept between)."""
    lines = [shortened(line) for line in lines]
    if len(lines) <= 2 * keep and sum(len(line.encode("utf-8", "replace")) + 1 for line in lines) <= budget:
        return lines
    first = min(keep, len(lines))
    last = min(keep, len(lines) - first)
    head, middle, tail = lines[:first], lines[first:len(lines) - last], lines[len(lines) - last:]
    note_room = 200  # the note's own line
    head = _within(head, budget // 4)
    tail = _within(reversed(tail), budget // 4)[::-1]
    used = sum(len(line.encode("utf-8", "replace")) + 1 for line in head + tail)
    kept = _within((line for line in middle if is_cache_line(line) or line.startswith(NOTE_PREFIX)),
                   budget - used - note_room)
    note = (f"{NOTE_PREFIX}{len(lines) - len(head) - len(tail) - len(kept)} lines cut here to keep the log under "
            f"{budget // (1024 * 1024)} MiB; JAX's cache lines and the harness's notes kept]")
    return head + [note] + kept + tail


def no_keys_note(version: str) -> str:
    """Why a successful run's log named no key, in words for the report."""
    try:
        old = Version(version) < Version("0.4.26")
    except InvalidVersion:
        old = False
    if old:
        return f"JAX {version} logs no cache key (the CPU persistent cache starts at 0.4.26)"
    return ("JAX logged no cache key (the script compiled nothing, or changed logging itself: "
            "its own handlers or levels for the `jax` loggers)")
