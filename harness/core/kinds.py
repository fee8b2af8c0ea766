"""The vocabulary's words (pure): platforms, backends, verdicts, likely causes and the script cache's modes, as
enums that results.json writes as their values. harness/core/model.py re-exports them."""

from __future__ import annotations

import enum


class Platform(enum.StrEnum):
    CPU = "cpu"  # simulated devices on the host CPU
    CUDA = "cuda"
    TPU = "tpu"  # Cloud TPU chips through libtpu (harness/core/platforms.py: what differs, for every platform)
    AUTO = "auto"  # whatever JAX picks in the environment


class BackendName(enum.StrEnum):
    """Where each JAX version runs (harness/environments: one backend each)."""

    AUTO = "auto"  # docker when a daemon answers, else venv
    VENV = "venv"
    LOCAL = "local"
    DOCKER = "docker"


DEFAULT_BACKEND = BackendName.VENV  # --backend's default (auto is asked for, never assumed)


class Verdict(enum.StrEnum):
    REPRODUCED = "reproduced"  # a later run computed a key the first run did not: a miss
    CLEAN = "clean"  # every run succeeded, entries written, later runs computed only keys already seen
    UNSUPPORTED = "unsupported"  # nothing was cached, or runs compiled different things: nothing measured
    ERROR = "error"  # environment could not be made, or a run crashed or timed out
    # no key moved, but a later run compiled a function at argument types the first run never compiled it at
    # (random shapes): the program computed something new, which no cache can serve (harness/evidence/misses.py)
    NEW_INPUT = "new input"
    # no key moved, but JAX never wrote some module the runs compiled (host callbacks, or as the program runs, a
    # threshold), so every fresh process compiles it again: measured (the same keys in every run), not a miss of
    # the cache (harness/verdicts/verdict.py)
    NOT_CACHED = "not cached"

    @property
    def compiles_again(self) -> bool:
        """Whether a fresh process compiles again what an earlier start compiled: a key that moved, a function at
        argument types no earlier start had, a module JAX never writes. Measured, each a compile per start: after a
        clean baseline, nightly's and compare's alarm (harness/nightly/compare.py)."""
        return self in (Verdict.REPRODUCED, Verdict.NEW_INPUT, Verdict.NOT_CACHED)

    @property
    def compared(self) -> bool:
        """Whether the runs' keys were compared (every verdict but error and unsupported, which measured nothing):
        a cell that said something of the cache, which a sweep stopped early or interrupted still says."""
        return self not in (Verdict.ERROR, Verdict.UNSUPPORTED)

    @property
    def measured(self) -> bool:
        """Whether the runs measured the cache either way, clean or reproduced: a release that bounds a range, a
        bisect point that says which side it is on (new input and not cached measured something else)."""
        return self in (Verdict.CLEAN, Verdict.REPRODUCED)

    @property
    def no_key_moved(self) -> bool:
        """Compared, and no key moved: clean, new input (the program computed something new), not cached (what JAX
        wrote hit): a release whose cells all say so reads clean, or `not cached` where one is
        (harness/verdicts/boundaries.py)."""
        return self.compared and self != Verdict.REPRODUCED

    @property
    def fails_check(self) -> bool:
        """Whether it fails a check: `harness check` exits 1 on it unless told otherwise (as pytest fails a test;
        harness/inputs/option_set.py's CHECK_FAILS_ON), and its JUnit test case fails (a failure, or an error where
        no run started; unsupported is skipped, the rest pass: harness/output/ci.py). A miss, or a cell that could
        not be measured for an error."""
        return self in (Verdict.REPRODUCED, Verdict.ERROR)


# What --fail-on may name (harness/output/ci.py): the verdicts that measured a problem, or could not measure at all,
# and `new input` and `not cached` (the program's own new shapes, modules JAX never writes: failing on them is the
# user's choice, off by default).
FAILABLE = (Verdict.REPRODUCED, Verdict.ERROR, Verdict.UNSUPPORTED, Verdict.NEW_INPUT, Verdict.NOT_CACHED)


def parse_fail_on(text: str) -> frozenset[Verdict]:
    """`reproduced,error` -> those verdicts (`new-input` for `new input`, `not-cached` for `not cached`); ValueError (one line) for any other word."""
    words = [w.strip().replace("-", " ") for w in text.split(",") if w.strip()]
    allowed = {str(v): v for v in FAILABLE}
    unknown = [w for w in words if w not in allowed]
    if unknown or not words:
        raise ValueError(f"{(unknown or [text])[0]!r}: give verdicts from {', '.join(allowed)}, comma-separated")
    return frozenset(allowed[w] for w in words)


class Cause(enum.StrEnum):
    """The likely cause of a key that moved, read from the lowered modules' diff."""

    ORDER = "order"  # the same tokens in another order: an unordered collection iterated into the module
    ADDRESS = "address"  # a hex address or large integer that changes every run: an address or id()
    CONSTANT = "constant"  # only constants differ: other values baked in (random data, a static argument's value)
    UNKNOWN = "unknown"  # the diff says neither: the tool cannot tell
    OTHER = "other"  # written by earlier releases where they could not tell (now `unknown`): read, never made


class ThresholdMode(enum.StrEnum):
    """Whose persistent-cache thresholds a user's script runs with."""

    SCRIPT = "script"  # as the script runs: what it sets is kept, JAX's defaults where it sets none
    HARNESS = "harness"  # the harness's zeros (the default): every compiled module is cached, so measured


class FolderMode(enum.StrEnum):
    """How a user's script's runs get the cell's cache folder (docs/as-it-runs.md)."""

    HOOK = "hook"  # only where the script sets a folder in code, at that moment (the start-up hook)
    ENVIRONMENT = "environment"  # from JAX_COMPILATION_CACHE_DIR: the script sets none of its own


class AsYouRunIt(enum.StrEnum):
    """Why the program as its author runs it would cache less than the harness measured (a cell's note)."""

    NO_FOLDER = "no cache folder"  # the script sets none: JAX keeps no persistent cache unless a variable is set
    THRESHOLDS = "thresholds"  # some modules compile faster than the program's (or JAX's default) threshold


class NothingCached(enum.StrEnum):
    """Why a cell's runs cached nothing (its verdict is `unsupported`): from JAX's log and the hook's record."""

    UNINITIALISED = "cache uninitialised"  # JAX set up its cache without a folder before the script set one
    DISABLED = "cache disabled"  # the script turned its cache off
    ELSEWHERE = "cache elsewhere"  # the cache went to a folder the harness could not redirect
    THRESHOLDS = "thresholds"  # every module compiled faster (or smaller) than the thresholds
    HOST_CALLBACKS = "host callbacks"  # JAX never writes a module that uses host callbacks
    NOT_WRITTEN = "not written"  # JAX refused to write every module, for another reason it gave
    NO_PERSISTENT_CACHE = "no persistent cache"  # the release has no persistent cache on this platform
    SET_TOO_LATE = "set too late"  # the script put its folder in os.environ after importing jax
    NO_JAX = "no jax"  # the program never imported jax: it compiled nothing with JAX
    UNKNOWN = "unknown"  # the runs cached nothing, and neither the log nor the hook says why
