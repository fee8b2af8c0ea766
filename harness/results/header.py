"""The results header as typed data (pure): what was measured (`RecordedConfig`), how (`RecordedOptions`)
and where (`HostFacts`), held by `ResultsHeader`; results.json's `config`, `options` and `host`.

Each part is a msgspec Struct shaped like the file (schema_version 3): a key left out is None (and not
written back), and harness/results/document.py's `upgrade` maps what earlier releases wrote to this shape
before a strict conversion. Keys this release does not know are not kept, except a host's `facts` (what a
backend said of itself), which merge carries into `merged_from`.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from harness.core.confidence import SeedStrategy
from harness.core.records import convert, plain
from harness.core.factors import Factor
from harness.core.kinds import BackendName, Platform, ThresholdMode
from harness.core.model import Mesh
from harness.core.runs import variable_name_problem
from harness.inputs.config import Config

_Words = Annotated[tuple[str, ...], msgspec.Meta(description="a list of words")]
_Count = Annotated[int, msgspec.Meta(ge=1)]


class RecordedConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """The config as resolved when the sweep started (`recorded_config`), as results.json keeps it.

    Not a `Config`: an old folder's config need not pass today's checks (its script may be gone). `repro` is
    a built-in's name or a script's path; `module` replaces it for `harness check -m`. `source` is the config
    file's path, or config.CHECK_SOURCE."""

    name: str | None = None
    repro: str | None = None
    jax_versions: Annotated[tuple[str, ...], msgspec.Meta(description="a list of versions")] | None = None
    platform: Platform | None = None
    device_count: _Count | None = None
    meshes: Annotated[tuple[Mesh, ...], msgspec.Meta(description="a list of meshes")] | None = None
    runs: _Count | None = None
    timeout_s: Annotated[int | float, msgspec.Meta(description="a number of seconds")] | None = None  # 300 stays 300
    # the config's docker: section (base_image, python)
    docker: Annotated[dict[str, Any], msgspec.Meta(description="a mapping")] | None = None
    source: str | None = None
    python: str | None = None  # only when pinned
    requirements: Annotated[tuple[str, ...], msgspec.Meta(description="a list of requirements")] | None = None
    cache_thresholds: ThresholdMode | None = None  # only when not the harness's
    module: str | None = None
    args: _Words | None = None
    env: Annotated[dict[str, str], msgspec.Meta(description="a mapping of names to values")] | None = None
    cwd: Annotated[str, msgspec.Meta(description="a path")] | None = None
    processes: _Count | None = None  # only when more than one
    vary: Annotated[tuple[Factor, ...], msgspec.Meta(description="a list of factors")] | None = None

    def __post_init__(self) -> None:
        for name in self.env or ():
            problem = variable_name_problem(name)
            if problem:  # `harness check --env NAME=...` is printed from these
                raise ValueError(f"env: {problem}")

    @property
    def thresholds(self) -> ThresholdMode:
        """Whose cache thresholds the runs had (written only when not the harness's)."""
        return self.cache_thresholds or ThresholdMode.HARNESS


def recorded_config(config: Config) -> RecordedConfig:
    """What results.json records of `config`. A key added after the first release is left out (None) where
    it holds its default, so that a folder made before it existed is still the same sweep (--resume, merge)."""
    repro = config.repro
    return RecordedConfig(
        name=config.name, repro=None if repro.module else repro.name if repro.builtin else str(repro.path),
        jax_versions=config.jax_versions, platform=config.platform, device_count=config.device_count,
        meshes=config.meshes, runs=config.runs, timeout_s=config.timeout_s, docker=dict(config.docker),
        source=config.source, python=str(config.python) if config.python else None,
        requirements=config.requirements.items or None,
        cache_thresholds=None if config.cache_thresholds == ThresholdMode.HARNESS else config.cache_thresholds,
        module=repro.module, args=config.args or None, env=dict(config.env) or None,
        cwd=None if config.cwd is None else str(config.cwd), processes=config.processes if config.processes > 1 else None,
        vary=config.vary or None)


class BisectRange(msgspec.Struct, frozen=True):
    """What `harness bisect` was given: the endpoints (None: found by search) and the jax clone, if any;
    `options.bisect` in the file, null where not given."""

    good: str | None = None
    bad: str | None = None
    jax_repo: str | None = None


class RecordedOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """How the cells were measured: results.json's `options` (runs, jobs: the runs at once, seeds, backend and why)."""

    runs: _Count | None = None  # the most runs per cell
    # --jobs: the file's keys name the flag, as `runs` and `seeds` do
    runs_at_once: _Count | None = msgspec.field(default=None, name="jobs")
    runs_at_once_why: str | None = msgspec.field(default=None, name="jobs_why")
    seeds: SeedStrategy | None = None  # absent in folders written before --seeds
    all_runs: bool | None = None  # a sweep's; a bisection writes none
    bisect: BisectRange | None = None  # a bisection's
    backend: BackendName | None = None
    backend_reason: str | None = None
    # Where packages came from besides PyPI (--index-url, --extra-index-url, --with-editable); absent: PyPI.
    index_url: str | None = None
    extra_index_urls: Annotated[tuple[str, ...], msgspec.Meta(description="a list of URLs")] | None = None
    editables: Annotated[tuple[str, ...], msgspec.Meta(description="a list of paths")] | None = None
    # Each editable's content digest, in the order of `editables` (absent in folders written before it).
    editable_digests: Annotated[tuple[str, ...], msgspec.Meta(description="a list of digests")] | None = None
    # harness check: whether each cell also read its folder through another path (--no-moved-folder: false);
    # absent in a config's sweep and in folders written before it (no such run was made)
    moved_folder: bool | None = None

    @property
    def overlapped(self) -> bool:
        """With --jobs N>1 a cell's runs overlap, and a run's new_entries may include a neighbour's key."""
        return (self.runs_at_once or 1) > 1


class HostFacts(msgspec.Struct, frozen=True, omit_defaults=True):
    """The measuring machine (results.json's `host`; a fingerprint's too): its own facts, then `facts`, what
    the backend said of itself (docker_version, image, path...) and any fact this release does not name."""

    backend: BackendName | None = None
    os: str | None = None
    python: str | None = None  # the harness's Python version
    cpu_count: int | None = None
    harness_python: str | None = None  # its path on the measuring machine
    harness_version: str | None = None  # the harness that measured (absent in older folders)
    # from nvidia-smi: `name (memory)` each
    gpus: Annotated[tuple[str, ...], msgspec.Meta(description="a list of GPUs")] | None = None
    driver_version: str | None = None
    cuda_version: str | None = None  # the CUDA the driver runs (nvidia-smi's header; absent in older folders)
    jax_cuda_plugin: str | None = None  # `jax-cuda13-plugin 0.11.2`: --backend local's interpreter's
    # A TPU host's (absent elsewhere, and in older folders): its chips, TPU_ACCELERATOR_TYPE, and the libtpu that
    # --backend local's interpreter has (each run's devices record the platform version JAX reported)
    tpu_chips: int | None = None
    tpu_accelerator_type: str | None = None
    libtpu_version: str | None = None
    slurm_job_id: str | None = None  # the Slurm job (and array task) that measured, so `sacct -j` finds it
    slurm_array_job_id: str | None = None
    slurm_array_task_id: str | None = None
    slurm_node: str | None = None
    hostname: str | None = None  # a fingerprint's
    machine: str | None = None  # a fingerprint's
    facts: dict[str, Any] = {}


HOST_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(HostFacts)) - {"facts"}


class RecordedShard(msgspec.Struct, frozen=True):
    """This machine's share of a sweep's cells (results.json's `shard`): `--shard index/count`, the cells of
    the whole sweep in the order it plans them, and this shard's."""

    index: _Count
    count: _Count
    planned: list[str] = []
    cells: list[str] = []


class ResultsHeader(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What was measured, how and where: fixed when a sweep (or a bisection) starts; results.json's keys
    before `finished`."""

    created: str | None = None
    command: str = ""  # shell-quoted, ready to paste
    config: RecordedConfig = RecordedConfig()
    versions: list[str] = []  # the resolved releases
    options: RecordedOptions = RecordedOptions()
    host: HostFacts = HostFacts()
    shard: RecordedShard | None = None  # this machine's share of the cells
    resumed: list[str] = []  # when --resume continued it
    # Every release on the index from the first version to the last (measured or not): what a boundary
    # between two measured releases leaves unmeasured. Empty in results written before it (not known).
    releases: list[str] = []


HEADER_KEYS = tuple(f.encode_name for f in msgspec.structs.fields(ResultsHeader))


def host_shape(facts: dict[str, Any]) -> dict[str, Any]:
    """A host's facts as one mapping (what a backend reports, and the shape before schema_version 3) in the
    file's shape: the facts this release does not name under `facts`."""
    nested = facts.get("facts")
    other = {**(nested if isinstance(nested, dict) else {}), **{k: v for k, v in facts.items() if k not in HOST_KEYS
                                                                and not (k == "facts" and isinstance(v, dict))}}
    return {**{k: v for k, v in facts.items() if k in HOST_KEYS}, **({"facts": other} if other else {})}


def host_flat(host: HostFacts) -> dict[str, Any]:
    """A host's facts as one mapping, as a reader names them: the backend, its facts, then the host's own."""
    own = plain(host)
    other = own.pop("facts", {})
    backend = {"backend": own.pop("backend")} if "backend" in own else {}
    return {**backend, **other, **own}


def host_record(facts: dict[str, Any]) -> HostFacts:
    """The host of a mapping of facts (the host's own and a backend's); None values are left out."""
    return convert(host_shape({k: v for k, v in facts.items() if v is not None}), HostFacts, "host")
