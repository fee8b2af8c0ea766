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

from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping, TypeVar

from harness.confidence import SeedStrategy
from harness.factors import Factor
from harness.model import BackendName, Mesh, Platform, ThresholdMode

T = TypeVar("T")


def _read(data: Mapping[str, Any], key: str, read: Callable[[Any], T], what: str) -> T | None:
    """data[key] read by `read`, None when absent or null; ValueError naming the key when it is not `what`."""
    value = data.get(key)
    if value is None:
        return None
    try:
        return read(value)
    except (TypeError, ValueError, KeyError, AttributeError):
        raise ValueError(f"{key}: must be {what}, not {str(value)[:40]!r}") from None


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError
    return value


def _number(value: Any) -> float:
    """A number as written (300 stays 300, 300.0 stays 300.0: the file is written back as it was)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError
    return dict(value)


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise TypeError
    return tuple(_text(v) for v in value)


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise TypeError
    return tuple((_text(k), _text(v)) for k, v in value.items())


def _listed(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)


def _unknown(data: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in known}


def _written(pairs: list[tuple[str, Any]], extra: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in pairs if v is not None}, **extra}


def _in_order(out: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """`out` with the keys a file had in the order it had them (then any others): what is read is written
    back as it was, whatever order an older release wrote."""
    return {**{k: out[k] for k in order if k in out}, **out}


@dataclass(frozen=True)
class RecordedConfig:
    """The config as resolved when the sweep started (config.Config.to_json), as results.json keeps it.

    Not a `Config`: an old folder's config need not pass today's checks (its script may be gone), and it
    is written back key for key. `repro` is a built-in's name or a script's path; `module` replaces it for
    `harness check -m`. `source` is the config file's path, or config.CHECK_SOURCE."""

    name: str | None = None
    repro: str | None = None
    jax_versions: tuple[str, ...] | None = None
    platform: Platform | None = None
    device_count: int | None = None
    meshes: tuple[Mesh, ...] | None = None
    runs: int | None = None
    timeout_s: float | None = None
    docker: Mapping[str, Any] | None = None  # the config's docker: section (base_image, python)
    source: str | None = None
    python: str | None = None  # only when pinned
    requirements: tuple[str, ...] | None = None  # only when the script has some
    cache_thresholds: ThresholdMode | None = None  # only when not the harness's
    module: str | None = None
    args: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] | None = None
    cwd: str | None = None
    processes: int | None = None  # only when more than one
    vary: tuple[Factor, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys this release does not know
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)  # the keys as read, in order

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedConfig:
        """ValueError naming the key (`platform: must be ...`) for a value no release wrote."""
        return cls(
            name=_read(data, "name", _text, "text"), repro=_read(data, "repro", _text, "text"),
            jax_versions=_read(data, "jax_versions", _texts, "a list of versions"),
            platform=_read(data, "platform", Platform, "one of " + ", ".join(Platform)),
            device_count=_read(data, "device_count", _whole, "a whole number"),
            meshes=_read(data, "meshes", lambda v: tuple(Mesh.from_json(m) for m in v), "a list of meshes"),
            runs=_read(data, "runs", _whole, "a whole number"),
            timeout_s=_read(data, "timeout_s", _number, "a number of seconds"),
            docker=_read(data, "docker", _mapping, "a mapping"),
            source=_read(data, "source", _text, "text"), python=_read(data, "python", _text, "text"),
            requirements=_read(data, "requirements", _texts, "a list of requirements"),
            cache_thresholds=_read(data, "cache_thresholds", ThresholdMode, "one of " + ", ".join(ThresholdMode)),
            module=_read(data, "module", _text, "text"), args=_read(data, "args", _texts, "a list of words"),
            env=_read(data, "env", _pairs, "a mapping of names to values"), cwd=_read(data, "cwd", _text, "a path"),
            processes=_read(data, "processes", _whole, "a whole number"),
            vary=_read(data, "vary", lambda v: tuple(Factor(f) for f in v), "a list of factors"),
            extra=_unknown(data, _CONFIG_KEYS), order=tuple(data))

    def to_json(self) -> dict[str, Any]:
        return _in_order(_written([
            ("name", self.name), ("repro", self.repro),
            ("jax_versions", None if self.jax_versions is None else list(self.jax_versions)),
            ("platform", None if self.platform is None else str(self.platform)),
            ("device_count", self.device_count),
            ("meshes", None if self.meshes is None else [m.to_json() for m in self.meshes]),
            ("runs", self.runs), ("timeout_s", self.timeout_s),
            ("docker", None if self.docker is None else dict(self.docker)),
            ("source", self.source), ("python", self.python),
            ("requirements", None if self.requirements is None else list(self.requirements)),
            ("cache_thresholds", None if self.cache_thresholds is None else str(self.cache_thresholds)),
            ("module", self.module), ("args", None if self.args is None else list(self.args)),
            ("env", None if self.env is None else dict(self.env)), ("cwd", self.cwd),
            ("processes", self.processes), ("vary", None if self.vary is None else [str(f) for f in self.vary]),
        ], self.extra), self.order)

    @property
    def thresholds(self) -> ThresholdMode:
        """Whose cache thresholds the runs had (written only when not the harness's)."""
        return self.cache_thresholds or ThresholdMode.HARNESS


_CONFIG_KEYS = tuple(f.name for f in fields(RecordedConfig) if f.name not in ("extra", "order"))


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
    extra_index_urls: tuple[str, ...] | None = None
    editables: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedOptions:
        bisect = None
        if any(k in data for k in _BISECT_KEYS):
            bisect = BisectRange(*(_read(data, k, _text, "text") for k in _BISECT_KEYS))
        return cls(runs=_read(data, "runs", _whole, "a whole number"), jobs=_read(data, "jobs", _whole, "a whole number"),
                   jobs_why=_read(data, "jobs_why", _text, "text"),
                   seeds=_read(data, "seeds", SeedStrategy, "one of " + ", ".join(SeedStrategy)),
                   all_runs=_read(data, "all_runs", _flag, "true or false"), bisect=bisect,
                   backend=_read(data, "backend", BackendName, "one of " + ", ".join(BackendName)),
                   backend_reason=_read(data, "backend_reason", _text, "text"),
                   index_url=_read(data, "index_url", _text, "text"),
                   extra_index_urls=_read(data, "extra_index_urls", _texts, "a list of URLs"),
                   editables=_read(data, "editables", _texts, "a list of paths"),
                   extra=_unknown(data, _OPTIONS_KEYS), order=tuple(data))

    def to_json(self) -> dict[str, Any]:
        out = _written([("runs", self.runs), ("jobs", self.jobs), ("jobs_why", self.jobs_why),
                        ("seeds", None if self.seeds is None else str(self.seeds)), ("all_runs", self.all_runs)], {})
        if self.bisect is not None:  # all three, null where not given, as a bisection always wrote them
            out.update(good=self.bisect.good, bad=self.bisect.bad, jax_repo=self.bisect.jax_repo)
        return _in_order({**out, **_written([("backend", None if self.backend is None else str(self.backend)),
                                             ("backend_reason", self.backend_reason),
                                             ("index_url", self.index_url),
                                             ("extra_index_urls", _listed(self.extra_index_urls)),
                                             ("editables", _listed(self.editables))], self.extra)}, self.order)

    @property
    def overlapped(self) -> bool:
        """With --jobs N>1 a cell's runs overlap, and a run's new_entries may include a neighbour's key."""
        return (self.jobs or 1) > 1


_BISECT_KEYS = ("good", "bad", "jax_repo")
_OPTIONS_KEYS = (*(f.name for f in fields(RecordedOptions) if f.name not in ("extra", "order", "bisect")),
                 *_BISECT_KEYS)


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
    gpus: tuple[str, ...] | None = None  # from nvidia-smi: `name (memory)` each
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
        text = {k: _read(data, k, _text, "text") for k in _HOST_TEXT}
        return cls(backend=_read(data, "backend", BackendName, "one of " + ", ".join(BackendName)),
                   cpu_count=_read(data, "cpu_count", _whole, "a whole number"),
                   gpus=_read(data, "gpus", _texts, "a list of GPUs"), facts=_unknown(data, _HOST_KEYS),
                   order=tuple(data), **text)

    def to_json(self) -> dict[str, Any]:
        # The backend's facts first, then the host's own: as results.host_facts always ordered them.
        own = [(k, getattr(self, k)) for k in _HOST_KEYS if k != "backend"]
        return _in_order({**_written([("backend", None if self.backend is None else str(self.backend))], self.facts),
                          **_written([(k, list(v) if isinstance(v, tuple) else v) for k, v in own], {})}, self.order)


_HOST_TEXT = ("os", "python", "harness_python", "harness_version", "driver_version", "slurm_job_id", "slurm_array_job_id",
              "slurm_array_task_id", "slurm_node", "hostname", "machine")
_HOST_KEYS = tuple(f.name for f in fields(HostFacts) if f.name not in ("facts", "order"))


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
