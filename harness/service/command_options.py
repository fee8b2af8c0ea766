"""The typed options each command's service takes: ordinary dataclass fields. A field that holds an option is
named as it (`runs_at_once: int | None = Options.runs_at_once`: its default the declaration's) or says which it holds
(`field(default=..., metadata=takes("dest"))`); its type is the option's, as harness/inputs/options.py declares
it once in `Options` (tests/unit/test_options.py checks). A class's other fields are what the service needs
besides the options. `from_given` fills both kinds from what was given."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.core.confidence import SeedStrategy
from harness.core.kinds import BackendName, Platform, ThresholdMode
from harness.core.factors import Factor
from harness.inputs.options import Given, Options, takes
from harness.inputs.sharding import Shard


@dataclass(frozen=True)
class PythonOptions:
    """Where to look for the Pythons that releases need besides the harness's own (harness/inputs/pythons.py):
    --python-search interpreters or folders, --install-python (uv downloads one none here has)."""

    search: tuple[Path, ...] = field(default=Options.python_search, metadata=takes("python_search"))
    install: bool = field(default=Options.install_python, metadata=takes("install_python"))


@dataclass(frozen=True)
class MeasureOptions:
    """What every measuring command takes (run, check, nightly, bisect): where it runs, what replaces the
    config's keys, where packages come from (harness/inputs/dependencies.py's Sources)."""

    backend: BackendName = Options.backend
    versions: tuple[str, ...] | None = Options.versions
    runs: int | None = Options.runs
    runs_at_once: int | None = Options.runs_at_once
    out: Path = Options.out
    rebuild: bool = Options.rebuild
    python: str | None = Options.python
    seeds: SeedStrategy = Options.seeds
    shard: Shard | None = Options.shard
    cache_thresholds: ThresholdMode | None = Options.cache_thresholds
    processes: int | None = Options.processes
    vary: tuple[Factor, ...] | None = Options.vary
    index_url: str | None = Options.index_url
    extra_index_urls: tuple[str, ...] = Options.extra_index_urls
    with_editable: tuple[Path, ...] = Options.with_editable
    pythons: PythonOptions = PythonOptions()
    # The command as parsed (harness/inputs/options.py): every command line printed for it is spelled from this.
    given: Given | None = field(default=None, compare=False)
    # The command line as typed, which the results header records ("harness" alone for options built by hand).
    command: str = field(default="harness", compare=False)


@dataclass(frozen=True)
class SweepOptions(MeasureOptions):
    """run, check, nightly: every run even after a cell reproduced; finish the sweep of a results folder."""

    all_runs: bool = Options.all_runs
    resume: Path | None = Options.resume


@dataclass(frozen=True)
class SubmitOptions(MeasureOptions):
    """`harness submit`: the sweep's options (as for run) and what each Slurm task asks for."""

    shards: int = Options.shards
    all_runs: bool = Options.all_runs
    partition: str | None = Options.partition
    cpus_per_task: int | None = Options.cpus_per_task
    time: str | None = Options.time
    sbatch_args: tuple[str, ...] = Options.sbatch_args
    only_shards: tuple[int, ...] = Options.only_shards


@dataclass(frozen=True)
class BisectOptions(MeasureOptions):
    """`harness bisect`: the known endpoints, a jax clone for the commits, whether to start over."""

    good: str | None = Options.good
    bad: str | None = Options.bad
    jax_repo: Path | None = Options.jax_repo
    fresh: bool = Options.fresh


@dataclass(frozen=True)
class ReduceOptions(MeasureOptions):
    """`harness reduce`: the measuring options (as for check), the good release, the search's budget."""

    good: str | None = Options.good
    resume: Path | None = Options.resume
    max_candidates: int | None = Options.max_candidates


@dataclass(frozen=True)
class TriageOptions(MeasureOptions):
    """`harness triage` (and `nightly --triage`): the clone for the commits, the reduction's budget."""

    jax_repo: Path | None = Options.jax_repo
    max_candidates: int | None = Options.max_candidates


@dataclass(frozen=True)
class ScriptRunOptions:
    """How `harness check` runs the user's code: a module instead of the script, arguments, environment
    additions, working folder (validated as a config's module/args/env/cwd keys), and the script's
    requirements besides its inline metadata (--with strings, --requirements files)."""

    module: str | None = Options.module
    cwd: Path | None = Options.cwd
    with_requirements: tuple[str, ...] = Options.with_requirements
    requirements_files: tuple[Path, ...] = Options.requirements_files
    args: tuple[str, ...] = field(default=Options.script_args, metadata=takes("script_args"))
    # --env NAME=VALUE ... as a mapping (an option's value made into another type: not the option's field).
    env: dict[str, str] = field(default_factory=dict, metadata={"derived_from": "env"})


@dataclass(frozen=True, kw_only=True)
class ScriptCheck:
    """The user's code that `harness check` (and reduce, fingerprint) measures, and how: what becomes its
    config (sweeping.check_config). No defaults: each is given (versions None or empty: the latest release;
    runs None: enough runs for the confidence target)."""

    script: Path | None
    versions: tuple[str, ...] | None
    platform: Platform
    device_count: int | None  # None: cpu's 8, or the host's devices on an accelerator (Config.host_devices)
    runs: int | None
    timeout_s: float = field(metadata=takes("timeout"))
    script_run: ScriptRunOptions


@dataclass(frozen=True)
class JaxRef:
    """nightly --jax-repo PATH --ref REF: the jax commit measured beside the releases (made only with a repo)."""

    ref: str = Options.ref
    repo: Path | None = field(default=Options.jax_repo, metadata=takes("jax_repo"))


@dataclass(frozen=True)
class FingerprintOptions(MeasureOptions):
    """`harness fingerprint`: one run per release with one hash seed, in a cache folder at a fixed path (so
    that two machines compare the same thing), written as JSON to `output` (stdout when None)."""

    seed: int = Options.seed
    cache_dir: Path | None = Options.cache_dir
    output: Path | None = Options.output
