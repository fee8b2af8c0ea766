"""The quick screen (issue 48 item 2): a forked child of a pre-started interpreter keeps the hash seed's set order
and says a candidate's own exception; the screen only ever rejects, and only for that."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.files import package_path
from harness.reduce.screen import ForkScreen, Screened, preloaded, screen_allowed
from harness.reduce.search import Tried

ORDER = "print(list({'data', 'model', 'batch', 'expert', 'pipe'}))\n"


def _serve(tmp_path, requests, seed=7):
    server = subprocess.Popen([sys.executable, str(package_path("harness.inside", "fork_server.py")), "json"],
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "ready"
    answers = []
    for request in requests:
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        answers.append(json.loads(server.stdout.readline()))
    server.stdin.close()
    server.wait(timeout=30)
    return answers


def _request(tmp_path, name, source, timeout_s=20.0):
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    return {"script": str(script), "argv": ["--x", "1"], "cwd": str(tmp_path), "env": {"HOME": str(tmp_path)},
            "log": str(tmp_path / f"{name}.log"), "error": str(tmp_path / f"{name}.error"), "timeout_s": timeout_s}


def test_a_forked_child_orders_a_set_as_a_fresh_process_of_the_same_seed_does(tmp_path):
    fresh = subprocess.run([sys.executable, "-c", ORDER], env={**os.environ, "PYTHONHASHSEED": "7"},
                           capture_output=True, text=True, check=True).stdout
    other = subprocess.run([sys.executable, "-c", ORDER], env={**os.environ, "PYTHONHASHSEED": "8"},
                           capture_output=True, text=True, check=True).stdout
    assert fresh != other  # the order follows the seed (else this test shows nothing)
    (answer,) = _serve(tmp_path, [_request(tmp_path, "order", ORDER)])
    assert answer == {"exit": 0, "timed_out": False, "error": "", "errno": None}
    assert (tmp_path / "order.log").read_text() == fresh


def test_the_child_says_the_candidate_s_own_exception_and_its_arguments_and_variables_are_its_own(tmp_path):
    answers = _serve(tmp_path, [
        _request(tmp_path, "raises", "import sys, os\nassert sys.argv[1:] == ['--x', '1'], sys.argv\n"
                                     "assert os.environ['HOME'] == sys.argv[0].rpartition('/')[0]\n"
                                     "class Config: pass\nConfig().seed\n"),
        _request(tmp_path, "exits", "raise SystemExit(3)\n"),
        _request(tmp_path, "hangs", "import time\ntime.sleep(60)\n", timeout_s=0.5),
        _request(tmp_path, "after", "pass\n"),  # the server goes on after each of those
    ])
    assert answers[0] == {"exit": 1, "timed_out": False,
                          "error": "AttributeError: 'Config' object has no attribute 'seed'", "errno": None}
    assert answers[1] == {"exit": 3, "timed_out": False, "error": "", "errno": None}
    assert answers[2]["timed_out"] and answers[3]["exit"] == 0


def test_the_server_imports_jax_numpy_and_the_script_s_libraries_never_its_own_modules(tmp_path):
    (tmp_path / "helpers.py").write_text("")
    source = "import flax.linen as nn\nfrom optax import sgd\nimport helpers\nimport numpy as np\nfrom . import x\n"
    assert preloaded(source, (tmp_path,)) == ("numpy", "jax", "flax", "optax")


def test_the_screen_is_used_only_where_the_original_wrote_in_a_private_tmp():
    assert screen_allowed(()) and screen_allowed(("/tmp/ckpt", "/var/tmp/log"))
    assert not screen_allowed(("/tmp/ckpt", "/srv/data/out"))


class _Screen:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def screen(self, source, seed):
        self.asked.append(seed)
        return self.answer


def _measurer(screen):
    from harness.reduce.measure import Measurer
    measurer = Measurer.__new__(Measurer)
    measurer.bad_seeds, measurer.screen, measurer.screened = [11, 12, 13], screen, 0
    measurer.bad = type("Release", (), {"spec": type("Spec", (), {"jax_version": "0.4.28"})()})()
    measurer.fresh = []

    def fresh(source, *args):
        measurer.fresh.append(source)
        raise _Fresh  # the fresh path was taken: its stand-in stops there

    measurer.measure = fresh
    return measurer


class _Fresh(Exception):
    pass


def test_a_candidate_that_raises_in_the_screen_is_rejected_without_a_fresh_process():
    measurer = _measurer(_Screen(Screened(rejected="NameError: name 'mesh' is not defined")))
    answer = measurer.one_bad("import jax\nmesh\n")
    assert answer == Tried(False, "error on 0.4.28 (a forked run of seed 11: NameError: name 'mesh' is "
                                  "not defined)")
    assert measurer.fresh == [] and measurer.screened == 1


@pytest.mark.parametrize("screened", [Screened(finished=True), Screened()])
def test_every_other_candidate_is_measured_in_fresh_processes(screened):
    measurer = _measurer(_Screen(screened))
    with pytest.raises(_Fresh):
        measurer.one_bad("import jax\n")
    assert measurer.fresh == ["import jax\n"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_server_runs_under_bubblewrap_and_its_child_writes_only_in_its_own_folder(tmp_path):
    from harness.reduce.sandbox import bwrap_problem
    if bwrap_problem():
        pytest.skip(bwrap_problem())
    outside = tmp_path / "outside"
    outside.mkdir()
    script = tmp_path / "work" / "train.py"
    script.parent.mkdir()
    script.write_text("")
    screen = ForkScreen(Path(sys.executable), dict(os.environ), ("json",), tmp_path / "screened", script.parent,
                        script, [], (script.parent,), 20.0)
    try:
        assert screen.screen("open('here.txt', 'w').write('x')\n", 5).finished
        # Stopped by the sandbox: unsure, so the fresh run's watch says where it wrote (`refused: ...`).
        assert screen.screen(f"open({str(outside / 'x')!r}, 'w').write('x')\n", 5) == Screened()
        assert screen.screen(f"open({str(outside / 'no' / 'x')!r}, 'w').write('x')\n", 5) == Screened()
        assert list(outside.iterdir()) == []
        hung = ForkScreen(Path(sys.executable), dict(os.environ), ("json",), tmp_path / "screened", script.parent,
                          script, [], (script.parent,), 0.5)
        assert hung.screen("while True: pass\n", 5) == Screened(rejected="timed out after 0 s")
        hung.close()
    finally:
        screen.close()


def test_a_server_that_does_not_start_turns_the_screen_off_for_the_rest(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    screen = ForkScreen(broken, dict(os.environ), ("json",), tmp_path / "screened", tmp_path, script, [], (), 5.0)
    screen._start = lambda seed: type("Dead", (), {"ready": False, "close": lambda self: None})()
    assert screen.screen("pass\n", 1) == Screened() and not screen.enabled
    screen._start = lambda seed: pytest.fail("no second server is started")
    assert screen.screen("pass\n", 1) == Screened()
