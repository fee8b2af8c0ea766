"""Generated from harness.service.options by `make docs`; do not edit by hand."""

from dataclasses import dataclass
from pathlib import Path

from harness.core.confidence import SeedStrategy
from harness.core.kinds import BackendName, Platform, ThresholdMode
from harness.core.vary_factors import Factor
from harness.inputs.options import Given
from harness.inputs.sharding import Shard


@dataclass(frozen=True)
class PythonOptions:
    """Where to look for the Pythons that releases need besides the harness's own (harness/inputs/pythons.py):
    --python-search interpreters or folders, --install-python (uv downloads one none here has)."""
    search: tuple[Path, ...] = ...  # --python-search
    install: bool = ...  # --install-python


@dataclass(frozen=True)
class MeasureOptions:
    """What every measuring command takes (run, check, nightly, bisect): where it runs, what replaces the
    config's keys, where packages come from (harness/inputs/dependencies.py's Sources)."""
    backend: BackendName = ...  # --backend
    versions: tuple[str, ...] | None = ...  # --versions
    runs: int | None = ...  # --runs
    jobs: int | None = ...  # --jobs
    out: Path = ...  # --out
    rebuild: bool = ...  # --rebuild
    python: str | None = ...  # --python
    seeds: SeedStrategy = ...  # --seeds
    shard: Shard | None = ...  # --shard
    cache_thresholds: ThresholdMode | None = ...  # --cache-thresholds
    processes: int | None = ...  # --processes
    vary: tuple[Factor, ...] | None = ...  # --vary
    index_url: str | None = ...  # --index-url
    extra_index_urls: tuple[str, ...] = ...  # --extra-index-url
    with_editable: tuple[Path, ...] = ...  # --with-editable
    pythons: PythonOptions = ...
    given: Given | None = ...
    command: str = ...


@dataclass(frozen=True)
class SweepOptions(MeasureOptions):
    """run, check, nightly: every run even after a cell reproduced; finish the sweep of a results folder."""
    all_runs: bool = ...  # --all-runs
    resume: Path | None = ...  # --resume


@dataclass(frozen=True)
class SubmitOptions(MeasureOptions):
    """`harness submit`: the sweep's options (as for run) and what each Slurm task asks for."""
    shards: int = ...  # --shards
    all_runs: bool = ...  # --all-runs
    partition: str | None = ...  # --partition
    cpus_per_task: int | None = ...  # --cpus-per-task
    time: str | None = ...  # --time
    sbatch_args: tuple[str, ...] = ...  # --sbatch-arg
    only_shards: tuple[int, ...] = ...  # --only-shards


@dataclass(frozen=True)
class BisectOptions(MeasureOptions):
    """`harness bisect`: the known endpoints, a jax clone for the commits, whether to start over."""
    good: str | None = ...  # --good
    bad: str | None = ...  # --bad
    jax_repo: Path | None = ...  # --jax-repo
    fresh: bool = ...  # --fresh


@dataclass(frozen=True)
class ReduceOptions(MeasureOptions):
    """`harness reduce`: the measuring options (as for check), the good release, the search's budget."""
    good: str | None = ...  # --good
    resume: Path | None = ...  # --resume
    max_candidates: int | None = ...  # --max-candidates


@dataclass(frozen=True)
class ScriptRun:
    """How `harness check` runs the user's code: a module instead of the script, arguments, environment
    additions, working folder (validated as a config's module/args/env/cwd keys), and the script's
    requirements besides its inline metadata (--with strings, --requirements files)."""
    module: str | None = ...  # -m
    cwd: Path | None = ...  # --cwd
    with_requirements: tuple[str, ...] = ...  # --with
    requirements_files: tuple[Path, ...] = ...  # --requirements
    args: tuple[str, ...] = ...  # --
    env: dict[str, str] = ...


@dataclass(frozen=True, kw_only=True)
class ScriptCheck:
    """The user's code that `harness check` (and reduce, fingerprint) measures, and how: what becomes its
    config (sweeping.check_config). No defaults: each is given (versions None or empty: the latest release;
    runs None: enough runs for the confidence target)."""
    script: Path | None  # SCRIPT
    versions: tuple[str, ...] | None  # --versions
    platform: Platform  # --platform
    device_count: int  # --device-count
    runs: int | None  # --runs
    timeout_s: float  # --timeout
    script_run: ScriptRun


@dataclass(frozen=True)
class JaxRef:
    """nightly --jax-repo PATH --ref REF: the jax commit measured beside the releases (made only with a
    repo)."""
    ref: str = ...  # --ref
    repo: Path | None = ...  # --jax-repo


@dataclass(frozen=True)
class FingerprintOptions(MeasureOptions):
    """`harness fingerprint`: one run per release with one hash seed, in a cache folder at a fixed path (so
    that two machines compare the same thing), written as JSON to `output` (stdout when None)."""
    seed: int = ...  # --seed
    cache_dir: Path | None = ...  # --cache-dir
    output: Path | None = ...  # --output


STUB: Path


def stub() -> str: ...
