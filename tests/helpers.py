"""Small helpers the tests share (fakes are in tests/fakes.py, stored cells in tests/cells.py): the checkout's
root, whether a process is alive, a command's refusal, Markdown read as a renderer does, the Action's shell
steps run as GitHub runs them, `python -m harness` in a subprocess. No test imports another test module."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from harness.cli import commands as cli

ROOT = Path(__file__).resolve().parents[1]

# A pytest file whose one test's module bakes a set's order in (its weights summed in the set's order, which
# follows the hash seed): a key that moves with PYTHONHASHSEED, as tests/test_names.py::test_set_order.
SET_ORDERED_TEST = ("import jax, numpy as np\n\n"
                    "WEIGHTS = {'alpha': 1.0, 'beta': 2.0, 'gamma': 3.0, 'delta': 4.0, 'epsilon': 5.0}\n"
                    "NAMES = set(WEIGHTS)\n\n\n"
                    "def by_names(x):\n    return sum(x * WEIGHTS[n] for n in NAMES)\n\n\n"
                    "def test_set_order():\n"
                    "    assert float(jax.jit(by_names)(np.ones(3, np.float32)).sum()) == 45.0\n")


def pid_exists(pid: int) -> bool:
    """A process of this pid exists (a zombie too: os.kill reaches it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# A run's program names a process by its pid and its PID namespace's inode (`{pid}-{namespace}`), an expression
# of its own text: under the seal key's hider it runs in a PID namespace of its own, where its pid is not the
# machine's (harness/environments/key_hiding.py).
OWN_PID = "f'{os.getpid()}-{os.stat(\"/proc/self/ns/pid\").st_ino}'"


def machine_pid(named: str) -> int | None:
    """The pid on this machine of the process a run named (`{pid}-{namespace}`, OWN_PID), None when none is."""
    pid, namespace = (int(word) for word in named.split("-"))
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/pid").st_ino != namespace:
                continue
            with open(f"/proc/{entry}/status") as status:
                inner = next(line.split()[-1] for line in status if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(inner) == pid:
            return int(entry)
    return None


def run_cli(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_bad_input(argv, capsys, tmp_path, fragment):
    out_dir = tmp_path / "results"
    code, out, err = run_cli([*argv, "--out", str(out_dir)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), err
    assert "Traceback" not in err
    assert fragment in lines[0]
    assert not out_dir.exists()  # nothing half-written


# ---- Markdown as a renderer reads it

def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))


def outside_fences(text: str) -> str:
    """The Markdown outside fenced blocks (a fence closes only with as many backticks as it opened with)."""
    out, fence = [], None
    for line in text.splitlines():
        marks = re.match(r"^(`{3,})", line)
        if fence is None and marks:
            fence = marks[1]
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            out.append(re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", "", line))  # and code spans, which show text as is
    return "\n".join(out)


# ---- the GitHub Action's shell steps, run as GitHub runs them

ACTION = ROOT / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action():
    return yaml.safe_load(ACTION.read_text())


class Runner:
    """Runs the action's shell steps as GitHub would (the step's `shell`, the step's env with its
    expressions substituted, GITHUB_OUTPUT/GITHUB_STEP_SUMMARY/RUNNER_TEMP files); `uses:` steps
    (upload-artifact) are GitHub's own and are skipped."""

    def __init__(self, temp: Path, workspace: Path):
        self.temp, self.workspace = temp, workspace
        self.temp.mkdir(parents=True, exist_ok=True)

    def value(self, expression: str, inputs: dict[str, str]) -> str:
        declared = action()["inputs"]
        for operand in (o.strip() for o in expression.split("||")):
            if operand.startswith("inputs."):
                name = operand[len("inputs."):]
                found = inputs.get(name, declared[name].get("default", ""))
            elif operand == "runner.temp":
                found = str(self.temp)
            elif operand == "github.action_path":
                found = str(ROOT)
            else:
                raise AssertionError(f"an expression the test cannot evaluate: {operand}")
            if found:
                return found
        return ""

    def substitute(self, text: str, inputs: dict[str, str]) -> str:
        return EXPRESSION.sub(lambda m: self.value(m[1], inputs), text)

    def run(self, step_name: str, inputs: dict[str, str], label: str) -> tuple[int, dict[str, str], str]:
        (step,) = [s for s in action()["runs"]["steps"] if s.get("name") == step_name]
        assert EXPRESSION.search(step["run"]) is None, "inputs reach the shell as variables only"
        output, summary = self.temp / f"{label}.output", self.temp / f"{label}.summary"
        env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
               "RUNNER_TEMP": str(self.temp), "GITHUB_ACTION_PATH": str(ROOT),
               **{k: self.substitute(str(v), inputs) for k, v in step.get("env", {}).items()}}
        env.pop("VIRTUAL_ENV", None)
        script = self.temp / f"{label}.sh"
        script.write_text(step["run"])
        done = subprocess.run([str(script) if w == "{0}" else w for w in step["shell"].split()], cwd=self.workspace,
                              env=env, capture_output=True, text=True, timeout=1200)
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
        text = done.stdout + done.stderr
        return done.returncode, outputs, text + (summary.read_text() if summary.exists() else "")


CHECK_STEP = "Check the persistent cache, release by release"


def run_harness(*argv: str, timeout: float = 900, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


def github_html(markdown: str) -> str:
    """Markdown as GitHub shows it, autolinks included: CommonMark, tables, and GFM's extended autolinks
    (a scheme's URL, `www.`, an e-mail address; a bare domain is no link on GitHub, so none here)."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "linkify"])
    renderer.linkify.set({"fuzzy_link": False, "fuzzy_email": True})
    return renderer.render(markdown)

