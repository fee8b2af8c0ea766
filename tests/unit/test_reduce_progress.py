"""What a reduction says as it goes (issue 48 item 4): the opening, the cost of a candidate, each candidate
with its pass's tally and the time spent, and a signal in any phase keeping the best with a resume line."""

from pathlib import Path

import pytest

import harness.service as service
from harness.core.kinds import Cause
from harness.reduce.passes import PassName, removals
from harness.reduce.progress_lines import CandidateCost, SearchProgress, duration, opening
from harness.reduce.search import Search, Tried
from harness.results.reduce_results import Signature
from harness.reduce.reduce_state import ReduceState, load_state

SCRIPT = "examples/train_shard_map_grad.py"


def test_the_opening_says_the_original_s_lines_and_the_passes_in_their_order():
    line = opening(142)
    assert line.startswith("the original: 142 lines; passes: dead code, down to plain JAX, library calls as the JAX "
                           "they traced to, statements removed, constants and one-line functions written where read, inlining, "
                           "fields read as their values, unwrapping (again while they shrink it), then pysource-minimize")
    assert line.index("statements removed") < line.index("pysource-minimize") < line.index("readable values")


def test_a_candidate_s_cost_is_estimated_from_the_original_s_mean_run():
    said = CandidateCost(run_s=1.25, runs_rejected=1, runs_kept=2, runs_most=5, at_once=2).said()
    assert said == ("a candidate takes about 1.2 s when rejected, 2.5 s when kept, up to 6.2 s (the original's "
                    "runs took 1.2 s each on average; 2 at once)")
    assert "at once" not in CandidateCost(1.0, 1, 2, 5, at_once=1).said()


@pytest.mark.parametrize("seconds, said", [(0.4, "0 s"), (59.9, "59 s"), (65, "1 min 05 s"), (3725, "1 h 02 min")])
def test_durations_read_as_a_person_says_them(seconds, said):
    assert duration(seconds) == said


def test_each_candidate_line_has_its_pass_the_pass_s_tally_the_best_and_the_time_spent():
    lines, now = [], [100.0]
    progress = SearchProgress(lines.append, 150, seconds_before=60.0, clock=lambda: now[0])
    now[0] = 105.0
    progress.candidate(1, 120, PassName.REMOVALS, Tried(True, "reproduced in 2 runs"), 120)
    now[0] = 110.0
    progress.candidate(2, 90, PassName.REMOVALS, Tried(False, "error (exit code 1: NameError)"), 120)
    progress.candidate(3, 118, PassName.INLINING, Tried(False, "clean"), 120)
    assert lines[0] == ("  candidate 1 (120 lines, statements removed): kept; best so far 120 of 150 lines; "
                        "statements removed: 1 tried, 1 kept; 1 min 05 s")
    assert lines[1] == ("  candidate 2 (90 lines, statements removed): rejected: error (exit code 1: NameError); "
                        "best so far 120 of 150 lines; statements removed: 2 tried, 1 kept; 1 min 10 s")
    assert "inlining: 1 tried, 0 kept" in lines[2]
    assert progress.summary() == "statements removed: 2 tried, 1 kept; inlining: 1 tried, 0 kept"
    assert progress.seconds == 70.0


def test_the_search_says_which_pass_made_each_candidate():
    source = "import jax\na = 1\nb = 2\nc = 3\n"
    made_by = []
    search = Search(source, lambda sources: [Tried("c = 3" in s) for s in sources],
                    test_good=lambda s: Tried(True), on_tried=lambda c, a, b: made_by.append(search.making))
    search.run_pass(removals)
    assert made_by and set(made_by) == {PassName.REMOVALS}
    search.polish()
    assert made_by[-1] == PassName.MINIMIZE
    search.test_good = lambda s: Tried(False, "reproduced on 0.4.29")
    search._chain = [source, search.best]
    search.checkpoint()
    assert made_by[-1] == PassName.GOOD and search.making == PassName.MINIMIZE  # said as the good release's


def test_the_original_s_mean_run_is_kept_in_the_state_for_a_resume_s_estimate(tmp_path):
    state = ReduceState("train.py", "d" * 64, "0.4.28", None, Signature("jit_f", ("computation",), Cause.ORDER),
                        [1, 2], 24.0, "import jax\n", run_seconds=1.3)
    state.save(tmp_path)
    assert load_state(tmp_path, "import jax\n").run_seconds == 1.3


# ---- a signal in any phase after the original's check (issue 48 item 4) -------------------------------------

class _Measurer:
    at_once = 1
    test_bad = test_good = confirm = screen = good_screen = interrupt = None
    screen_decides = False
    fresh_processes = 0

    class sandbox:  # noqa: N801 - the measurer's attribute
        bwrap = False

        @staticmethod
        def describe():
            return "candidates run under bubblewrap"


PHASES = ["_measurer", "_original_as_a_candidate", "search", "_finish"]


@pytest.mark.parametrize("phase", PHASES)
def test_a_signal_in_any_phase_keeps_the_best_and_prints_the_resume_command(phase, tmp_path, capsys, monkeypatch):
    from harness.cli import commands as cli
    from harness.reduce import reduction as module
    from harness.reduce.reduction import Reduction
    from harness.results.document import SweepStatus

    script = tmp_path / "train.py"
    script.write_text("import jax\nx = 1\n")
    folder = tmp_path / "reduce"
    state = ReduceState(str(script), "d" * 64, "0.4.28", None, Signature("jit_f", ("computation",), Cause.ORDER),
                        [1, 2], 24.0, "import jax\nx = 1\n", run_seconds=1.0)

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # as stop_signals_interrupt turns SIGTERM

    said = []
    monkeypatch.setattr(Reduction, "_snapshot", lambda self: None)
    monkeypatch.setattr(Reduction, "_original", lambda self, source: state)
    monkeypatch.setattr(Reduction, "_measurer", stop if phase == "_measurer" else lambda self, s, st: _Measurer())
    monkeypatch.setattr(Reduction, "_original_as_a_candidate",
                        stop if phase == "_original_as_a_candidate" else lambda *a: None)
    monkeypatch.setattr(module.Search, "run", stop if phase == "search" else lambda self: "import jax\n")
    monkeypatch.setattr(Reduction, "_finish", stop)  # the reduced program's own check
    one_process = type("Config", (), {"processes": 1})()
    reduction = Reduction(one_process, Path(script), None, "0.4.28", None, folder, None,
                          type("P", (), {"say": lambda self, m: said.append(m)})(), None)
    outcome = reduction.run(resume=False)
    assert outcome.status == SweepStatus.INTERRUPTED and outcome.state is not None
    assert (folder / "best.py").read_text() == outcome.state.best
    assert load_state(folder, "import jax\nx = 1\n").status == "interrupted"
    assert said[0].startswith("the original: 2 lines; passes: ")
    monkeypatch.setattr(service, "reduce", lambda *a, **k: outcome)
    assert cli.main(["reduce", str(script), "--versions", "0.4.28"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("continue with: harness reduce ") and f"--resume {folder}" in err
