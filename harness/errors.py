"""Three kinds of failure, kept apart so a CI can tell them apart: what was measured (a regression,
exit 1), the user's (bad input, exit 2, one line) and the harness's own (exit 3); and every exit code
the harness gives (docs/ci.md lists them)."""

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # the work completed, whatever it found (unless --fail-on names what it found)
    # nightly/compare: a cell went from clean to reproduced or error, or its seconds lost per start grew
    # past --max-lost-growth (the alarm); run/check: a cell's verdict is one --fail-on names. JAX broke it.
    REGRESSION = 1
    BAD_INPUT = 2  # bad input, one line on stderr, nothing written (also: a bisect endpoint contradicts its flag)
    # The harness itself failed: a bug (its traceback is printed), a full disk, a merge job that left no
    # results. 3, as pytest's internal error: the harness broke, not JAX, and nothing was decided.
    FAILURE = 3
    INTERRUPTED = 130  # Ctrl-C: what was measured is kept


class UserError(Exception):
    """Bad input a user can fix: a config key, a version, a missing file. Printed as one line."""


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


class JobUnsupported(Exception):
    """A multi-process run cannot be made here (this backend, or this release cannot run such a job): the
    cell is `unsupported`, saying why, never `error`."""
