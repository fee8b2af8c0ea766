"""SIGTERM and SIGHUP take Ctrl-C's path (pure signal plumbing, this process only)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from harness.core.signals import interrupted_exit_code, interrupted_how, stop_signals_interrupt


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
