"""Every option of every command, declared once (the model: nox's `_option_set.py`). Pure, and below the
report in the layers (it imports only the core's types and parsers), so every layer above can spell with it.

An `Option` says everything about one flag (or positional argument): its flags, how its text is read
(`type`), its default, its help and argument group, which commands take it, whether it is part of the
sweep's identity (harness/results/identity.py: what must be equal for cells to share one table), and how its
value is spelled back on a command line. From these declarations, and nowhere else, come:

- the parser (`build_parser`: `harness --help` and each command's groups and example),
- what the service receives (`Given`: the command and each of its options' values, typed),
- every command line the harness prints (`Given.line`): resume after Ctrl-C, a bisection's reproduce and
  resume line, the `harness run` of each Slurm shard task (and so the job scripts), the report's `harness
  check`/`run`/`nightly` line that measures one cell again (harness/report/reproduce.py),
- docs/commands.md (`make docs`; tests/unit/test_docs.py fails when it is out of date).

To add an option: append one `Option(...)` to `OPTIONS` below, naming the commands that take it, its group
and an `example` (the words after the flag, used by the docs and the round-trip test). If the service acts
on it, name its `dest` in the `@takes_options(...)` of the service's options dataclass (harness/service/
options.py): the field, its type (`Option.value_type`) and its default come from here, and `from_given` fills
it (then `make docs` rewrites harness/service/options.pyi, which tests/unit/test_options.py checks). Parsing,
printing, the docs and the round-trip test (parse -> print -> parse gives the same options) need nothing more.
"""

from __future__ import annotations

import argparse
import inspect
import math
import shlex
import textwrap
import types
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Union, get_args, get_origin, get_type_hints

from harness.core.confidence import SeedStrategy, runs_for_target
from harness.inputs.config import MAX_DEVICES, MAX_PROCESSES, MAX_RUNS
from harness.core.errors import ExitCode
from harness.core.vary_factors import Factor, parse_factors
from harness.core.files import harness_version
from harness.core.model import DEFAULT_BACKEND, FAILABLE, BackendName, Platform, ThresholdMode, Verdict, parse_fail_on
from harness.inputs.sharding import parse_shard
from harness.inputs.versions import LATEST

DEFAULT_RESULTS = Path("results")
JOBS_AUTO = "auto"
COMPLETION_SHELLS = ("bash", "zsh")  # what shtab writes and the tests check
SCRIPT_ARGS = "script_args"  # the dest of the words after `--` (harness check SCRIPT -- ARG ...)


# ---- how option text is read (argparse types: a bad value is one line naming the option) --------------

def positive(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}")
        return value
    parse.__name__ = "integer"
    return parse


def runs_at_once(text: str) -> int | None:
    """`auto` (None: the service chooses from the cores and the platform) or a number of runs at once."""
    if text == JOBS_AUTO:
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs at once or '{JOBS_AUTO}'")
    return positive(1, 256)(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("must be a positive, finite number of seconds")
    return value


def factors(text: str) -> tuple[Factor, ...]:
    """--vary: `cache-path,cwd` or `all` (harness/core/vary_factors.py)."""
    try:
        return parse_factors(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _spell_runs_at_once(value: int | None) -> str:
    return JOBS_AUTO if value is None else str(value)


# `harness check` is a check, as pytest is: it fails on these unless told otherwise (`--fail-on none`).
CHECK_FAILS_ON = frozenset((Verdict.REPRODUCED, Verdict.ERROR))
NO_FAILURE = "none"  # --fail-on none: exit 0 whatever the cells say


def fail_on(text: str) -> frozenset:
    """`reproduced,error`: the verdicts that make run/check exit 1 (harness/output/ci.py); `none`: no verdict."""
    if text.strip() == NO_FAILURE:
        return frozenset()
    try:
        return parse_fail_on(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _spell_fail_on(value: frozenset) -> str:
    return ",".join(str(v).replace(" ", "-") for v in FAILABLE if v in value) or NO_FAILURE


# ---- the declaration ------------------------------------------------------------------------------

class Group:
    """The argument groups of --help and of docs/commands.md, in the order they are shown."""

    INPUT = "what to measure"
    MEASURE = "how it is measured"
    SCRIPT = "how the script runs"
    ENVIRONMENT = "where it runs"
    RESULTS = "results and output"
    BISECT = "bisection"
    NIGHTLY = "nightly"
    SLURM = "Slurm"


@dataclass(frozen=True)
class Option:
    dest: str  # the name the service knows it by (and the Given's key)
    flags: tuple[str, ...]  # () for a positional argument
    help: str
    commands: frozenset[str]
    group: str = Group.INPUT
    example: tuple[str, ...] = ()  # the words after the flag in an example (docs, round-trip test)
    default: Any = None
    type: Callable[[str], Any] | None = None
    action: str | None = None  # store_true, append, extend (argparse's)
    nargs: str | None = None  # "+", "?" (argparse's)
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    required: bool = False
    identity: bool = False  # part of the sweep's identity (SweepIdentity): changing it is another sweep
    spell: Callable[[Any], str] = str  # one value as a command-line word
    convert: Callable[[Any], Any] | None = None  # the parsed text as the service's type (an enum)
    kind: Any = None  # the value's Python type where `value_type` cannot infer it

    @property
    def value_type(self) -> Any:
        """The Python type of the value the service receives (a field of harness/service/options.py): `kind`,
        else inferred from the action, `convert` or `type` (a class, or a parser's return annotation) and
        `nargs`; `| None` where the default is None (and the option is not required)."""
        if self.kind is not None:
            return self.kind
        if self.action == "store_true":
            return bool
        if self.convert is not None:
            one = self.convert
        elif self.type is None:
            one = str
        elif isinstance(self.type, type):
            one = self.type
        else:
            one = get_type_hints(self.type)["return"]
        kind = tuple[one, ...] if self.many else one
        if self.default is None and not self.required and not _admits_none(kind):
            kind = kind | None
        return kind

    @property
    def positional(self) -> bool:
        return not self.flags

    @property
    def flag(self) -> str:
        return self.flags[-1] if self.flags else self.dest

    @property
    def many(self) -> bool:
        return self.nargs == "+" or self.action in ("append", "extend")

    def add_to(self, parser: argparse._ActionsContainer) -> None:
        kwargs: dict[str, Any] = {"help": self.help}
        if self.positional:
            kwargs.update(metavar=self.metavar or self.dest.upper())
            if self.nargs:
                kwargs["nargs"] = self.nargs
            if self.type:
                kwargs["type"] = self.type
            if self.choices:
                kwargs["choices"] = self.choices
            parser.add_argument(self.dest, **kwargs)
            return
        kwargs.update(dest=self.dest)
        if self.action == "store_true":
            parser.add_argument(*self.flags, action="store_true", **kwargs)
            return
        for name in ("type", "nargs", "choices", "metavar", "action"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        if self.required:
            kwargs["required"] = True
        # A list's default is a fresh list (argparse appends to it).
        kwargs["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        parser.add_argument(*self.flags, **kwargs)

    def words(self, value: Any, absolute: bool = False, force: bool = False) -> list[str]:
        """The value spelled back as argparse reads it; [] for the default (unless `force`)."""
        def word(one: Any) -> str:
            if absolute and isinstance(one, Path):
                one = one.absolute()
            return self.spell(one)

        if self.positional:
            values = value if self.many else [] if value is None else [value]
            return [word(v) for v in values]
        if self.action == "store_true":
            return [self.flag] if value else []
        if value is None and not (force and self.spell is not str):  # jobs spells None: auto
            return []
        if (self.many and not value) or (value == self.default and not force):
            return []
        if self.action == "append":
            return [w for v in value for w in self._joined(word(v))]
        if self.many:
            return [self.flag, *(word(v) for v in value)]
        return self._joined(word(value))

    def _joined(self, text: str) -> list[str]:
        # `--sbatch-arg --account=lab` would read as two flags: a value that looks like one is attached.
        return [f"{self.flag}={text}"] if text.startswith("-") else [self.flag, text]


def _admits_none(kind: Any) -> bool:
    return kind is type(None) or type(None) in get_args(kind) and (
        isinstance(kind, types.UnionType) or get_origin(kind) is Union)


def _commands(*names: str) -> frozenset[str]:
    return frozenset(names)


SWEEPING = _commands("run", "check", "nightly", "bisect", "submit")  # every command that measures
RESUMABLE = _commands("run", "check")
# harness reduce measures a script as check does, on one release (and a good one), without shards.
MEASURING = SWEEPING | {"reduce"}
SCRIPTED = _commands("check", "reduce")  # the commands that run a user's script
# The commands that take check's program options (how the program runs: --env, --cwd, --device-count,
# --platform, --timeout; what it needs: --with, --requirements, --with-editable; its `-- ARGS`): one set, so an
# option added for the program (check's) is bisect's too. bisect takes a script in place of its config.
PROGRAM = SCRIPTED | {"bisect"}
CONFIGURED = MEASURING - SCRIPTED  # the measuring commands that read a config
# What a CI reads of the cells (--junit-xml, --fail-on; docs/ci.md): of a sweep, or of the shards merged
# (submit: with --wait, once the merge job has ended).
CI_OUTPUTS = RESUMABLE | {"merge", "submit"}

# The Debian releases `harness base-image` builds from (environments/docker/images.py: DEBIAN_PYTHONS, the same).
DEBIAN_RELEASES = ("bookworm", "trixie")

OPTIONS: tuple[Option, ...] = (
    Option("config", (), "the config (YAML): the repro, versions, meshes, platform, runs; or a shipped one by "
           "name (shard_map_grad, smoke, releases, nightly, gpu_local)",
           _commands("run", "versions", "nightly", "submit"), type=Path, example=("configs/smoke.yaml",)),
    # bisect's: a config, or the user's program as check takes it (SCRIPT or -m MODULE, check's options, `-- ARGS`).
    Option("config", (), "the config (YAML) or a shipped one by name; or your script (*.py; or -m MODULE), run "
           "as `harness check` runs it, with check's options below and no config", _commands("bisect"), type=Path,
           nargs="?", metavar="CONFIG|SCRIPT", example=("configs/smoke.yaml",)),
    Option("script", (), "the script (or -m MODULE); after `--`, its arguments", _commands("check"), type=Path,
           nargs="?", example=("train.py",)),
    # Right after the script it stands for, so every line spelled from here reads `harness check -m MODULE ...`.
    Option("module", ("-m",), "run a module as `python -m MODULE` instead of a script: one in the working folder, "
           "or one installed in each release's environment (--with)", _commands("check", "bisect"),
           Group.INPUT, metavar="MODULE", example=("mypkg.train",)),
    Option("pytest", ("--pytest",), "run a test suite: `-m pytest` (pytest's arguments after `--`; a SCRIPT given is "
           "its first), each key recorded with the test that compiled it (docs/running.md)", _commands("check"),
           Group.INPUT, action="store_true"),
    Option("script", (), "the script to reduce; after `--`, its arguments", _commands("reduce"), type=Path,
           example=("train.py",)),
    Option("results", (), "a results folder (or its results.json)", _commands("report", "compare"), type=Path,
           example=("results/run",)),
    Option("results", (), "results folders (or results.json files) of the shards", _commands("merge"),
           type=Path, nargs="+", example=("results/shard-1", "results/shard-2")),
    Option("versions", ("--versions",), "versions or specifiers replacing the config's jax_versions",
           CONFIGURED, nargs="+", metavar="V", identity=True, example=(">=0.4.26,<0.4.30", "0.4.31")),
    Option("versions", ("--versions",), f"versions or specifiers to measure (default: {LATEST})",
           _commands("check"), nargs="+", metavar="V", identity=True, example=(">=0.4.26,<0.4.30", "0.4.31")),
    Option("versions", ("--versions",), "the one release where the script reproduces (required)",
           _commands("reduce"), nargs="+", metavar="V", identity=True, example=("0.4.28",)),
    Option("versions", ("--versions",), "resolve these instead of the config's jax_versions",
           _commands("versions"), nargs="+", metavar="V", example=("latest",)),
    Option("runs", ("--runs",), "most runs per cell (at least 2; default: the config's)", CONFIGURED, Group.MEASURE,
           type=positive(2, MAX_RUNS), metavar="N", identity=True, example=("8",)),
    # A script has no config: its default is what random seeds need for the 1e-3 bound (service.check_config).
    Option("runs", ("--runs",), f"most runs per cell (at least 2; default: {runs_for_target()}, enough for a "
           "miss bound of 1e-3 whatever the script's name sets)", SCRIPTED, Group.MEASURE,
           type=positive(2, MAX_RUNS), metavar="N", identity=True, example=("8",)),
    Option("jobs", ("--jobs",), "runs at once (default auto: one per core for cpu cells, 1 for cuda cells)",
           MEASURING, Group.ENVIRONMENT, type=runs_at_once, metavar="N|auto", spell=_spell_runs_at_once, example=("2",)),
    Option("backend", ("--backend",), "where each JAX version runs (auto = docker if a daemon answers)",
           MEASURING, Group.ENVIRONMENT, convert=BackendName, choices=tuple(m.value for m in BackendName),
           default=DEFAULT_BACKEND,
           example=("docker",)),
    Option("seeds", ("--seeds",), "chosen: probe the interpreter for hash seeds showing every order of the mesh's "
           "axis names (a script's: the names its first run lowered), then random ones up to --runs (default); "
           "random: random seeds only", MEASURING,
           Group.MEASURE, convert=SeedStrategy, choices=tuple(m.value for m in SeedStrategy),
           default=SeedStrategy.CHOSEN,
           identity=True, example=("random",)),
    Option("all_runs", ("--all-runs",), "make every run even after a cell has reproduced (more keys for the "
           "report)", _commands("run", "check", "submit"), Group.MEASURE, action="store_true", identity=True),
    Option("cache_thresholds", ("--cache-thresholds",), "the persistent cache's minimum compile time / entry size: "
           "zeros, so every module is cached and measured (harness, the default), or as the script runs: its own, "
           "else JAX's defaults (script); either way the cell says what its own would not write",
           MEASURING, Group.MEASURE, convert=ThresholdMode, choices=tuple(m.value for m in ThresholdMode),
           example=("harness",)),
    Option("vary", ("--vary",), "after each cell's runs, one run per environment factor with the first run's hash "
           f"seed: {', '.join(f.value for f in Factor)}, or all (docs/variation.md); with a config, replaces its vary",
           MEASURING, Group.MEASURE, type=factors, metavar="FACTOR[,FACTOR...]|all", spell=",".join,
           example=("cache-path,cwd",)),
    Option("no_moved_folder", ("--no-moved-folder",), "skip the one run more per cell that reads its cache folder "
           "through another path (the `moved folder` column: the path is in every key from JAX 0.4.36 until 0.11.0; "
           "docs/measuring.md)", _commands("check"), Group.MEASURE, action="store_true"),
    Option("rebuild", ("--rebuild",), "rebuild environments/images even if ready", MEASURING, Group.ENVIRONMENT,
           action="store_true"),
    Option("python", ("--python",), "--backend local: the interpreter that has JAX (default: this one)",
           MEASURING, Group.ENVIRONMENT, metavar="PATH", example=("/usr/bin/python3",)),
    Option("python_search", ("--python-search",), "more Pythons for the releases that need another one than the "
           "harness's: interpreters, or folders holding them (searched before PATH, uv and pyenv)",
           MEASURING | {"versions"}, Group.ENVIRONMENT, type=Path, nargs="+", action="extend", default=(),
           metavar="PATH", example=("/opt/pythons",)),
    Option("install_python", ("--install-python",), "where no Python here has wheels for a release, `uv python "
           "install` one (downloads)", MEASURING | {"versions"}, Group.ENVIRONMENT, action="store_true"),
    Option("python_version", ("--python-version",), "only releases with wheels for this Python (default: the "
           "config's python:, auto: each release in a Python this machine has)", _commands("versions"),
           Group.ENVIRONMENT, metavar="3.N", example=("3.12",)),
    Option("env", ("--env",), "a variable the script needs (repeatable); the harness's own cannot be overridden",
           PROGRAM, Group.SCRIPT, action="append", default=(), metavar="NAME=VALUE",
           example=("MODEL=tiny",)),
    Option("cwd", ("--cwd",), "the folder each run starts in (default: the script's folder; for -m, the current "
           "folder)", PROGRAM, Group.SCRIPT, type=Path, example=("work dir",)),
    Option("device_count", ("--device-count",), "devices each run sees (simulated on cpu)", PROGRAM,
           Group.SCRIPT, type=positive(1, MAX_DEVICES), default=8, example=("4",)),
    Option("platform", ("--platform",), "where JAX computes", PROGRAM, Group.SCRIPT, convert=Platform,
           choices=tuple(m.value for m in Platform), default=Platform.CPU, example=("cuda",)),
    Option("timeout", ("--timeout",), "seconds per run", PROGRAM, Group.SCRIPT, type=seconds,
           metavar="SECONDS", default=300.0, example=("60.0",)),
    Option("with_requirements", ("--with",), "a requirement the script needs besides jax (repeatable, as "
           "`uv run --with`), installed with each release as of its date; added to the script's inline metadata; "
           "a folder's path (`--with .`, `./mypkg`) is your own package, as --with-editable PATH",
           PROGRAM, Group.SCRIPT, action="append", default=(), metavar="REQ", example=("flax",)),
    Option("requirements_files", ("--requirements",), "a requirements file (as `pip -r`; repeatable); its "
           "`-e PATH` lines are your own package, as --with-editable PATH",
           PROGRAM, Group.SCRIPT, action="append", default=(), type=Path, metavar="FILE",
           example=("requirements.txt",)),
    Option("with_editable", ("--with-editable",), "your own package's folder (repeatable, as `uv run "
           "--with-editable`), installed editable into each release's venv in the same resolution as jax, its "
           "dependencies as of the release's date (a pin that contradicts the release: that cell's error)",
           PROGRAM, Group.SCRIPT, action="append", default=(), type=Path, metavar="PATH", identity=True,
           example=("mypkg",)),
    Option("index_url", ("--index-url",), "the package index for the releases' environments and the release "
           "list (default: UV_DEFAULT_INDEX, UV_INDEX_URL or PIP_INDEX_URL, else PyPI); a mirror's simple API "
           "is enough", MEASURING | {"versions"}, Group.ENVIRONMENT, metavar="URL", identity=True,
           example=("https://mirror.example/simple",)),
    Option("extra_index_urls", ("--extra-index-url",), "one more index the environments install from "
           "(repeatable; default: UV_EXTRA_INDEX_URL or PIP_EXTRA_INDEX_URL)", MEASURING | {"versions"},
           Group.ENVIRONMENT, action="append", default=(), metavar="URL", identity=True,
           example=("https://extra.example/simple",)),
    Option("shard", ("--shard",), "measure only shard I of N of the cells (join them with harness merge)",
           SWEEPING, Group.INPUT, type=parse_shard, metavar="I/N", example=("2/4",)),
    Option("processes", ("--processes",), "each run one job of N processes on this machine, each with its own "
           "hash seed, the devices split between them (with a config, replaces its processes; docs/multi-process.md)",
           MEASURING, Group.MEASURE, type=positive(1, MAX_PROCESSES), metavar="N", example=("2",)),  # the config says it
    Option("baseline", ("--baseline",), "results folder (or results.json) to compare with",
           _commands("nightly", "compare"), Group.INPUT, type=Path, required=True, example=("results/baseline",)),
    Option("config_versions", ("--config-versions",),
           "sweep the config's jax_versions instead of the default, the latest release", _commands("nightly"),
           Group.NIGHTLY, action="store_true"),
    Option("jax_repo", ("--jax-repo",), "a clone of jax (bare is fine): also measure the commit at --ref, "
           "fetched first when the clone has a remote, and compare it with the baseline's newest release",
           _commands("nightly"), Group.NIGHTLY, type=Path, metavar="PATH", example=("../jax",)),
    Option("jax_repo", ("--jax-repo",), "a git clone of jax (bare is fine): continue to the commit inside each "
           "boundary", _commands("bisect"), Group.BISECT, type=Path, metavar="PATH", example=("../jax",)),
    Option("ref", ("--ref",), "--jax-repo: the branch, tag or commit to measure", _commands("nightly"),
           Group.NIGHTLY, default="main", example=("v0.4.30",)),
    Option("good", ("--good",), "a release known clean (default: the range's first)", _commands("bisect"),
           Group.BISECT, metavar="V", example=("0.4.26",)),
    Option("bad", ("--bad",), "a release known to reproduce (default: found by search)", _commands("bisect"),
           Group.BISECT, metavar="V", example=("0.4.28",)),
    Option("good", ("--good",), "a release where the script is clean: the reduced program must stay clean there",
           _commands("reduce"), Group.INPUT, metavar="V", example=("0.4.29",)),
    Option("max_candidates", ("--max-candidates",), "run at most N candidates, then keep the best so far",
           _commands("reduce"), Group.MEASURE, type=positive(1), metavar="N", example=("50",)),
    Option("fresh", ("--fresh",), "forget a recorded bisection and start over", _commands("bisect"), Group.BISECT,
           action="store_true"),
    Option("shards", ("--shards",), "array tasks, each measuring a share of the cells", _commands("submit"),
           Group.SLURM, type=positive(1), required=True, metavar="N", example=("4",)),
    Option("wait", ("--wait",), "wait for the merge job, then print the merged table and summary (exit as run "
           "does)", _commands("submit"), Group.SLURM, action="store_true"),
    Option("partition", ("--partition",), "the Slurm partition (default: the cluster's default)",
           _commands("submit"), Group.SLURM, metavar="P", example=("debug",)),
    Option("cpus_per_task", ("--cpus-per-task",), "CPUs per shard task (default: --jobs)", _commands("submit"),
           Group.SLURM, type=positive(1), metavar="N", example=("4",)),
    Option("time", ("--time",), "time limit per shard task, as sbatch reads it (default 02:00:00)",
           _commands("submit"), Group.SLURM, metavar="LIMIT", example=("01:00:00",)),
    Option("sbatch_args", ("--sbatch-arg",), "one more #SBATCH line for both jobs, e.g. "
           "--sbatch-arg=--account=lab (repeatable)", _commands("submit"), Group.SLURM, action="append",
           default=(), metavar="ARG", example=("--account=lab",)),
    Option("only_shards", ("--only-shards",), "submit these shards again, into the sweep's folder (given by "
           "--out)", _commands("submit"), Group.SLURM, type=positive(1), nargs="+", default=(), metavar="I",
           example=("2", "3")),
    Option("dry_run", ("--dry-run",), "print the job scripts; submit nothing", _commands("submit"), Group.SLURM,
           action="store_true"),
    Option("quiet", ("-q", "--quiet"), "no progress lines", MEASURING, Group.RESULTS, action="store_true"),
    Option("json", ("--json",), "print the summary (cells, verdicts, boundaries, seconds) as one JSON object on "
           "stdout; the table goes to stderr (docs/results.md)", RESUMABLE, Group.RESULTS, action="store_true"),
    Option("show", ("--print",), "also print the report", _commands("report"), Group.RESULTS, action="store_true"),
    Option("out", ("--out",), "results folder", MEASURING, Group.RESULTS, type=Path, default=DEFAULT_RESULTS,
           metavar="DIR",
           example=("my results",)),
    Option("out", ("--out",), "where the merged folder is made", _commands("merge"), Group.RESULTS, type=Path,
           metavar="DIR",
           default=DEFAULT_RESULTS, example=("merged",)),
    Option("resume", ("--resume",), "finish an interrupted sweep in its own folder: measure only the cells it "
           "lacks", RESUMABLE, Group.RESULTS, type=Path, metavar="RESULTS_DIR", example=("results/run",)),
    Option("junit_xml", ("--junit-xml",), "also write the cells as JUnit XML: reproduced and error are failures "
           "(the reason their message), unsupported skipped, clean passes (docs/ci.md); merge and submit --wait: "
           "the merged cells", CI_OUTPUTS | {"nightly"}, Group.RESULTS, type=Path, metavar="PATH",
           example=("junit.xml",)),
    Option("fail_on", ("--fail-on",), "exit 1 when a cell's verdict is one of these (reproduced, error, "
           "unsupported, new-input; comma-separated); without it, exit 0 whatever the cells say", CI_OUTPUTS - {"check"},
           Group.RESULTS, type=fail_on, metavar="VERDICT[,VERDICT]", spell=_spell_fail_on,
           example=("reproduced,error",)),
    Option("fail_on", ("--fail-on",), "exit 1 when a cell's verdict is one of these (reproduced, error, "
           "unsupported, new-input: a later run compiled new argument types; comma-separated; `none`: exit 0 whatever the cells say)", _commands("check"),
           Group.RESULTS, type=fail_on, metavar="VERDICT[,VERDICT]", spell=_spell_fail_on,
           default=CHECK_FAILS_ON, example=("reproduced,error,unsupported",)),
    Option("max_lost_growth", ("--max-lost-growth",), "also alarm (exit 1) on a cell whose seconds lost per "
           "fresh process grew by more than this against the baseline", _commands("nightly", "compare"),
           Group.NIGHTLY, type=seconds, metavar="SECONDS", example=("5.0",)),
    Option("resume", ("--resume",), "continue an interrupted reduction in its folder (Ctrl-C prints the command)",
           _commands("reduce"), Group.RESULTS, type=Path, metavar="REDUCE_DIR", example=("results/reduce",)),
    Option(SCRIPT_ARGS, ("--",), "everything after `--` goes to the script untouched", PROGRAM,
           Group.SCRIPT, default=(), example=("--steps", "1"), kind=tuple[str, ...]),
    Option("seed", ("--seed",), "the hash seed of each release's run (the same on both machines)",
           _commands("fingerprint"), Group.MEASURE, type=positive(0, 2**32 - 1), default=1, metavar="N",
           example=("7",)),
    Option("cache_dir", ("--cache-dir",), "the cache folder each run uses (emptied first; default: one fixed "
           "path under the temporary folder, as the path is in the key on some releases)", _commands("fingerprint"),
           Group.MEASURE, type=Path, metavar="DIR", example=("/tmp/jaxcache",)),
    Option("output", ("--output", "-o"), "write the fingerprint (JSON) here too (it is always printed)",
           _commands("fingerprint"), Group.RESULTS, type=Path, metavar="FILE", example=("here.json",)),
    Option("a", (), "a fingerprint (harness fingerprint's JSON) or a results folder", _commands("diff"), type=Path,
           metavar="A", example=("a.json",)),
    Option("b", (), "the other one", _commands("diff"), type=Path, metavar="B", example=("b.json",)),
    Option("shell", (), "the shell the script is for", _commands("completion"), choices=COMPLETION_SHELLS,
           example=("bash",)),
    Option("script", (), "your script: the config runs it (its path is written relative to the config)",
           _commands("init"), type=Path, example=("train.py",)),
    Option("output", ("--output", "-o"), "where to write the config (default: the script's name with .yaml, in "
           "the current folder)", _commands("init"), Group.RESULTS, type=Path, metavar="FILE",
           example=("jax-cache.yaml",)),
    Option("force", ("--force",), "replace the file if it exists", _commands("init"), Group.RESULTS,
           action="store_true"),
    Option("debian", ("--debian",), "the Debian release: bookworm (Python 3.11) or trixie (Python 3.13, for JAX "
           "0.11 and newer)", _commands("base-image"), Group.ENVIRONMENT, choices=DEBIAN_RELEASES,
           default=DEBIAN_RELEASES[0], example=("trixie",)),
    Option("image", ("--image",), "the image's name (default: jax-harness-base:DEBIAN, the name --backend docker "
           "looks for)", _commands("base-image"), Group.ENVIRONMENT, metavar="NAME:TAG",
           example=("jax-harness-base:trixie",)),
    Option("force", ("--force",), "build it again even if it exists", _commands("base-image"), Group.ENVIRONMENT,
           action="store_true"),
)
# `harness fingerprint` runs a script as `check` does: it takes check's options, but one run per release.
# A fingerprint is JSON to paste, not a verdict: no CI outputs.
_NOT_FINGERPRINT = {"runs", "all_runs", "resume", "vary", "no_moved_folder", "seeds", "shard", "jobs", "processes", "junit_xml", "json",
                    "fail_on"}
OPTIONS = tuple(replace(o, commands=o.commands | {"fingerprint"})
                if "check" in o.commands and o.dest not in _NOT_FINGERPRINT else o for o in OPTIONS)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    example: str  # one typical use, shown at the end of its --help and in the docs


COMMANDS: tuple[Command, ...] = (
    Command("run", "sweep the versions and meshes of a config",
            "harness run shard_map_grad --versions '>=0.4.26,<0.4.30' --jobs 2"),
    Command("check", "run your own script version by version, no config needed",
            "harness check train.py --versions 0.4.30 0.4.31 --with flax -- --steps 10"),
    Command("reduce", "shrink your script to the smallest one that still misses the cache the same way "
            "(docs/reduce.md)", "harness reduce train.py --versions 0.4.28 --good 0.4.29 -- --steps 1"),
    Command("versions", "print the JAX releases a config names, one per line",
            "harness versions shard_map_grad --python-version auto"),
    Command("report", "(re)write report.md from a results folder, ready for an issue",
            "harness report results/20260101T000000Z-shard_map_grad --print"),
    Command("nightly", "sweep the newest releases and compare with a baseline (exit 1 on a regression)",
            "harness nightly shard_map_grad --baseline results/baseline"),
    Command("compare", "compare measured results with a baseline (exit 1 on a regression)",
            "harness compare results/new --baseline results/baseline"),
    Command("merge", "join shard results (harness run --shard I/N) into one",
            "harness merge results/shard-1 results/shard-2 --out results"),
    Command("bisect", "find the releases (and commits) where a regression appears and where it is fixed",
            "harness bisect shard_map_grad --good 0.4.26 --bad 0.4.28 --jax-repo ../jax"),
    Command("submit", "run a sweep on a Slurm cluster: an array job of shards, then a merge",
            "harness submit shard_map_grad --shards 4 --wait"),
    Command("fingerprint", "each module's cache key and its components, one run per release, as JSON to paste "
            "from two machines (or from a results folder)",
            "harness fingerprint train.py --versions 0.5.0 --output here.json"),
    Command("diff", "which modules' keys differ between two fingerprints, and which components moved "
            "(exit 1 when any does)", "harness diff here.json there.json"),
    Command("completion", "print the shell completion script for bash or zsh (README: Shell completion)",
            "harness completion bash"),
    Command("init", "write a commented starter config that runs your script (then: harness run CONFIG)",
            "harness init train.py --output jax-cache.yaml"),
    Command("base-image", "build the offline Debian base image --backend docker uses where no registry is "
            "reachable (needs root: debootstrap, then docker import)", "harness base-image --debian trixie"),
)
COMMAND_NAMES = tuple(c.name for c in COMMANDS)


def options_for(command: str) -> tuple[Option, ...]:
    """The command's options in declaration order (positionals first, as they are spelled)."""
    taken = [o for o in OPTIONS if command in o.commands]
    return tuple([o for o in taken if o.positional] + [o for o in taken if not o.positional])


def option(command: str, dest: str) -> Option:
    (found,) = [o for o in options_for(command) if o.dest == dest]
    return found


def identity_dests() -> frozenset[str]:
    return frozenset(o.dest for o in OPTIONS if o.identity)


# ---- the parser -------------------------------------------------------------------------------------

class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line and where to look, not the usage block (exit 2, as argparse does)."""

    def error(self, message: str):
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def build_parser(description: str = "") -> OneLineParser:
    parser = OneLineParser(prog="harness", description=description,
                           epilog="`harness COMMAND --help` shows a command's options, grouped, and an example.")
    parser.add_argument("--version", action="version", version=f"harness {harness_version()}",
                        help="print the harness's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help[0].upper() + command.help[1:],
                           epilog=f"example:\n  {command.example}", formatter_class=_Formatter)
        groups: dict[str, argparse._ArgumentGroup] = {}
        for opt in options_for(command.name):
            if opt.dest == SCRIPT_ARGS:
                continue  # split off before parsing (parse)
            target = p if opt.positional else groups.setdefault(opt.group, p.add_argument_group(opt.group))
            opt.add_to(target)
    return parser


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the example's line as written; says each flag's default where it has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (action.option_strings and default not in (None, False, [], argparse.SUPPRESS)
                and "default" not in text):
            text += f" (default: {default})"
        return text


# ---- what was given, and how it is spelled back ----------------------------------------------------

@dataclass(frozen=True)
class Given:
    """A command and its options' values (every option the command takes; defaults filled in), typed as
    the parser reads them. `line()` spells it back; parsing that line gives the same Given."""

    command: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, dest: str) -> Any:
        """`given.jobs`: the value of an option the command takes; any other name (a typo, an option of
        another command) is an AttributeError (tests/unit/test_options.py also reads the handlers' uses)."""
        if dest.startswith("_") or dest == "values":  # not an option (copy, pickle, a dataclass's own)
            raise AttributeError(dest)
        try:
            return self.values[dest]
        except KeyError:
            raise AttributeError(f"{self.command} takes no option {dest!r}") from None

    def __getitem__(self, dest: str) -> Any:
        return self.values[dest]

    def get(self, dest: str, default: Any = None) -> Any:
        return self.values.get(dest, default)

    def with_values(self, **changes: Any) -> Given:
        unknown = set(changes) - {o.dest for o in options_for(self.command)}
        if unknown:
            raise KeyError(f"{self.command} takes no option {sorted(unknown)}")
        return replace(self, values={**self.values, **changes})

    def words(self, always: Iterable[str] = (), absolute: bool = False) -> list[str]:
        """The command line after `harness`: positionals, then every option whose value is not its
        default (and those in `always`, spelled even at their default), then `-- ARGS`."""
        always = set(always)
        out = [self.command]
        rest: list[str] = []
        for opt in options_for(self.command):
            value = self.values.get(opt.dest, opt.default)
            if opt.dest == SCRIPT_ARGS:
                rest = ["--", *map(str, value)] if value else []
                continue
            out += opt.words(value, absolute, force=opt.dest in always)
        return out + rest

    def line(self, always: Iterable[str] = (), absolute: bool = False) -> str:
        return shlex.join(["harness", *self.words(always, absolute)])


def split_script_args(words: list[str]) -> tuple[list[str], list[str]]:
    """The harness's own words and the script's (everything after the first `--`, untouched)."""
    if "--" not in words:
        return list(words), []
    at = words.index("--")
    return words[:at], words[at + 1:]


def given_from(args: argparse.Namespace, script_args: list[str]) -> Given:
    values: dict[str, Any] = {}
    for opt in options_for(args.command):
        if opt.dest == SCRIPT_ARGS:
            values[opt.dest] = tuple(script_args)
            continue
        value = getattr(args, opt.dest)
        if isinstance(value, list):
            value = tuple(value)
        elif opt.convert is not None and value is not None:
            value = opt.convert(value)
        values[opt.dest] = value
    return Given(args.command, values)


def parse(words: list[str], parser: argparse.ArgumentParser | None = None) -> tuple[Given, argparse.Namespace]:
    """The words after `harness` as a Given (and the Namespace, which stops at the CLI). A script's
    arguments after `--` go only to `check`."""
    parser = parser or build_parser()
    own, script_args = split_script_args(words)
    args = parser.parse_args(own)
    if script_args and SCRIPT_ARGS not in {o.dest for o in options_for(args.command)}:
        parser.error(f"{args.command}: takes no script arguments after `--` (a config's args: does that)")
    return given_from(args, script_args), args


# ---- the service's typed options, declared from the registry and filled from a Given ------------------

REGISTRY_FIELDS = "__registry_fields__"  # a class's {field name: dest} that takes_options added


def registry_option(dest: str) -> Option:
    """The one declaration of `dest` a service field is made from: where several commands declare it
    (their help differs), they must agree on its type and default, or the field would mean two things."""
    declared = [o for o in OPTIONS if o.dest == dest]
    if not declared:
        raise KeyError(f"no option {dest!r} in the registry")
    if len({(repr(o.value_type), repr(o.default)) for o in declared}) > 1:
        raise TypeError(f"option {dest!r}: its declarations differ in type or default")
    return declared[0]


def takes_options(*dests: str, defaults: bool = True, **renamed: str) -> Callable[[type], type]:
    """A class decorator, under `@dataclass`: one field per option, named as its dest (or `name=dest`),
    its type and default (none with defaults=False) those the registry declares, so a field of an option is
    written once, here in OPTIONS. The class's own annotations are the service's fields that are no option;
    one that names an option taken here is refused (tests/unit/test_options.py checks the rest)."""
    def add(cls: type) -> type:
        own = dict(inspect.get_annotations(cls))
        added: dict[str, Any] = {}
        taken: dict[str, str] = {}
        for name, dest in [(d, d) for d in dests] + list(renamed.items()):
            if name in own:
                raise TypeError(f"{cls.__name__}.{name}: the option {dest!r} is declared in the registry; "
                                "do not declare its field again")
            opt = registry_option(dest)
            added[name] = opt.value_type
            metadata = {"option": dest} if name != dest else {}
            setattr(cls, name, field(default=opt.default, metadata=metadata) if defaults
                    else field(metadata=metadata))
            taken[name] = dest
        cls.__annotations__ = {**added, **own}
        setattr(cls, REGISTRY_FIELDS, {**getattr(cls, REGISTRY_FIELDS, {}), **taken})
        return cls
    return add

def from_given(cls: type, parsed: Given, **more: Any) -> Any:
    """An options dataclass with each field named as an option's dest taken from `parsed` (a field whose
    type is itself such a dataclass is filled the same way, by its fields' `option` metadata or names),
    and its `given` field, where it has one, the Given itself (what its command lines are spelled from)."""
    if "given" in {f.name for f in fields(cls)}:
        more.setdefault("given", parsed)
    return cls(**{**_fields_from(cls, parsed), **more})


def _fields_from(cls: type, given: Given) -> dict[str, Any]:
    hints = get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in fields(cls):
        kind = hints[f.name]
        if isinstance(kind, type) and is_dataclass(kind):
            out[f.name] = kind(**_fields_from(kind, given))
            continue
        dest = f.metadata.get("option", f.name)
        if dest in given.values and f.init:
            out[f.name] = given.values[dest]
    return out


# ---- a stub of a module of such classes (what a type checker and a reader see) -----------------------

def dataclass_stub(module: types.ModuleType, more: Iterable[str] = ()) -> str:
    """The `.pyi` of a module of dataclasses (harness/service/options.pyi): each class with every field,
    the registry's among them, typed, then the lines `more` (the module's other names); tests/unit/
    test_options.py checks it is the module's."""
    imports: dict[str, set[str]] = {"dataclasses": {"dataclass"}}
    body: list[str] = []
    classes = [c for c in vars(module).values()
               if isinstance(c, type) and is_dataclass(c) and c.__module__ == module.__name__]
    for cls in classes:
        hints = get_type_hints(cls)
        own = [f for f in fields(cls) if not any(f.name in {g.name for g in fields(b)}
                                                 for b in cls.__bases__ if is_dataclass(b))]
        flags = ["frozen=True"] if cls.__dataclass_params__.frozen else []  # type: ignore[attr-defined]
        if own and all(f.kw_only for f in own):
            flags.append("kw_only=True")
        bases = ", ".join(b.__name__ for b in cls.__bases__ if b is not object)
        body += ["", "", f"@dataclass({', '.join(flags)})", f"class {cls.__name__}{f'({bases})' if bases else ''}:"]
        if cls.__dict__.get("__doc__") and not cls.__doc__.startswith(f"{cls.__name__}("):
            body += textwrap.wrap('"""' + " ".join(cls.__doc__.split()) + '"""', 110, initial_indent="    ",
                                  subsequent_indent="    ")
        registry = getattr(cls, REGISTRY_FIELDS, {})
        for f in own:
            has_default = f.default is not MISSING or f.default_factory is not MISSING  # type: ignore[misc]
            note = ""
            if f.name in registry:
                opt = registry_option(registry[f.name])
                note = f"  # {max(opt.flags, key=len)}" if opt.flags else f"  # {opt.dest.upper()}"
            body.append(f"    {f.name}: {_spell_type(hints[f.name], imports, module.__name__)}"
                        f"{' = ...' if has_default else ''}{note}")
        if not own:
            body.append("    ...")
    head = [f'"""Generated from {module.__name__} by `make docs`; do not edit by hand."""']
    for ours in (False, True):  # the standard library's, then the harness's
        head += [""] + [f"from {where} import {', '.join(sorted(names))}" for where, names in sorted(imports.items())
                        if where.startswith("harness") == ours]
    return "\n".join(head + body + ["", "", *more]) + "\n"


def _spell_type(kind: Any, imports: dict[str, set[str]], here: str) -> str:
    if kind is type(None):
        return "None"
    if kind is Ellipsis:
        return "..."
    if isinstance(kind, types.UnionType) or get_origin(kind) is Union:
        return " | ".join(_spell_type(k, imports, here) for k in get_args(kind))
    if get_origin(kind) is not None:
        args = ", ".join(_spell_type(k, imports, here) for k in get_args(kind))
        return f"{_spell_type(get_origin(kind), imports, here)}[{args}]"
    if kind.__module__ not in ("builtins", here):
        imports.setdefault(kind.__module__, set()).add(kind.__qualname__)
    return kind.__qualname__
