"""Environment factors (pure): what `--vary` can change between a cell's reference run and one more run.

The misses that cost users most happen between environments (a cache shared by hosts, mounted
elsewhere, a job restarted in another folder), and they do not follow the hash seed. A factor names one
such difference; `RunVariation` is what one run changes for it, as data the runner and the backends
apply. reprotest is the model: build twice, vary one thing, diff.
"""

from __future__ import annotations

import enum

import msgspec




class Factor(enum.StrEnum):
    CACHE_PATH = "cache-path"  # the same cache folder reached through another path (a copy elsewhere)
    CWD = "cwd"  # another working folder
    SCRIPT_PATH = "script-path"  # the script (and its folder) copied elsewhere
    HOME = "home"  # another home folder
    USER = "user"  # another uid
    HOSTNAME = "hostname"  # another host name
    ENV_ORDER = "env-order"  # the same variables in another order
    TZ = "tz"  # another time zone
    LOCALE = "locale"  # another locale
    PREFIX = "prefix"  # the same packages in an environment at another path
    COMPRESSION = "compression"  # zstandard importable or not


ALL = "all"

# What a miss under each factor means, as a reason says it: "misses when ...".
WHEN: dict[Factor, str] = {
    Factor.CACHE_PATH: "the cache folder is reached by another path",
    Factor.CWD: "the run starts in another working folder",
    Factor.SCRIPT_PATH: "the script is run from another folder",
    Factor.HOME: "the home folder is another",
    Factor.USER: "another user runs it",
    Factor.HOSTNAME: "the host has another name",
    Factor.ENV_ORDER: "the environment variables come in another order",
    Factor.TZ: "the time zone is another",
    Factor.LOCALE: "the locale is another",
    Factor.PREFIX: "the same packages are installed at another path",
    Factor.COMPRESSION: "zstandard is importable in one run and not in the other",
}

# Key components JAX hashes on purpose to capture a factor: a miss whose only moved components are
# these is by design (an entry compressed with zstandard cannot be read with zlib), never a regression.
KEYED_BY_DESIGN: dict[Factor, frozenset[str]] = {
    Factor.COMPRESSION: frozenset({"compression"}),
}

# What the factor runs change to (fixed values, so a run is reproducible and a report can say them).
OTHER_TZ = "Pacific/Chatham"  # +12:45: no machine's zone by accident
OTHER_HOSTNAME = "harness-elsewhere"
OTHER_UID = 65534  # nobody
OTHER_GID = 65534


def parse_factors(text: str | list[str] | tuple[str, ...]) -> tuple[Factor, ...]:
    """`cache-path,cwd` (or a list of names, or `all`) as factors in the order written, each once.
    ValueError with one line naming the known names for anything else."""
    words = text.split(",") if isinstance(text, str) else list(text)
    out: list[Factor] = []
    for word in words:
        if not isinstance(word, str):
            raise ValueError(f"{word!r} is not a factor name")  # noqa: TRY004 - the callers say ValueErrors as bad input
        word = word.strip()
        if word == ALL:
            return tuple(Factor)
        try:
            factor = Factor(word)
        except ValueError:
            known = ", ".join([f.value for f in Factor] + [ALL])
            raise ValueError(f"unknown factor {word!r} (known: {known})") from None
        if factor not in out:
            out.append(factor)
    if not out:
        raise ValueError(f"name at least one factor, or {ALL}")
    return tuple(out)


class FactorOutcome(enum.StrEnum):
    """What one factor's run says about the cache, against the reference run."""

    HIT = "hit"  # every key the reference computed was computed again, and nothing new
    MISS = "miss"  # the factor's run computed keys the reference did not: a cache shared so would miss
    KEYED_BY_DESIGN = "keyed by design"  # a miss, but only in components meant to capture the factor
    CANNOT_VARY = "cannot vary here"  # this backend or machine cannot make the change
    NOT_JUDGED = "not judged"  # the run failed, compiled something else, or the reference cannot be compared


class RunVariation(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one factor's run changes, as the backend applies it (host paths already made by the runner:
    the cache folder's copy, the script's copy, the other working and home folders; a container backend
    also mounts the folder the factor moves at another path inside)."""

    factor: Factor
    # variables set or replaced (TZ, LC_ALL, HOME)
    env: dict[str, str] = {}
    reverse_env: bool = False  # the process's variables in the reverse order
    other_prefix: bool = False  # the environment's packages from a copy at another path
    uid: int | None = None  # run as this user (and OTHER_GID)
    hostname: str | None = None
    # compression: a folder that provides or hides zstandard
    pythonpath_first: str | None = None


def reordered(env: dict[str, str], variation: RunVariation | None) -> dict[str, str]:
    """A process's variables as the variation wants them: the same pairs reversed for env-order."""
    if variation is None or not variation.reverse_env:
        return env
    return dict(reversed(list(env.items())))
