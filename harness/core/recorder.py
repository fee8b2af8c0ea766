"""What the in-process recorder wrote during one run, read back (pure: bytes in, typed data out).

The start-up hook (harness/inside/startup/jax_cache_harness_recorder.py, `install_recorder`) wraps the loggers of
JAX's cache modules inside each run and appends one JSON object a line to the run's recorder file
(`<run log>.recorder.jsonl`, named by HARNESS_RECORDER); its pytest plugin (`jax_cache_harness_pytest`) stamps
each record with the test running and records what pytest decided. Whatever the program does with fd 2 or
with logging (pytest's capture, `-q`, its own handlers), JAX's messages reach this file. The kinds of line:

    {"kind": "start", "argv": [...], "pid": P, "time": T}                      a process began (one per process)
    {"kind": "log", "logger": "jax._src.compiler", "level": 10, "message": "...", "time": T, "pid": P,
     "thread": I, "test": "tests/test_a.py::test_x", "phase": "call"}         one of JAX's cache messages
    {"kind": "event", "event": "/jax/compilation_cache/cache_hits", "seconds": S}  a jax.monitoring event
    {"kind": "collected", "ids": [...]}                                         pytest's collected test ids
    {"kind": "test", "id": "...", "outcome": "passed|failed|error|skipped|xfailed|xpassed", "seconds": S}
    {"kind": "collect_error", "id": "..."}                                     a file pytest could not collect
    {"kind": "session", "exit_status": N}                                      pytest's exit status
    {"kind": "fallback", "option": "jax_compilation_cache_dir", "applied": DIR}   the hook gave the cell's folder
                                                                                at JAX's first cache use
    {"kind": "problem", "detail": "..."}                                       what the hook could not do

`test` and `phase` are on every record made while a test ran (absent outside tests: collection, a plain
script). The messages are JAX's own words, so `jaxlog.parse` reads them as it reads a log on stderr: one
parser for both, per process and per thread (JAX compiles on the caller's thread: the messages of concurrent
compilations, in several processes or threads, are never interleaved into one reading; a file written before
the hook named threads is read per process).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from harness.core import jaxlog
from harness.core.bounded_read import Lines
from harness.inside.startup.jax_cache_harness_recorder import (ARGS_MESSAGE, MAC_FIELD, MAC_HEX, RECORDER_FULL,
                                                               RECORDER_MAX_BYTES)

# A recorder file of a long suite: 600 keys in 75 modules wrote about 7 MiB. The hook stops at RECORDER_MAX_BYTES
# (each process's last line may pass it by a few bytes); what lies past this bound was not written by the hook,
# and is not read (said in the run's row). The file is streamed: memory follows the records, never its lines.
MAX_BYTES = RECORDER_MAX_BYTES + (1 << 20)


class Start(msgspec.Struct, tag="start", tag_field="kind", omit_defaults=True):
    pid: int = 0
    argv: list[str] = []
    time: float | None = None


class LogMessage(msgspec.Struct, tag="log", tag_field="kind", omit_defaults=True):
    message: str
    logger: str = ""
    level: int = 10
    pid: int = 0
    time: float | None = None
    test: str | None = None
    phase: str | None = None
    thread: int | None = None  # threading.get_ident() of the thread that logged it (None: written before)


class Event(msgspec.Struct, tag="event", tag_field="kind", omit_defaults=True):
    event: str
    seconds: float | None = None
    pid: int = 0
    time: float | None = None
    test: str | None = None
    phase: str | None = None


class Collected(msgspec.Struct, tag="collected", tag_field="kind", omit_defaults=True):
    ids: list[str] = []
    pid: int = 0


class TestOutcome(msgspec.Struct, tag="test", tag_field="kind", omit_defaults=True):
    id: str
    outcome: str
    pid: int = 0
    seconds: float | None = None  # pytest's own durations of its setup, call and teardown (None: before 51)


class CollectError(msgspec.Struct, tag="collect_error", tag_field="kind", omit_defaults=True):
    id: str
    pid: int = 0


class Session(msgspec.Struct, tag="session", tag_field="kind", omit_defaults=True):
    exit_status: int
    pid: int = 0


class Fallback(msgspec.Struct, tag="fallback", tag_field="kind", omit_defaults=True):
    applied: str
    option: str = "jax_compilation_cache_dir"
    pid: int = 0
    time: float | None = None


class RecorderProblem(msgspec.Struct, tag="problem", tag_field="kind", omit_defaults=True):
    detail: str
    pid: int = 0


Line = Start | LogMessage | Event | Collected | TestOutcome | CollectError | Session | Fallback | RecorderProblem
_LINE = msgspec.json.Decoder(Line)


class KeyRecord(msgspec.Struct, omit_defaults=True, kw_only=True):
    """One key a run computed, as the recorder saw it: the tests that computed or used it, its argument types."""

    module: str
    key: str
    outcome: str
    compile_time_s: float | None = None
    tests: list[str] = []  # pytest ids, in the order they named the key ("" outside any test: collection)
    arg_types: list[str] = []  # e.g. ["float32[2]"], from JAX's "Compiling f with global shapes and types" message


class Recording(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What one run's recorder file says: every line read, in order (lines a crash cut are skipped)."""

    lines: list[Line] = []
    unreadable: int = 0  # lines that were not a record (a write cut by a crash, a future kind)
    # lines whose MAC did not check out (read with the run's key): written or changed after the hook wrote them
    # (appended by the program, or every line after one it removed), never read
    altered: int = 0
    note: str = ""  # what the bounded read left out (the file past MAX_BYTES, or not a regular file): one line

    @property
    def messages(self) -> list[LogMessage]:
        return [r for r in self.lines if isinstance(r, LogMessage)]

    @property
    def empty(self) -> bool:
        return not self.messages

    def collected(self) -> list[str]:
        """pytest's collected ids (the last collection of each process, in order; xdist: the workers' own)."""
        out: dict[str, None] = {}
        for r in self.lines:
            if isinstance(r, Collected):
                out.update(dict.fromkeys(r.ids))
        return list(out)

    def outcomes(self) -> dict[str, str]:
        """Each test's outcome, by id, in the order they ran."""
        return {r.id: r.outcome for r in self.lines if isinstance(r, TestOutcome)}

    def test_seconds(self) -> dict[str, float]:
        """Each test id -> its seconds in this run (pytest's durations of its phases), where recorded."""
        return {r.id: r.seconds for r in self.lines if isinstance(r, TestOutcome) and r.seconds is not None}

    def test_results(self) -> dict[str, str]:
        """Each test id -> its outcome, for the run's record: the outcomes in the order they ran, then the
        collected ids that never ran (`not run`) and the files that could not be collected (`collect error`)."""
        out = self.outcomes()
        for test in self.collected():
            out.setdefault(test, "not run")
        for test in self.collect_errors():
            out.setdefault(test, "collect error")
        return out

    def collect_errors(self) -> list[str]:
        return list(dict.fromkeys(r.id for r in self.lines if isinstance(r, CollectError)))

    def cut(self) -> str:
        """The hook's own words when the file reached its cap (JAX's later messages not recorded), or the reader's
        when it read the file in part or not at all; "" if neither."""
        return self.note or next((r.detail for r in self.lines if isinstance(r, RecorderProblem) and r.detail.startswith(RECORDER_FULL)), "")

    def exit_status(self) -> int | None:
        found = [r.exit_status for r in self.lines if isinstance(r, Session)]
        return found[-1] if found else None

    def fallback(self) -> bool:
        """Whether the hook gave the cell's folder at JAX's first cache use (the program had set none by then)."""
        return any(isinstance(r, Fallback) for r in self.lines)

    def vetted(self, pytest: bool) -> tuple[Recording, list[str]]:
        """The records a run's pytest could have made, and what was left out, in words. A run that is not pytest's
        (`python script.py`) has no tests: its pytest records, and the test stamped on its messages, are ignored. A
        pytest run's record of a test it did not collect (a conftest that set the recorder's test id, a line
        written for it) is ignored: a miss is never charged to it, and it is no JUnit case; a message stamped with it
        is charged to the test running then (the next test of its process to end), as if nothing had stamped it."""
        said: list[str] = []
        if not pytest:
            kept: list[Line] = [r for r in self.lines if not isinstance(r, (Collected, TestOutcome, CollectError, Session))]
            if len(kept) < len(self.lines) or any(getattr(r, "test", None) for r in kept):
                said.append("its recorder holds pytest records, but the run is not pytest's (a plain script): ignored")
            kept = [msgspec.structs.replace(r, test=None, phase=None) if isinstance(r, (LogMessage, Event)) and r.test
                    else r for r in kept]
            return msgspec.structs.replace(self, lines=kept), said
        collected = set(self.collected())
        running: list[str | None] = []  # at each line: the collected test of its process that ends next
        ends: dict[int, str] = {}
        for r in reversed(self.lines):
            if isinstance(r, TestOutcome) and r.id in collected:
                ends[r.pid] = r.id
            running.append(ends.get(r.pid))
        running.reverse()
        strangers: dict[str, None] = {}
        kept = []
        for r, now in zip(self.lines, running):
            if isinstance(r, TestOutcome) and r.id not in collected:
                strangers[r.id] = None
                continue
            if isinstance(r, (LogMessage, Event)) and r.test is not None and r.test not in collected:
                strangers[r.test] = None
                r = msgspec.structs.replace(r, test=now, phase=None)
            kept.append(r)
        if strangers:
            named = list(strangers)
            said.append(f"its recorder names {len(named)} test{'s' if len(named) > 1 else ''} pytest did not collect "
                        f"({named[0]}{', ...' if len(named) > 1 else ''}): ignored")
        return msgspec.structs.replace(self, lines=kept), said

    def events(self) -> dict[str, int]:
        """How many times each jax.monitoring cache event fired."""
        counts: dict[str, int] = defaultdict(int)
        for r in self.lines:
            if isinstance(r, Event):
                counts[r.event] += 1
        return dict(counts)


# This harness's secret: each run's recorder key is derived from it and the recorder's path (recorder_key), so the
# key a run is given need not be kept, and no two runs share one.
_SECRET = secrets.token_bytes(32)


def recorder_key(path: Path) -> str:
    """The key (hex) the hook chains the lines of the recorder at `path` with (RECORDER_KEY_VAR), and the reader checks."""
    return hmac.new(_SECRET, os.fsencode(os.path.abspath(path)), hashlib.sha256).hexdigest()


def parse(data: bytes | str, key: str | None = None) -> Recording:
    raw = data.encode() if isinstance(data, str) else data
    return parse_lines(_split(raw), key)


def _split(raw: bytes) -> Iterator[bytes]:
    start = 0
    while (end := raw.find(b"\n", start)) >= 0:
        yield raw[start:end]
        start = end + 1
    yield raw[start:]


def parse_lines(raw_lines: Iterable[bytes], key: str | None = None) -> Recording:
    """The records of these lines, one line in memory at a time (a line that is no record is only counted). With
    `key` (the run's), only the lines whose MAC checks out, chained per process (see the hook's RECORDER_KEY_VAR):
    a line the program appended, rewrote, or that follows a line it removed is counted in `altered`, never read."""
    lines: list[Line] = []
    bad = altered = 0
    secret = bytes.fromhex(key) if key is not None else None
    last: dict[int, bytes] = {}  # pid -> the MAC of its last line that checked out
    for line in raw_lines:
        if not line.strip():
            continue
        if not line.lstrip().startswith(b"{"):
            bad += 1  # no record (a JSON object): counted without an exception per line
            continue
        try:
            record = _LINE.decode(line)
        except msgspec.ValidationError:
            bad += 1  # a kind this reader does not know (a newer hook): skipped
            continue
        except msgspec.DecodeError:
            bad += 1  # a write cut short
            continue
        if secret is not None:
            # (or the first line of a chain: a later process that got a pid an ended one had)
            mac = _checked(secret, line, last.get(record.pid, b"")) or _checked(secret, line, b"")
            if mac is None:
                altered += 1
                continue
            last[record.pid] = mac
        lines.append(record)
    return Recording(lines=lines, unreadable=bad, altered=altered)


_MAC_MARK = MAC_FIELD.encode()


def _checked(secret: bytes, line: bytes, previous: bytes) -> bytes | None:
    """The line's MAC when it is the one the hook would have written after `previous`; None otherwise."""
    at = line.rfind(_MAC_MARK)
    mac = line[at + len(_MAC_MARK):].rstrip()
    if at < 0 or len(mac) != MAC_HEX + 2 or not mac.endswith(b'"}'):
        return None
    mac = mac[:MAC_HEX]
    body = line[:at] + b"}"
    expected = hmac.new(secret, previous + body, hashlib.sha256).hexdigest()[:MAC_HEX].encode()
    return mac if hmac.compare_digest(mac, expected) else None


def read(path: Path, key: str | None = None) -> Recording | None:
    """The run's recorder file, streamed, its first MAX_BYTES at most (with `key`: its lines that check out, see
    `parse_lines`); None when there is none (the hook was not loaded, or the program never started). A file in its
    place that is not a regular file (a link, a pipe, a folder, a device) is not read: an empty recording whose note
    says so, as is a file past the bound."""
    reading = Lines(path, MAX_BYTES)
    recording = parse_lines(reading.lines(), key)
    if reading.outcome.missing:
        return None
    recording.note = reading.outcome.note("the recorder file", MAX_BYTES)
    return recording


_HEX_RE = re.compile(r"[0-9a-f]{64}")
# "Compiling f with global shapes and types [ShapedArray(float32[2])]" (0.4.x); "(ShapedArray(float32[2]),)" later
_AVAL_RE = re.compile(r"ShapedArray\((?P<aval>[^\s,()\[]+(?:\[[^\]]*\])?)")
_TYPES_MARK = "with global shapes and types "


def arg_types(message: str) -> list[str] | None:
    """The argument types a `Compiling ...` message names (`float32[2]`); None for another message."""
    if not message.startswith(ARGS_MESSAGE) or _TYPES_MARK not in message:
        return None
    types = message.split(_TYPES_MARK, 1)[1].split(". Argument mapping", 1)[0]
    return [m["aval"] for m in _AVAL_RE.finditer(types)]


def run_log(recording: Recording) -> jaxlog.RunLog:
    """JAX's account of the run's cache from the recorded messages (each process's threads read on their own, then
    merged as a job's are), each key with the tests that named it and the argument types it was compiled at."""
    by_thread: dict[tuple[int, int | None], list[LogMessage]] = defaultdict(list)
    for m in recording.messages:
        by_thread[m.pid, m.thread].append(m)
    logs = []
    for messages in by_thread.values():
        parsed = jaxlog.parse(line for m in messages for line in m.message.splitlines())
        logs.append(_stamped(parsed, messages))
    if not logs:
        return jaxlog.RunLog()
    if len(logs) == 1:
        return logs[0]
    merged = jaxlog.merged(logs)
    tests: dict[str, dict[str, None]] = defaultdict(dict)
    types: dict[str, tuple[str, ...]] = {}
    for log in logs:
        for k in log.keys:
            tests[k.key].update(dict.fromkeys(k.tests))
            types.setdefault(k.key, k.arg_types)
    merged.keys = [msgspec.structs.replace(k, tests=tuple(tests[k.key]), arg_types=k.arg_types or types.get(k.key, ()))
                   for k in merged.keys]
    return merged


def _stamped(log: jaxlog.RunLog, messages: Iterable[LogMessage]) -> jaxlog.RunLog:
    """Each key with the tests whose messages name it (its 64 hex digits: its running hash, its miss, its hit,
    its write), and the argument types of the last `Compiling` message before it was first named."""
    by_hex = {k.key.rpartition("-")[2]: k.key for k in log.keys}
    tests: dict[str, dict[str, None]] = defaultdict(dict)
    types: dict[str, tuple[str, ...]] = {}
    pending: tuple[str, ...] | None = None
    for m in messages:
        found = arg_types(m.message)
        if found is not None:
            pending = tuple(found)
            continue
        for digest in _HEX_RE.findall(m.message):
            key = by_hex.get(digest)
            if key is None:
                continue
            tests[key][m.test or ""] = None
            if key not in types:
                types[key] = pending or ()
                pending = None
    keys = [msgspec.structs.replace(k, tests=tuple(t for t in tests.get(k.key, {}) if t),
                    arg_types=types.get(k.key, ())) for k in log.keys]
    return jaxlog.RunLog(keys, log.excluded_flags)


def key_records(log: jaxlog.RunLog) -> list[KeyRecord]:
    """The flat records a later reader takes (one per key): module, key, outcome, compile time, tests, types."""
    return [KeyRecord(module=k.module, key=k.key, outcome=str(k.outcome), compile_time_s=k.compile_time_s,
                      tests=list(k.tests), arg_types=list(k.arg_types)) for k in log.keys]


def recorder_path(log_path: Path) -> Path:
    """Where a run's recorder writes: beside the run's log, in the run's own folder."""
    return log_path.with_suffix(".recorder.jsonl")
