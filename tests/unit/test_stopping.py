"""SIGTERM and SIGHUP take Ctrl-C's path (pure signal plumbing, this process only)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from harness.core.kinds import Platform
from harness.core.model import CellSpec
from harness.core.signals import (RunsStopped, interrupted_exit_code, interrupted_how, refuse_if_stopping,
                                  stop_signals_interrupt)
from harness.environments.local import LocalEnvironment
from harness.inputs.config import Repro
from harness.measure.cell_runner import CellRunner


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_is_a_keyboard_interrupt_and_a_second_one_does_not_cut_the_saving_short(signum):
    saved = False
    with pytest.raises(KeyboardInterrupt):
        with stop_signals_interrupt():
            try:
                os.kill(os.getpid(), signum)
                time.sleep(5)  # interrupted at once
            finally:
                os.kill(os.getpid(), signum)  # e.g. scancel twice: ignored while saving
                saved = True
    assert saved
    assert interrupted_exit_code() == 128 + signum and interrupted_how() == f"interrupted by {signum.name}"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_ctrl_c_keeps_its_own_code():
    with pytest.raises(KeyboardInterrupt):
        with stop_signals_interrupt():
            raise KeyboardInterrupt
    assert interrupted_exit_code() == 130 and interrupted_how() == "interrupted"


def test_the_previous_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with stop_signals_interrupt():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before



def test_a_harness_started_with_ctrl_c_ignored_keeps_ignoring_it_and_sigterm_still_stops_it():
    """A background job of a shell without job control starts with SIGINT ignored (docs/signals-and-concurrency.md):
    the harness leaves it so, as every program there does."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt):
            with stop_signals_interrupt():
                assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # nothing happens
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # interrupted at once
        assert interrupted_exit_code() == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)

BLOCKED = """\
import os, sys, time
open(os.path.join(os.environ["MARKS"], f"started-{os.getpid()}"), "w").close()
time.sleep(60)
"""


def test_after_sigterm_no_run_starts_not_even_the_first_run_s_retry(tmp_path):
    """A user's script blocked in its first run: SIGTERM killed it, and then the first run's retry (a script that
    set no folder and failed is run again) started a new one, which ran to its timeout. Now the signal stops the
    work: the killed run is the last, and the cell comes back interrupted at once."""
    script, marks = tmp_path / "s.py", tmp_path / "marks"
    script.write_text(BLOCKED)
    marks.mkdir()
    runner = CellRunner(LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]}),
                        Repro("s", script, builtin=False), 120, env=(("MARKS", str(marks)),))

    def terminate_once_started() -> None:
        deadline = time.monotonic() + 60
        while not list(marks.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_started, daemon=True).start()
    started = time.monotonic()
    with stop_signals_interrupt():
        cell = runner.run(CellSpec("0.4.31", Platform.CPU, 1, None), [11, 12], tmp_path / "cache", tmp_path / "logs",
                          results_root=tmp_path)
    assert cell.interrupted and len(list(marks.iterdir())) == 1, sorted(p.name for p in marks.iterdir())
    assert time.monotonic() - started < 30  # the retry ran on until its timeout (120 s)
    with pytest.raises(RunsStopped):
        refuse_if_stopping()  # (until the next command)
