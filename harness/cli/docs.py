"""docs/commands.md, generated from the options' one declaration (harness/inputs/options.py) and the parser built
from it, so the page cannot differ from `--help`. `make docs` writes it; tests/unit/test_docs.py fails when
it is out of date (a flag added without regenerating the page)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.inputs.option_set import SCRIPT_ARGS, Option
from harness.inputs.options import (
    COMMANDS,
    build_parser,
    options_for,
)

COMMANDS_DOC = Path("docs") / "commands.md"
REGENERATE = "make docs"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _spelling(opt: Option) -> str:
    if opt.dest == SCRIPT_ARGS:
        return "`-- ARG ...`"
    if opt.positional:
        name = opt.metavar or opt.dest.upper()
        return f"`{name} ...`" if opt.many else f"`[{name}]`" if opt.nargs == "?" else f"`{name}`"
    flags = ", ".join(f"`{f}`" for f in opt.flags)
    if opt.action == "store_true":
        return flags
    value = opt.metavar or ("|".join(opt.choices) if opt.choices else opt.dest.upper())
    return f"{flags} `{value}`" + (" ..." if opt.many else "")


def _default(opt: Option) -> str:
    if opt.required:
        return "required"
    if opt.action == "store_true" or opt.default in (None, (), False):
        return ""
    return f"`{opt.default if opt.spell is str else opt.spell(opt.default)}`"  # as a command line spells it


def render() -> str:
    width = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps the usage lines to the terminal: the page must not vary
    try:
        return _render()
    finally:
        if width is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = width


def _render() -> str:
    parser = build_parser()
    subparsers = _subparsers(parser)
    out = ["# Commands", "",
           f"<!-- Generated from harness/inputs/options.py by `{REGENERATE}`; do not edit by hand. -->", "",
           ("Every command, every flag: the same declarations make the parser, `harness COMMAND --help` and this "
            "page. Exit codes ([ci.md](ci.md)): `0` the work completed (whatever it found), `1` a regression "
            "(`nightly`, `compare`; `run`, `check`, `merge` and `submit --wait` with `--fail-on`), `2` bad input (one "
            "line, nothing written), `3` a failure of the harness itself (or an incomplete merge), `130` Ctrl-C, `143` SIGTERM (`129` SIGHUP); interrupted work is "
            "kept and the line that resumes it printed."),
           "", "| command | what it does |", "|---|---|"]
    out += [f"| [`{c.name}`](#harness-{c.name}) | {_cell(c.help)} |" for c in COMMANDS]
    for command in COMMANDS:
        usage = subparsers[command.name].format_usage().strip().removeprefix("usage: ")
        if SCRIPT_ARGS in {o.dest for o in options_for(command.name)}:
            usage += " [-- ARG ...]"
        out += ["", f"## harness {command.name}", "", command.help[0].upper() + command.help[1:] + ".", "",
                "```", usage, "```", "", "Example:", "", "```bash", command.example, "```"]
        command_options = options_for(command.name)
        groups = ["arguments"] + list(dict.fromkeys(o.group for o in command_options if not o.positional))
        for group in groups:
            members = [o for o in command_options if (o.positional and group == "arguments")
                       or (not o.positional and o.group == group)]
            if not members:
                continue
            out += ["", f"**{group}**", "", "| option | meaning | default |", "|---|---|---|"]
            out += [f"| {_cell(_spelling(o))} | {_cell(o.help)} | {_default(o)} |" for o in members]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.cli.docs [PATH]`: write the page (default docs/commands.md)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else COMMANDS_DOC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
