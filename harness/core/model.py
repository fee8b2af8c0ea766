"""The project's vocabulary: platforms, verdicts, runs and cells, as plain data.

An *Environment* is where one JAX version runs; a *run* is one fresh process; a *cell* is one
(JAX version, mesh, platform) measured by several runs; a *verdict* is what a cell says.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.codec import convert, decode, to_builtins
from harness.core.confidence import MissBounds, SeedPlan
from harness.core.vary_factors import Factor, FactorOutcome
from harness.core.jaxlog import RunLog


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
class Attribution:
    """Which components of a module's key moved between two runs, from their JAX logs: the first run's
    key against a later run's new key of the same computation."""

    module: str
    run_a: int  # the first run
    run_b: int  # a later run that computed a key the first did not
    key_a: str
    key_b: str
    hashes: list[tuple[str, str | None, str | None]]  # (component, its hash in run_a, in run_b), JAX's order

    @property
    def components(self) -> list[str]:
        """The components (JAX's spelling) whose hashes differ between the two runs."""
        return [name for name, a, b in self.hashes if a != b]

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "runs": [self.run_a, self.run_b], "keys": [self.key_a, self.key_b],
                "hashes": {name: [a, b] for name, a, b in self.hashes}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attribution:
        run_a, run_b = data["runs"]
        key_a, key_b = data["keys"]
        return cls(data["module"], run_a, run_b, key_a, key_b,
                   [(name, pair[0], pair[1]) for name, pair in data.get("hashes", {}).items()])


@dataclass(frozen=True)
class RankSplit:
    """The processes of one run (a job) computed different keys for the same module: they lowered
    different programs (the multi-host hang class), or their keys differ in another component."""

    module: str
    run: int
    ranks: tuple[int, int]
    keys: tuple[str, str]
    hashes: list[tuple[str, str | None, str | None]]  # (component, its hash in ranks[0], in ranks[1])

    @property
    def components(self) -> list[str]:
        return [name for name, a, b in self.hashes if a != b]

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "run": self.run, "ranks": list(self.ranks), "keys": list(self.keys),
                "components": self.components, "hashes": {name: [a, b] for name, a, b in self.hashes}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankSplit:
        return cls(data["module"], int(data["run"]), tuple(data["ranks"]), tuple(data["keys"]),
                   [(name, pair[0], pair[1]) for name, pair in data.get("hashes", {}).items()])


@dataclass(frozen=True)
class ProcessVerdict:
    """One process of a job judged alone: its launches' keys against its own first launch's."""

    rank: int
    verdict: Verdict
    reason: str

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessVerdict:
        return decode(cls, data)


@dataclass(frozen=True)
class GroupFacts:
    """What the runs of a multi-process cell show besides the verdict (harness/verdicts/ranks.py)."""

    processes: int
    per_process: tuple[ProcessVerdict, ...] = ()
    writers: tuple[int, ...] = ()  # ranks whose JAX logged writing an entry
    # Components in which the ranks' keys of one module differed in every run, and nothing else did: the
    # key names the process's own devices (on the CPU each process's simulated devices are its own).
    host_components: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GroupFacts:
        return decode(cls, data)


@dataclass(frozen=True)
class Mesh:
    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape)) + " (" + ",".join(self.axis_names) + ")"

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Mesh:
        return convert(data, cls)


# In place of a mesh: a user's script builds its own, which the harness does not know.
NO_MESH = "script"


@dataclass(frozen=True)
class CellSpec:
    """What one cell measures; the unit the runner, the bisector and sharding work with."""

    jax_version: str
    platform: Platform
    device_count: int
    mesh: Mesh | None  # None for a user's script, which builds its own mesh
    # A multi-process cell: each run is one job of this many processes (device_count is the job's total).
    processes: int = 1

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
class RunCommand:
    """How a cell's runs were started, for the report's commands: the interpreter's arguments (host
    paths), the user's environment additions as the runs got them (XLA_FLAGS merged), the folder."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: str

    def to_json(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "env": dict(self.env), "cwd": self.cwd}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunCommand:
        return cls(tuple(data.get("argv", [])), tuple((data.get("env") or {}).items()), str(data.get("cwd", "")))


@dataclass(frozen=True)
class CommitInfo:
    """A jax commit: what a commit bisection blames, or what `nightly --jax-repo` measures beside releases."""

    sha: str
    date: str  # committer date, ISO 8601
    subject: str

    @property
    def label(self) -> str:
        """How tables name a commit's cell (its spec keeps a PEP 440 version for sorting)."""
        return f"jax@{self.sha[:12]}"

    def to_json(self) -> dict[str, str]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommitInfo:
        return decode(cls, data)


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
class ScriptCache:
    """What a run's script did to its cache: its settings in order, and the cache JAX had at exit
    (`final`: the options' values, `cache_path` and the harness's `target`; empty when the script
    never imported jax or did not exit normally)."""

    settings: tuple[CacheSetting, ...] = ()
    final: dict[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # what the hook could not do

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScriptCache:
        return decode(cls, data)


@dataclass(frozen=True)
class ScriptCacheFacts:
    """What a cell's runs' scripts did to their cache, over all runs (harness/verdicts/script_settings.py)."""

    folders: tuple[tuple[str, str], ...] = ()  # (folder asked for, api): redirected to the cell's folder
    disabled: str | None = None  # how the script turned its cache off
    escaped: str | None = None  # a cache folder JAX used that is not the cell's (not redirected)
    thresholds: tuple[CacheSetting, ...] = ()  # threshold settings the script made (last of each option)
    problems: tuple[str, ...] = ()  # what the hook could not do
    mode: ThresholdMode = ThresholdMode.SCRIPT  # whose thresholds applied
    notes: tuple[str, ...] = ()  # the report's sentences
    # The script's call that set its folder after JAX had initialised its cache without one: no cache.
    uninitialised: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.folders or self.disabled or self.escaped or self.thresholds or self.problems)

    def to_json(self) -> dict[str, Any]:
        out = {"folders": [{"requested": f, "api": api} for f, api in self.folders],
               "disabled": self.disabled, "escaped": self.escaped,
               "thresholds": [asdict(s) for s in self.thresholds], "problems": list(self.problems),
               "thresholds_mode": str(self.mode), "notes": list(self.notes)}
        if self.uninitialised:
            out["uninitialised"] = self.uninitialised
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScriptCacheFacts:
        return cls(tuple((str(f["requested"]), str(f["api"])) for f in data.get("folders", [])),
                   data.get("disabled"), data.get("escaped"),
                   tuple(CacheSetting(**s) for s in data.get("thresholds", [])), tuple(data.get("problems", [])),
                   ThresholdMode(data.get("thresholds_mode", ThresholdMode.SCRIPT.value)),
                   tuple(data.get("notes", [])), data.get("uninitialised"))


@dataclass(frozen=True)
class SeedRun:
    """One run of a seed check: the seed, the cell's run that had it, and how its re-run ended."""

    seed: int
    run: int  # the cell's run with this seed
    rerun_ok: bool
    rerun_detail: str = ""  # why the re-run failed
    log: str = ""  # the re-run's log, relative to the results folder

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SeedRun:
        return decode(cls, data)


@dataclass(frozen=True)
class SeedCheck:
    """Whether a cell's failures follow the hash seed: a failing and a passing seed re-run (harness/verdicts/seed_check.py),
    in fresh cache folders. It follows the seed when each re-run ends as its first run did."""

    failing: SeedRun
    passing: SeedRun
    again: tuple[SeedRun, ...] = ()  # the further re-runs of either seed (none in results written before)

    @property
    def follows_seed(self) -> bool:
        return all(r.rerun_ok == (r.seed == self.passing.seed) for r in (self.failing, self.passing, *self.again))

    def to_json(self) -> dict[str, Any]:
        out = {"failing": self.failing.to_json(), "passing": self.passing.to_json(), "follows_seed": self.follows_seed}
        if self.again:
            out["again"] = [r.to_json() for r in self.again]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SeedCheck:
        return cls(SeedRun.from_json(data["failing"]), SeedRun.from_json(data["passing"]),
                   tuple(SeedRun.from_json(r) for r in data.get("again", ())))


@dataclass(frozen=True)
class RunCost:
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

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunCost:
        return decode(cls, data)


@dataclass(frozen=True)
class CellCost:
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

    def to_json(self) -> dict[str, Any]:
        return to_builtins(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellCost:
        return decode(cls, data)


@dataclass
class RankRecord:
    """One process of a multi-process run (a job): its rank, hash seed, how it ended, its own log and
    what that log says it computed."""

    rank: int
    seed: int
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    reason: str = ""
    log: str = ""
    keys: RunLog | None = None
    log_note: str = ""
    script_cache: ScriptCache | None = None
    joined: bool | None = None  # whether its script called jax.distributed.initialize() (None: not known)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"rank": self.rank, "seed": self.seed, "exit_code": self.exit_code, "duration_s": self.duration_s,
                "timed_out": self.timed_out, "reason": self.reason, "log": self.log}
        if self.keys is not None:
            data["keys"] = self.keys.to_json()
        if self.log_note:
            data["log_note"] = self.log_note
        if self.script_cache is not None:
            data["script_cache"] = self.script_cache.to_json()
        if self.joined is not None:
            data["joined"] = self.joined
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankRecord:
        return cls(int(data["rank"]), int(data["seed"]), data.get("exit_code"), float(data.get("duration_s", 0.0)),
                   bool(data.get("timed_out", False)), data.get("reason", ""), data.get("log", ""),
                   RunLog.from_json(data["keys"]) if data.get("keys") is not None else None,
                   data.get("log_note", ""),
                   ScriptCache.from_json(data["script_cache"]) if data.get("script_cache") else None,
                   data.get("joined"))


@dataclass
class RunRecord:
    index: int
    seed: int  # the PYTHONHASHSEED this run had
    exit_code: int | None
    duration_s: float
    new_entries: list[str]  # cache file names that appeared during this run
    timed_out: bool = False
    reason: str = ""
    log: str = ""  # path of this run's stdout/stderr, relative to the results folder
    script_cache: ScriptCache | None = None  # a user's script's own cache settings (absent before)
    # What JAX's own log says this run computed (module -> key -> outcome, reason, component hashes);
    # None when its log named no key (`log_note` says why) or the run predates the harness reading it.
    keys: RunLog | None = None
    log_note: str = ""
    # A multi-process run: each process, by rank (the fields above are the job's: `seed` and `log` rank 0's,
    # `keys` every rank's together); empty for a single process.
    ranks: list[RankRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("script_cache", "keys", "log_note", "ranks"):
            data.pop(name)
        if self.ranks:
            data["ranks"] = [r.to_json() for r in self.ranks]
        if self.script_cache is not None:
            data["script_cache"] = self.script_cache.to_json()
        if self.keys is not None:
            data["keys"] = self.keys.to_json()
        if self.log_note:
            data["log_note"] = self.log_note
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """A run as results.json holds it; `script_cache`, `keys` and `log_note` are absent from older folders."""
        data = dict(data)
        script_cache = data.pop("script_cache", None)
        keys = data.pop("keys", None)
        ranks = [RankRecord.from_json(r) for r in data.pop("ranks", [])]
        return cls(**data, script_cache=ScriptCache.from_json(script_cache) if script_cache else None,
                   keys=RunLog.from_json(keys) if keys is not None else None, ranks=ranks)


@dataclass
class FactorResult:
    """One factor of `--vary`: its run against the cell's reference run (harness/verdicts/vary.py)."""

    factor: Factor
    outcome: FactorOutcome
    reason: str = ""  # the miss in words ("compile_options moved, 3 of 3 modules"), or why not judged
    components: list[str] = field(default_factory=list)  # key components that moved (JAX's spelling)
    modules: list[str] = field(default_factory=list)  # the reference's modules it missed
    modules_total: int = 0  # the reference's modules
    change: str = ""  # what the run changed, in words (the other path, the variable's value)
    run: RunRecord | None = None  # None when the factor could not be varied here

    @property
    def missed(self) -> bool:
        """A miss under a factor that should not matter: what makes a cell `reproduced`."""
        return self.outcome == FactorOutcome.MISS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"factor": str(self.factor), "outcome": str(self.outcome), "reason": self.reason}
        if self.components:
            out["components"] = self.components
        if self.modules or self.modules_total:
            out.update(modules=self.modules, modules_total=self.modules_total)
        if self.change:
            out["change"] = self.change
        if self.run is not None:
            out["run"] = self.run.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FactorResult:
        return cls(Factor(data["factor"]), FactorOutcome(data["outcome"]), data.get("reason", ""),
                   list(data.get("components", [])), list(data.get("modules", [])),
                   int(data.get("modules_total", 0)), data.get("change", ""),
                   RunRecord.from_json(data["run"]) if data.get("run") else None)


@dataclass
class CellVariation:
    """A cell's `--vary` measurement: the reference run (the cell's first, in the plain environment),
    one run per factor with its hash seed, and, when a factor missed, a control run: the plain
    environment with the same seed again, which must hit for a miss to be the factor's."""

    reference_run: int  # index of the cell's run the factors are compared with
    seed: int  # its hash seed, which every factor run had
    factors: list[FactorResult] = field(default_factory=list)
    control: RunRecord | None = None
    note: str = ""  # why no factor was judged (the reference failed, nothing was cached, the control missed)

    def missed(self) -> list[FactorResult]:
        return [f for f in self.factors if f.missed]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reference_run": self.reference_run, "seed": self.seed,
                               "factors": [f.to_json() for f in self.factors]}
        if self.control is not None:
            out["control"] = self.control.to_json()
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellVariation:
        return cls(int(data["reference_run"]), int(data["seed"]),
                   [FactorResult.from_json(f) for f in data.get("factors", [])],
                   RunRecord.from_json(data["control"]) if data.get("control") else None, data.get("note", ""))


@dataclass(frozen=True)
class MeasuredCommit:
    """A jax commit a cell measured instead of a release (`nightly --jax-repo`): which one, how it was
    named, and the jaxlib release it ran with (None when none could)."""

    info: CommitInfo
    ref: str | None = None  # what --ref said
    fetched_from: str | None = None  # the remote fetched before; None when nothing was fetched
    jaxlib: str | None = None

    @property
    def label(self) -> str:
        return self.info.label

    def to_json(self) -> dict[str, Any]:
        return {**self.info.to_json(), "ref": self.ref, "fetched_from": self.fetched_from, "jaxlib": self.jaxlib}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MeasuredCommit:
        return cls(CommitInfo.from_json(data), data.get("ref"), data.get("fetched_from"), data.get("jaxlib"))


@dataclass
class CellResult:
    spec: CellSpec
    verdict: Verdict
    keys: dict[str, list[str]]  # module name -> distinct keys written by successful runs
    runs: list[RunRecord] = field(default_factory=list)
    reason: str = ""  # one line: why error/unsupported, or which module reproduced
    listing: list[str] = field(default_factory=list)  # the cache folder after the last run (`ls -1`)
    environment: dict[str, Any] = field(default_factory=dict)  # backend facts (python, jaxlib, image...)
    seeds: SeedPlan | None = None  # how the runs' hash seeds were chosen (None: no run was planned)
    miss_bounds: MissBounds | None = None  # a clean cell's confidence (None for any other verdict)
    interrupted: bool = False  # cut short by Ctrl-C: --resume measures it again
    log_tail: str = ""  # the end of the environment's log when it could not be made
    earlier_attempts: list[str] = field(default_factory=list)  # bisect: why preferred environments failed
    script_cache: ScriptCacheFacts | None = None  # what a user's script did to its own cache
    # From the runs' JAX logs: which key components moved (a reproduced cell), or why that is unknown.
    attribution: Attribution | None = None
    attribution_unavailable: str = ""
    inconsistencies: list[str] = field(default_factory=list)  # the cache folder and the logs disagree
    cause: Cause | None = None  # from the evidence's module diff (set when the report gathers it)
    command: RunCommand | None = None  # a user's script: its arguments, environment additions, folder
    commit: MeasuredCommit | None = None  # nightly --jax-repo: the commit measured instead of a release
    # A user's script: how its runs got the cell's folder, and why (None: results older than the choice).
    cache_folder: FolderMode | None = None
    cache_folder_why: str = ""
    nothing_cached: NothingCached | None = None  # an unsupported cell that cached nothing: why
    # As the script runs it (its own or JAX's default thresholds): what would not be written, when
    # that differs from what was measured; shortened after the reason in the cell's detail (report.md has it whole).
    as_you_run_it: str = ""
    seed_check: SeedCheck | None = None  # some runs failed, others passed: does the failure follow the seed
    rank_split: RankSplit | None = None  # a job whose processes computed different keys for one module
    job: GroupFacts | None = None  # a multi-process cell's per-process verdicts, writers, notes
    variation: CellVariation | None = None  # --vary: the factors' runs against the reference run
    cost: CellCost | None = None  # seconds lost to misses per fresh process, saved by hits (from JAX's log)
    extra: dict[str, Any] = field(default_factory=dict)  # fields this release does not know, kept as read

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

    def to_json(self) -> dict[str, Any]:
        out = {
            "jax_version": self.spec.jax_version,
            "platform": str(self.spec.platform),
            "device_count": self.spec.device_count,
            "mesh": self.spec.mesh.to_json() if self.spec.mesh else None,
            "verdict": str(self.verdict),
            "reason": self.reason,
            "keys": self.keys,
            "runs": [r.to_json() for r in self.runs],
            "listing": self.listing,
            "environment": self.environment,
        }
        if self.seeds is not None:
            bounds = self.miss_bounds
            out.update(seeds=self.seeds.to_json(), miss_bound=bounds.set_order if bounds else None,
                       miss_bound_other_mechanisms=bounds.other if bounds else None)
        if self.interrupted:
            out["interrupted"] = True
        if self.log_tail:
            out["log_tail"] = self.log_tail
        if self.earlier_attempts:
            out["earlier_attempts"] = self.earlier_attempts
        if self.script_cache is not None:
            out["script_cache"] = self.script_cache.to_json()
        if self.attribution is not None:
            out["attribution"] = self.attribution.components
            out["attribution_detail"] = self.attribution.to_json()
        if self.attribution_unavailable:
            out["attribution_unavailable"] = self.attribution_unavailable
        if self.inconsistencies:
            out["inconsistencies"] = self.inconsistencies
        if self.cause is not None:
            out["cause"] = str(self.cause)
        if self.command is not None:
            out["command"] = self.command.to_json()
        if self.commit is not None:
            out["commit"] = self.commit.to_json()
        if self.cache_folder is not None:
            out["cache_folder"] = {"mode": str(self.cache_folder), "why": self.cache_folder_why}
        if self.nothing_cached is not None:
            out["nothing_cached"] = str(self.nothing_cached)
        if self.as_you_run_it:
            out["as_you_run_it"] = self.as_you_run_it
        if self.seed_check is not None:
            out["seed_check"] = self.seed_check.to_json()
        if self.spec.is_multiprocess:
            out["processes"] = self.spec.processes
        if self.rank_split is not None:
            out["rank_split"] = self.rank_split.to_json()
        if self.job is not None:
            out["job"] = self.job.to_json()
        if self.variation is not None:
            out["variation"] = self.variation.to_json()
        if self.cost is not None:
            out["cost"] = self.cost.to_json()
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        """A cell as results.json holds it; fields added since an older release are optional."""
        spec = CellSpec(
            jax_version=data["jax_version"],
            platform=Platform(data["platform"]),
            device_count=data["device_count"],
            mesh=Mesh.from_json(data["mesh"]) if data.get("mesh") else None,
            processes=int(data.get("processes", 1)),
        )
        bound = data.get("miss_bound")
        return cls(
            spec=spec,
            verdict=Verdict(data["verdict"]),
            keys=data.get("keys", {}),
            runs=[RunRecord.from_json(r) for r in data.get("runs", [])],
            reason=data.get("reason", ""),
            listing=data.get("listing", []),
            environment=data.get("environment", {}),
            seeds=SeedPlan.from_json(data["seeds"]) if data.get("seeds") else None,
            miss_bounds=MissBounds(bound, data.get("miss_bound_other_mechanisms")) if bound is not None else None,
            interrupted=bool(data.get("interrupted", False)),
            log_tail=data.get("log_tail", ""),
            earlier_attempts=list(data.get("earlier_attempts", [])),
            script_cache=ScriptCacheFacts.from_json(data["script_cache"]) if data.get("script_cache") else None,
            attribution=Attribution.from_json(data["attribution_detail"]) if data.get("attribution_detail") else None,
            attribution_unavailable=data.get("attribution_unavailable", ""),
            inconsistencies=list(data.get("inconsistencies", [])),
            cause=Cause(data["cause"]) if data.get("cause") else None,
            command=RunCommand.from_json(data["command"]) if data.get("command") else None,
            commit=MeasuredCommit.from_json(data["commit"]) if data.get("commit") else None,
            cache_folder=FolderMode(data["cache_folder"]["mode"]) if data.get("cache_folder") else None,
            cache_folder_why=(data.get("cache_folder") or {}).get("why", ""),
            nothing_cached=NothingCached(data["nothing_cached"]) if data.get("nothing_cached") else None,
            as_you_run_it=data.get("as_you_run_it", ""),
            seed_check=SeedCheck.from_json(data["seed_check"]) if data.get("seed_check") else None,
            rank_split=RankSplit.from_json(data["rank_split"]) if data.get("rank_split") else None,
            job=GroupFacts.from_json(data["job"]) if data.get("job") else None,
            variation=CellVariation.from_json(data["variation"]) if data.get("variation") else None,
            cost=CellCost.from_json(data["cost"]) if isinstance(data.get("cost"), dict) else None,
            extra={k: v for k, v in data.items() if k not in _CELL_FIELDS},
        )


_CELL_FIELDS = {"jax_version", "platform", "device_count", "mesh", "verdict", "reason", "keys", "runs", "listing",
                "environment", "seeds", "miss_bound", "miss_bound_other_mechanisms", "interrupted", "log_tail",
                "earlier_attempts", "script_cache", "attribution", "attribution_detail", "attribution_unavailable",
                "inconsistencies", "cause", "command", "commit", "cache_folder", "nothing_cached", "as_you_run_it",
                "seed_check", "processes", "rank_split", "job", "variation", "cost"}
