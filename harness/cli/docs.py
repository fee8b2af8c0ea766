"""The command reference, generated from the options' one declaration (harness/inputs/options.py) and the parser
built from it, so the pages cannot differ from `--help`: docs/reference/commands/index.md (every command, the exit
codes) and a page per command beside it. `make docs` writes them; tests/unit/test_docs.py fails when one is out of
date (a flag added without regenerating the pages) or when a page is left of a command that no longer exists."""

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

COMMANDS_DIR = Path("docs") / "reference" / "commands"
INDEX = "index.md"
REGENERATE = "make docs"
_GENERATED = f"<!-- Generated from harness/inputs/options.py by `{REGENERATE}`; do not edit by hand. -->"


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


def render() -> dict[str, str]:
    """Each page's file name (in COMMANDS_DIR) -> its text."""
    width = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps the usage lines to the terminal: the pages must not vary
    try:
        return _render()
    finally:
        if width is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = width


def _index() -> str:
    out = ["# Commands", "", _GENERATED, "",
           ("Every command, every flag: the same declarations make the parser, `harness COMMAND --help` and these "
            "pages. Exit codes ([ci.md](../../ci.md#exit-codes)): `0` the work completed (whatever it found), `1` a "
            "regression (`nightly`, `compare`; `run`, `check`, `merge` and `submit --wait` with `--fail-on`), `2` "
            "bad input (one line, nothing written), `3` a failure of the harness itself (or an incomplete merge), "
            "`130` Ctrl-C, `143` SIGTERM (`129` SIGHUP); interrupted work is kept and the line that resumes it "
            "printed. Verdicts and causes: [verdicts.md](../verdicts.md)."),
           "", "| command | what it does |", "|---|---|"]
    out += [f"| [`{c.name}`]({c.name}.md) | {_cell(c.help)} |" for c in COMMANDS]
    return "\n".join(out) + "\n"


def _command_page(name: str, parser: argparse.ArgumentParser) -> str:
    (command,) = [c for c in COMMANDS if c.name == name]
    usage = parser.format_usage().strip().removeprefix("usage: ")
    command_options = options_for(command.name)
    if SCRIPT_ARGS in {o.dest for o in command_options}:
        usage += " [-- ARG ...]"
    out = [f"# harness {command.name}", "", _GENERATED, "", command.help[0].upper() + command.help[1:] + ".", "",
           "```", usage, "```", "", "Example:", "", "```bash", command.example, "```"]
    groups = ["arguments"] + list(dict.fromkeys(o.group for o in command_options if not o.positional))
    for group in groups:
        members = [o for o in command_options if (o.positional and group == "arguments")
                   or (not o.positional and o.group == group)]
        if not members:
            continue
        out += ["", f"**{group}**", "", "| option | meaning | default |", "|---|---|---|"]
        out += [f"| {_cell(_spelling(o))} | {_cell(o.help)} | {_default(o)} |" for o in members]
    out += ["", "All commands and the exit codes: [Commands](index.md)."]
    return "\n".join(out) + "\n"


def _render() -> dict[str, str]:
    subparsers = _subparsers(build_parser())
    pages = {INDEX: _index()}
    pages.update({f"{c.name}.md": _command_page(c.name, subparsers[c.name]) for c in COMMANDS})
    return pages


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.cli.docs [FOLDER]`: write the pages (default docs/reference/commands/), removing a page
    of a command that no longer exists."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else COMMANDS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    pages = render()
    for stale in sorted({p.name for p in folder.glob("*.md")} - set(pages)):
        (folder / stale).unlink()
    for name, text in pages.items():
        (folder / name).write_text(text)
    print(f"wrote {len(pages)} pages in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
