"""The project's vocabulary: platforms, verdicts, runs and cells, as plain data.

An *Environment* is where one JAX version runs; a *run* is one fresh process; a *cell* is one
(JAX version, mesh, platform) measured by several runs; a *verdict* is what a cell says.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from packaging.version import Version

from harness.core.comparison import Comparison
from harness.core.records import explained
from harness.core.confidence import MissBounds, SeedPlan

# The vocabulary by what it describes: its words (kinds), what a run did (runs), what a cell's runs show
# (findings); each name is imported from the module that defines it, this one holding a cell and its spec.
from harness.core.findings import (
    Attribution,
    CellCost,
    CellVariation,
    FactorResult,
    JobFacts,
    RankSplit,
    ScriptCacheFacts,
    SeedCheck,
)
from harness.core.kinds import (
    AsYouRunIt,
    Cause,
    FolderMode,
    NothingCached,
    Platform,
    Verdict,
)
from harness.core.runs import (
    DeviceFacts,
    RunCommand,
    RunRecord,
)


class Mesh(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    @property
    def label(self) -> str:
        return "x".join(map(str, self.shape)) + " (" + ",".join(self.axis_names) + ")"


# In place of a mesh: a user's script builds its own, which the harness does not know.
NO_MESH = "script"


class CellSpec(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """What one cell measures; the unit the runner, the bisector and sharding work with."""

    jax_version: str
    platform: Platform
    device_count: Annotated[int, msgspec.Meta(ge=1)]
    mesh: Mesh | None  # None for a user's script, which builds its own mesh
    # A multi-process cell: each run is one job of this many processes (device_count is the job's total).
    processes: Annotated[int, msgspec.Meta(ge=1)] = 1

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


class CommitInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """A jax commit: what a commit bisection blames, or what `nightly --jax-repo` measures beside releases."""

    sha: str
    date: str = ""  # committer date, ISO 8601 (absent in some older results)
    subject: str = ""

    @property
    def label(self) -> str:
        """How tables name a commit's cell (its spec keeps a PEP 440 version for sorting)."""
        return f"jax@{self.sha[:12]}"


class MeasuredCommit(CommitInfo, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A jax commit a cell measured instead of a release (`nightly --jax-repo`): which one (the commit's own
    keys), how it was named, and the jaxlib release it ran with (None when none could)."""

    ref: str | None = None  # what --ref said
    fetched_from: str | None = None  # the remote fetched before; None when nothing was fetched
    jaxlib: str | None = None

    def __post_init__(self) -> None:
        if self.jaxlib is not None:  # the report installs it (jaxlib==...): a release's version, or refused
            Version(self.jaxlib)

    @property
    def info(self) -> CommitInfo:
        return CommitInfo(self.sha, self.date, self.subject)


class EnvironmentShape(msgspec.Struct, forbid_unknown_fields=False):
    """The facts of a cell's environment that readers take by name (the report's tables, Reproduce with, a
    bisection's jaxlib), typed: a cell's `environment` is checked against it on reading, so that a fact of another
    shape is refused in one line rather than met by a reader. The mapping is kept as it was written (a backend's
    other facts, any this release does not name, are shown as they are)."""

    backend: str | None = None
    python: str | None = None
    jax: str | None = None
    jaxlib: str | None = None
    numpy: str | None = None
    image: str | None = None
    jaxlib_release: str | None = None
    distributions: dict[str, str] | None = None
    requirements: list[str] | None = None


class CellResult(msgspec.Struct, omit_defaults=True, dict=True, forbid_unknown_fields=True):
    """One cell as results.json (schema 3) holds it: its spec nested, every finding under its own key, what
    equals its default left out (docs/results.md)."""

    spec: CellSpec
    verdict: Verdict
    keys: dict[str, list[str]] = {}  # module name -> distinct keys written by successful runs
    runs: list[RunRecord] = []
    reason: str = ""  # one line: why error/unsupported, or which module reproduced
    listing: list[str] = []  # the cache folder after the last run (`ls -1`)
    # the facts of the environment the release ran in (Environment.describe(): backend, python, jaxlib, image,
    # distributions...); the file's key is `environment`
    environment_facts: dict[str, Any] = msgspec.field(default={}, name="environment")
    # how the runs' hash seeds were chosen (None: no run was planned)
    seeds: SeedPlan | None = None
    # a clean cell's confidence (None for any other verdict)
    miss_bounds: MissBounds | None = None
    interrupted: bool = False  # cut short by Ctrl-C: --resume measures it again
    log_tail: str = ""  # the end of the environment's log when it could not be made
    # bisect: why preferred environments failed
    earlier_attempts: list[str] = []
    # what a user's script did to its own cache
    script_cache: ScriptCacheFacts | None = None
    # From the runs' JAX logs: which key components moved (a reproduced cell), or why that is unknown.
    attribution: Attribution | None = msgspec.field(default=None, name="attribution_detail")
    attribution_unavailable: str = ""
    # the cache folder and the logs disagree
    inconsistencies: list[str] = []
    # from the evidence's module diff (set when the report gathers it)
    cause: Cause | None = None
    # a user's script: its arguments, environment additions, folder
    command: RunCommand | None = None
    # nightly --jax-repo: the commit measured instead of a release
    commit: MeasuredCommit | None = None
    # A user's script: how its runs got the cell's folder, and why (None: results older than the choice).
    cache_folder: FolderMode | None = None
    cache_folder_why: str = ""
    # an unsupported cell that cached nothing: why
    nothing_cached: NothingCached | None = None
    # As the script runs it (its own or JAX's default thresholds): what would not be written, when
    # that differs from what was measured; shortened after the reason in the cell's detail (report.md has it whole).
    as_you_run_it: str = ""
    as_you_run_it_why: AsYouRunIt | None = None  # its reason as a kind (None: older results, or no note)
    # A `not cached` cell's modules JAX never wrote, as read from the runs' files when the cell was finished
    # (harness/evidence/not_cached.py): module -> the line that put a host callback into it, from its lowered
    # module's locations (`jaxopt/_src/zoom_linesearch.py:132 jax.debug.print`); module -> the seconds compiling it
    # again cost each later start, where JAX logged no compile time (the recorder's timestamps)
    callback_sites: dict[str, str] = {}
    refusal_seconds: dict[str, float] = {}
    # some runs failed, others passed: does the failure follow the seed
    seed_check: SeedCheck | None = None
    # a job whose processes computed different keys for one module
    rank_split: RankSplit | None = None
    job: JobFacts | None = None  # a multi-process cell's per-process verdicts, writers, notes
    variation: CellVariation | None = None  # --vary: the factors' runs against the reference run
    # harness check: one run more with the reference's seed through another path to the same folder (the
    # cache-path factor), said beside the verdict, never changing it (None: not planned, or older results)
    moved_folder: FactorResult | None = None
    # seconds lost to misses per fresh process, saved by hits (from JAX's log)
    cost: CellCost | None = None
    # The cause controls, made when a later run's keys differed from run 1's (harness/evidence/controls.py): each
    # repeats a run's own hash seed (its `index` is that run's) in a fresh folder holding that run's entries; keys
    # that come back every time, for two runs' seeds, are the hash seed's; one that moves again is not. The first
    # control, and the others in the order they were made (None and []: none made; results before the others were
    # made have the first alone).
    seed_control: RunRecord | None = None
    more_controls: list[RunRecord] = []

    def __post_init__(self) -> None:
        try:
            msgspec.convert(self.environment_facts, EnvironmentShape, strict=True)
        except msgspec.ValidationError as exc:
            raise ValueError(explained(exc, "environment")) from None

    # In memory only (an attribute, not a field: never written, not compared): the later runs against the
    # first, as the verdict was judged (harness/evidence/keys.py's cell_comparison derives it once for a cell
    # read from a file). Runs are not changed after a cell is made.
    @property
    def comparison(self) -> Comparison | None:
        return self.__dict__.get("_comparison")

    @comparison.setter
    def comparison(self, value: Comparison | None) -> None:
        self.__dict__["_comparison"] = value

    @property
    def controls(self) -> list[RunRecord]:
        """Every cause control the cell made, in order."""
        return [self.seed_control, *self.more_controls] if self.seed_control is not None else []

    @property
    def label(self) -> str:
        """`jax@<sha>` for a commit's cell, the release otherwise."""
        commit = self.commit
        return commit.label if commit else self.spec.jax_version

    @property
    def devices(self) -> DeviceFacts | None:
        """The devices JAX reported in the cell's first run that recorded them (None: older results, or no run
        opened them)."""
        return next((r.devices for r in self.runs if r.devices is not None), None)

    @property
    def devices_label(self) -> str:
        """The table's platform column: what JAX ran on (`TPU v5 lite ×1`, `cpu ×8`), else what was asked."""
        seen = self.devices
        if seen is None:
            return self.spec.devices_label
        return seen.label + (f" ({self.spec.processes} processes)" if self.spec.is_multiprocess else "")

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
        head = self.as_you_run_it.partition(":")[0]
        # why, in a few words (a newcomer read "nothing is cached: see report.md" as the whole story)
        why = {AsYouRunIt.NO_FOLDER: "the script sets no cache folder",
               AsYouRunIt.THRESHOLDS: "its compiles are under JAX's thresholds", None: ""}[self.as_you_run_it_why]
        return (f"{self.reason}; with the harness's cache settings (as you run it, "
                f"{head.removeprefix('as you run it, ')}{': ' + why if why else ''}; see report.md)")


__all__ = ["NO_MESH", "CellResult", "CellSpec", "CommitInfo", "MeasuredCommit", "Mesh"]
