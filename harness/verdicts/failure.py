"""What a failed run says failed (pure): its log's lines in, one line out.

The detail is the exception (the last traceback's final line, `XlaRuntimeError: INTERNAL: ...`), or,
when the program printed no traceback, the last line it printed itself. Never a log record of the
loggers the harness turns on for every run (JAX's DEBUG and INFO output, `jaxlog.LOG_ENV`, which the
program's author does not see) nor the harness's own notes: after a crash JAX still logs
"Clearing JAX backend caches." at exit, which says nothing about what failed.
"""

from __future__ import annotations

import re
from typing import Sequence

from harness.core.jaxlog import NOTE_PREFIX

# A Python logging record at a level the harness's JAX_LOGGING_LEVEL=DEBUG shows, in the formats JAX's
# releases use (`DEBUG:2026-11-30 03:27:21,848:jax._src.compiler:704: ...`, `DEBUG:jax._src.dispatch:...`),
# and the C++ side's INFO/VLOG lines (`I1201 13:47:13.123456  1234 file.cc:12] ...`).
_HARNESS_LEVEL_RECORD_RE = re.compile(r"^(DEBUG|INFO)[: ]")
_CPP_INFO_RE = re.compile(r"^I\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\]")
_TRACEBACK = "Traceback (most recent call last):"
_FRAME_RE = re.compile(r"^\s+\S")  # a frame's `  File ...` line, its source line, carets
# Python's chained-exception separators, and JAX's note above its filtered traceback.
_BETWEEN = ("During handling of the above exception", "The above exception was the direct cause",
            "The stack trace below excludes JAX-internal frames", "For simplicity, JAX has removed",
            "--------------------")
DETAIL_LIMIT = 200


def is_harness_noise(line: str) -> bool:
    """A line the harness's own settings made the run print: not the program speaking."""
    text = line.strip()
    return bool(_HARNESS_LEVEL_RECORD_RE.match(text) or _CPP_INFO_RE.match(text) or text.startswith(NOTE_PREFIX.strip()))


def exception_line(lines: Sequence[str]) -> str | None:
    """The last traceback's exception (`Type: message`), with the message's next line when its first
    ends in a colon (XLA puts the real words there); None when the log holds no traceback."""
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return None
    after = [ln for ln in lines[starts[-1] + 1:] if not is_harness_noise(ln)]
    i = 0
    while i < len(after) and (not after[i].strip() or _FRAME_RE.match(after[i])):
        i += 1
    if i == len(after):
        return None  # the traceback was cut off before its exception
    head = after[i].strip()
    rest = [ln.strip() for ln in after[i + 1:i + 3] if ln.strip() and not ln.strip().startswith(_BETWEEN)]
    if head.endswith(":") and rest:
        head = f"{head} {rest[0]}"
    return head


def last_own_line(lines: Sequence[str]) -> str | None:
    """The last non-empty line the program printed itself (not a record of the harness's log level)."""
    for line in reversed(lines):
        if line.strip() and not is_harness_noise(line):
            return line.strip()
    return None


def failure_detail(lines: Sequence[str]) -> str | None:
    """What failed, in one line of at most DETAIL_LIMIT characters; None when the log says nothing."""
    text = exception_line(lines) or last_own_line(lines)
    if text is None:
        return None
    return text if len(text) <= DETAIL_LIMIT else text[: DETAIL_LIMIT - 1] + "…"


def with_detail(reason: str, lines: Sequence[str]) -> str:
    """A crash's reason (`exit code 1`) with what failed; the reason alone when the log adds nothing
    (or is the backend's own reason, written as the log: `docker create` failed)."""
    detail = failure_detail(lines)
    if not detail or detail in reason:
        return reason
    return f"{reason}: {detail}" if reason else detail
