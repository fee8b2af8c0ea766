"""The quick screen under --vary cache-path and between processes (harness/reduce/forked_cells.py, measure_candidate.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness.reduce import measure_candidate
from harness.reduce.forked_cells import PROVISIONAL, More, factor_answer, factor_good_answer, job_answer
from harness.reduce.measure_candidate import Measurer
from harness.reduce.passes import digest
from harness.reduce.sandbox import bwrap_problem
from harness.reduce.screen import ForkScreen, Screened
from harness.reduce.search import Tried


def keys(*names: str, joined: bool = True) -> Screened:
    return Screened(finished=True, keys=frozenset(names), computed=bool(names), every=frozenset(names), joined=joined)


def answer(*children: Screened) -> Tried | None | More:
    return factor_answer("jit_f", "cache-path", "0.5.0", 7, list(children))


def test_a_factor_s_children_keep_a_candidate_only_where_the_factor_misses_and_the_control_hits():
    assert PROVISIONAL == measure_candidate.PROVISIONAL  # a resumed search finds its provisional keeps by these words
    assert answer(keys("a")) is More.CHILD and answer(keys("a"), keys("b")) is More.CHILD
    kept = answer(keys("a"), keys("b"), keys("a"))
    assert isinstance(kept, Tried) and kept.kept and kept.why.startswith(PROVISIONAL)
    assert answer(keys("a"), keys("a")) == Tried(False, "cache-path hits on 0.5.0 (forked runs of seed 7 computed "
                                                        "one key of jit_f at both cache paths)")
    control_missed = answer(keys("a"), keys("b"), keys("c"))
    assert isinstance(control_missed, Tried) and not control_missed.kept and "control misses too" in control_missed.why


def test_a_factor_s_reference_child_that_raises_or_computes_nothing_rejects_and_any_other_end_is_unsure():
    assert answer(Screened(rejected="NameError: x")) == Tried(False, "error on 0.5.0 (a forked run of seed 7: "
                                                                     "NameError: x)")
    assert answer(keys()) == Tried(False, "jit_f not computed on 0.5.0 (a forked run of seed 7: it compiled nothing)")
    only_others = Screened(finished=True, keys=frozenset(), computed=True)
    assert answer(only_others) == Tried(False, "jit_f not computed on 0.5.0 (a forked run of seed 7)")
    assert answer(Screened()) is None and answer(keys("a"), Screened()) is None  # exited otherwise
    assert answer(keys("a"), Screened(rejected="timed out after 9 s")).kept is False


def test_on_the_good_release_a_factor_s_children_object_only_where_the_fresh_cell_would_not_be_clean():
    def good(*children: Screened) -> Tried | None:
        return factor_good_answer("jit_f", "cache-path", "0.4.31", list(children))
    assert good(keys("a"), keys("a")) is None  # it hits there: the checkpoint decides
    missed = good(keys("a"), keys("b"))
    assert missed is not None and not missed.kept and "misses on 0.4.31, the good release, too" in missed.why
    assert good(keys(), keys()) == Tried(False, "unsupported on 0.4.31, the good release (a forked run compiled "
                                                "nothing)")
    assert good(keys("a"), Screened()) is None


def job(*processes: Screened, tolerated: tuple[str, ...] = ()) -> Tried | None:
    return job_answer("jit_loss", "0.8.1", (11, 12), list(processes), tolerated)


def test_a_job_of_forked_children_keeps_a_candidate_whose_processes_disagree_and_rejects_one_whose_agree():
    kept = job(keys("k0"), keys("k1"))
    assert kept is not None and kept.kept and kept.why.startswith(PROVISIONAL)
    assert job(keys("k"), keys("k")) == Tried(False, "clean on 0.8.1 (forked runs of seeds 11, 12 as one job: its "
                                                     "processes computed one key of jit_loss)")
    assert job(keys(), keys()) == Tried(False, "jit_loss not computed on 0.8.1 (forked runs of seeds 11, 12 as one "
                                               "job: process 0 compiled nothing)")
    assert job(keys("k0"), keys()) is None  # process 1 ended before its key (process 0's stop ends the job)
    # Processes that never joined the job order their sets each by its seed all the same: refused, as fresh.
    apart = job(keys("k0", joined=False), keys("k1", joined=False))
    assert apart is not None and not apart.kept and "never called jax.distributed.initialize()" in apart.why


def test_a_job_s_process_that_raises_of_its_own_rejects_it_but_a_hang_or_the_original_s_own_death_is_unsure():
    raised = job(keys("k0"), Screened(rejected="TypeError: bad"))
    assert raised == Tried(False, "error on 0.8.1 (forked runs of seeds 11, 12 as one job: process 1: TypeError: bad)")
    assert job(keys("k0"), Screened(rejected="timed out after 9 s")) is None
    died = Screened(rejected="jax.errors.JaxRuntimeError: UNAVAILABLE: ...")
    assert job(keys("k0"), died, tolerated=("jax.errors.JaxRuntimeError",)) is None
    assert job(keys("k0"), died) is not None


# ---- with a real screen: stand-in programs that compute their key as JAX would from what the child was given ----

# The module's key follows the cache folder's path, as 0.4.36-0.11.0 key it into the compile options.
BY_PATH = ("import hashlib, os\ncache = os.environ['JAX_COMPILATION_CACHE_DIR']\n"
           "key = hashlib.sha256(cache.encode()).hexdigest()\nopen(os.path.join(cache, 'jit_f-' + key), 'w').close()\n")
# What a process lowers follows the job's rank, as the pvary bug's follows each process's hash seed: read from what
# `jax.distributed.initialize()` was given, and handed to JAX's key function (a stand-in for JAX below, which the
# server imports) as the lowered module.
BY_RANK = ("import jax\njax.distributed.initialize()\nfrom jax._src import compilation_cache, distributed\n"
           "coordinator, processes, rank = distributed.joined\nassert coordinator and processes == 2\n"
           "compilation_cache.get_cache_key('psum over axes ' + str(rank))\n")
STAND_IN_JAX = {
    "jax/__init__.py": "from jax import distributed\nfrom jax._src import compilation_cache\n\nclass _Config:\n    def update(self, name, value):\n"
                       "        pass\n\nconfig = _Config()\n",
    "jax/_src/__init__.py": "",
    "jax/_src/distributed.py": "joined = None\n\ndef initialize(coordinator_address=None, num_processes=None, "
                               "process_id=None):\n    global joined\n"
                               "    joined = (coordinator_address, num_processes, process_id)\n\n"
                               "def shutdown():\n    pass\n",
    "jax/distributed.py": "from jax._src.distributed import initialize, shutdown\n",
    # Its cache key names the process's devices, as JAX's does: different in every process, whatever it lowered.
    "jax/_src/compilation_cache.py": "import os\n\ndef get_cache_key(module, *args):\n"
                                     "    return 'jit_f-' + os.environ['HARNESS_JOB_RANK'] * 64\n",
}


@pytest.fixture
def screen(tmp_path):
    if bwrap_problem():
        pytest.skip(bwrap_problem())
    script = tmp_path / "work" / "train.py"
    script.parent.mkdir()
    script.write_text("")
    for name, text in STAND_IN_JAX.items():
        (tmp_path / "lib" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "lib" / name).write_text(text)
    forked = ForkScreen(Path(sys.executable), {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}, ("json", "jax"),
                        tmp_path / "screened", script.parent, script, [], (script.parent, tmp_path / "lib"), 20.0)
    yield forked
    forked.close()


def _measurer(screen: ForkScreen, factor: str | None, seeds: list[int | tuple[int, ...]]) -> Measurer:
    measurer = Measurer.__new__(Measurer)
    measurer.screen, measurer.good_screen, measurer.good, measurer.screen_decides = screen, None, None, True
    measurer.bad_seeds, measurer.screened, measurer.forked_kept, measurer.tolerated = seeds, 0, 0, ()
    measurer._provisional, measurer._good_seeds = set(), {}
    measurer.bad = type("PreparedRelease", (), {"spec": type("Spec", (), {"jax_version": "0.5.0"})()})()
    measurer.target = type("Signature", (), {"module": "jit_f", "factor": factor, "ranks": None if factor else (0, 1)})()

    def fresh(*args: object) -> None:
        raise AssertionError("decided by the screen: no fresh process")

    measurer.measure = fresh  # type: ignore[method-assign]
    return measurer


def test_under_cache_path_the_children_run_at_two_paths_and_the_first_again_and_keep_provisionally(screen):
    measurer = _measurer(screen, "cache-path", [7])
    kept = measurer.one_bad(BY_PATH)
    assert kept.kept and kept.why.startswith(PROVISIONAL) and measurer.provisional(BY_PATH)
    assert measurer._good_seeds[digest(BY_PATH)] == [7] and measurer.forked_kept == 1
    # A key that does not follow the path: the factor hits, rejected without a fresh process.
    same = BY_PATH.replace("cache.encode()", "b'one'")
    assert "cache-path hits on 0.5.0" in measurer.one_bad(same).why and measurer.screened == 1
    # The screen only rejects (the original's children did not show the miss): a keep is fresh processes'.
    measurer.screen_decides = False
    with pytest.raises(AssertionError, match="no fresh process"):
        measurer.one_bad(BY_PATH + "x = 1\n")
    assert not list((screen.work).glob("factor-*"))  # the children's cache folders are gone


def test_between_processes_one_job_of_children_of_the_two_seeds_keeps_where_their_keys_differ(screen):
    measurer = _measurer(screen, None, [(11, 12)])
    kept = measurer.one_bad(BY_RANK)
    assert kept.kept and kept.why.startswith(PROVISIONAL + " of seeds 11, 12 as one job")
    assert measurer._good_seeds[digest(BY_RANK)] == [(11, 12)]
    same = BY_RANK.replace("+ str(rank)", "")  # one program lowered by both (their keys differ all the same)
    assert measurer.one_bad(same) == Tried(False, "clean on 0.5.0 (forked runs of seeds 11, 12 as one job: its "
                                                  "processes computed one key of jit_f)")
    # Each process runs the whole program: one that crashes of its own after its key is rejected, as fresh.
    raises = BY_RANK + "if rank == 1:\n    None.shape\n"
    assert measurer.one_bad(raises) == Tried(False, "error on 0.5.0 (forked runs of seeds 11, 12 as one job: "
                                                    "process 1: AttributeError: 'NoneType' object has no "
                                                    "attribute 'shape')")
    apart = BY_RANK.replace("jax.distributed.initialize()", "import os").replace(
        "coordinator, processes, rank = distributed.joined", "rank = int(os.environ['HARNESS_JOB_RANK'])").replace(
        "assert coordinator and processes == 2\n", "")
    assert "never called jax.distributed.initialize()" in measurer.one_bad(apart).why
