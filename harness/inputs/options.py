"""Every option of every command, each one typed field of `Options`, declared once (the model: nox's
`_options.py`; the machinery: harness/inputs/option_set.py); each command picks the option groups it takes
(the model: pip's `cmdoptions.py`). Pure, and below the report, so every layer above can spell with it.

A field is one flag (or positional argument): its name is the dest, its annotation the value's type, and its
metadata (`opt(...)`) holds its flags, default, help, argument group, example (the words after the flag: docs,
round-trip test), how its text is read and spelled back, and whether it is part of the sweep's identity
(harness/results/identity.py). From these come the parser (`harness --help`), what the service receives
(`Given`), every command line the harness prints (`Given.line`: resume, bisect and Slurm task lines, the
report's reproduce line) and docs/reference/commands/ (`make docs`; tests/unit/test_docs.py checks it).

To add an option: a field of `Options` (its place is its place in --help), named in a group below or in the
command that takes it. If the service acts on it, a field holding it in harness/service/command_options.py, named as it
(`runs_at_once: int | None = Options.runs_at_once`) or not (`field(default=..., metadata=takes("runs_at_once"))`),
which `from_given` fills; tests/unit/test_options.py checks its type and default are the declaration's."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, get_type_hints

from harness.core.confidence import (SUITE_RUNS, SeedStrategy, default_runs, miss_probability_random,
                                     runs_for_target)
from harness.core.files import harness_version
from harness.core.kinds import DEFAULT_BACKEND, BackendName, Platform, ThresholdMode, Verdict
from harness.core.factors import Factor
from harness.inputs import option_set
from harness.inputs.config import MAX_DEVICES, MAX_PROCESSES, MAX_RUNS
from harness.inputs.option_set import (CHECK_FAILS_ON, SCRIPT_ARGS, TAKES, Command, Group, OneLineParser, Option,
                                       factors, fail_on, opt, positive, parse_runs_at_once, seconds, spell_fail_on,
                                       spell_runs_at_once)
from harness.inputs.sharding import Shard, parse_shard
from harness.inputs.versions import LATEST

DEFAULT_RESULTS = Path("results")
COMPLETION_SHELLS = ("bash", "zsh")  # what shtab writes and the tests check
# The Debian releases `harness base-image` builds from (environments/docker/images.py: DEBIAN_PYTHONS, the same).
DEBIAN_RELEASES = ("bookworm", "trixie")
REQUIRED: Any = None  # the default of an option that must be given (argparse sets it before anyone reads it)


@dataclass(frozen=True)
class Options:
    """Every option, in the order --help shows them (positionals first there)."""

    config: Annotated[Path | None, opt(
        help="the config (YAML): the repro, versions, meshes, platform, runs; or a shipped one by name "
        "(shard_map_grad, smoke, releases, nightly, gpu_local)", type=Path, example=("configs/smoke.yaml",),
        # bisect's: a config, or the user's program as check takes it (SCRIPT or -m MODULE, check's options, `-- ARGS`).
        per={"bisect": {"help": "the config (YAML) or a shipped one by name; or your script (*.py; or -m MODULE), "
                        "run as `harness check` runs it, with check's options below and no config", "nargs": "?",
                        "metavar": "CONFIG|SCRIPT"}})] = None
    script: Annotated[Path | None, opt(
        help="the script (or -m MODULE); after `--`, its arguments", type=Path, nargs="?", example=("train.py",),
        per={"reduce": {"help": "the script to reduce; after `--`, its arguments", "nargs": None},
             "init": {"help": "your script: the config runs it (its path is written relative to the config)",
                      "nargs": None}})] = None
    # Right after the script it stands for, so every line spelled from here reads `harness check -m MODULE ...`.
    module: Annotated[str | None, opt(
        "-m", help="run a module as `python -m MODULE` instead of a script: one in the working folder, or one "
        "installed in each release's environment (--with)", metavar="MODULE", example=("mypkg.train",))] = None
    pytest: Annotated[bool, opt(
        "--pytest", help="run a test suite: `-m pytest` (pytest's arguments after `--`; a SCRIPT given is its "
        "first), each key recorded with the test that compiled it (docs/running.md)", action="store_true")] = False
    results: Annotated[Path | tuple[Path, ...] | None, opt(
        help="a results folder (or its results.json)", type=Path, example=("results/run",),
        per={"merge": {"help": "results folders (or results.json files) of the shards", "nargs": "+",
                       "example": ("results/shard-1", "results/shard-2")}})] = None
    versions: Annotated[tuple[str, ...] | None, opt(
        "--versions", help="versions or specifiers replacing the config's jax_versions", nargs="+", metavar="V",
        identity=True, example=(">=0.4.26,<0.4.30", "0.4.31"),
        per={("check", "fingerprint"): {"help": f"versions or specifiers to measure (default: {LATEST})"},
             "reduce": {"help": "the one release where the script reproduces (required)", "example": ("0.4.28",)},
             "versions": {"help": "resolve these instead of the config's jax_versions", "example": ("latest",)}},
    )] = None
    runs: Annotated[int | None, opt(
        "--runs", help="most runs per cell (at least 2; default: the config's)", group=Group.MEASURE,
        type=positive(2, MAX_RUNS), metavar="N", identity=True, example=("8",),
        # A script has no config: its default is what random seeds need for the 1e-3 bound; a test suite's (a
        # module's), the fewest runs that are not weak (service.check_config).
        per={"check": {"help": f"most runs per cell (at least 2; default: {default_runs()}, enough for a miss bound "
                               f"of 1e-3 whatever the script's name sets; a test suite's, --pytest or -m MODULE: "
                               f"{default_runs(suite=True)}, the fewest that are not weak, miss bound "
                               f"{miss_probability_random(SUITE_RUNS):.2g}: --runs {runs_for_target()} for 1e-3)"},
             # bisect takes a config or, as check does, a program: each has its own default
             "bisect": {"help": f"most runs per cell (at least 2; default: a config's `runs:`; a script's "
                                f"{default_runs()}, enough for a miss bound of 1e-3; a test suite's, --pytest or "
                                f"-m MODULE: {default_runs(suite=True)}, miss bound {miss_probability_random(SUITE_RUNS):.2g})"},
             "reduce": {"help": f"most runs per cell (at least 2; default: {default_runs()}, enough "
                                "for a miss bound of 1e-3 whatever the script's name sets)"}})] = None
    runs_at_once: Annotated[int | None, opt(
        "--jobs", help="runs at once (default auto: one per core for cpu cells, 1 for cuda cells)",
        group=Group.ENVIRONMENT, type=parse_runs_at_once, metavar="N|auto", spell=spell_runs_at_once,
        example=("2",))] = None
    backend: Annotated[BackendName, opt(
        "--backend", help="where each JAX version runs (auto = docker if a daemon answers)", group=Group.ENVIRONMENT,
        convert=BackendName, choices=tuple(m.value for m in BackendName), example=("docker",))] = DEFAULT_BACKEND
    seeds: Annotated[SeedStrategy, opt(
        "--seeds", help="chosen: probe the interpreter for hash seeds showing every order of the mesh's axis names "
        "(a script's: the names its first run lowered), then random ones up to --runs (default); random: random "
        "seeds only", group=Group.MEASURE, convert=SeedStrategy, choices=tuple(m.value for m in SeedStrategy),
        identity=True, example=("random",))] = SeedStrategy.CHOSEN
    all_runs: Annotated[bool, opt(
        "--all-runs", help="make every run even after a cell has reproduced (more keys for the report)",
        group=Group.MEASURE, action="store_true", identity=True)] = False
    cache_thresholds: Annotated[ThresholdMode | None, opt(
        "--cache-thresholds", help="the persistent cache's minimum compile time / entry size: zeros, so every "
        "module is cached and measured (harness, the default), or as the script runs: its own, else JAX's defaults "
        "(script); either way the cell says what its own would not write", group=Group.MEASURE,
        convert=ThresholdMode, choices=tuple(m.value for m in ThresholdMode), example=("harness",))] = None
    vary: Annotated[tuple[Factor, ...] | None, opt(
        "--vary", help="after each cell's runs, one run per environment factor with the first run's hash seed: "
        f"{', '.join(f.value for f in Factor)}, or all (docs/variation.md); with a config, replaces its vary",
        group=Group.MEASURE, type=factors, metavar="FACTOR[,FACTOR...]|all", spell=",".join,
        example=("cache-path,cwd",))] = None
    no_moved_folder: Annotated[bool, opt(
        "--no-moved-folder", help="skip the run per cell that reads its cache folder through another path "
        "(the `moved folder` column: the path is in every key from JAX 0.4.36 until 0.11.0; where every key hits "
        "it is one of the planned runs, so skipping it saves a run only where it misses; docs/measuring.md)",
        group=Group.MEASURE, action="store_true")] = False
    rebuild: Annotated[bool, opt("--rebuild", help="rebuild environments/images even if ready",
                                 group=Group.ENVIRONMENT, action="store_true")] = False
    python: Annotated[str | None, opt(
        "--python", help="--backend local: the interpreter that has JAX (default: this one)", group=Group.ENVIRONMENT,
        metavar="PATH", example=("/usr/bin/python3",))] = None
    python_search: Annotated[tuple[Path, ...], opt(
        "--python-search", help="more Pythons for the releases that need another one than the harness's: "
        "interpreters, or folders holding them (searched before PATH, uv and pyenv)", group=Group.ENVIRONMENT,
        type=Path, nargs="+", action="extend", metavar="PATH", example=("/opt/pythons",))] = ()
    install_python: Annotated[bool, opt(
        "--install-python", help="where no Python here has wheels for a release, `uv python install` one "
        "(downloads)", group=Group.ENVIRONMENT, action="store_true")] = False
    python_version: Annotated[str | None, opt(
        "--python-version", help="only releases with wheels for this Python (default: the config's python:, auto: "
        "each release in a Python this machine has)", group=Group.ENVIRONMENT, metavar="3.N",
        example=("3.12",))] = None
    env: Annotated[tuple[str, ...], opt(
        "--env", help="a variable the script needs (repeatable); the harness's own cannot be overridden",
        group=Group.SCRIPT, action="append", metavar="NAME=VALUE", example=("MODEL=tiny",))] = ()
    cwd: Annotated[Path | None, opt(
        "--cwd", help="the folder each run starts in (default: the script's folder; for -m, the current folder)",
        group=Group.SCRIPT, type=Path, example=("work dir",))] = None
    device_count: Annotated[int | None, opt(
        "--device-count", help="devices each run sees (default: 8 simulated on cpu; on tpu, cuda, or auto finding "
        "an accelerator, the host's)", group=Group.SCRIPT, type=positive(1, MAX_DEVICES), example=("4",))] = None
    platform: Annotated[Platform, opt("--platform", help="where JAX computes", group=Group.SCRIPT, convert=Platform,
                                      choices=tuple(m.value for m in Platform), example=("cuda",))] = Platform.CPU
    timeout: Annotated[float, opt("--timeout", help="seconds per run", group=Group.SCRIPT, type=seconds,
                                  metavar="SECONDS", example=("60.0",))] = 300.0
    with_requirements: Annotated[tuple[str, ...], opt(
        "--with", help="a requirement the script needs besides jax (repeatable, as `uv run --with`), installed "
        "with each release as of its date; added to the script's inline metadata; a folder's path (`--with .`, "
        "`./mypkg`) is your own package, as --with-editable PATH", group=Group.SCRIPT, action="append",
        metavar="REQ", example=("flax",))] = ()
    requirements_files: Annotated[tuple[Path, ...], opt(
        "--requirements", help="a requirements file (as `pip -r`; repeatable); its `-e PATH` lines are your own "
        "package, as --with-editable PATH", group=Group.SCRIPT, action="append", type=Path,
        metavar="FILE", example=("requirements.txt",))] = ()
    with_editable: Annotated[tuple[Path, ...], opt(
        "--with-editable", help="your own package's folder (repeatable, as `uv run --with-editable`), installed "
        "editable into each release's venv in the same resolution as jax, its dependencies as of the release's "
        "date (a pin that contradicts the release: that cell's error)", group=Group.SCRIPT, action="append",
        type=Path, metavar="PATH", identity=True, example=("mypkg",))] = ()
    index_url: Annotated[str | None, opt(
        "--index-url", help="the package index for the releases' environments and the release list (default: "
        "UV_DEFAULT_INDEX, UV_INDEX_URL or PIP_INDEX_URL, else PyPI); a mirror's simple API is enough",
        group=Group.ENVIRONMENT, metavar="URL", identity=True, example=("https://mirror.example/simple",))] = None
    extra_index_urls: Annotated[tuple[str, ...], opt(
        "--extra-index-url", help="one more index the environments install from (repeatable; default: "
        "UV_EXTRA_INDEX_URL or PIP_EXTRA_INDEX_URL)", group=Group.ENVIRONMENT, action="append", metavar="URL",
        identity=True, example=("https://extra.example/simple",))] = ()
    shard: Annotated[Shard | None, opt("--shard", help="measure only shard I of N of the cells (join them with "
                                       "harness merge)", type=parse_shard, metavar="I/N", example=("2/4",))] = None
    processes: Annotated[int | None, opt(  # the config says it
        "--processes", help="each run one job of N processes on this machine, each with its own hash seed, the "
        "devices split between them (with a config, replaces its processes; docs/multi-process.md)",
        group=Group.MEASURE, type=positive(1, MAX_PROCESSES), metavar="N", example=("2",))] = None
    baseline: Annotated[Path, opt("--baseline", help="results folder (or results.json) to compare with", type=Path,
                                  required=True, example=("results/baseline",))] = REQUIRED
    config_versions: Annotated[bool, opt(
        "--config-versions", help="sweep the config's jax_versions instead of the default, the latest release",
        group=Group.NIGHTLY, action="store_true")] = False
    jax_repo: Annotated[Path | None, opt(
        "--jax-repo", help="a clone of jax (bare is fine): also measure the commit at --ref, fetched first when "
        "the clone has a remote, and compare it with the baseline's newest release", group=Group.NIGHTLY,
        type=Path, metavar="PATH", example=("../jax",),
        per={"bisect": {"help": "a git clone of jax (bare is fine): continue to the commit inside each boundary",
                        "group": Group.BISECT},
             "triage": {"help": "a git clone of jax (bare is fine): search the commits between the last clean point "
                        "and the first bad one (without it, the releases)", "group": Group.BISECT}})] = None
    triage: Annotated[bool, opt(
        "--triage", help="on an alarm, triage it as `harness triage` does: bisect, reduce, write bug.md beside the "
        "night's results", group=Group.NIGHTLY, action="store_true")] = False
    ref: Annotated[str, opt("--ref", help="--jax-repo: the branch, tag or commit to measure", group=Group.NIGHTLY,
                            example=("v0.4.30",))] = "main"
    good: Annotated[str | None, opt(
        "--good", help="a release known clean (default: the range's first)", group=Group.BISECT, metavar="V",
        example=("0.4.26",),
        per={"reduce": {"help": "a release where the script is clean: the reduced program must stay clean there",
                        "group": Group.INPUT, "example": ("0.4.29",)}})] = None
    bad: Annotated[str | None, opt("--bad", help="a release known to reproduce (default: found by search)",
                                   group=Group.BISECT, metavar="V", example=("0.4.28",))] = None
    max_candidates: Annotated[int | None, opt(
        "--max-candidates", help="run at most N candidates, then keep the best so far", group=Group.MEASURE,
        type=positive(1), metavar="N", example=("50",))] = None
    fresh: Annotated[bool, opt("--fresh", help="forget a recorded bisection and start over", group=Group.BISECT,
                               action="store_true")] = False
    shards: Annotated[int, opt("--shards", help="array tasks, each measuring a share of the cells", group=Group.SLURM,
                               type=positive(1), required=True, metavar="N", example=("4",))] = REQUIRED
    wait: Annotated[bool, opt("--wait", help="wait for the merge job, then print the merged table and summary (exit "
                              "as run does)", group=Group.SLURM, action="store_true")] = False
    partition: Annotated[str | None, opt("--partition", help="the Slurm partition (default: the cluster's default)",
                                         group=Group.SLURM, metavar="P", example=("debug",))] = None
    cpus_per_task: Annotated[int | None, opt("--cpus-per-task", help="CPUs per shard task (default: --jobs)",
                                             group=Group.SLURM, type=positive(1), metavar="N", example=("4",))] = None
    time: Annotated[str | None, opt(
        "--time", help="time limit per shard task, as sbatch reads it (default 02:00:00)", group=Group.SLURM,
        metavar="LIMIT", example=("01:00:00",))] = None
    sbatch_args: Annotated[tuple[str, ...], opt(
        "--sbatch-arg", help="one more #SBATCH line for both jobs, e.g. --sbatch-arg=--account=lab (repeatable)",
        group=Group.SLURM, action="append", metavar="ARG", example=("--account=lab",))] = ()
    only_shards: Annotated[tuple[int, ...], opt(
        "--only-shards", help="submit these shards again, into the sweep's folder (given by --out)",
        group=Group.SLURM, type=positive(1), nargs="+", metavar="I", example=("2", "3"))] = ()
    dry_run: Annotated[bool, opt("--dry-run", help="print the job scripts; submit nothing", group=Group.SLURM,
                                 action="store_true")] = False
    quiet: Annotated[bool, opt("-q", "--quiet", help="no progress lines", group=Group.RESULTS,
                               action="store_true")] = False
    json: Annotated[bool, opt(
        "--json", help="print the summary (cells, verdicts, boundaries, seconds) as one JSON object on stdout; the "
        "table goes to stderr (docs/results.md)", group=Group.RESULTS, action="store_true")] = False
    show: Annotated[bool, opt("--print", help="also print the report", group=Group.RESULTS,
                              action="store_true")] = False
    out: Annotated[Path, opt(
        "--out", help="results folder", group=Group.RESULTS, type=Path, metavar="DIR", example=("my results",),
        per={"merge": {"help": "where the merged folder is made", "example": ("merged",)}})] = DEFAULT_RESULTS
    resume: Annotated[Path | None, opt(
        "--resume", help="finish an interrupted sweep in its own folder: measure only the cells it lacks",
        group=Group.RESULTS, type=Path, metavar="RESULTS_DIR", example=("results/run",),
        per={"reduce": {"help": "continue an interrupted reduction in its folder (Ctrl-C prints the command)",
                        "metavar": "REDUCE_DIR", "example": ("results/reduce",)}})] = None
    junit_xml: Annotated[Path | None, opt(
        "--junit-xml", help="also write the cells as JUnit XML: reproduced and error are failures (the reason "
        "their message), unsupported skipped, clean passes (docs/ci.md); merge and submit --wait: the merged cells",
        group=Group.RESULTS, type=Path, metavar="PATH", example=("junit.xml",))] = None
    fail_on: Annotated[frozenset[Verdict] | None, opt(
        "--fail-on", help="exit 1 when a cell's verdict is one of these (reproduced, error, unsupported, "
        "new-input, not-cached; comma-separated); without it, exit 0 whatever the cells say", group=Group.RESULTS, type=fail_on,
        metavar="VERDICT[,VERDICT]", spell=spell_fail_on, example=("reproduced,error",),
        per={"check": {"help": "exit 1 when a cell's verdict is one of these (reproduced, error, unsupported, "
                       "new-input: a later run compiled something new, argument types or values the program "
                       "draws; not-cached: JAX never wrote a module the runs compiled; comma-separated; `none`: "
                       "exit 0 whatever the cells say)", "default": CHECK_FAILS_ON,
                       "example": ("reproduced,error,unsupported",)}})] = None
    max_lost_growth: Annotated[float | None, opt(
        "--max-lost-growth", help="also alarm (exit 1) on a cell whose seconds lost per fresh process grew by more "
        "than this against the baseline", group=Group.NIGHTLY, type=seconds, metavar="SECONDS",
        example=("5.0",))] = None
    script_args: Annotated[tuple[str, ...], opt("--", help="everything after `--` goes to the script untouched",
                                                group=Group.SCRIPT, example=("--steps", "1"))] = ()
    seed: Annotated[int, opt("--seed", help="the hash seed of each release's run (the same on both machines)",
                             group=Group.MEASURE, type=positive(0, 2**32 - 1), metavar="N", example=("7",))] = 1
    cache_dir: Annotated[Path | None, opt(
        "--cache-dir", help="the cache folder each run uses (emptied first; default: one fixed path under the "
        "temporary folder, as the path is in the key on some releases)", group=Group.MEASURE, type=Path,
        metavar="DIR", example=("/tmp/jaxcache",))] = None
    output: Annotated[Path | None, opt(
        "--output", "-o", help="write the fingerprint (JSON) here too (it is always printed)", group=Group.RESULTS,
        type=Path, metavar="FILE", example=("here.json",),
        per={"init": {"help": "where to write the config (default: the script's name with .yaml, in the current "
                      "folder)", "example": ("jax-cache.yaml",)}})] = None
    a: Annotated[Path, opt(help="a fingerprint (harness fingerprint's JSON) or a results folder", type=Path,
                           metavar="A", example=("a.json",))] = REQUIRED
    b: Annotated[Path, opt(help="the other one", type=Path, metavar="B", example=("b.json",))] = REQUIRED
    shell: Annotated[str, opt(help="the shell the script is for", choices=COMPLETION_SHELLS,
                              example=("bash",))] = REQUIRED
    debian: Annotated[str, opt(
        "--debian", help="the Debian release: bookworm (Python 3.11) or trixie (Python 3.13, for JAX 0.11 and "
        "newer)", group=Group.ENVIRONMENT, choices=DEBIAN_RELEASES, example=("trixie",))] = DEBIAN_RELEASES[0]
    image: Annotated[str | None, opt(
        "--image", help="the image's name (default: jax-harness-base:DEBIAN, the name --backend docker looks for)",
        group=Group.ENVIRONMENT, metavar="NAME:TAG", example=("jax-harness-base:trixie",))] = None
    force: Annotated[bool, opt(
        "--force", help="replace the file if it exists", group=Group.RESULTS, action="store_true",
        per={"base-image": {"help": "build it again even if it exists", "group": Group.ENVIRONMENT}})] = False


OPTIONS: tuple[Option, ...] = tuple(
    replace(hint.__metadata__[0], dest=f.name, kind=hint.__origin__, default=f.default)
    for f, hint in zip(fields(Options), get_type_hints(Options, include_extras=True).values()))
DECLARED: Mapping[str, Option] = {o.dest: o for o in OPTIONS}

# ---- the option groups commands pick (pip's cmdoptions): each a set of Options's fields -----------------

SOURCES = {"python_search", "install_python", "index_url", "extra_index_urls"}  # where Pythons and packages come from
MEASURED = {"versions", "backend", "cache_thresholds", "rebuild", "python", "quiet", "out", *SOURCES}  # fingerprint too
REPEATED = {"runs", "runs_at_once", "seeds", "vary", "processes"}  # a cell of many runs (not a fingerprint's one)
SWEPT = {"config", "shard", *MEASURED, *REPEATED}  # a config's sweep (run, nightly, bisect, submit)
# How the user's program runs (--env, --cwd, --device-count, --platform, --timeout), what it needs (--with,
# --requirements, --with-editable) and its `-- ARGS`: check's program options, one set, so an option added for the
# program (check's) is bisect's too. bisect takes a script in place of its config (service/option_checks.py).
PROGRAM = {"env", "cwd", "device_count", "platform", "timeout", "with_requirements", "requirements_files",
           "with_editable", SCRIPT_ARGS}
SCRIPTED = {"script", *PROGRAM, *MEASURED}  # a user's script (check, reduce, fingerprint)
# A program named as a module instead of a script: -m MODULE, or --pytest (`-m pytest`; service.as_pytest). check's
# and bisect's, one set, so `harness bisect --pytest` reads as `harness check --pytest` does.
AS_PYTHON_MODULE = {"module", "pytest"}
CI = {"junit_xml", "fail_on"}  # what a CI reads of the cells (docs/ci.md): of a sweep, or of the shards merged
SLURM = {"shards", "wait", "partition", "cpus_per_task", "time", "sbatch_args", "only_shards", "dry_run"}


def _command(name: str, help: str, example: str, *takes: Iterable[str] | str) -> Command:
    return Command(name, help, example, frozenset(t for g in takes for t in ([g] if isinstance(g, str) else g)))


COMMANDS: tuple[Command, ...] = (
    _command("run", "sweep the versions and meshes of a config",
             "harness run shard_map_grad --versions '>=0.4.26,<0.4.30' --jobs 2",
             SWEPT, CI, "all_runs", "json", "resume"),
    _command("check", "run your own script version by version, no config needed",
             "harness check train.py --versions 0.4.30 0.4.31 --with flax -- --steps 10",
             SCRIPTED, REPEATED, CI, AS_PYTHON_MODULE, "shard", "all_runs", "json", "resume", "no_moved_folder"),
    _command("reduce", "shrink your script to the smallest one that still misses the cache the same way "
             "(docs/reduce.md)", "harness reduce train.py --versions 0.4.28 --good 0.4.29 -- --steps 1",
             SCRIPTED, REPEATED, "good", "max_candidates", "resume"),
    _command("versions", "print the JAX releases a config names, one per line",
             "harness versions shard_map_grad --python-version auto", SOURCES, "config", "versions", "python_version"),
    _command("report", "(re)write report.md from a results folder, ready for an issue",
             "harness report results/20260101T000000Z-shard_map_grad --print", "results", "show"),
    _command("nightly", "sweep the newest releases and compare with a baseline (exit 1 on a regression)",
             "harness nightly shard_map_grad --baseline results/baseline",
             SWEPT, "baseline", "max_lost_growth", "config_versions", "jax_repo", "ref", "junit_xml", "triage",
             "max_candidates"),
    _command("triage", "after a night's alarm: bisect the commits (or releases) between its last clean and first bad "
             "point, reduce the program, write bug.md (exit 1: a regression triaged)",
             "harness triage results/night --baseline results/baseline --jax-repo ../jax",
             SOURCES, "backend", "rebuild", "python", "quiet", "runs_at_once", "seeds", "results", "baseline",
             "jax_repo", "max_candidates"),
    _command("compare", "compare measured results with a baseline (exit 1 on a regression)",
             "harness compare results/new --baseline results/baseline", "results", "baseline", "max_lost_growth"),
    _command("merge", "join shard results (harness run --shard I/N) into one",
             "harness merge results/shard-1 results/shard-2 --out results", CI, "results", "out"),
    _command("bisect", "find the releases (and commits) where a regression appears and where it is fixed",
             "harness bisect shard_map_grad --good 0.4.26 --bad 0.4.28 --jax-repo ../jax",
             SWEPT, PROGRAM, AS_PYTHON_MODULE, "jax_repo", "good", "bad", "fresh"),
    _command("submit", "run a sweep on a Slurm cluster: an array job of shards, then a merge",
             "harness submit shard_map_grad --shards 4 --wait", SWEPT, SLURM, CI, "all_runs"),
    # One run per release: a fingerprint is JSON to paste, not a verdict (no CI outputs).
    _command("fingerprint", "each module's cache key and its components, one run per release, as JSON to paste "
             "from two machines (or from a results folder)",
             "harness fingerprint train.py --versions 0.5.0 --output here.json",
             SCRIPTED, "module", "seed", "cache_dir", "output"),
    _command("diff", "which modules' keys differ between two fingerprints, and which components moved "
             "(exit 1 when any does)", "harness diff here.json there.json", "a", "b"),
    _command("completion", "print the shell completion script for bash or zsh (README: Shell completion)",
             "harness completion bash", "shell"),
    _command("init", "write a commented starter config that runs your script (then: harness run CONFIG)",
             "harness init train.py --output jax-cache.yaml", "script", "output", "force"),
    _command("base-image", "build the offline Debian base image --backend docker uses where no registry is "
             "reachable (needs root: debootstrap, then docker import)", "harness base-image --debian trixie",
             "debian", "image", "force"),
)
COMMAND_NAMES = tuple(c.name for c in COMMANDS)


@cache
def options_for(command: str) -> tuple[Option, ...]:
    """The command's options in declaration order (positionals first, as they are spelled)."""
    (takes,) = [c.takes for c in COMMANDS if c.name == command]
    taken = [o.for_command(command) for o in OPTIONS if o.dest in takes]
    return tuple([o for o in taken if o.positional] + [o for o in taken if not o.positional])


def option(command: str, dest: str) -> Option:
    (found,) = [o for o in options_for(command) if o.dest == dest]
    return found


def identity_dests() -> frozenset[str]:
    return frozenset(o.dest for o in OPTIONS if o.identity)


# ---- the parser, and what was given ------------------------------------------------------------------

def build_parser(description: str = "") -> OneLineParser:
    return option_set.build_parser(COMMANDS, options_for, description, f"harness {harness_version()}")


@dataclass(frozen=True)
class Given(option_set.GivenBase):
    """A command and its options' values (every option the command takes; defaults filled in), typed as
    the parser reads them. `line()` spells it back; parsing that line gives the same Given."""

    def options(self) -> tuple[Option, ...]:
        return options_for(self.command)


def parse(words: list[str], parser: argparse.ArgumentParser | None = None) -> tuple[Given, argparse.Namespace]:
    """The words after `harness` as a Given (and the Namespace, which stops at the CLI). A script's
    arguments after `--` go only to the commands that run a script."""
    command, values, args = option_set.parse(words, parser or build_parser(), options_for)
    return Given(command, values), args


def takes(dest: str) -> Mapping[str, str]:
    """The metadata of a service's field (harness/service/command_options.py) that holds the option `dest` under
    another name (`from_given` fills a field named as an option without it)."""
    assert dest in DECLARED, dest
    return {TAKES: dest}
