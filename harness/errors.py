"""Two kinds of failure, kept apart: the user's (exit 2, one line) and the harness's own (exit 1);
and every exit code the harness gives."""

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # the work completed, whatever it found
    FAILURE = 1  # a failure of the harness itself (its traceback is printed)
    REGRESSION = 1  # nightly/compare: a cell went from clean to reproduced or error (the alarm)
    BAD_INPUT = 2  # bad input, one line on stderr, nothing written (also: a bisect endpoint contradicts its flag)
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
