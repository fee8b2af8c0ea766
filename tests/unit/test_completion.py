"""Shell completion (issue 33.5): `harness completion bash|zsh` prints a script shtab generates from the
parser, so from the options registry; bash runs the script here and completes commands, options (a new
one included), choices and file names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli import commands as cli
from harness.inputs.options import COMMAND_NAMES



def script(shell: str, capsys) -> str:
    assert cli.main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(words: list[str], folder: Path, capsys) -> list[str]:
    """What bash's completion offers for the last of `words`, with the script sourced as a user would."""
    (folder / "harness.bash").write_text(script("bash", capsys))
    program = ('source harness.bash; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; '
               'COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _shtab_harness; printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--noprofile", "--norc", "-c", program, "bash", *words], cwd=folder,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_bash_completes_commands_options_choices_and_files(tmp_path, capsys):
    assert set(complete(["harness", ""], tmp_path, capsys)) == set(COMMAND_NAMES)
    assert complete(["harness", "ch"], tmp_path, capsys) == ["check"]
    assert complete(["harness", "check", "--with-ed"], tmp_path, capsys) == ["--with-editable"]
    assert complete(["harness", "check", "--index"], tmp_path, capsys) == ["--index-url"]
    assert set(complete(["harness", "run", "x.yaml", "--backend", ""], tmp_path, capsys)) == {
        "auto", "venv", "local", "docker"}
    assert set(complete(["harness", "completion", ""], tmp_path, capsys)) == {"bash", "zsh"}
    (tmp_path / "train_step.py").write_text("")
    assert "train_step.py" in complete(["harness", "check", "train_"], tmp_path, capsys)


def test_the_zsh_script_is_one_zsh_reads(tmp_path, capsys):
    text = script("zsh", capsys)
    assert text.startswith("#compdef harness") and "--with-editable" in text
    if shutil.which("zsh"):  # not installed on every machine: the syntax check where it is
        (tmp_path / "_harness").write_text(text)
        assert subprocess.run(["zsh", "-n", str(tmp_path / "_harness")], timeout=60).returncode == 0


def test_an_unknown_shell_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["completion", "fish"])
    assert exited.value.code == 2 and "invalid choice: 'fish'" in capsys.readouterr().err
