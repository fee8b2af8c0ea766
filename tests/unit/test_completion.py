"""Shell completion (issue 33.5): `harness completion bash|zsh` prints a script shtab generates from the
parser, so from the options registry; bash runs the script here and completes commands, options (a new
one included), choices and file names; zsh, driven through zpty, defines the completion (installed on
$fpath, sourced or eval'd) and completes commands and options (skipped without zsh unless HARNESS_REQUIRE_ZSH=1)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
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


ZSH = shutil.which("zsh")
needs_zsh = pytest.mark.skipif(not ZSH and os.environ.get("HARNESS_REQUIRE_ZSH") != "1",
                               reason="zsh is not installed (HARNESS_REQUIRE_ZSH=1 makes this a failure)")


def zsh_complete(line: str, load: str, folder: Path) -> list[str]:
    """What zsh's completion offers on Tab after `line`, in a real interactive zsh (driven through zpty)
    with compinit and the script loaded by `load`: every match compadd is given, recorded in a file."""
    got = folder / "got"
    got.unlink(missing_ok=True)
    driver = "\n".join([
        "zmodload zsh/zpty",
        "zpty z zsh -f -i",
        f"zpty -w z {shlex.quote('PS1=%; LISTMAX=100000; unsetopt auto_list; ' + load)}",
        "zpty -w z " + shlex.quote('compadd() { local -a hits; builtin compadd -A hits "$@"; '
                                   'print -rl -- $hits >> ./got; builtin compadd "$@" }'),
        f"zpty -w -n z {shlex.quote(line)}$'\\t'",
        "for i in {1..50}; do [[ -s ./got ]] && break; sleep 0.1; done; sleep 0.2",  # the Tab's matches first
        "zpty -w z $'\\C-u'" + shlex.quote("print -r -- '-- done' >> ./got"),
        "for i in {1..50}; do [[ -f ./got && $(<./got) == *'-- done'* ]] && break; sleep 0.1; done",
        "zpty -d z",
    ])
    done = subprocess.run([ZSH or "zsh", "-f", "-c", driver], cwd=folder, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = got.read_text().splitlines() if got.exists() else []
    assert "-- done" in lines, f"zsh did not finish: {done.stdout[-500:]} {done.stderr[-500:]}"
    return [w for w in lines if w != "-- done"]


COMPINIT = "autoload -Uz compinit && compinit -u -d ./zcompdump"


@needs_zsh
@pytest.mark.parametrize("load", [f"fpath=(./site-functions $fpath); {COMPINIT}",
                                  f"{COMPINIT}; source <(cat harness.zsh)", f'{COMPINIT}; eval "$(cat harness.zsh)"'])
def test_zsh_defines_the_completion_and_completes_commands_and_options(load, tmp_path, capsys):
    """As README says to install it (a folder on $fpath) and as a .zshrc sources or evals it."""
    text = script("zsh", capsys)
    (tmp_path / "harness.zsh").write_text(text)
    (tmp_path / "site-functions").mkdir()
    (tmp_path / "site-functions" / "_harness").write_text(text)
    defined = subprocess.run([ZSH or "zsh", "-f", "-c", f"{load} && print -r -- $_comps[harness]"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=False)
    assert defined.returncode == 0 and defined.stderr == "", defined.stderr
    assert defined.stdout.strip() in {"_harness", "_shtab_harness"}
    assert set(COMMAND_NAMES) <= set(zsh_complete("harness ", load, tmp_path))
    assert "--with-editable" in zsh_complete("harness check --with-ed", load, tmp_path)


def test_help_and_completion_read_the_same_under_every_hash_seed():
    """A default that is a set (check's --fail-on) was printed in the set's order, which follows the hash seed:
    `check --help` and the zsh script differed between two processes."""
    def printed(seed: str, *words: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        return subprocess.run([sys.executable, "-m", "harness", *words], env=env, capture_output=True, text=True,
                              check=True, timeout=60).stdout
    for words in (("check", "--help"), ("completion", "zsh")):
        assert len({printed(seed, *words) for seed in ("1", "2", "3", "4", "5")}) == 1, words
    assert "(default: reproduced,error)" in " ".join(printed("0", "check", "--help").split())
