"""The quick screen (issue 48 item 2): a forked child of a pre-started interpreter keeps the hash seed's set order
and says a candidate's own exception; the screen only ever rejects, and only for that."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.files import package_path
from harness.reduce.screen import ForkScreen, Screened, preloaded, screen_allowed
from harness.reduce.passes import digest
from harness.reduce.search import Tried
from harness.reduce.sandbox import bwrap_problem

ORDER = "print(list({'data', 'model', 'batch', 'expert', 'pipe'}))\n"


@pytest.fixture
def script(tmp_path):
    """An empty script in a folder of its own, for a screen under bubblewrap (skipped where that cannot run)."""
    if bwrap_problem():
        pytest.skip(bwrap_problem())
    path = tmp_path / "work" / "train.py"
    path.parent.mkdir()
    path.write_text("")
    return path


def _screen(tmp_path, script, timeout_s=20.0, env=None, modules=("json",), **fields):
    """A screen of `script` writing only under tmp_path/screened, its servers importing `modules`."""
    return ForkScreen(Path(sys.executable), dict(env or os.environ), modules, tmp_path / "screened", script.parent,
                      script, [], (script.parent,), timeout_s, **fields)


def _serve(tmp_path, requests, seed=7, modules=("json",), env=None):
    server = subprocess.Popen([sys.executable, str(package_path("harness.inside", "fork_server.py")), *modules],
                              env={**os.environ, **(env or {}), "PYTHONHASHSEED": str(seed)}, stdin=subprocess.PIPE,
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


def _ended(answer):
    """How a child ended, from the server's answer (less its CPU seconds and cache folder)."""
    return {k: answer[k] for k in ("exit", "timed_out", "error", "errno")}


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
    assert _ended(answer) == {"exit": 0, "timed_out": False, "error": "", "errno": None}
    assert (tmp_path / "order.log").read_text() == fresh
    assert 0 < answer["cpu_s"] < 5 and answer["warm"] is False  # (its own rusage; not asked to run warm)


def test_the_child_says_the_candidate_s_own_exception_and_its_arguments_and_variables_are_its_own(tmp_path):
    answers = _serve(tmp_path, [
        _request(tmp_path, "raises", "import sys, os\nassert sys.argv[1:] == ['--x', '1'], sys.argv\n"
                                     "assert os.environ['HOME'] == sys.argv[0].rpartition('/')[0]\n"
                                     "class Config: pass\nConfig().seed\n"),
        _request(tmp_path, "exits", "raise SystemExit(3)\n"),
        _request(tmp_path, "hangs", "import time\ntime.sleep(60)\n", timeout_s=0.5),
        _request(tmp_path, "after", "pass\n"),  # the server goes on after each of those
    ])
    assert _ended(answers[0]) == {"exit": 1, "timed_out": False,
                                  "error": "AttributeError: 'Config' object has no attribute 'seed'", "errno": None}
    assert _ended(answers[1]) == {"exit": 3, "timed_out": False, "error": "", "errno": None}
    assert answers[2]["timed_out"] and answers[3]["exit"] == 0


def test_the_server_imports_jax_numpy_and_the_script_s_libraries_never_its_own_modules(tmp_path):
    (tmp_path / "helpers.py").write_text("")
    source = "import flax.linen as nn\nfrom optax import sgd\nimport helpers\nimport numpy as np\nfrom . import x\n"
    assert preloaded(source, (tmp_path,)) == ("numpy", "jax", "flax", "optax")


def test_a_forked_child_is_stopped_after_10_s_plus_three_times_the_original_s_forked_run():
    from harness.reduce.screen import child_timeout
    assert child_timeout(2.0, 34.0) == 16.0
    assert child_timeout(9.0, 34.0) == 34.0  # never past a fresh run's own timeout
    assert child_timeout(0.0, 34.0) == 10.0


def test_the_screen_is_used_only_where_the_original_wrote_in_a_private_tmp():
    assert screen_allowed(()) and screen_allowed(("/tmp/ckpt", "/var/tmp/log"))
    assert not screen_allowed(("/tmp/ckpt", "/srv/data/out"))


class _Screen:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def screen(self, source, seed):
        self.asked.append(seed)
        return self.answer


_PLAIN = type("Signature", (), {"module": "jit_f", "factor": None, "ranks": None, "moved": None})()  # a plain cell's


def _measurer(screen):
    from harness.reduce.measure_candidate import Measurer
    measurer = Measurer.__new__(Measurer)
    measurer.bad_seeds, measurer.screen, measurer.screened = [11, 12, 13], screen, 0
    measurer.bad = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.4.28"})()})()
    measurer.target = _PLAIN
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
def test_a_server_runs_under_bubblewrap_and_its_child_writes_only_in_its_own_folder(tmp_path, script):
    outside = tmp_path / "outside"
    outside.mkdir()
    screen = _screen(tmp_path, script)
    try:
        assert screen.screen("open('here.txt', 'w').write('x')\n", 5).finished
        # Stopped by the sandbox: unsure, so the fresh run's watch says where it wrote (`refused: ...`).
        assert screen.screen(f"open({str(outside / 'x')!r}, 'w').write('x')\n", 5) == Screened()
        assert screen.screen(f"open({str(outside / 'no' / 'x')!r}, 'w').write('x')\n", 5) == Screened()
        assert list(outside.iterdir()) == []
        hung = _screen(tmp_path, script, timeout_s=0.5)
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
    screen._start = lambda seed: type("Dead", (), {"ready": False, "close": lambda self: None,
                                                   "why_unwell": lambda self: "it did not start"})()
    assert screen.screen("pass\n", 1) == Screened() and not screen.enabled
    screen._start = lambda seed: pytest.fail("no second server is started")
    assert screen.screen("pass\n", 1) == Screened()


# ---- the screen decides (issue 48 item 2: minutes, not ten) -------------------------------------------------

class _KeyScreen:
    """Forked children that compute, for each seed, the keys of `jit_f` given by `keys(source, seed)`."""

    def __init__(self, keys):
        import tempfile
        self.keys, self.asked, self.work = keys, [], Path(tempfile.gettempdir())

    def screen(self, source, seed, module=None, stop=False, cache=None):
        assert module == "jit_f"
        self.asked.append(seed)
        self.caches = getattr(self, "caches", []) + [cache]
        self.stopped = getattr(self, "stopped", []) + [stop]
        found = self.keys(source, seed)
        return Screened(finished=True, keys=frozenset(found), computed=bool(found))


def _deciding(screen, kept_fresh=True):
    measurer = _measurer(screen)
    measurer.screen_decides, measurer.forked_kept, measurer._provisional = True, 0, set()
    measurer._good_seeds, measurer.good, measurer.good_screen = {}, None, None
    measurer.target = _PLAIN
    calls = measurer.fresh

    def one_fresh(source, *args):
        calls.append(source)
        return type("MeasuredCandidate", (), {"cell": None, "refused": "refused: stand-in" if not kept_fresh else None})()

    measurer.measure = one_fresh
    return measurer


def test_a_candidate_whose_forked_seeds_compute_different_keys_is_kept_provisionally_without_a_fresh_process():
    measurer = _deciding(_KeyScreen(lambda source, seed: {f"jit_f-{seed % 12}"}))
    answer = measurer.one_bad("import jax\n")
    assert answer.kept and answer.why.startswith("kept provisionally (forked runs of seeds 11 and 12")
    assert measurer.fresh == [] and measurer.provisional("import jax\n") and measurer.forked_kept == 1
    assert measurer._good_seeds[digest("import jax\n")] == [11, 12]  # the good release's seeds at the checkpoint


def test_where_the_hash_seed_moved_the_original_s_key_a_candidate_whose_first_seed_again_computes_another_is_rejected():
    """A candidate keeps the original's cause, not only its module: in a program with two misses of one function (the
    hash seed's and an unseeded draw's), a candidate that lost the first one still has seeds computing different
    keys, but its first seed's child run again computes another key too: rejected, not kept provisionally."""
    from harness.core.comparison import Moved
    draws = iter(range(100))
    unseeded = _KeyScreen(lambda source, seed: {f"jit_f-{next(draws)}"})
    measurer = _deciding(unseeded)
    measurer.target = type("Signature", (), {"module": "jit_f", "factor": None, "ranks": None,
                                             "moved": Moved.HASH_SEED})()
    answer = measurer.one_bad("import jax\n")
    assert answer == Tried(False, "another cause on 0.4.28: two forked runs of seed 11 computed different keys of "
                                  "jit_f (not the hash seed, which moved the original's)")
    assert unseeded.asked == [11, 12, 11] and not measurer.provisional("import jax\n")
    seeded = _KeyScreen(lambda source, seed: {f"jit_f-{seed % 12}"})  # the hash seed's: its control agrees
    measurer = _deciding(seeded)
    measurer.target = type("Signature", (), {"module": "jit_f", "factor": None, "ranks": None,
                                             "moved": Moved.HASH_SEED})()
    assert measurer.one_bad("import jax\n").kept and seeded.asked == [11, 12, 11]
    # one child more of the first seed (not two): compared with the first seed's own child, both in the servers' one
    # warm cache folder (None: its path is in the keys on some releases), stopped at the module's key
    assert seeded.caches == [None, None, None] and seeded.stopped == [False, True, True]


def test_a_candidate_whose_forked_seeds_all_compute_one_key_or_none_is_rejected_without_a_fresh_process():
    same = _KeyScreen(lambda source, seed: {"jit_f-0"})
    measurer = _deciding(same)
    answer = measurer.one_bad("import jax\n")
    assert answer == Tried(False, "clean on 0.4.28 (forked runs of seeds 11, 12, 13 computed one key of jit_f)")
    assert same.asked == [11, 12, 13] and measurer.fresh == []
    assert same.stopped == [False, True, True]  # the first child runs the whole program; the later ones, to the key
    measurer = _deciding(_KeyScreen(lambda source, seed: set()))
    assert measurer.one_bad("import jax\n") == Tried(False, "jit_f not computed on 0.4.28 (a forked run of seed 11: "
                                                            "it compiled nothing)")
    assert measurer.fresh == []


def test_a_provisional_keep_is_confirmed_by_fresh_processes_at_the_checkpoint():
    measurer = _deciding(_KeyScreen(lambda source, seed: {f"jit_f-{seed}"}), kept_fresh=False)
    assert measurer.one_bad("import jax\n").kept and measurer.fresh == []
    answer = measurer.confirm("import jax\n")
    assert answer == Tried(False, "not confirmed by fresh processes: refused: stand-in")
    assert measurer.fresh == ["import jax\n"]  # the fresh path, never the screen's answer again
    # A program kept by fresh processes (not provisionally) is not measured again on the bad release.
    assert measurer.confirm("print(1)\n") == Tried(True, "confirmed by fresh processes")
    assert measurer.fresh == ["import jax\n"]


class _GoodScreen:
    """Forked children on the good release: `every(seed)` is every key a child of that seed computes there."""

    def __init__(self, every):
        self.every, self.asked = every, []

    def screen(self, source, seed, module=None, stop=False):
        assert stop  # on the good release only the module's key is asked of a child
        self.asked.append(seed)
        found = frozenset(self.every(seed))
        return Screened(finished=True, keys=frozenset(k for k in found if k.startswith(module + "-")),
                        computed=bool(found), every=found)


def test_a_provisional_keep_whose_forked_children_are_not_clean_on_the_good_release_is_rejected_at_once():
    measurer = _deciding(_KeyScreen(lambda source, seed: {f"jit_f-{seed}"}))
    measurer.good = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.4.29"})()})()
    measurer.good_screen = _GoodScreen(lambda seed: {f"jit_f-{seed}"})  # the key moves on the good release too
    assert measurer.one_bad("import jax\n") == Tried(False, "reproduced on 0.4.29, the good release (forked runs "
                                                            "of seeds 11 and 12 computed different keys)")
    measurer.good_screen = _GoodScreen(lambda seed: set())  # its cache never initialised there
    assert measurer.one_bad("print(1)\n") == Tried(False, "unsupported on 0.4.29, the good release (a forked run "
                                                          "of seed 11 compiled nothing)")
    clean = _GoodScreen(lambda seed: {"jit_f-0", f"jit_g-{seed}"})  # (another module's key is the checkpoint's)
    measurer.good_screen = clean
    assert measurer.one_bad("print(2)\n").kept and sorted(clean.asked) == [11, 12] and measurer.fresh == []


class _Together:
    """A screen whose children each wait until `parties` children of this barrier run at once (a child run alone,
    after another, breaks it: the test fails)."""

    def __init__(self, barrier, keys):
        self.barrier, self.keys, self.asked = barrier, keys, []

    def screen(self, source, seed, module=None, stop=False):
        self.asked.append((seed, stop))
        if stop:
            self.barrier.wait(timeout=10)
        found = frozenset(self.keys(seed))
        return Screened(finished=True, keys=frozenset(k for k in found if k.startswith(module + "-")),
                        computed=bool(found), every=found)


def test_the_good_release_s_children_run_beside_the_second_seed_s_and_decide_as_before():
    import threading
    together = threading.Barrier(3)  # the bad release's second seed, the good release's two
    measurer = _deciding(_Together(together, lambda seed: {f"jit_f-{seed}"}))
    measurer.good = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.4.29"})()})()
    measurer.good_screen = _Together(together, lambda seed: {"jit_f-0"})
    assert measurer.one_bad("import jax\n").kept and measurer.fresh == []
    assert measurer.screen.asked == [(11, False), (12, True)]  # the first seed's child alone, then the three
    assert sorted(measurer.good_screen.asked) == [(11, True), (12, True)]
    measurer.good_screen = _Together(together, lambda seed: {f"jit_f-{seed}"})  # the key moves there too
    assert measurer.one_bad("print(1)\n") == Tried(False, "reproduced on 0.4.29, the good release (forked runs "
                                                          "of seeds 11 and 12 computed different keys)")


def test_a_checkpoint_measures_a_provisional_keep_on_both_releases_at_once_in_fresh_processes():
    import threading
    together = threading.Barrier(2)
    measurer = _deciding(_KeyScreen(lambda source, seed: {f"jit_f-{seed}"}), kept_fresh=False)
    measurer.good = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.4.29"})()})()
    asked = []

    def fresh(source, release, seeds, tag, give_up):
        asked.append((tag, seeds))
        together.wait(timeout=10)  # the other release's cell runs at the same time, or this breaks
        return type("MeasuredCandidate", (), {"cell": None, "refused": "refused: stand-in"})()

    measurer.measure = fresh
    assert measurer.one_bad("import jax\n").kept
    assert measurer.confirm("import jax\n") == Tried(False, "not confirmed by fresh processes: refused: stand-in")
    assert sorted(asked) == [("bad", [11, 12, 13]), ("good", [11, 12])]  # G: the seeds that disagreed forked


def test_where_fresh_processes_disagree_by_other_seeds_the_good_release_is_asked_of_those():
    measurer = _deciding(_KeyScreen(lambda source, seed: {f"jit_f-{seed}"}))
    measurer.good = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.4.29"})()})()
    assert measurer.one_bad("import jax\n").kept
    asked = []

    def fresh_bad(source, fresh=False):  # the fresh cell's new key came with the third seed
        measurer._good_seeds[digest(source)] = [11, 13]
        return Tried(True, "reproduced in 3 runs")

    def good(source, seeds=None):
        asked.append(seeds or measurer._good_seeds[digest(source)])
        return Tried(True, "clean on 0.4.29")

    measurer.one_bad, measurer.test_good = fresh_bad, good
    assert measurer.confirm("import jax\n") == Tried(True, "clean on 0.4.29")
    assert asked == [[11, 12], [11, 13]] and not measurer.provisional("import jax\n")


def test_a_resumed_search_s_provisional_keeps_are_confirmed_again():
    measurer = _deciding(_KeyScreen(lambda source, seed: set()))
    memo = {digest("a\n"): Tried(True, "kept provisionally (forked runs of seeds 1 and 2 computed ...)"),
            digest("b\n"): Tried(True, "reproduced in 2 runs"), digest("c\n"): Tried(False, "kept provisionally")}
    measurer.remember_provisional(memo)
    assert measurer.provisional("a\n") and not measurer.provisional("b\n") and not measurer.provisional("c\n")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_forked_child_s_keys_of_the_module_are_read_from_its_own_cache_folder(tmp_path, script):
    # A stand-in for JAX: the module's key follows the seed's set order, another module's does not.
    program = ("import os, hashlib\ncache = os.environ['JAX_COMPILATION_CACHE_DIR']\nos.makedirs(cache)\n"
               "key = hashlib.sha256(str(list({'a', 'b', 'c', 'd', 'e'})).encode()).hexdigest()\n"
               "open(os.path.join(cache, 'jit_f-' + key), 'w').close()\n"
               "open(os.path.join(cache, 'jit_g-' + '0' * 64), 'w').close()\n")
    screen = _screen(tmp_path, script)
    try:
        first, again, other = (screen.screen(program, seed, module="jit_f") for seed in (1, 1, 2))
        assert first.finished and first.computed and len(first.keys) == 1 and first.keys == again.keys
        assert other.keys != first.keys  # the seed's order, as a fresh process of that seed has it
        assert screen.screen(program, 1) == Screened(finished=True)  # not asked: no keys read
        nothing = screen.screen("pass\n", 1, module="jit_f")
        assert nothing == Screened(finished=True, keys=frozenset(), computed=False)
    finally:
        screen.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_server_started_for_a_batch_s_thread_outlives_that_thread(tmp_path, script):
    # bubblewrap's --die-with-parent follows the thread that started it: measure.test_bad's worker threads end
    # with each batch, and their servers must not (else the next candidate finds it dead: the screen turns off).
    from concurrent.futures import ThreadPoolExecutor
    screen = _screen(tmp_path, script)
    try:
        with ThreadPoolExecutor(2) as batch:
            assert all(s.finished for s in batch.map(lambda seed: screen.screen("pass\n", seed), (1, 2)))
        import time
        time.sleep(0.5)  # (the kernel's signal to a dead thread's bwrap is immediate; a little time to act on it)
        with ThreadPoolExecutor(2) as batch:
            assert all(s.finished for s in batch.map(lambda seed: screen.screen("pass\n", seed), (1, 2)))
        assert screen.enabled and len(screen._all) == 2 and screen.children == 4  # (the reduction's tally)
    finally:
        screen.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_where_the_original_sets_its_folder_in_code_a_child_gets_none_before_the_program_sets_one(tmp_path, script):
    # As the start-up hook does in a fresh run (FolderMode.HOOK): a program that computes before it sets its
    # folder caches nothing on 0.4.29, and its forked child must not be given a folder from the start.
    program = "import os\nprint(os.environ.get('JAX_COMPILATION_CACHE_DIR'))\nassert 'JAX_COMPILATION_CACHE_DIR' not in os.environ\n"
    hooked = _screen(tmp_path, script, hook_folder=True)
    plain = _screen(tmp_path, script)
    try:
        assert hooked.screen(program, 1).finished
        assert plain.screen(program, 1).rejected.startswith("AssertionError")
    finally:
        hooked.close()
        plain.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_later_seed_s_child_stops_once_it_computed_the_module_s_key(tmp_path, script):
    import time
    program = ("import os, time\ncache = os.environ['JAX_COMPILATION_CACHE_DIR']\nos.makedirs(cache)\n"
               "open(os.path.join(cache, 'jit_f-' + '1' * 64 + '.tmp'), 'w').close()\ntime.sleep(0.5)\n"
               "open(os.path.join(cache, 'jit_f-' + '2' * 64), 'w').close()\ntime.sleep(60)\n")
    screen = _screen(tmp_path, script, timeout_s=8.0)
    try:
        started = time.monotonic()
        stopped = screen.screen(program, 1, module="jit_f", stop=True)
        assert time.monotonic() - started < 7.5  # (not the timeout)
        assert stopped.finished and stopped.keys == frozenset({"jit_f-" + "2" * 64})  # not at a partial name
        assert screen.screen(program, 1, module="jit_g", stop=True).rejected == "timed out after 8 s"
    finally:
        screen.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_child_writes_where_the_original_wrote_under_tmp_each_time_into_an_empty_place(tmp_path, script):
    # Issue 48: the machine's own entry there (the original made it) was bound back read-only, the original's
    # child failed to write its checkpoint, and the screen was off for any program writing under /tmp.
    import tempfile
    user = Path(tempfile.mkdtemp(prefix="harness-unit-", dir="/tmp"))  # a folder right in the machine's /tmp
    deeper, log = user / "ckpt", Path(f"{user}.log")
    deeper.mkdir()
    (deeper / "mine.txt").write_text("the user's")
    log.write_text("the user's\n")
    places = (str(deeper), str(log))
    program = (f"import os\nassert not os.listdir({str(deeper)!r}) and not os.path.exists({str(log)!r})\n"
               f"open(os.path.join({str(deeper)!r}, 'step.json'), 'w').write('x')\n"
               f"open({str(log)!r}, 'a').write('ran\\n')\n")
    screen = _screen(tmp_path, script, places=places)
    try:
        assert screen.screen(program, 5) == Screened(finished=True)
        assert screen.screen(program, 5) == Screened(finished=True)  # the same server: nothing left from the first
        assert sorted(p.name for p in deeper.iterdir()) == ["mine.txt"] and log.read_text() == "the user's\n"
    finally:
        screen.close()
        shutil.rmtree(user)
        log.unlink()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_child_s_temporary_folder_is_its_own_even_where_the_server_s_imports_asked_for_one(tmp_path, script):
    # Flax's import asks tempfile for its folder, which tempfile then keeps: the server's /tmp, not the child's
    # TMPDIR (a fresh run's): the Flax program's checkpoint went to the server's /tmp.
    (script.parent / "asks_for_tmp.py").write_text("import tempfile\ntempfile.gettempdir()\n")
    env = {**os.environ, "PYTHONPATH": str(script.parent)}
    screen = _screen(tmp_path, script, env=env, modules=("asks_for_tmp",))
    program = "import os, tempfile\nassert tempfile.gettempdir() == os.environ['TMPDIR'], tempfile.gettempdir()\n"
    try:
        assert screen.screen(program, 5) == Screened(finished=True)
    finally:
        screen.close()


# A stand-in for JAX's key function and its compile_or_get_cached, which calls it through its module (as JAX does):
# the key, then a hit on an entry already in the cache folder, or a compile that writes it.
STAND_IN_JAX = {
    "jax/__init__.py": "from jax._src import compilation_cache\n\nclass _Config:\n    def update(self, name, value):\n"
                       "        pass\n\nconfig = _Config()\n",
    "jax/_src/__init__.py": "",
    "jax/_src/compilation_cache.py": (
        "import hashlib, os\n\ndef get_cache_key(module, *args):\n"
        "    return module.split()[0] + '-' + hashlib.sha256(module.encode()).hexdigest()\n\n"
        "def compile_or_get_cached(module):\n    path = os.path.join(os.environ['JAX_COMPILATION_CACHE_DIR'], "
        "get_cache_key(module))\n    hit = os.path.exists(path)\n    if not hit:\n        open(path, 'w').close()\n"
        "    return hit\n"),
}
COMPILES = "from jax._src.compilation_cache import compile_or_get_cached\n"


def _jax_screen(tmp_path, script, **fields):
    for name, text in STAND_IN_JAX.items():
        (tmp_path / "lib" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "lib" / name).write_text(text)
    return ForkScreen(Path(sys.executable), {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}, ("json", "jax"),
                      tmp_path / "screened", script.parent, script, [], (script.parent, tmp_path / "lib"), 20.0,
                      **fields)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_child_s_keys_are_those_jax_computed_and_a_later_seed_s_ends_at_its_key_before_compiling_it(tmp_path, script):
    # The module's key follows the seed's set order; what the program does after computing it raises.
    program = (COMPILES + "compile_or_get_cached('jit_g one')\n"
               "compile_or_get_cached('jit_f ' + str(list({'a', 'b', 'c', 'd', 'e'})))\n"
               "raise RuntimeError('after the key')\n")
    screen = _jax_screen(tmp_path, script)
    try:
        whole = screen.screen(program, 1, module="jit_f")
        assert whole.rejected == "RuntimeError: after the key"  # the first seed's child runs the whole program
        first, other = (screen.screen(program, seed, module="jit_f", stop=True) for seed in (1, 2))
        assert first.finished and len(first.keys) == 1 and other.finished and other.keys != first.keys
        assert {k.partition("-")[0] for k in first.every} == {"jit_f", "jit_g"}
        assert screen.cpu_s > 0  # the children's own CPU seconds, summed for the reduction's tally
    finally:
        screen.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_child_loads_what_an_earlier_child_of_its_server_compiled_and_its_keys_are_still_its_own(tmp_path, script):
    hit_raises = COMPILES + "if compile_or_get_cached('jit_f same'):\n    raise RuntimeError('a hit')\n"
    screen = _jax_screen(tmp_path, script)
    try:
        cold = screen.screen(hit_raises, 1, module="jit_f")
        assert cold.finished and len(cold.keys) == 1
        assert screen.screen(hit_raises, 1, module="jit_f").rejected == "RuntimeError: a hit"  # the server's folder
        # another seed's server warms the same folder (one path: it is in the keys on some releases)
        assert screen.screen(hit_raises, 2, module="jit_f").rejected == "RuntimeError: a hit"
        other = screen.screen(COMPILES + "compile_or_get_cached('jit_h other')\n", 1, module="jit_f")
        assert other.keys == frozenset() and {k.partition("-")[0] for k in other.every} == {"jit_h"}
        # A cache folder the caller gives (a factor's child's) is the child's, never the server's.
        given = tmp_path / "screened" / "given"
        given.mkdir(parents=True)
        assert screen.screen(hit_raises, 1, module="jit_f", cache=given).keys == cold.keys
        assert [p.name for p in given.iterdir()] == sorted(cold.keys)
        # The servers' folder is the screen's own warm-cache: else the only entry under the screen's folder is the
        # given one.
        assert {p.parent.name for p in (tmp_path / "screened").rglob("jit_f-*")} == {"given", "warm-cache"}
    finally:
        screen.close()


def test_a_server_s_own_cache_folder_is_emptied_past_its_limit_and_removed_at_its_end(tmp_path, monkeypatch):
    for name, text in STAND_IN_JAX.items():
        (tmp_path / "lib" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "lib" / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib"), "PYTHONHASHSEED": "7"}
    server = subprocess.Popen([sys.executable, str(package_path("harness.inside", "fork_server.py")), "jax"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "ready"
    says_folder = "import os\nprint(os.environ['JAX_COMPILATION_CACHE_DIR'])\n"
    big = COMPILES + "import os\ncompile_or_get_cached('jit_f big')\n" + (
        "open(os.path.join(os.environ['JAX_COMPILATION_CACHE_DIR'], 'jit_f-' + 'a' * 64), 'wb').truncate(300 << 20)\n")
    for name, source in (("first", says_folder), ("big", big), ("after", "import os\n"
                         "print(sorted(os.listdir(os.environ['JAX_COMPILATION_CACHE_DIR'])))\n")):
        request = {**_request(tmp_path, name, source), "env": {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / name)},
                   "cache": str(tmp_path / name), "warm": True, "keys": str(tmp_path / f"{name}.keys")}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["warm"] is True
    folder = Path((tmp_path / "first.log").read_text().strip())
    assert folder.parent == Path("/tmp") and folder.name.startswith("harness-warm-cache-")
    assert (tmp_path / "big.keys").read_text().split() == ["jit_f-" + hashlib.sha256(b"jit_f big").hexdigest()]
    assert (tmp_path / "after.log").read_text() == "[]\n"  # past 256 MiB: emptied before the next child
    server.stdin.close()
    server.wait(timeout=30)
    assert not folder.exists()  # (outside bubblewrap: removed by the server; inside, its tmpfs goes with it)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_servers_of_several_seeds_start_at_once_and_each_serves_its_seed(tmp_path, script):
    import time
    (script.parent / "slow_import.py").write_text("import time\ntime.sleep(2)\n")  # a server's `import jax`
    env = {**os.environ, "PYTHONPATH": str(script.parent)}
    screen = _screen(tmp_path, script, env=env, modules=("slow_import",))
    try:
        started = time.monotonic()
        screen.prestart([1, 2, 3, 1])
        assert len(screen._all) == 3 and time.monotonic() - started < 1.5  # started, not waited for
        fresh = subprocess.run([sys.executable, "-c", ORDER], env={**os.environ, "PYTHONHASHSEED": "2"},
                               capture_output=True, text=True, check=True).stdout
        same_order = ORDER.replace("print(", "assert str(").replace("))\n", f")) + '\\n' == {fresh!r}\n")
        assert screen.screen(same_order, 2).finished  # seed 2's server orders the set as seed 2 does
        assert all(screen.screen("pass\n", seed).finished for seed in (1, 3))
        assert time.monotonic() - started < 5.5 and len(screen._all) == 3  # the three imports at once, no more
    finally:
        screen.close()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_an_exception_of_several_lines_is_said_on_one(tmp_path, script):
    # JAX's shard_map errors run over several lines: each was a broken progress line, one per line of it.
    screen = _screen(tmp_path, script)
    try:
        said = screen.screen("raise ValueError('the mesh given\\n\\nhas shape (8, 1)\\n')\n", 1).rejected
    finally:
        screen.close()
    assert said == "ValueError: the mesh given has shape (8, 1)"


def test_a_child_that_reads_stdin_reads_nothing_and_the_next_request_is_the_server_s(tmp_path):
    """Issue 61 #9: a child's stdin was the server's pipe of requests: a program that reads stdin blocked there
    until its timeout (every candidate of it), where a fresh run gets /dev/null."""
    reads = "import sys\nprint('read', len(sys.stdin.read()))\n"
    first, second = _serve(tmp_path, [_request(tmp_path, "reads", reads, timeout_s=5.0),
                                      _request(tmp_path, "after", ORDER)])
    assert _ended(first) == {"exit": 0, "timed_out": False, "error": "", "errno": None}
    assert (tmp_path / "reads.log").read_text() == "read 0\n"
    assert _ended(second)["exit"] == 0


def test_the_screen_says_why_it_turns_itself_off_once(tmp_path, script):
    """A server that answers nothing (here: its child killed it) turns the screen off: said once, with why."""
    said: list[str] = []
    screen = _screen(tmp_path, script, say=said.append)
    try:
        answer = screen.screen("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", 3)
        assert not screen.enabled and answer == Screened() and "its interpreter ended" in answer.why
        assert screen.screen(ORDER, 3) == Screened()  # off: unsure, nothing run
    finally:
        screen.close()
    # bubblewrap's exit for its program killed by SIGKILL: 128 + 9
    assert len(said) == 1 and said[0].startswith("quick screen off: its server of seed 3 answered nothing (its "
                                                 "interpreter ended (exit 137))"), said


def test_an_unsure_child_says_how_it_ended(tmp_path, script):
    screen = _screen(tmp_path, script)
    try:
        assert screen.screen("import sys\nsys.exit(4)\n", 3).why == "exited 4"
    finally:
        screen.close()


def test_what_the_server_imported_is_out_of_a_child_s_garbage_collector_s_sight(tmp_path):
    """A child's collections walked, and wrote to, every object the server's imports made (a third of a Flax/Optax
    program's child's CPU): the server freezes them before it forks; what the child makes is collected as ever."""
    counts = ("import gc, json\nclass Cycle: pass\nc = Cycle(); c.me = c; del c\n"
              "print(gc.get_freeze_count() > 1000, gc.collect() >= 1, gc.isenabled())\n")
    (answer,) = _serve(tmp_path, [_request(tmp_path, "counts", counts)])
    assert _ended(answer)["exit"] == 0
    assert (tmp_path / "counts.log").read_text() == "True True True\n"


def _plugins_found_by(tmp_path, platforms):
    """Which processes ran JAX's plugin discovery (a stand-in jax whose discovery names its process) when a server
    of JAX_PLATFORMS=`platforms` served a child: the server's pid, the child's."""
    bridge = tmp_path / "fake" / "jax" / "_src" / "xla_bridge.py"
    bridge.parent.mkdir(parents=True)
    (tmp_path / "fake" / "jax" / "__init__.py").write_text("from jax._src import xla_bridge\n")
    (bridge.parent / "__init__.py").write_text("")
    bridge.write_text("import os\nFOUND = []\n"
                      "def _discover_and_register_pjrt_plugins():\n"
                      "    if not FOUND:\n"
                      f"        open({str(tmp_path / 'found')!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
                      "    FOUND.append(1)\n")
    child = _request(tmp_path, "child", "import os\nfrom jax._src import xla_bridge\n"
                                        "xla_bridge._discover_and_register_pjrt_plugins()\n"
                                        "print(os.getppid(), os.getpid())\n")  # its server, itself
    (answer,) = _serve(tmp_path, [child], modules=("jax",),
                       env={"PYTHONPATH": str(tmp_path / "fake"), "JAX_PLATFORMS": platforms})
    assert _ended(answer)["exit"] == 0
    server_pid, child_pid = (tmp_path / "child.log").read_text().split()
    found = (tmp_path / "found").read_text().split()
    return found == [server_pid], found == [child_pid]


def test_a_cpu_server_discovers_jax_s_plugins_once_for_all_its_children(tmp_path):
    """JAX's plugin discovery (an entry-point scan: a tenth of a small program's child's CPU) runs in a CPU server
    before it forks, so its children find it done; elsewhere (an accelerator's plugin may load its library) each
    child discovers them as a fresh process does."""
    assert _plugins_found_by(tmp_path / "cpu", "cpu") == (True, False)
    assert _plugins_found_by(tmp_path / "tpu", "tpu,cpu") == (False, True)


def test_servers_of_two_seeds_give_their_children_one_warm_folder_the_harness_named(tmp_path):
    """From JAX 0.4.36 until 0.11.0 the cache folder's path is in every key: servers of two seeds with warm folders of
    their own (random names) computed keys that differed by the path alone, and every candidate's seeds disagreed
    (0.10.2). Every server of a reduction now warms the one folder the harness names; no child sees its variable."""
    for name, text in STAND_IN_JAX.items():
        (tmp_path / "lib" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "lib" / name).write_text(text)
    shared = tmp_path / "work" / "warm-cache"
    says = "import os\nprint(os.environ['JAX_COMPILATION_CACHE_DIR'], 'HARNESS_WARM_CACHE' in os.environ)\n"
    for seed in ("7", "8"):
        env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib"), "PYTHONHASHSEED": seed,
               "HARNESS_WARM_CACHE": str(shared)}
        server = subprocess.Popen([sys.executable, str(package_path("harness.inside", "fork_server.py")), "jax"],
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        request = {**_request(tmp_path, f"says{seed}", says), "env": {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / seed)},
                   "cache": str(tmp_path / seed), "warm": True, "keys": str(tmp_path / f"{seed}.keys")}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["warm"] is True
        server.stdin.close()
        server.wait(timeout=30)
        assert (tmp_path / f"says{seed}.log").read_text() == f"{shared} False\n"
    assert shared.is_dir()  # the harness's to remove (with its work folder), not a server's
