"""Every example a user is shown, run or checked: the example of each command's `--help` (harness/inputs/options.py's
registry) and every `harness ...` line in the fenced code blocks of README.md, docs/ and docker/README.md.

Each is parsed by the real parser (a flag that no longer exists, a wrong value, fails here). Those that
measure nothing are run for real: `--help` of every command, `--version`, `versions` (against a fake index),
`init` (in a folder with the script it names), `report` (of a fixture folder, standing in for a
`results/<run>` placeholder). Those that measure (a sweep per example would take hours) are checked where
they would measure: the config they name is one a user has (a shipped name, or a file in the checkout) and
reads; a script they name is in the checkout or is one of the user's own, named in USER_SCRIPTS below.
Synopsis lines (`[--good V]`, `CONFIG`, `DIR...`) are not examples and are left out."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from harness.cli import commands as cli
from harness.inputs import options
from harness.inputs.config import config_file, load_config
from harness.inputs.options import COMMAND_NAMES, parse
from harness import service
from harness.service.option_checks import names_a_program

ROOT = Path(__file__).resolve().parents[2]
# The site's pages (a tutorial's example files, a results folder's report.md, are not: mkdocs.yml's exclude_docs).
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "examples" not in p.relative_to(ROOT).parts),
         ROOT / "docker" / "README.md"]
# The user's own code in an example: theirs to have, not the checkout's (a path to the checkout must exist).
USER_SCRIPTS = {"train.py", "my_step.py", "my_model_step.py", "multihost_train.py"}
USER_MODULES = {"mypkg.train", "pytest"}  # pytest: installed in the release's environment
USER_CONFIGS = {"train.yaml"}  # README: `harness init train.py && harness run train.yaml`
# A synopsis names its values in capitals (CONFIG, DIR, V, I/N) or offers choices in brackets.
SYNOPSIS = re.compile(r"\[-h\]|\[--|\b[A-Z]{1,}(?:/[A-Z])?\b(?:\.\.\.)?(?=\s|$)|\bDIR\.\.\.")
PLACEHOLDER = re.compile(r"<[^>]+>")
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "smoke-run"


def _command_words(line: str) -> list[str]:
    """The harness command's words of a shell line: up to its first redirection or pipe (`> summary.json`)."""
    lexer = shlex.shlex(PLACEHOLDER.sub("x", line), posix=True, punctuation_chars=True)  # results/<run>: a name
    lexer.whitespace_split, lexer.commenters = True, "#"
    words = list(lexer)
    cut = next((i for i, w in enumerate(words) if w and set(w) <= set("<>|&;")), len(words))
    return words[:cut]


def _doc_lines() -> list[tuple[str, str]]:
    """(page, line) for each `harness` command in a fenced block (continuations joined, `&&` split)."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```(?:bash|sh|shell|console)?\n(.*?)```", page.read_text(), re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                for part in line.split("&&"):
                    part = part.strip().removeprefix(".venv/bin/")
                    if not part.startswith("harness "):
                        continue
                    words = _command_words(part)
                    if words[1] in COMMAND_NAMES or words[1].startswith("-"):
                        found.append((page.relative_to(ROOT).as_posix(), shlex.join(words)))
    return found


def _help_examples() -> list[tuple[str, str]]:
    return [(f"harness {c.name} --help", c.example) for c in options.COMMANDS]


EXAMPLES = [e for e in _help_examples() + _doc_lines() if not SYNOPSIS.search(e[1].split(" ", 2)[-1])]


def test_the_examples_are_collected():
    """The collection is not empty by accident: every command's help example, and the docs' lines."""
    pages = {page for page, _ in EXAMPLES}
    assert {"README.md", "docs/running.md", "docs/reference/commands/check.md"} <= pages, pages
    assert len(EXAMPLES) >= 50
    assert not [line for _, line in EXAMPLES if "[" in line and "--" in line.split("[", 1)[1][:3]]


@pytest.mark.parametrize("where,line", EXAMPLES, ids=[f"{w}: {l[:60]}" for w, l in EXAMPLES])
def test_every_example_parses_and_names_what_a_user_has(where, line, monkeypatch):
    monkeypatch.chdir(ROOT)
    words = PLACEHOLDER.sub("x", line).split(" ", 1)[1]
    argv = shlex.split(words)
    if argv == ["--version"]:
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == 0
        return
    given, _ = parse(argv)  # a usage error exits 2 here, naming the flag
    if given.command in ("check", "bisect"):  # --pytest PATH: `-m pytest`, PATH pytest's first argument, as they read it
        given = service.as_pytest(given, "script" if given.command == "check" else "config")
    script = given.get("script")
    if given.command == "bisect" and names_a_program(given["config"], given["module"]):  # bisect train.py
        script, given = given["config"], given.with_values(config=None)
    if given.get("config") is not None and str(given["config"]) not in USER_CONFIGS:
        path = config_file(given["config"])
        assert path.is_file(), f"{where}: {line}: no config {given['config']} (shipped: a name, or a checkout file)"
        load_config(path)
    if given.command != "fingerprint" or script is None or script.suffix == ".py":
        if script is not None and not (ROOT / script).exists():
            assert script.name in USER_SCRIPTS, f"{where}: {line}: {script} is not in the checkout"
    if given.get("module") is not None:
        assert given["module"] in USER_MODULES, f"{where}: {line}"


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_every_commands_help_runs_and_ends_with_its_example(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.rstrip().endswith(options.COMMANDS[COMMAND_NAMES.index(command)].example)


def _runnable(command: str) -> list[tuple[str, str]]:
    return [(w, line) for w, line in EXAMPLES if line.split()[1] == command]




@pytest.mark.parametrize("where,line", _runnable("versions"))
def test_the_versions_examples_run(where, line, fake_index, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.main(shlex.split(line)[1:]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("0.4.25\tPython "), out


@pytest.mark.parametrize("where,line", _runnable("init"))
def test_the_init_examples_run(where, line, tmp_path, monkeypatch, capsys):
    argv = shlex.split(line)[1:]
    given, _ = parse(argv)
    monkeypatch.chdir(tmp_path)
    given["script"].write_text("print(1)\n")
    assert cli.main(argv) == 0, capsys.readouterr().err
    written = given["output"] or Path(f"{given['script'].stem}.yaml")
    assert load_config(written).repro.path == (tmp_path / given["script"]).resolve()


@pytest.mark.parametrize("where,line", _runnable("report"))
def test_the_report_examples_run_on_a_fixture_folder(where, line, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, folder)
    argv = [str(folder) if w == str(parse(shlex.split(PLACEHOLDER.sub("x", line))[1:])[0]["results"]) else w
            for w in shlex.split(PLACEHOLDER.sub("x", line))[1:]]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"report: {folder / 'report.md'}"
    assert ("--print" in argv) == ("# " in out)
