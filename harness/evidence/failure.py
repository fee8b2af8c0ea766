"""What a failed run says failed (pure): its log's lines in, one line out.

The detail is the exception (the last traceback's final line, `XlaRuntimeError: INTERNAL: ...`), or,
when the program printed no traceback, the last line it printed itself. Never a log record of the
loggers the harness turns on for every run (JAX's DEBUG and INFO output, `jaxlog.LOG_ENV`, which the
program's author does not see) nor the harness's own notes: after a crash JAX still logs
"Clearing JAX backend caches." at exit, which says nothing about what failed.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from collections.abc import Sequence

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


# Python's logging prints this, a traceback and the record when a handler cannot write (`emit` failed): at
# interpreter exit JAX's atexit clear_backends logs "Clearing JAX backend caches." to a handler whose stream pytest
# has closed, and `ValueError: I/O operation on closed file.` follows. Not the program's failure, never its reason.
_LOGGING_ERROR = "--- Logging error ---"
_LOGGING_ERROR_END = "Arguments: "  # the block's last line (`Arguments: ()`)


def without_logging_errors(lines: Sequence[str]) -> list[str]:
    """The lines less each `--- Logging error ---` block (through its `Arguments: ...` line)."""
    out: list[str] = []
    inside = False
    for line in lines:
        if line.strip() == _LOGGING_ERROR:
            inside = True
        elif inside and line.startswith(_LOGGING_ERROR_END):
            inside = False
        elif not inside:
            out.append(line)
    return out


# pytest's last line, `===== 1 failed, 68 passed in 3.21s =====` (`1 failed, 68 passed in 3.21s` with -q), and its
# short summary's line for a failed test, `FAILED tests/t.py::test_x - AssertionError: ...`.
_PYTEST_SUMMARY_RE = re.compile(r"^=*\s*(\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected|"
                                r"rerun)\b[^=]*? in [\d.]+s(?: \([^)]*\))?)\s*=*$")
_PYTEST_FAILED_RE = re.compile(r"^(?:FAILED|ERROR) \S+(?: - .*)?$")


def pytest_summary(lines: Sequence[str]) -> str | None:
    """pytest's own account of a session that ran to its end and failed: its summary line, with its first
    `FAILED ...` line (`1 failed, 68 passed in 3.21s; FAILED tests/t.py::test_x - AssertionError: ...`); None when
    the log holds no such summary, or it says nothing failed."""
    summary = next((m.group(1).strip() for m in map(_PYTEST_SUMMARY_RE.match, reversed(lines)) if m), None)
    if summary is None or " failed" not in f" {summary}":  # a collection error keeps its exception (failures outside JAX)
        return None
    failed = next((ln.strip() for ln in lines if _PYTEST_FAILED_RE.match(ln.strip())), None)
    return f"{summary}; {failed}" if failed else summary


def exception_line(lines: Sequence[str]) -> str | None:
    """The last traceback's exception (`Type: message`), with the message's next line when its first
    ends in a colon (XLA puts the real words there); None when the log holds no traceback. A logging error
    printed at exit is no traceback of the program's (`without_logging_errors`)."""
    lines = without_logging_errors(lines)
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return _pytest_exception(lines)
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


# pytest prints the exception of a failed test or of a module it could not collect as `E   Type: message`,
# after its own traceback and before its summary ("Interrupted: 1 error during collection").
_PYTEST_EXCEPTION_RE = re.compile(r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$")


def _pytest_exception(lines: Sequence[str]) -> str | None:
    found = [m.group(1).strip() for m in map(_PYTEST_EXCEPTION_RE.match, lines) if m]
    return found[-1] if found else None


# A frame's file inside an installed distribution: `File ".../site-packages/flax/nnx/module.py", line 3`.
_PACKAGE_FRAME_RE = re.compile(r'File "(?P<root>[^"]*[/\\](?:site|dist)-packages)[/\\](?P<top>[A-Za-z_][\w]*)(?:\.py)?[/\\"]')


def traceback_packages(lines: Sequence[str]) -> list[tuple[str, str]]:
    """The installed packages the last traceback passes through, as (site-packages folder, top-level
    module), innermost last and each once: whose versions a failure's reason names (not a logging error's)."""
    lines = without_logging_errors(lines)
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    found: dict[str, tuple[str, str]] = {}
    for line in lines[starts[-1] if starts else 0:]:
        match = _PACKAGE_FRAME_RE.search(line)
        if match:
            found.pop(match.group("top"), None)
            found[match.group("top")] = (match.group("root"), match.group("top"))
    return list(found.values())


def last_own_line(lines: Sequence[str]) -> str | None:
    """The last non-empty line the program printed itself (not a record of the harness's log level, nor a
    logging error at exit)."""
    for line in reversed(without_logging_errors(lines)):
        if line.strip() and not is_harness_noise(line):
            return line.strip()
    return None


def failure_detail(lines: Sequence[str]) -> str | None:
    """What failed, in one line of at most DETAIL_LIMIT characters; None when the log says nothing. A pytest
    session that ran to its end says it in its own summary (a test's failure is no traceback of the run's)."""
    text = pytest_summary(lines) or exception_line(lines) or last_own_line(lines)
    if text is None:
        return None
    return text if len(text) <= DETAIL_LIMIT else text[: DETAIL_LIMIT - 1] + "…"


def with_detail(reason: str, lines: Sequence[str], versions: Sequence[str] = ()) -> str:
    """A crash's reason (`exit code 1`) with what failed; the reason alone when the log adds nothing
    (or is the backend's own reason, written as the log: `docker create` failed). `versions`: the packages
    its traceback passes through, `flax 0.8.4`, said after it (an API that moved is read against them)."""
    detail = failure_detail(lines)
    if not detail or detail in reason:
        return reason
    if versions:
        detail += f" ({', '.join(versions)})"
    return f"{reason}: {detail}" if reason else detail


# ---- a GPU another process held -----------------------------------------------------------------------------
# A JAX process preallocates 75% of every GPU it sees at its first operation; where another process holds that
# memory, XLA fails with RESOURCE_EXHAUSTED (CUDA's "out of memory") before the program computed anything. That is
# the failure of whoever put two processes on the GPU (the harness gives each run whole GPUs), not the program's.
_OUT_OF_MEMORY_RE = re.compile(r"RESOURCE_EXHAUSTED|CUDA_ERROR_OUT_OF_MEMORY|\bout of memory\b", re.IGNORECASE)
# Words of a failure while JAX was still making its GPU client, before the program's first operation ran.
_AT_START_RE = re.compile(r"Unable to initialize backend|preallocat", re.IGNORECASE)
DEVICE_HELD = "the GPU's memory was held by another process"


def out_of_device_memory(reason: str) -> bool:
    """Whether a failed run's reason is XLA's (or CUDA's) out of memory."""
    return bool(_OUT_OF_MEMORY_RE.search(reason))


def held_device_reason(reason: str, lines: Sequence[str], holders: Sequence[str]) -> str | None:
    """A run that failed on GPU memory another process held, said as the harness's failure (None where it did
    not): its reason is XLA's out of memory, and either the log shows it while JAX made its GPU client (the
    preallocation) or `holders`, the processes nvidia-smi saw holding GPU memory after it ended, are there."""
    if not out_of_device_memory(reason):
        return None
    if not holders and not any(_AT_START_RE.search(line) for line in lines):
        return None  # the program's own allocation: its failure
    who = f" ({', '.join(holders)})" if holders else ""
    return (f"{DEVICE_HELD}{who}: the harness's failure, not the program's (JAX preallocates 75% of every GPU "
            f"a run sees; each run needs whole GPUs of its own): {reason}")


# ---- failures outside JAX ----------------------------------------------------------------------------
# A release whose runs fail on something JAX does not own (a module the program imports that the release's
# environment lacks, a requirement that did not resolve with it) says nothing about JAX: a boundary drawn
# through it would be the dependency's, not the regression's (issue 47.4).

_NO_PYTHON_MODULE_RE = re.compile(r"No module named '([^']+)'")
_UNRESOLVED_RE = re.compile(r"could not install jax (\S+) with ([^:(]+?)(?::|\s\()")
# Top-level modules that are JAX's own: a missing one is an API change in JAX, not a missing dependency.
_JAX_PACKAGE_RE = re.compile(r"^(jax|jaxlib|jax_\w+|jaxtyping)$")
# The few modules whose distribution is named otherwise, for the `--with` the line suggests.
_DISTRIBUTION_OF = {"yaml": "pyyaml", "PIL": "pillow", "sklearn": "scikit-learn", "cv2": "opencv-python",
                    "skimage": "scikit-image", "google": "protobuf", "attr": "attrs", "dateutil": "python-dateutil"}


class OutsideJax(enum.Enum):
    MISSING_PYTHON_MODULE = "missing module"  # the program imports a module the release's environment lacks
    UNRESOLVED = "unresolved requirement"  # the program's requirement did not install with the release


@dataclass(frozen=True)
class OutsideFailure:
    """Why a release failed for a reason outside JAX: what is missing, and the requirement that adds it."""

    kind: OutsideJax
    name: str  # the module the program imports (top level), or the requirement(s) that did not resolve

    @property
    def requirement(self) -> str:
        """What `--with` would add (a module's distribution, as far as the common exceptions go)."""
        return _DISTRIBUTION_OF.get(self.name, self.name)

    def phrase(self) -> str:
        if self.kind == OutsideJax.MISSING_PYTHON_MODULE:
            # `check` takes --with; a config (`run`, `bisect`) names it in `requirements:`.
            return (f"the program imports {self.name}, which their environments lack (add it: "
                    f"--with {self.requirement}, or requirements: [{self.requirement}] in a config)")
        return (f"the program's requirement {self.name} did not install with them (another version of it: "
                "--with, or requirements: in a config)")


def outside_jax(reason: str) -> OutsideFailure | None:
    """The failure outside JAX a failed cell's reason names, or None (JAX's own failure, or the program's)."""
    missing = _NO_PYTHON_MODULE_RE.search(reason)
    if missing:
        top = missing.group(1).split(".")[0]
        return None if _JAX_PACKAGE_RE.match(top) else OutsideFailure(OutsideJax.MISSING_PYTHON_MODULE, top)
    unresolved = _UNRESOLVED_RE.search(reason)
    if unresolved:
        return OutsideFailure(OutsideJax.UNRESOLVED, unresolved.group(2).strip())
    return None
