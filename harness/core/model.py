"""The project's vocabulary: platforms, verdicts, runs and cells, as plain data.

An *Environment* is where one JAX version runs; a *run* is one fresh process; a *cell* is one
(JAX version, mesh, platform) measured by several runs; a *verdict* is what a cell says.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.codec import Form, Omit, Record, shape, shaped, written
from harness.core.confidence import MissBounds, SeedPlan
from harness.core.jaxlog import RunLog
from harness.core.vary_factors import Factor, FactorOutcome


class Platform(enum.StrEnum):
    CPU = "cpu"  # simulated devices on the host CPU
    CUDA = "cuda"
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


# What --fail-on may name (harness/output/ci.py): the verdicts that measured a problem, or could not measure at all.
FAILABLE = (Verdict.REPRODUCED, Verdict.ERROR, Verdict.UNSUPPORTED)


def parse_fail_on(text: str) -> frozenset[Verdict]:
    """`reproduced,error` -> those verdicts; ValueError (one line) for any other word."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    allowed = {str(v): v for v in FAILABLE}
    unknown = [w for w in words if w not in allowed]
    if unknown or not words:
        raise ValueError(f"{(unknown or [text])[0]!r}: give verdicts from {', '.join(allowed)}, comma-separated")
    return frozenset(allowed[w] for w in words)


class Cause(enum.StrEnum):
    """The likely cause of a key that moved, read from the lowered modules' diff."""

    ORDER = "order"  # the same tokens in another order: an unordered collection iterated into the module
    ADDRESS = "address"  # a hex address or large integer that changes every run: an address or id()
    OTHER = "other"


@dataclass(frozen=True)
class Attribution(Record):
    """Which components of a module's key moved between two runs, from their JAX logs: the first run's
    key against a later run's new key of the same computation."""

    module: str
    run_a: int = field(metadata=shape(key="runs"))  # the first run
    run_b: int = field(metadata=shape(key="runs"))  # a later run that computed a key the first did not
    key_a: str = field(metadata=shape(key="keys"))
    key_b: str = field(metadata=shape(key="keys"))
    # (component, its hash in run_a, in run_b), JAX's order
    hashes: list[tuple[str, str | None, str | None]] = field(metadata=shape(form=Form.NAMED_PAIRS))

    @property
    def components(self) -> list[str]:
        """The components (JAX's spelling) whose hashes differ between the two runs."""
        return [name for name, a, b in self.hashes if a != b]


@shaped(order=("module", "run", "ranks", "keys", "components", "hashes"))
@dataclass(frozen=True)
class RankSplit(Record):
    """The processes of one run (a job) computed different keys for the same module: they lowered
    different programs (the multi-host hang class), or their keys differ in another component."""

    module: str
    run: int
    ranks: tuple[int, int]
    keys: tuple[str, str]
    # (component, its hash in ranks[0], in ranks[1])
    hashes: list[tuple[str, str | None, str | None]] = field(metadata=shape(form=Form.NAMED_PAIRS))

    @written()
    def components(self) -> list[str]:
        return [name for name, a, b in self.hashes if a != b]


@dataclass(frozen=True)
class ProcessVerdict(Record):
    """One process of a job judged alone: its launches' keys against its own first launch's."""

    rank: int
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class GroupFacts(Record):
    """What the runs of a multi-process cell show besides the verdict (harness/verdicts/ranks.py)."""

    processes: int
    per_process: tuple[ProcessVerdict, ...] = ()
    writers: tuple[int, ...] = ()  # ranks whose JAX logged writing an entry
    # Components in which the ranks' keys of one module differed in every run, and nothing else did: the
    # key names the process's own devices (on the CPU each process's simulated devices are its own).
    host_components: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mesh(Record):
    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape)) + " (" + ",".join(self.axis_names) + ")"


# In place of a mesh: a user's script builds its own, which the harness does not know.
NO_MESH = "script"


@dataclass(frozen=True)
class CellSpec(Record):
    """What one cell measures; the unit the runner, the bisector and sharding work with."""

    jax_version: str
    platform: Platform
    device_count: int
    mesh: Mesh | None  # None for a user's script, which builds its own mesh
    # A multi-process cell: each run is one job of this many processes (device_count is the job's total).
    processes: int = field(default=1, metadata=shape(omit=Omit.DEFAULT))

    @property
    def key(self) -> str:
        group = f"|{self.processes}p" if self.processes > 1 else ""
        return f"{self.jax_version}|{self.platform}|{self.device_count}|{self.mesh_label}{group}"

    @property
    def is_multiprocess(self) -> bool:
        return self.processes > 1

    @property
    def devices_label(self) -> str:
        """`cpux8`, or `cpux8 (2 processes)` for a job: what the table's platform column says."""
        label = f"{self.platform}x{self.device_count}"
        return f"{label} ({self.processes} processes)" if self.is_multiprocess else label

    @property
    def mesh_label(self) -> str:
        """The mesh as keys, tables and summaries name it."""
        return self.mesh.label if self.mesh else NO_MESH

    @property
    def slug(self) -> str:
        """The cell's folder name under logs/, caches/ and evidence/."""
        mesh = "-".join(map(str, self.mesh.shape)) + "-" + "".join(self.mesh.axis_names) if self.mesh else NO_MESH
        group = f"-{self.processes}p" if self.is_multiprocess else ""
        return re.sub(r"[^A-Za-z0-9._-]", "_",
                      f"jax-{self.jax_version}-{self.platform}{self.device_count}{group}-{mesh}")


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


@dataclass(frozen=True)
class RunCommand(Record):
    """How a cell's runs were started, for the report's commands: the interpreter's arguments (host
    paths), the user's environment additions as the runs got them (XLA_FLAGS merged), the folder."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = field(metadata=shape(form=Form.MAPPING))
    cwd: str


@dataclass(frozen=True)
class CommitInfo(Record):
    """A jax commit: what a commit bisection blames, or what `nightly --jax-repo` measures beside releases."""

    sha: str
    date: str  # committer date, ISO 8601
    subject: str

    @property
    def label(self) -> str:
        """How tables name a commit's cell (its spec keeps a PEP 440 version for sorting)."""
        return f"jax@{self.sha[:12]}"


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


class ThresholdMode(enum.StrEnum):
    """Whose persistent-cache thresholds a user's script runs with."""

    SCRIPT = "script"  # as the script runs: what it sets is kept, JAX's defaults where it sets none
    HARNESS = "harness"  # the harness's zeros (the default): every compiled module is cached, so measured


class FolderMode(enum.StrEnum):
    """How a user's script's runs get the cell's cache folder (docs/as-it-runs.md)."""

    HOOK = "hook"  # only where the script sets a folder in code, at that moment (the start-up hook)
    ENVIRONMENT = "environment"  # from JAX_COMPILATION_CACHE_DIR: the script sets none of its own


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


@dataclass(frozen=True)
class CacheSetting:
    """One cache setting a user's script made, as the harness's start-up hook saw it."""

    option: str  # jax_compilation_cache_dir, jax_enable_compilation_cache, or a threshold
    api: str  # how: jax.config.update, set_cache_dir, initialize_cache, os.environ
    requested: Any  # what the script asked for
    applied: Any  # what the run got instead (the cell's folder for a cache folder)
    # A cache folder's setting: JAX's cache at that moment ({"initialized", "path"}; None: not yet imported).
    cache_then: dict[str, Any] | None = None


@dataclass(frozen=True)
class ScriptCache(Record):
    """What a run's script did to its cache: its settings in order, and the cache JAX had at exit
    (`final`: the options' values, `cache_path` and the harness's `target`; empty when the script
    never imported jax or did not exit normally)."""

    settings: tuple[CacheSetting, ...] = ()
    final: dict[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # what the hook could not do


@dataclass(frozen=True)
class ScriptCacheFacts(Record):
    """What a cell's runs' scripts did to their cache, over all runs (harness/verdicts/script_settings.py)."""

    # (folder asked for, api): redirected to the cell's folder
    folders: tuple[tuple[str, str], ...] = field(default=(), metadata=shape(form=Form.OBJECTS,
                                                                            names=("requested", "api")))
    disabled: str | None = None  # how the script turned its cache off
    escaped: str | None = None  # a cache folder JAX used that is not the cell's (not redirected)
    thresholds: tuple[CacheSetting, ...] = ()  # threshold settings the script made (last of each option)
    problems: tuple[str, ...] = ()  # what the hook could not do
    # whose thresholds applied
    mode: ThresholdMode = field(default=ThresholdMode.SCRIPT, metadata=shape(key="thresholds_mode"))
    notes: tuple[str, ...] = ()  # the report's sentences
    # The script's call that set its folder after JAX had initialised its cache without one: no cache.
    uninitialised: str | None = field(default=None, metadata=shape(omit=Omit.EMPTY))

    @property
    def any(self) -> bool:
        return bool(self.folders or self.disabled or self.escaped or self.thresholds or self.problems)


@dataclass(frozen=True)
class SeedRun(Record):
    """One run of a seed check: the seed, the cell's run that had it, and how its re-run ended."""

    seed: int
    run: int  # the cell's run with this seed
    rerun_ok: bool
    rerun_detail: str = ""  # why the re-run failed
    log: str = ""  # the re-run's log, relative to the results folder


@shaped(order=("failing", "passing", "follows_seed", "again"))
@dataclass(frozen=True)
class SeedCheck(Record):
    """Whether a cell's failures follow the hash seed: a failing and a passing seed re-run (harness/verdicts/seed_check.py),
    in fresh cache folders. It follows the seed when each re-run ends as its first run did."""

    failing: SeedRun
    passing: SeedRun
    # the further re-runs of either seed (none in results written before)
    again: tuple[SeedRun, ...] = field(default=(), metadata=shape(omit=Omit.EMPTY))

    @written()
    def follows_seed(self) -> bool:
        return all(r.rerun_ok == (r.seed == self.passing.seed) for r in (self.failing, self.passing, *self.again))


@dataclass(frozen=True)
class RunCost(Record):
    """What one run's compiles cost, from its JAX log (harness/verdicts/cost.py): the keys it compiled (misses)
    and their logged seconds, the keys it loaded (hits) and the seconds the run that wrote each had
    logged compiling it (what the hit saved)."""

    run: int
    modules: int  # modules the run computed a key of
    misses: int  # keys compiled
    miss_s: float  # their compile seconds, as JAX logged them
    untimed_misses: int  # compiled keys whose seconds JAX did not log (a module it never writes)
    hits: int
    saved_s: float
    missed_modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellCost(Record):
    """What a cell's misses cost each fresh process, and what its hits saved (harness/verdicts/cost.py). `starts`:
    the later successful runs, each a fresh process that should have loaded what the first one compiled."""

    starts: int
    lost_per_start_s: float  # mean compile seconds of the later runs' misses
    saved_per_start_s: float  # mean seconds the later runs' hits saved
    modules: int  # modules the later runs computed
    missed_modules: tuple[str, ...]  # modules a later run compiled again
    each_start_missed: tuple[str, ...]  # those every later run compiled again
    untimed_modules: tuple[str, ...]  # missed modules whose compile seconds JAX did not log
    first_run_s: float  # the first run's compile seconds (a cold cache: every key a miss)
    runs: tuple[RunCost, ...] = ()


@dataclass
class RankRecord(Record):
    """One process of a multi-process run (a job): its rank, hash seed, how it ended, its own log and
    what that log says it computed."""

    rank: int
    seed: int
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    reason: str = ""
    log: str = ""
    keys: RunLog | None = field(default=None, metadata=shape(omit=Omit.NONE))
    log_note: str = field(default="", metadata=shape(omit=Omit.EMPTY))
    script_cache: ScriptCache | None = field(default=None, metadata=shape(omit=Omit.NONE))
    # whether its script called jax.distributed.initialize() (None: not known)
    joined: bool | None = field(default=None, metadata=shape(omit=Omit.NONE))

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@shaped(order=("index", "seed", "exit_code", "duration_s", "new_entries", "timed_out", "reason", "log", "ranks",
                "script_cache", "keys", "log_note"))
@dataclass
class RunRecord(Record):
    index: int
    seed: int  # the PYTHONHASHSEED this run had
    exit_code: int | None
    duration_s: float
    new_entries: list[str]  # cache file names that appeared during this run
    timed_out: bool = False
    reason: str = ""
    log: str = ""  # path of this run's stdout/stderr, relative to the results folder
    # a user's script's own cache settings (absent before)
    script_cache: ScriptCache | None = field(default=None, metadata=shape(omit=Omit.NONE))
    # What JAX's own log says this run computed (module -> key -> outcome, reason, component hashes);
    # None when its log named no key (`log_note` says why) or the run predates the harness reading it.
    keys: RunLog | None = field(default=None, metadata=shape(omit=Omit.NONE))
    log_note: str = field(default="", metadata=shape(omit=Omit.EMPTY))
    # A multi-process run: each process, by rank (the fields above are the job's: `seed` and `log` rank 0's,
    # `keys` every rank's together); empty for a single process.
    ranks: list[RankRecord] = field(default_factory=list, metadata=shape(omit=Omit.EMPTY))

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def _no_modules(result: FactorResult) -> bool:
    return not (result.modules or result.modules_total)


@dataclass
class FactorResult(Record):
    """One factor of `--vary`: its run against the cell's reference run (harness/verdicts/vary.py)."""

    factor: Factor
    outcome: FactorOutcome
    reason: str = ""  # the miss in words ("compile_options moved, 3 of 3 modules"), or why not judged
    # key components that moved (JAX's spelling)
    components: list[str] = field(default_factory=list, metadata=shape(omit=Omit.EMPTY))
    # the reference's modules it missed, of how many (written together, when either is known)
    modules: list[str] = field(default_factory=list, metadata=shape(omit=_no_modules))
    modules_total: int = field(default=0, metadata=shape(omit=_no_modules))
    # what the run changed, in words (the other path, the variable's value)
    change: str = field(default="", metadata=shape(omit=Omit.EMPTY))
    run: RunRecord | None = field(default=None, metadata=shape(omit=Omit.NONE))  # None: could not be varied here

    @property
    def missed(self) -> bool:
        """A miss under a factor that should not matter: what makes a cell `reproduced`."""
        return self.outcome == FactorOutcome.MISS


@dataclass
class CellVariation(Record):
    """A cell's `--vary` measurement: the reference run (the cell's first, in the plain environment),
    one run per factor with its hash seed, and, when a factor missed, a control run: the plain
    environment with the same seed again, which must hit for a miss to be the factor's."""

    reference_run: int  # index of the cell's run the factors are compared with
    seed: int  # its hash seed, which every factor run had
    factors: list[FactorResult] = field(default_factory=list)
    control: RunRecord | None = field(default=None, metadata=shape(omit=Omit.NONE))
    # why no factor was judged (the reference failed, nothing was cached, the control missed)
    note: str = field(default="", metadata=shape(omit=Omit.EMPTY))

    def missed(self) -> list[FactorResult]:
        return [f for f in self.factors if f.missed]


@dataclass(frozen=True)
class MeasuredCommit(Record):
    """A jax commit a cell measured instead of a release (`nightly --jax-repo`): which one, how it was
    named, and the jaxlib release it ran with (None when none could)."""

    info: CommitInfo = field(metadata=shape(form=Form.SPLICED))
    ref: str | None = None  # what --ref said
    fetched_from: str | None = None  # the remote fetched before; None when nothing was fetched
    jaxlib: str | None = None

    @property
    def label(self) -> str:
        return self.info.label


def _no_seeds(cell: CellResult) -> bool:
    return cell.seeds is None


def _no_cache_folder(cell: CellResult) -> bool:
    return cell.cache_folder is None


# results.json's order of a cell's keys, as the first releases wrote it (derived and spliced keys included).
CELL_ORDER = ("jax_version", "platform", "device_count", "mesh", "verdict", "reason", "keys", "runs", "listing",
              "environment", "seeds", "miss_bound", "miss_bound_other_mechanisms", "interrupted", "log_tail",
              "earlier_attempts", "script_cache", "attribution", "attribution_detail", "attribution_unavailable",
              "inconsistencies", "cause", "command", "commit", "cache_folder", "nothing_cached", "as_you_run_it",
              "seed_check", "processes", "rank_split", "job", "variation", "cost")
_EMPTY = shape(omit=Omit.EMPTY)
_NONE = shape(omit=Omit.NONE)


@shaped(order=CELL_ORDER)
@dataclass
class CellResult(Record):
    spec: CellSpec = field(metadata=shape(form=Form.SPLICED))  # its keys among the cell's
    verdict: Verdict
    keys: dict[str, list[str]]  # module name -> distinct keys written by successful runs
    runs: list[RunRecord] = field(default_factory=list)
    reason: str = ""  # one line: why error/unsupported, or which module reproduced
    listing: list[str] = field(default_factory=list)  # the cache folder after the last run (`ls -1`)
    environment: dict[str, Any] = field(default_factory=dict)  # backend facts (python, jaxlib, image...)
    # how the runs' hash seeds were chosen (None: no run was planned)
    seeds: SeedPlan | None = field(default=None, metadata=_NONE)
    # a clean cell's confidence (None for any other verdict), written beside the seeds
    miss_bounds: MissBounds | None = field(default=None, metadata=shape(form=Form.SPLICED, omit=_no_seeds))
    interrupted: bool = field(default=False, metadata=_EMPTY)  # cut short by Ctrl-C: --resume measures it again
    log_tail: str = field(default="", metadata=_EMPTY)  # the end of the environment's log when it could not be made
    # bisect: why preferred environments failed
    earlier_attempts: list[str] = field(default_factory=list, metadata=_EMPTY)
    # what a user's script did to its own cache
    script_cache: ScriptCacheFacts | None = field(default=None, metadata=_NONE)
    # From the runs' JAX logs: which key components moved (a reproduced cell), or why that is unknown.
    attribution: Attribution | None = field(default=None, metadata=shape(key="attribution_detail", omit=Omit.NONE))
    attribution_unavailable: str = field(default="", metadata=_EMPTY)
    # the cache folder and the logs disagree
    inconsistencies: list[str] = field(default_factory=list, metadata=_EMPTY)
    # from the evidence's module diff (set when the report gathers it)
    cause: Cause | None = field(default=None, metadata=_NONE)
    # a user's script: its arguments, environment additions, folder
    command: RunCommand | None = field(default=None, metadata=_NONE)
    # nightly --jax-repo: the commit measured instead of a release
    commit: MeasuredCommit | None = field(default=None, metadata=_NONE)
    # A user's script: how its runs got the cell's folder, and why (None: results older than the choice).
    cache_folder: FolderMode | None = field(default=None, metadata=shape(key="cache_folder.mode", omit=Omit.NONE))
    cache_folder_why: str = field(default="", metadata=shape(key="cache_folder.why", omit=_no_cache_folder))
    # an unsupported cell that cached nothing: why
    nothing_cached: NothingCached | None = field(default=None, metadata=_NONE)
    # As the script runs it (its own or JAX's default thresholds): what would not be written, when
    # that differs from what was measured; shortened after the reason in the cell's detail (report.md has it whole).
    as_you_run_it: str = field(default="", metadata=_EMPTY)
    # some runs failed, others passed: does the failure follow the seed
    seed_check: SeedCheck | None = field(default=None, metadata=_NONE)
    # a job whose processes computed different keys for one module
    rank_split: RankSplit | None = field(default=None, metadata=_NONE)
    job: GroupFacts | None = field(default=None, metadata=_NONE)  # a multi-process cell's per-process verdicts, writers, notes
    variation: CellVariation | None = field(default=None, metadata=_NONE)  # --vary: the factors' runs against the reference run
    # seconds lost to misses per fresh process, saved by hits (from JAX's log)
    cost: CellCost | None = field(default=None, metadata=_NONE)
    # fields this release does not know, kept as read
    extra: dict[str, Any] = field(default_factory=dict, metadata=shape(form=Form.EXTRA))

    @written(key="attribution", omit=Omit.NONE)
    def attributed_components(self) -> list[str] | None:
        """The key components that moved (the attribution's), for readers of the file."""
        return self.attribution.components if self.attribution is not None else None

    @property
    def label(self) -> str:
        """`jax@<sha>` for a commit's cell, the release otherwise."""
        commit = self.commit
        return commit.label if commit else self.spec.jax_version

    @property
    def split_run(self) -> RunRecord | None:
        """The run whose processes computed different keys (rank_split's), when the cell has it."""
        split = self.rank_split
        return next((r for r in self.runs if r.index == split.run), None) if split is not None else None

    @property
    def detail(self) -> str:
        """The table's detail: the verdict's reason first, then, shortened, how the program differs as its author
        runs it (`as you run it, nothing is cached: the script sets no ...` -> its head): measured with the
        harness's settings, so beside `clean` it reads as a note on the settings, not a contradiction."""
        if not self.as_you_run_it:
            return self.reason
        head = self.as_you_run_it.split(":", 1)[0]
        return f"{self.reason}; with the harness's cache settings (as you run it, {head.removeprefix('as you run it, ')}: see report.md)"

