"""Every option declared once (harness/inputs/options.py): parse -> print -> parse gives the same options, for every
option of every command; the service's options agree with the declarations; each command has a handler."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import get_type_hints

import pytest

from harness import service
from harness.cli import commands as cli
from harness.core.confidence import SUITE_RUNS, WEAK_BOUND, SeedStrategy, miss_probability_random, runs_for_target
from harness.core.model import CellResult, CellSpec, CommitInfo, MeasuredCommit, Mesh
from harness.core.kinds import Platform, ThresholdMode, Verdict
from harness.core.factors import Factor
from harness.inputs import options
from harness.inputs.option_set import TAKES, from_given
from harness.inputs.options import (
    COMMAND_NAMES,
    SCRIPT_ARGS,
    Given,
    Option,
    options_for,
    parse,
)
from harness.inputs.versions import LATEST
from harness.core.records import convert
from harness.report.reproduce import harness_command
from harness.results.header import RecordedConfig, ResultsHeader
from harness.results.identity import SweepIdentity
from harness.service import command_options as service_options


def _words(opt: Option) -> list[str]:
    if opt.dest == SCRIPT_ARGS:
        return ["--", *opt.example]
    if opt.positional:
        return list(opt.example)
    if opt.action == "store_true":
        return [opt.flag]
    if opt.example[0].startswith("-"):  # as a user must type it: attached
        return [f"{opt.flag}={opt.example[0]}"]
    return [opt.flag, *opt.example]


def _base(command: str) -> list[str]:
    """The command with what it cannot do without: its positionals and its required flags."""
    needed = [o for o in options_for(command) if o.positional or o.required]
    return [command, *(w for o in needed for w in _words(o))]


def _with(command: str, opt: Option) -> list[str]:
    base = _base(command)
    if opt.positional or opt.required:
        return base
    words = _words(opt)
    if opt.dest == SCRIPT_ARGS:
        return base + words
    return base + words


def every_option():
    return [pytest.param(c, o, id=f"{c} {o.flag}") for c in COMMAND_NAMES for o in options_for(c)]


@pytest.mark.parametrize("command,opt", every_option())
def test_each_option_survives_parse_print_parse(command, opt):
    assert opt.example or opt.action == "store_true", f"{opt.flag}: give it an example (the docs show it)"
    given, _ = parse(_with(command, opt))
    if not (opt.positional or opt.required):
        # The example is not the default, so the line below really has to carry it.
        assert given[opt.dest] != parse(_base(command))[0][opt.dest], f"{opt.flag}: the example is the default"
    printed = given.words()
    again, _ = parse(printed)
    assert again == given, printed
    assert parse(given.words(absolute=True))[0].command == command


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_all_options_of_a_command_at_once_survive_parse_print_parse(command):
    taken = options_for(command)
    words = _base(command) + [w for o in taken if not (o.positional or o.required or o.dest == SCRIPT_ARGS)
                              for w in _words(o)]
    words += [w for o in taken if o.dest == SCRIPT_ARGS for w in _words(o)]
    given, _ = parse(words)
    assert parse(given.words())[0] == given
    # Spelling defaults out (as the bisection's and the shard tasks' lines do) changes nothing either.
    assert parse(given.words(always=[o.dest for o in taken]))[0] == given


def test_a_value_that_looks_like_a_flag_is_attached_to_its_flag():
    given, _ = parse(["submit", "c.yaml", "--shards", "2", "--sbatch-arg=--account=lab"])
    assert given["sbatch_args"] == ("--account=lab",)
    assert "--sbatch-arg=--account=lab" in given.words() and parse(given.words())[0] == given


def test_every_command_has_a_handler_and_an_example():
    for command in options.COMMANDS:
        assert callable(cli.handler(command.name))
        assert command.example.startswith(f"harness {command.name} ")
        assert parse(command.example.split()[1:])  # the example parses (its quoting is plain)


def test_a_flag_is_declared_once_per_command():
    for command in COMMAND_NAMES:
        flags = [f for o in options_for(command) for f in o.flags]
        dests = [o.dest for o in options_for(command)]
        assert len(flags) == len(set(flags)) and len(dests) == len(set(dests)), command


@pytest.mark.parametrize("cls,command", [(service.SweepOptions, "run"), (service.SweepOptions, "check"),
                                         (service.BisectOptions, "bisect"), (service.SubmitOptions, "submit"),
                                         (service.PythonOptions, "versions"), (service.ScriptRunOptions, "check")])
def test_the_services_options_default_as_declared(cls, command):
    declared = {o.dest: o.default for o in options_for(command)}
    for f in fields(cls):
        dest = f.metadata.get("option", f.name)
        if dest not in declared or f.default is MISSING:
            continue
        default = declared[dest]
        assert f.default == (default if default is not None or f.default is None else f.default), dest


def test_the_services_options_are_filled_from_what_was_given():
    given, _ = parse(["bisect", "c.yaml", "--jobs", "1", "--python-search", "/py", "--cache-thresholds", "harness",
                      "--good", "0.4.26", "--seeds", "random"])
    filled = from_given(service.BisectOptions, given)
    assert (filled.runs_at_once, filled.pythons.search, str(filled.cache_thresholds), filled.good, str(filled.seeds)) == \
        (1, (Path("/py"),), "harness", "0.4.26", "random")
    assert filled.given is given


def _holds(cls: type) -> dict[str, str]:
    """The fields of a service options class that hold an option: {field: the option's dest}."""
    return {f.name: f.metadata.get(TAKES, f.name) for f in fields(cls)
            if f.metadata.get(TAKES, f.name) in options.DECLARED and "derived_from" not in f.metadata}


def _mistyped(cls: type) -> list[str]:
    """The fields of `cls` that hold an option but are not typed, or do not default, as it is declared."""
    hints, declared = get_type_hints(cls), options.DECLARED
    return [name for name, dest in _holds(cls).items() if hints[name] != declared[dest].kind
            or {f.name: f for f in fields(cls)}[name].default not in (MISSING, declared[dest].default)]


def _service_option_classes() -> list[type]:
    return [c for c in vars(service_options).values()
            if isinstance(c, type) and is_dataclass(c) and c.__module__ == service_options.__name__]


def test_each_option_is_one_typed_field():
    """Options declares every option once, as an ordinary typed field whose metadata is its Option (no
    generated stub: a type checker reads the class); every command takes only declared options, and each
    option is taken by some command."""
    hints = get_type_hints(options.Options, include_extras=True)
    for f in fields(options.Options):
        (spec,) = hints[f.name].__metadata__
        assert isinstance(spec, Option) and options.DECLARED[f.name].kind == hints[f.name].__origin__, f.name
        assert options.DECLARED[f.name].default == f.default, f.name
    assert len(options.OPTIONS) == len(fields(options.Options)) == len(options.DECLARED)
    taken = set().union(*(c.takes for c in options.COMMANDS))
    assert taken == set(options.DECLARED), sorted(taken ^ set(options.DECLARED))
    assert not list(Path(options.__file__).parents[1].rglob("*.pyi"))


def test_the_service_options_hold_options_as_declared():
    """A service field that holds an option (named as it, or `takes` it) is typed as the option's field and
    defaults as it does (or has no default)."""
    assert len(_service_option_classes()) >= 10
    assert sum(len(_holds(c)) for c in _service_option_classes()) > 40
    for cls in _service_option_classes():
        assert not _mistyped(cls), (cls.__name__, _mistyped(cls))
    assert _holds(service.ScriptCheck)["timeout_s"] == "timeout" and "env" not in _holds(service.ScriptRunOptions)


def test_a_field_that_drifts_from_the_declaration_is_caught():
    @dataclass(frozen=True)
    class Drifted:
        runs_at_once: int = 2
        out: Path | None = options.Options.out
        folder: Path = field(default=Path("results"), metadata=options.takes("out"))
        timeout: float = 60.0

    assert _mistyped(Drifted) == ["runs_at_once", "out", "timeout"]


def test_the_value_types_are_inferred_from_the_declarations():
    assert options.option("run", "runs_at_once").value_type == int | None
    assert options.option("run", "versions").value_type == tuple[str, ...] | None
    assert options.option("run", "out").value_type is Path
    assert options.option("run", "seeds").value_type is SeedStrategy
    assert options.option("submit", "shards").value_type is int  # required: never None once parsed
    assert options.option("check", "with_editable").value_type == tuple[Path, ...]
    assert options.option("check", "rebuild").value_type is bool


def test_given_reads_its_options_as_attributes():
    given, _ = parse(["run", "c.yaml", "--jobs", "2"])
    assert (given.runs_at_once, given.config) == (2, Path("c.yaml"))
    with pytest.raises(AttributeError, match="takes no option 'jbos'"):
        given.jbos  # noqa: B018
    with pytest.raises(AttributeError):
        given.baseline  # noqa: B018  (nightly's, not run's)


_GIVEN_OWN = {"command", "values", "line", "words", "with_values", "get"}


def test_the_handlers_read_only_options_their_command_takes():
    """Each `given.NAME` in harness/cli/commands.py names an option of every command whose handler reads it
    (directly, or through a helper it calls): a typo fails here, not when a user first takes that branch."""
    tree = ast.parse(Path(cli.__file__).read_text())
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}

    def reads(function: ast.FunctionDef) -> set[str]:
        return {n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == "given"} - _GIVEN_OWN

    def calls(function: ast.FunctionDef) -> set[str]:
        return {n.func.id for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}

    checked = 0
    for command in COMMAND_NAMES:
        handler = functions[f"cmd_{command.replace('-', '_')}"]
        dests = {o.dest for o in options_for(command)}
        read = reads(handler).union(*(reads(functions[c]) for c in calls(handler) & set(functions)))
        assert read <= dests, (command, sorted(read - dests))
        checked += len(read)
    assert checked > 30
    assert not re.search(r"given\[|given\.get\(", Path(cli.__file__).read_text())


def test_the_identity_options_are_the_sweep_identity():
    named = {f.name for f in fields(SweepIdentity)} - {"config"}
    assert options.identity_dests() == named


def test_given_refuses_an_option_its_command_does_not_take():
    with pytest.raises(KeyError):
        Given("report", {}).with_values(runs_at_once=2)


def _read_back(header: ResultsHeader, cell: CellResult, **more) -> Given:
    line = harness_command(header, cell, **more)
    given, _ = parse(shlex.split(line)[1:])
    assert given.line(always=("versions", "device_count", "platform") if given.command == "check" else ()) == line
    return given


def test_the_reports_harness_command_reads_back_as_the_cell_it_measures_again():
    """report/reproduce.py spells its `harness check`/`run`/`nightly` lines with the registry (Given.line):
    parsed back, each is the cell's own options, and spelled again it is the same line."""
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 4, Mesh((4, 1), ("a", "b"))), Verdict.CLEAN, {}, [])
    config = {"source": "harness check", "repro": "/my proj/train.py", "args": ["--name", "it's"],
              "env": {"MODEL_SIZE": "a b"}, "cwd": "/my proj", "cache_thresholds": "script",
              "requirements": ["flax==0.8.0"]}
    header = ResultsHeader(config=convert(config, RecordedConfig))
    given = _read_back(header, cell, vary=(Factor.CWD, Factor.TZ))
    assert (given["script"], given["versions"], given["device_count"], given["platform"]) == \
        (Path("/my proj/train.py"), ("0.4.31",), 4, Platform.CPU)
    assert (given["env"], given["cwd"], given["cache_thresholds"], given["with_requirements"]) == \
        (("MODEL_SIZE=a b",), Path("/my proj"), ThresholdMode.SCRIPT, ("flax==0.8.0",))
    assert given[SCRIPT_ARGS] == ("--name", "it's")  # --vary went before `--`, not to the script
    assert given["vary"] == (Factor.CWD, Factor.TZ) and given["processes"] is None
    module = _read_back(ResultsHeader(config=RecordedConfig(source="harness check", module="pkg.train")), cell)
    assert (module["module"], module["script"]) == ("pkg.train", None)
    group_cell = CellResult(CellSpec("0.4.31", Platform.CPU, 4, None, processes=2), Verdict.CLEAN, {}, [])
    run = _read_back(ResultsHeader(config=RecordedConfig(source="c.yaml")), group_cell)
    assert (run.command, run["config"], run["versions"], run["processes"]) == ("run", Path("c.yaml"), ("0.4.31",), 2)
    commit = CellResult(cell.spec, Verdict.CLEAN, {}, [], commit=MeasuredCommit("ab" * 20, "2024-01-01", "s"))
    nightly = _read_back(ResultsHeader(config=RecordedConfig(source="c.yaml")), commit)
    assert (nightly.command, nightly["ref"], nightly["jax_repo"]) == ("nightly", "ab" * 20, Path("/path/to/jax"))


def test_a_command_without_a_config_says_its_own_defaults():
    """check, reduce and fingerprint take a script, not a config: no help of theirs may point to a config's
    value, and their defaults are what the service uses (check_config: latest, runs_for_target())."""
    for command in COMMAND_NAMES:
        if "config" in {o.dest for o in options_for(command)}:
            continue
        for opt in options_for(command):
            assert "the config's" not in opt.help, (command, opt.flag, opt.help)
    assert f"default: {runs_for_target()}," in options.option("check", "runs").help
    assert f"default: {LATEST})" in options.option("check", "versions").help
    assert "the config's" in options.option("run", "runs").help  # a config's command keeps its wording
    config = service.check_config(service.ScriptCheck(script=Path(__file__), script_run=service.ScriptRunOptions(), versions=None,
                                                      platform=Platform.CPU, device_count=8, runs=None,
                                                      timeout_s=300.0))
    assert (config.runs, config.jax_versions) == (runs_for_target(), (LATEST,))


def test_a_test_suite_makes_the_fewest_runs_that_are_not_weak_by_default():
    """check --pytest / -m MODULE without --runs: 6 runs (0.031), as its help says with the --runs for 1e-3;
    --runs still wins, and a script keeps the 1e-3 target's."""
    assert miss_probability_random(SUITE_RUNS) <= WEAK_BOUND < miss_probability_random(SUITE_RUNS - 1)
    help_text = options.option("check", "runs").help
    assert f"--pytest or -m MODULE: {SUITE_RUNS}, the fewest that are not weak" in help_text
    assert f"--runs {runs_for_target()} for 1e-3" in help_text

    def config_of(runs: int | None, module: str | None) -> int:
        check = service.ScriptCheck(script=None if module else Path(__file__), versions=None, platform=Platform.CPU,
                                    device_count=8, runs=runs, timeout_s=300.0,
                                    script_run=service.ScriptRunOptions(module=module))
        return service.check_config(check).runs
    assert config_of(None, "pytest") == SUITE_RUNS == config_of(None, "mypkg.train")
    assert config_of(9, "pytest") == 9
    assert config_of(None, None) == runs_for_target()
