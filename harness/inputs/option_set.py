"""How an option is declared (the model: nox's `_option_set.py`): each option is one typed field of
`harness.inputs.options.Options`, made by `option(...)` below, whose metadata (an `Option`) carries its flags,
help, argument group, example and how its text is read and spelled back; its name and type are the field's.
Also the readers of option text (argparse types: a bad value is one line naming the option). Pure."""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Self, TypeVar, get_type_hints

from harness.core.errors import ExitCode
from harness.core.kinds import FAILABLE, Verdict, parse_fail_on
from harness.core.factors import Factor, parse_factors

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RUNS_AT_ONCE_AUTO = "auto"
SCRIPT_ARGS = "script_args"  # the dest of the words after `--` (harness check SCRIPT -- ARG ...)
_T = TypeVar("_T", bound="DataclassInstance")  # the options dataclass from_given fills
TAKES = "takes"  # the metadata key of a service's field that holds an option (harness/service/command_options.py)


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


def parse_runs_at_once(text: str) -> int | None:
    """`auto` (None: the service chooses from the cores and the platform) or a number of runs at once."""
    if text == RUNS_AT_ONCE_AUTO:
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs at once or '{RUNS_AT_ONCE_AUTO}'")
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
    """--vary: `cache-path,cwd` or `all` (harness/core/factors.py)."""
    try:
        return parse_factors(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def spell_runs_at_once(value: int | None) -> str:
    return RUNS_AT_ONCE_AUTO if value is None else str(value)


# `harness check` is a check, as pytest is: it fails on these unless told otherwise (`--fail-on none`).
CHECK_FAILS_ON = frozenset(v for v in Verdict if v.fails_check)
NO_FAILURE = "none"  # --fail-on none: exit 0 whatever the cells say


def fail_on(text: str) -> frozenset[Verdict]:
    """`reproduced,error`: the verdicts that make run/check exit 1 (harness/output/ci.py); `none`: no verdict."""
    if text.strip() == NO_FAILURE:
        return frozenset()
    try:
        return parse_fail_on(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def spell_fail_on(value: frozenset[Verdict]) -> str:
    return ",".join(str(v).replace(" ", "-") for v in FAILABLE if v in value) or NO_FAILURE


# ---- the declaration ------------------------------------------------------------------------------

class Group:
    """The argument groups of --help and of the command reference (docs/reference/commands/), in the order they are shown."""

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
    """One option of the command line, as its field's metadata: `dest` and `kind` (the value's type, as the
    service receives it) are the field's name and annotation; `per` holds what differs for some commands (the
    help of `--versions` for reduce, say), as {commands: changes}."""

    flags: tuple[str, ...]  # () for a positional argument
    help: str
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
    per: tuple[tuple[frozenset[str], Mapping[str, Any]], ...] = ()
    dest: str = ""  # the field's name: the name the service knows it by (and the Given's key)
    kind: Any = None  # the field's type

    @property
    def value_type(self) -> Any:
        return self.kind

    @property
    def positional(self) -> bool:
        return not self.flags

    @property
    def flag(self) -> str:
        return self.flags[-1] if self.flags else self.dest

    @property
    def many(self) -> bool:
        return self.nargs == "+" or self.action in ("append", "extend")

    def for_command(self, command: str) -> Option:
        """The option as `command` takes it (its `per` changes applied)."""
        changes = [c for commands, c in self.per if command in commands]
        return replace(self, **changes[0]) if changes else self

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
        if self.default not in (None, False, [], ()) and "default" not in self.help:
            # as the flag takes it, by its own spelling (a set's repr follows the hash seed)
            kwargs["help"] = f"{self.help} (default: {self.spell(self.default)})"
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
        if value is None and not (force and self.spell is not str):  # runs_at_once spells None: auto
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


def opt(*flags: str, help: str, per: Mapping[str | tuple[str, ...], Mapping[str, Any]] | None = None,
        **spec: Any) -> Option:
    """An option, as the metadata of its typed field of `Options` (`name: Annotated[TYPE, opt(...)] = DEFAULT`);
    `per`: {command or commands: the Option's fields that differ there}."""
    variants = tuple((frozenset((k,) if isinstance(k, str) else k), dict(v)) for k, v in (per or {}).items())
    return Option(flags, help, per=variants, **spec)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    example: str  # one typical use, shown at the end of its --help and in the docs
    takes: frozenset[str] = frozenset()  # its options: the groups it picks and its own (their order: Options's)


# ---- the parser's behaviour, and what was given as a service's typed options ------------------------------

class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line and where to look, not the usage block (exit 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the example's line as written; says each flag's default where it has one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (action.option_strings and default not in (None, False, [], argparse.SUPPRESS)
                and "default" not in text):
            text += f" (default: {default})"
        return text



def build_parser(commands: Iterable[Command], options_for: Callable[[str], tuple[Option, ...]], description: str,
                 version: str) -> OneLineParser:
    """`harness` and a subcommand per command, each with its options in their argument groups."""
    parser = OneLineParser(prog="harness", description=description,
                           epilog="`harness COMMAND --help` shows a command's options, grouped, and an example.")
    parser.add_argument("--version", action="version", version=version, help="print the harness's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        p = sub.add_parser(command.name, help=command.help, description=command.help[0].upper() + command.help[1:],
                           epilog=f"example:\n  {command.example}", formatter_class=Formatter)
        groups: dict[str, argparse._ArgumentGroup] = {}
        for o in options_for(command.name):
            if o.dest == SCRIPT_ARGS:
                continue  # split off before parsing (parse)
            o.add_to(p if o.positional else groups.setdefault(o.group, p.add_argument_group(o.group)))
    return parser


def split_script_args(words: list[str]) -> tuple[list[str], list[str]]:
    """The harness's own words and the script's (everything after the first `--`, untouched)."""
    if "--" not in words:
        return list(words), []
    at = words.index("--")
    return words[:at], words[at + 1:]


def parse(words: list[str], parser: argparse.ArgumentParser, options_for: Callable[[str], tuple[Option, ...]],
          ) -> tuple[str, dict[str, Any], argparse.Namespace]:
    """The command, its options' values as the service receives them (lists as tuples, enums converted,
    the words after `--` as SCRIPT_ARGS), and argparse's Namespace."""
    own, script_args = split_script_args(words)
    args = parser.parse_args(own)
    taken = options_for(args.command)
    if script_args and SCRIPT_ARGS not in {o.dest for o in taken}:
        parser.error(f"{args.command}: takes no script arguments after `--` (a config's args: does that)")
    values: dict[str, Any] = {}
    for o in taken:
        value = tuple(script_args) if o.dest == SCRIPT_ARGS else getattr(args, o.dest)
        if isinstance(value, list):
            value = tuple(value)
        elif o.convert is not None and value is not None:
            value = o.convert(value)
        values[o.dest] = value
    return args.command, values, args


@dataclass(frozen=True)
class GivenBase:
    """A command and its options' values; `options()` says which options the command takes (harness/inputs/
    options.py's Given knows the commands)."""

    command: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def options(self) -> tuple[Option, ...]:
        raise NotImplementedError

    def __getattr__(self, dest: str) -> Any:
        """`given.runs_at_once`: the value of an option the command takes; any other name (a typo, an option of
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

    def with_values(self, **changes: Any) -> Self:
        unknown = set(changes) - {o.dest for o in self.options()}
        if unknown:
            raise KeyError(f"{self.command} takes no option {sorted(unknown)}")
        return replace(self, values={**self.values, **changes})

    def words(self, always: Iterable[str] = (), absolute: bool = False) -> list[str]:
        """The command line after `harness`: positionals, then every option whose value is not its
        default (and those in `always`, spelled even at their default), then `-- ARGS`."""
        always = set(always)
        out = [self.command]
        rest: list[str] = []
        for o in self.options():
            value = self.values.get(o.dest, o.default)
            if o.dest == SCRIPT_ARGS:
                rest = ["--", *map(str, value)] if value else []
                continue
            out += o.words(value, absolute, force=o.dest in always)
        return out + rest

    def line(self, always: Iterable[str] = (), absolute: bool = False) -> str:
        return shlex.join(["harness", *self.words(always, absolute)])


def from_given(cls: type[_T], parsed: Any, **more: Any) -> _T:
    """An options dataclass with each field that `takes` an option filled from the Given `parsed` (a field
    whose type is itself such a dataclass is filled the same way), and its `given` field, where it has one,
    the Given itself (what its command lines are spelled from)."""
    if "given" in {f.name for f in fields(cls)}:
        more.setdefault("given", parsed)
    return cls(**{**_fields_from(cls, parsed.values), **more})


def _fields_from(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    hints = get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in fields(cls):
        kind = hints[f.name]
        if isinstance(kind, type) and is_dataclass(kind):
            out[f.name] = kind(**_fields_from(kind, values))
        elif f.metadata.get(TAKES, f.name) in values and f.init and "derived_from" not in f.metadata:
            out[f.name] = values[f.metadata.get(TAKES, f.name)]
    return out
