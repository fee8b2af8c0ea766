"""The results header as typed data (pure): what was measured (`RecordedConfig`), how (`RecordedOptions`)
and where (`HostFacts`), held by `ResultsHeader`; results.json's `config`, `options` and `host`.

Each part reads every shape an earlier release wrote: a key it lacks is None (absent, and not written
back), null reads as absent, and a key this release does not know (a newer one's) is kept in `extra` and
written back after the known ones, so a merge or a report of newer results loses nothing. `to_json` writes
the keys in the order they were read (a file read is written back as it was), or, for a header made
now, in the order the harness always wrote them: results.json stays byte for byte what the release
before wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from harness.core.codec import in_order, read_recorded, recorded_keys, to_builtins, what, write_recorded
from harness.core.confidence import SeedStrategy
from harness.core.vary_factors import Factor
from harness.core.model import BackendName, Mesh, Platform, ThresholdMode, variable_name_problem


@dataclass(frozen=True)
class RecordedConfig:
    """The config as resolved when the sweep started (config.Config.to_json), as results.json keeps it.

    Not a `Config`: an old folder's config need not pass today's checks (its script may be gone), and it
    is written back key for key. `repro` is a built-in's name or a script's path; `module` replaces it for
    `harness check -m`. `source` is the config file's path, or config.CHECK_SOURCE."""

    name: str | None = None
    repro: str | None = None
    jax_versions: tuple[str, ...] | None = field(default=None, metadata=what("a list of versions"))
    platform: Platform | None = None
    device_count: int | None = None
    meshes: tuple[Mesh, ...] | None = field(default=None, metadata=what("a list of meshes"))
    runs: int | None = None
    timeout_s: int | float | None = field(default=None, metadata=what("a number of seconds"))  # 300 stays 300
    # the config's docker: section (base_image, python)
    docker: Mapping[str, Any] | None = field(default=None, metadata=what("a mapping"))
    source: str | None = None
    python: str | None = None  # only when pinned
    # only when the script has some
    requirements: tuple[str, ...] | None = field(default=None, metadata=what("a list of requirements"))
    cache_thresholds: ThresholdMode | None = None  # only when not the harness's
    module: str | None = None
    args: tuple[str, ...] | None = field(default=None, metadata=what("a list of words"))
    # written as a mapping (results.json's `env`: {name: value})
    env: tuple[tuple[str, str], ...] | None = field(default=None, metadata=what("a mapping of names to values"))
    cwd: str | None = field(default=None, metadata=what("a path"))
    processes: int | None = None  # only when more than one
    vary: tuple[Factor, ...] | None = field(default=None, metadata=what("a list of factors"))
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this release does not know
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)  # the keys as read, in order

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedConfig:
        """ValueError naming the key (`platform: must be ...`) for a value no release wrote."""
        env = data.get("env")
        if env is not None and not isinstance(env, dict):
            raise ValueError(f"env: must be a mapping of names to values, not {str(env)[:40]!r}")
        for name in env or ():
            problem = variable_name_problem(name)
            if problem:  # `harness check --env NAME=...` is printed from these
                raise ValueError(f"env: {problem}")
        return read_recorded(cls, {**data, "env": list(env.items())} if env is not None else data)

    def to_json(self) -> dict[str, Any]:
        out = write_recorded(self)
        if self.env is not None:
            out["env"] = dict(self.env)
        return out

    @property
    def thresholds(self) -> ThresholdMode:
        """Whose cache thresholds the runs had (written only when not the harness's)."""
        return self.cache_thresholds or ThresholdMode.HARNESS




@dataclass(frozen=True)
class BisectRange:
    """What `harness bisect` was given: the endpoints (None: found by search) and the jax clone, if any.
    Written as three keys of `options`, null where not given."""

    good: str | None = None
    bad: str | None = None
    jax_repo: str | None = None


@dataclass(frozen=True)
class RecordedOptions:
    """How the cells were measured: results.json's `options` (runs, jobs, seeds, backend and why)."""

    runs: int | None = None  # the most runs per cell
    jobs: int | None = None  # runs at once
    jobs_why: str | None = None
    seeds: SeedStrategy | None = None  # absent in folders written before --seeds
    all_runs: bool | None = None  # a sweep's; a bisection writes none
    bisect: BisectRange | None = None  # a bisection's
    backend: BackendName | None = None
    backend_reason: str | None = None
    # Where packages came from besides PyPI (--index-url, --extra-index-url, --with-editable); absent: PyPI.
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] | None = field(default=None, metadata=what("a list of URLs"))
    editables: tuple[str, ...] | None = field(default=None, metadata=what("a list of paths"))
    # Each editable's content digest, in the order of `editables` (absent in folders written before it).
    editable_digests: tuple[str, ...] | None = field(default=None, metadata=what("a list of digests"))
    # harness check: whether each cell also read its folder through another path (--no-moved-folder: false);
    # absent in a config's sweep and in folders written before it (no such run was made)
    moved_folder: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedOptions:
        options = read_recorded(cls, data, known=_OPTIONS_KEYS)
        if not any(k in data for k in _BISECT_KEYS):
            return options
        return replace(options, bisect=read_recorded(BisectRange, {k: data.get(k) for k in _BISECT_KEYS},
                                                     known=_BISECT_KEYS, extra=None, order=None))

    def to_json(self) -> dict[str, Any]:
        out = write_recorded(replace(self, bisect=None, order=()))
        if self.bisect is not None:  # all three after all_runs, null where not given, as a bisection wrote them
            place = next((i for i, k in enumerate(out) if k not in _BEFORE_BISECT), len(out))
            items = list(out.items())
            out = {**dict(items[:place]), **to_builtins(self.bisect), **dict(items[place:])}
        return in_order(out, self.order)

    @property
    def overlapped(self) -> bool:
        """With --jobs N>1 a cell's runs overlap, and a run's new_entries may include a neighbour's key."""
        return (self.jobs or 1) > 1


_BISECT_KEYS = ("good", "bad", "jax_repo")
_OPTIONS_KEYS = (*recorded_keys(RecordedOptions, "extra", "order", "bisect"), *_BISECT_KEYS)
_BEFORE_BISECT = ("runs", "jobs", "jobs_why", "seeds", "all_runs")


@dataclass(frozen=True)
class HostFacts:
    """The measuring machine (results.json's `host`; a fingerprint's too): its own facts, then `facts`,
    what the backend said of itself (docker_version, image, path...; a name the host's own facts use is
    written `backend_<name>`) and any fact this release does not name, in the order they were written."""

    backend: BackendName | None = None
    os: str | None = None
    python: str | None = None  # the harness's Python version
    cpu_count: int | None = None
    harness_python: str | None = None  # its path on the measuring machine
    harness_version: str | None = None  # the harness that measured (absent in older folders)
    # from nvidia-smi: `name (memory)` each
    gpus: tuple[str, ...] | None = field(default=None, metadata=what("a list of GPUs"))
    driver_version: str | None = None
    slurm_job_id: str | None = None  # the Slurm job (and array task) that measured, so `sacct -j` finds it
    slurm_array_job_id: str | None = None
    slurm_array_task_id: str | None = None
    slurm_node: str | None = None
    hostname: str | None = None  # a fingerprint's
    machine: str | None = None  # a fingerprint's
    facts: Mapping[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostFacts:
        return read_recorded(cls, data, extra="facts")

    def to_json(self) -> dict[str, Any]:
        # The backend's facts first, then the host's own: as host_facts (service/measurement.py) always ordered them.
        own = write_recorded(replace(self, facts={}, order=()), extra="facts")
        backend = {"backend": own.pop("backend")} if "backend" in own else {}
        return in_order({**backend, **self.facts, **own}, self.order)




@dataclass
class ResultsHeader:
    """What was measured, how and where: fixed when a sweep (or a bisection) starts."""

    command: str = ""  # shell-quoted, ready to paste
    config: RecordedConfig = field(default_factory=RecordedConfig)
    versions: list[str] = field(default_factory=list)  # the resolved releases
    options: RecordedOptions = field(default_factory=RecordedOptions)
    host: HostFacts = field(default_factory=HostFacts)
    shard: dict[str, Any] | None = None  # Shard.to_json(): this machine's share of the cells
    created: str | None = None
    resumed: list[str] = field(default_factory=list)  # when --resume continued it
    # Every release on the index from the first version to the last (measured or not): what a boundary
    # between two measured releases leaves unmeasured. Empty in results written before it (not known).
    releases: list[str] = field(default_factory=list)

    FIELDS = ("command", "config", "versions", "options", "host", "shard", "created", "resumed", "releases")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResultsHeader:
        """The header of a results document whose top-level types were checked (results.DOCUMENT_TYPES);
        ValueError naming the key (`config.platform: ...`) for a value no release wrote."""
        parts: dict[str, Any] = {}
        for key, part in (("config", RecordedConfig), ("options", RecordedOptions), ("host", HostFacts)):
            try:
                parts[key] = part.from_json(data.get(key) or {})
            except ValueError as exc:
                raise ValueError(f"{key}.{exc}") from None
        plain = {k: data[k] for k in ("command", "versions", "shard", "created", "resumed", "releases")
                 if data.get(k) is not None}
        return cls(**plain, **parts)

    def to_json(self) -> dict[str, Any]:
        out = {"created": self.created, "command": self.command, "config": self.config.to_json(),
               "versions": self.versions, "options": self.options.to_json(), "host": self.host.to_json()}
        if self.shard:
            out["shard"] = self.shard
        if self.resumed:
            out["resumed"] = self.resumed
        if self.releases:
            out["releases"] = self.releases
        return out
