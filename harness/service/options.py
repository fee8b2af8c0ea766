"""The typed options each command's service takes: filled from what was given (harness/inputs/options.py
declares every flag once; `from_given` fills a field named as an option's dest)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.confidence import SeedStrategy
from harness.environments import BackendName
from harness.core.vary_factors import Factor
from harness.core.model import DEFAULT_BACKEND, Platform, ThresholdMode
from harness.inputs.options import DEFAULT_RESULTS, Given
from harness.inputs.sharding import Shard


@dataclass(frozen=True)
class PythonOptions:
    """Where to look for the Pythons that releases need besides the harness's own (harness/inputs/pythons.py)."""

    # --python-search: interpreters, or folders holding them
    search: tuple[Path, ...] = field(default=(), metadata={"option": "python_search"})
    # --install-python: let uv download a Python none here has (off: it downloads)
    install: bool = field(default=False, metadata={"option": "install_python"})


@dataclass(frozen=True)
class MeasureOptions:
    """What every measuring command takes (run, check, nightly, bisect)."""

    backend: BackendName = DEFAULT_BACKEND
    versions: tuple[str, ...] | None = None  # replaces the config's jax_versions
    runs: int | None = None  # replaces the config's runs
    jobs: int | None = None  # runs at once; None: auto (harness/measure/parallelism.py)
    out: Path = DEFAULT_RESULTS
    rebuild: bool = False
    python: str | None = None  # --backend local: the interpreter
    seeds: SeedStrategy = SeedStrategy.CHOSEN
    shard: Shard | None = None
    pythons: PythonOptions = PythonOptions()
    cache_thresholds: ThresholdMode | None = None  # replaces the config's cache_thresholds
    # The command as parsed (harness/inputs/options.py): every command line printed for it is spelled from this.
    given: Given | None = field(default=None, compare=False)
    # The command line as typed, which the results header records ("harness" alone for options built by hand).
    command: str = field(default="harness", compare=False)
    processes: int | None = None  # replaces the config's processes (a multi-process job per run)
    vary: tuple[Factor, ...] | None = None  # replaces the config's vary (docs/variation.md)
    # Where packages come from (harness/inputs/dependencies.py's Sources): another index, the user's own package.
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    with_editable: tuple[Path, ...] = ()


@dataclass(frozen=True)
class SweepOptions(MeasureOptions):
    all_runs: bool = False  # every run even after a cell reproduced
    resume: Path | None = None  # finish the sweep of this results folder


@dataclass(frozen=True)
class SubmitOptions(MeasureOptions):
    """`harness submit`: the sweep's options (as for run) and what each Slurm task asks for."""

    shards: int = 1
    all_runs: bool = False
    partition: str | None = None  # None: the cluster's default
    cpus_per_task: int | None = None  # None: --jobs (each parallel run has a core)
    time: str | None = None  # Slurm's format; None: the scripts' default
    sbatch_args: tuple[str, ...] = ()  # more #SBATCH lines, e.g. --account=lab
    only_shards: tuple[int, ...] = ()  # re-submit these into the folder `out` names


@dataclass(frozen=True)
class BisectOptions(MeasureOptions):
    good: str | None = None
    bad: str | None = None
    jax_repo: Path | None = None
    fresh: bool = False

@dataclass(frozen=True)
class ReduceOptions(MeasureOptions):
    """`harness reduce`: the measuring options (as for check), the good release, the search's budget."""

    good: str | None = None
    resume: Path | None = None  # continue the reduction in this folder
    max_candidates: int | None = None  # candidates run at most (None: until no pass shrinks the program)


@dataclass(frozen=True)
class ScriptRun:
    """How `harness check` runs the user's code: a module instead of the script, arguments, environment
    additions, working folder (validated as a config's module/args/env/cwd keys)."""

    module: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    # The script's requirements besides those in its inline metadata: --with strings, --requirements files.
    with_requirements: tuple[str, ...] = ()
    requirements_files: tuple[Path, ...] = ()

@dataclass(frozen=True, kw_only=True)
class ScriptCheck:
    """The user's code that `harness check` (and reduce, fingerprint) measures, and how: what becomes its
    config (sweeping.check_config). No defaults here: the options' declarations have them."""

    script: Path | None
    how: ScriptRun
    versions: tuple[str, ...] | None  # None or empty: the latest release
    platform: Platform
    device_count: int
    runs: int | None  # None: enough runs for the confidence target
    timeout_s: float = field(metadata={"option": "timeout"})


@dataclass(frozen=True)
class JaxRef:
    """nightly --jax-repo PATH --ref REF: the jax commit measured beside the releases."""

    repo: Path
    ref: str = "main"


@dataclass(frozen=True)
class FingerprintOptions(MeasureOptions):
    """`harness fingerprint`: one run per release with one hash seed, in a cache folder at a fixed path (so
    that two machines compare the same thing), written as JSON to `output` (stdout when None)."""

    seed: int = 1
    cache_dir: Path | None = None  # None: FINGERPRINT_CACHE
    output: Path | None = None
