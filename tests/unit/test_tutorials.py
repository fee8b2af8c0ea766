"""The tutorials (docs/tutorials/) stay short and runnable: each is readable in ten minutes, and every
`harness ...` line in their shell blocks is one the real parser accepts, with the config files and
scripts it names present in the examples folder the tutorial runs from."""

import re
import shlex
from pathlib import Path

import pytest

from harness.cli import commands as cli
from harness.inputs import options

ROOT = Path(__file__).parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
PAGES = ("first-check.md", "library-ci.md", "gpu-regressions.md")
MAX_WORDS = 1200
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
DATED_OUTPUT = re.compile(r"[Oo]utput of a run on \d{4}-\d{2}-\d{2}, jax \d+\.\d+\.\d+")


def words(text: str) -> int:
    """Counted as `wc -w` counts them: the shown output's table rules included, so the limit is never generous."""
    return len(text.split())


def shell_lines(text: str) -> list[str]:
    """The command lines of the page's shell blocks, comments and a `$ ` prompt removed."""
    lines = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def commands_with_folders(text: str) -> list[tuple[Path, list[str]]]:
    """Each `harness` line as words, with the folder the page has `cd`-ed to by then (from the repository root)."""
    here, found = ROOT, []
    for line in shell_lines(text):
        argv = shlex.split(line)
        if argv[0] == "cd":
            here = (here / argv[1]).resolve()
        elif argv[0] == "harness":
            found.append((here, argv[1:]))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_a_tutorial_is_readable_in_ten_minutes(page):
    text = (TUTORIALS / page).read_text()
    assert words(text) <= MAX_WORDS, f"{page}: {words(text)} words, more than {MAX_WORDS}"
    assert DATED_OUTPUT.search(text), f"{page} shows no dated output of a real run"


@pytest.mark.parametrize("page", PAGES)
def test_every_harness_command_a_tutorial_shows_parses(page):
    found = commands_with_folders((TUTORIALS / page).read_text())
    assert found, f"{page} shows no harness command"
    parser = cli.build_parser()
    for folder, argv in found:
        assert folder.is_dir(), f"{page}: `cd` to {folder}, which the checkout lacks"
        given, args = options.parse(argv, parser)  # SystemExit (a failed test) on an unknown command or option
        assert callable(cli.handler(args.command)), argv
        # What the command reads from the folder the tutorial runs it in is shipped beside it.
        named = [getattr(args, dest, None) for dest in ("script", "config")]
        for path in (str(p) for p in named if str(p).endswith((".py", ".yaml"))):
            assert (folder / path).is_file(), f"{page}: `harness {shlex.join(argv)}` names {path}, not in {folder}"


def test_the_shell_lines_are_the_commands_of_shell_blocks():
    assert shell_lines("```bash\ncd x  # go\n$ harness check a.py\n```\n```python\nharness = 1\n```\n") == [
        "cd x", "harness check a.py"]


def test_the_readme_links_the_tutorials():
    readme = (ROOT / "README.md").read_text()
    for page in PAGES:
        assert f"docs/tutorials/{page}" in readme, page
