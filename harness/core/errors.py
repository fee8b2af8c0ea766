"""Three kinds of failure, kept apart so a CI can tell them apart: what was measured (a regression,
exit 1), the user's (bad input, exit 2, one line) and the harness's own (exit 3); and every exit code
the harness gives (docs/ci.md lists them)."""

import enum
import sys


class ExitCode(enum.IntEnum):
    OK = 0  # the work completed, whatever it found (unless --fail-on names what it found)
    # nightly/compare: a cell went from clean to reproduced, error, new input or not cached, or its seconds lost per start grew
    # past --max-lost-growth (the alarm); run/check/merge/submit --wait: a cell's verdict is one --fail-on
    # names (check: reproduced or error by default). A miss measured: JAX's, the program's or a module JAX never caches.
    REGRESSION = 1
    BAD_INPUT = 2  # bad input, one line on stderr, nothing written (also: a bisect endpoint contradicts its flag)
    # The harness itself failed: a bug (its traceback is printed), a full disk, a merge job that left no
    # results, a merge that lacks shards (missing or cut short). 3, as pytest's internal error: the harness
    # (or the machines it ran on) broke, not JAX, and nothing was decided for the cells it lacks.
    FAILURE = 3
    INTERRUPTED = 130  # Ctrl-C: what was measured is kept


_MEANINGS = {
    ExitCode.REGRESSION: ("Regression", ("a cell went from clean to reproduced, error, new input or not cached, lost more seconds per start "
                           "than allowed, or has a verdict --fail-on names (check: reproduced or error): the line "
                           "above names the module that missed, and report.md says why (JAX's key, the program's own "
                           "nondeterminism such as a set's order, or a module JAX never caches)")),
    ExitCode.BAD_INPUT: ("Bad input", "the line above says what to fix; nothing was measured"),
    ExitCode.FAILURE: ("The harness itself failed", ("exit 3 is a failure of the harness (a bug, a full disk) or of "
                        "its machines (a merge lacking shards), not a verdict on JAX: see the lines above")),
}


def meaning(code: int) -> tuple[str, str]:
    """(title, sentence) for an exit code, as a CI shows it; ("", "") for 0."""
    if code == ExitCode.OK:
        return "", ""
    if code in _MEANINGS:
        return _MEANINGS[ExitCode(code)]
    if code > 128:
        return "Interrupted", f"stopped by signal {code - 128}; what was measured is kept (resume with --resume)"
    return "Unexpected exit", f"exit {code}"


def main(argv: list[str]) -> int:
    """`python -m harness.core.errors CODE [WHAT]`: a GitHub Actions error annotation for a harness exit code (the
    nightly workflow and the action say with it which failure it was); prints nothing for 0."""
    code, what = int(argv[0]), " ".join(argv[1:]) or "harness"
    title, sentence = meaning(code)
    if title:
        print(f"::error title={what}: {title}::{sentence}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


class UserError(Exception):
    """Bad input a user can fix: a config key, a version, a missing file. Printed as one line."""


class HarnessFailure(Exception):
    """The harness's own setup failed where the user can change it (the reducer's sandbox cannot run the
    original): printed as one line that says what to change, exit 3, never blamed on the input."""


class ConfigError(UserError):
    def __init__(self, source: str, key: str | None, message: str):
        self.source, self.key, self.message = source, key, message
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {message}")


class EnvironmentUnavailable(Exception):
    """An environment for one JAX version could not be made; that cell is `error`, the sweep goes on."""

    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message)
        self.log_tail = log_tail


class BackendUnavailable(UserError):
    """The chosen backend cannot work on this machine at all (no Docker daemon, no JAX installed)."""


class GroupUnsupported(Exception):
    """A multi-process run cannot be made here (this backend, or this release cannot run such a job): the
    cell is `unsupported`, saying why, never `error`."""
