"""harness reduce on real releases: the acceptance's training script, refusals, Ctrl-C and --resume, a script
run with its arguments, variables and inline dependencies."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.reduce.passes import size
from harness.results import load_results

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "train_shard_map_grad.py"
SEED = ROOT / "tests" / "fixtures" / "sm.py"
FIXTURES = ROOT / "tests" / "fixtures" / "reduce"


def harness(*args, timeout=3600):
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def only_folder(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def test_the_training_script_reduces_to_a_short_program_with_the_same_signature(tmp_path):
    done = harness("reduce", TRAIN, "--versions", "0.4.28", "--good", "0.4.29", "--out", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = only_folder(tmp_path)
    reduced = (folder / "reduced.py").read_text()
    assert size(reduced) <= 30, reduced
    assert size(TRAIN.read_text()) > 120
    # The reduced program's own check, beside it: reproduced through the same module, component and cause
    # on 0.4.28, clean on 0.4.29.
    cells = {c.spec.jax_version: c for c in load_results(folder).cells}
    bad, good = cells["0.4.28"], cells["0.4.29"]
    assert bad.verdict == "reproduced" and good.verdict == "clean"
    assert bad.attribution.components == ["computation"] and bad.cause == "order"
    assert "jit_smoothness" in bad.keys
    report = (folder / "report.md").read_text()
    assert "## Minimal reproducer" in report and reduced.strip() in report
    state = json.loads((folder / "reduce.json").read_text())
    assert state["status"] == "complete" and state["measured"] > 0
    assert f"-> {size(reduced)} lines" in done.stdout


def test_a_clean_script_is_refused_in_one_line(tmp_path):
    done = harness("reduce", ROOT / "examples" / "stable_script.py", "--versions", "0.4.28", "--out", tmp_path,
                   "--quiet")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "clean on jax 0.4.28" in line and "nothing to reduce" in line


def test_a_script_whose_only_failure_is_a_crash_is_refused_in_one_line(tmp_path):
    done = harness("reduce", FIXTURES / "crash_only.py", "--versions", "0.4.28", "--out", tmp_path, "--quiet")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "an error, not a cache miss" in line and "the data loader failed" in line
    assert "never a crash" in line


def test_ctrl_c_keeps_the_best_so_far_and_resume_goes_on_from_it(tmp_path):
    # SIGINT as a terminal's Ctrl-C sends it (a test run in the background would otherwise pass it on ignored).
    proc = subprocess.Popen([sys.executable, "-m", "harness", "reduce", str(SEED), "--versions", "0.4.28",
                             "--out", str(tmp_path), "--max-candidates", "40"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 900
    state = None
    while time.monotonic() < deadline and proc.poll() is None:
        folders = [p for p in tmp_path.iterdir() if p.is_dir()]
        if folders and (folders[0] / "reduce.json").exists():
            state = json.loads((folders[0] / "reduce.json").read_text())
            if state["measured"] >= 3:
                break
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-2000:]
    folder = only_folder(tmp_path)
    assert f"is {folder / 'best.py'}" in err
    resume = err.strip().splitlines()[-1]
    assert resume.startswith("continue with: harness reduce ") and f"--resume {folder}" in resume
    interrupted = json.loads((folder / "reduce.json").read_text())
    assert interrupted["status"] == "interrupted" and (folder / "best.py").read_text() == interrupted["best"]
    words = resume.removeprefix("continue with: harness ").split()
    assert "--max-candidates" in words  # the options as given, --resume added
    done = harness(*words)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the original on jax" not in done.stderr  # not measured again
    assert "resuming" in done.stderr
    final = json.loads((folder / "reduce.json").read_text())
    assert final["status"] == "complete" and final["measured"] >= interrupted["measured"]
    assert size((folder / "reduced.py").read_text()) <= size(interrupted["best"])


def test_a_script_with_arguments_variables_and_inline_dependencies(tmp_path):
    done = harness("reduce", FIXTURES / "needs_args.py", "--versions", "0.4.28", "--env", "MODEL_SIZE=tiny",
                   "--out", tmp_path, "--max-candidates", "6", "--", "--axes", "a,b,c,d")
    assert done.returncode == 0, done.stderr[-3000:]
    folder = only_folder(tmp_path)
    reduced = (folder / "reduced.py").read_text()
    assert reduced.startswith('# /// script\n# dependencies = ["six"]\n# ///\n')  # put back, verbatim
    (cell,) = load_results(folder).cells
    assert cell.verdict == "reproduced"
    assert cell.command.argv[-2:] == ("--axes", "a,b,c,d") and dict(cell.command.env) == {"MODEL_SIZE": "tiny"}
    assert "six" in cell.environment.get("distributions", {})
    assert os.path.basename(cell.command.argv[0]) == "reduced.py"
