"""What one run is and did (pure): the program it starts, how its process ended, and the record results.json
keeps of it and of each process of a job, with what its script did to its cache. harness/core/model.py
re-exports them."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec

from harness.core.jaxlog import Outcome, RunLog
from harness.core.listing import parse_name


PYTEST = "pytest"  # the module check's and bisect's --pytest run (`-m pytest`), and the package it adds to --with


class ProgramKind(enum.Enum):
    """What a run starts, read from its module alone (`ProgramKind.of`): the one place `-m pytest` (--pytest: a
    test suite whose tests the recorder's plugin names) is told from any other module and from a script."""

    SCRIPT = "script"  # python SCRIPT
    MODULE = "module"  # python -m MODULE
    PYTEST = "pytest"  # python -m pytest

    @staticmethod
    def of(module: str | None) -> ProgramKind:
        if module is None:
            return ProgramKind.SCRIPT
        return ProgramKind.PYTEST if module == PYTEST else ProgramKind.MODULE


@dataclass(frozen=True)
class Program:
    """What a run starts, as its author starts it: `python SCRIPT ARGS` or `python -m MODULE ARGS`, in the
    folder `cwd` (host paths: a container backend mounts them and says where they are inside)."""

    script: Path | None  # None for a module
    args: tuple[str, ...] = ()
    cwd: Path | None = None  # None: the script's folder
    module: str | None = None
    # A command the interpreter starts under, on this host (the reducer's sandbox: bwrap and its arguments);
    # a backend that runs elsewhere (a container) ignores it.
    launcher: tuple[str, ...] = ()
    # The launcher keeps the harness's seal key out of the program's reach itself (the reducer's sandbox), so
    # the run is not started under environments/key_hiding.py's bubblewrap too.
    key_hidden: bool = False

    @property
    def kind(self) -> ProgramKind:
        return ProgramKind.of(self.module)

    @property
    def workdir(self) -> Path:
        if self.cwd is not None:
            return self.cwd
        assert self.script is not None, "a module run names its working folder"
        return self.script.parent

    def argv(self, script_as_seen: str | None = None) -> list[str]:
        """The interpreter's arguments; `script_as_seen`: the script's path where the run sees it."""
        head = ["-m", self.module] if self.module else [script_as_seen or str(self.script)]
        return [*head, *self.args]


@dataclass
class ProcessOutcome:
    """How one process ended, whatever ran it (a venv interpreter or a container)."""

    exit_code: int | None  # None when it was killed for running past its timeout
    duration_s: float
    timed_out: bool = False
    reason: str = ""  # why it failed, when the backend knows (OOM-killed, image missing, ...)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class CacheSetting(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One cache setting a user's script made, as the harness's start-up hook saw it."""

    option: str  # jax_compilation_cache_dir, jax_enable_compilation_cache, or a threshold
    api: str  # how: jax.config.update, set_cache_dir, initialize_cache, os.environ
    requested: Any  # what the script asked for
    applied: Any  # what the run got instead (the cell's folder for a cache folder)
    # A cache folder's setting: JAX's cache at that moment ({"initialized", "path"}; None: not yet imported).
    cache_then: dict[str, Any] | None = None


class ScriptCache(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What a run's script did to its cache: its settings in order, and the cache JAX had at exit
    (`final`: the options' values, `cache_path` and the harness's `target`; empty when the script
    never imported jax or did not exit normally)."""

    settings: tuple[CacheSetting, ...] = ()
    final: dict[str, Any] = {}
    problems: tuple[str, ...] = ()  # what the hook could not do


class RankRecord(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """One process of a multi-process run (a job): its rank, hash seed, how it ended, its own log and
    what that log says it computed."""

    rank: int
    seed: int
    exit_code: int | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    reason: str = ""
    log: str = ""
    keys: RunLog | None = None
    log_note: str = ""
    script_cache: ScriptCache | None = None
    # whether its script called jax.distributed.initialize() (None: not known)
    joined: bool | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


# An environment variable's name as a shell takes it in `export NAME=value`: one line, nothing to interpret.
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def variable_name_problem(name: object) -> str | None:
    """Why `name` is not a variable name (None when it is one)."""
    if isinstance(name, str) and VARIABLE_NAME.fullmatch(name):
        return None
    return f"{str(name)[:60]!r} is not a variable name (letters, digits, _)"


class ComparedByKey(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A run made beside the cell's first (at the same time), in an empty cache folder of its own at the cell
    folder's path: nothing could be served to it, so its keys were compared with what the first run left in the
    cell's folder. A key the first run wrote counts as a hit (`hits`: compared by key, not loaded), any other
    is what it would have been in the cell's folder; `new_entries` are its own entries that the first run did not
    write (in `folder`, kept beside the cell's, and copied into the cell's folder once it ended, before the runs
    after it: they find what they would have found after a run 2 made there)."""

    baseline: int  # the run whose entries its keys were compared with
    folder: str  # its own folder, relative to the results folder
    hits: int = 0


class DeviceFacts(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """The devices JAX reported in a run (`jax.devices()`, recorded by the start-up hook at exit when the run had
    opened them): what the run really ran on, whatever the cell asked for."""

    platform: str  # jax's: cpu, gpu, tpu
    device_kind: str  # `TPU v5 lite`, `NVIDIA H100 80GB HBM3`, `cpu`
    count: int
    platform_version: str = ""  # the backend's: libtpu's build, or CUDA's and the driver's

    @property
    def label(self) -> str:
        """`TPU v5 lite ×1`, `cpu ×8`: the table's platform column."""
        return f"{self.device_kind} ×{self.count}"

    @property
    def version_line(self) -> str:
        """The platform version's first telling line (libtpu's says `PJRT C API` first)."""
        lines = [line.strip() for line in self.platform_version.splitlines() if line.strip()]
        return next((line for line in lines if line != "PJRT C API"), "")


def read_device_facts(text: str) -> DeviceFacts | None:
    """The hook's record of a run's devices (one JSON object), or None when it is absent or not one."""
    try:
        return msgspec.json.decode(text.strip(), type=DeviceFacts) if text.strip() else None
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError:
        return None


TEMP_PREFIX = "_temp_"  # JAX's name for an entry being written, before it is renamed (GFileCache, up to 0.4.30)


class FolderSeen(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What the harness itself saw happen in a run's cache folder while the run went (inotify, from outside the
    program: harness/measure/folder_watch.py): the entry files created, written or moved in (`written`, those deleted
    later in the run included), opened and read (`read`), and deleted or moved out (`deleted`), each name once,
    sorted. `lost`: the kernel dropped events (its queue overflowed) or the folder itself was moved or removed, so
    the history is not whole; `shared`: another of the harness's runs used the same folder meanwhile, so which
    process did what is not known."""

    written: list[str] = []
    read: list[str] = []
    deleted: list[str] = []
    lost: bool = False
    shared: bool = False

    @staticmethod
    def entry_files(names: list[str]) -> list[str]:
        """The names that hold an entry's executable: not a `-atime` file (a hit's timestamp, not a write) nor JAX's
        temporary file while it writes one (`_temp_<module>-<hash>`, renamed to the entry's name: 0.4.26-0.4.30)."""
        return [n for n in names if not n.endswith("-atime") and not n.startswith(TEMP_PREFIX)]

    def keys(self, names: list[str]) -> frozenset[str]:
        """The cache keys of `names`' entry files."""
        return frozenset(e.key for e in map(parse_name, self.entry_files(names)) if e is not None)

    @property
    def written_keys(self) -> frozenset[str]:
        """Keys whose executable the folder saw written."""
        return self.keys(self.written)

    @property
    def read_keys(self) -> frozenset[str]:
        return self.keys(self.read)

    @property
    def deleted_keys(self) -> frozenset[str]:
        return self.keys(self.deleted)


class RunRecord(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    index: int
    seed: int  # the PYTHONHASHSEED this run had
    exit_code: int | None
    duration_s: float
    new_entries: list[str]  # cache file names that appeared during this run
    timed_out: bool = False
    reason: str = ""
    log: str = ""  # path of this run's stdout/stderr, relative to the results folder
    # a user's script's own cache settings (absent before)
    script_cache: ScriptCache | None = None
    # What JAX's own log says this run computed (each key's module, outcome, reason, component hashes);
    # None when its log named no key (`log_note` says why) or the run predates the harness reading it.
    keys: RunLog | None = None
    log_note: str = ""
    # A multi-process run: each process, by rank (the fields above are the job's: `seed` and `log` rank 0's,
    # `keys` every rank's together); empty for a single process.
    ranks: list[RankRecord] = []
    # A pytest program (the recorder's plugin): each collected test id -> its outcome (`passed`, `failed`,
    # `skipped`, ...; `not run` when collected and never run, `collect error`), in the order they ran.
    tests: dict[str, str] = {}
    # each test id -> its seconds in this run (pytest's own durations of its phases; JUnit's time per test)
    test_seconds: dict[str, float] = {}
    # harness check's moved run made in this planned run's place: its process read a copy of run 1's folder
    # through another path (with this run's seed), and is counted as this run because every key it computed hit
    # (docs/measuring.md); false for a run in the cell's own folder, and in folders written before.
    in_moved_folder: bool = False
    # Run beside the first run in a folder of its own (harness/measure/beside.py): its hits are by key, not
    # served; None for a run in the cell's folder.
    compared_by_key: ComparedByKey | None = None
    # The devices JAX reported (run 1 of a cell records them; None for other runs, and in folders written before).
    devices: DeviceFacts | None = None

    # Where this run's accounts of JAX's cache disagree (its recorder's lines that did not check out, its recorder
    # against JAX's log on stderr), in words for the cell's row; empty where they agree, and in folders written before.
    sources: list[str] = []
    # Another of the harness's processes ran while it ran (overlapping runs with --jobs, of its cell or another, the
    # moved-folder run, the seed control, run 2 beside run 1): an entry that appeared in the folder meanwhile may be
    # that process's, and one that no run's own account computed is charged to no run (harness/evidence/keys.py).
    # False in folders written before.
    overlapped: bool = False
    # What the harness saw happen in its cache folder while it ran (None: not watched: no inotify here, the run
    # predates the watch, or a job's run).
    seen: FolderSeen | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def own_new_keys(self) -> list[str]:
        """The keys this run wrote, by its own account (JAX's log as its recorder read it: overlapping runs never
        share one), sorted; the folder's new entries where it has no account (a log that named no key)."""
        if self.keys is not None:
            return sorted({k.key for k in self.keys.keys if k.outcome == Outcome.WRITTEN})
        return sorted({e.key for e in map(parse_name, self.new_entries) if e})  # -cache/-atime pairs once


class RunCommand(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How a cell's runs were started, for the report's commands: the interpreter's arguments (host
    paths), the user's environment additions as the runs got them (XLA_FLAGS merged), the folder."""

    argv: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]  # the interpreter first: never empty
    env: dict[str, str] = {}
    cwd: str = ""

    def __post_init__(self) -> None:
        # The report prints `export NAME=...` from these: a name read from a file must be a name, not shell.
        for name in self.env:
            problem = variable_name_problem(name)
            if problem:
                raise ValueError(f"env: {problem}")
