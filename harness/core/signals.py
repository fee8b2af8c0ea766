"""SIGTERM and SIGHUP stop the harness the way Ctrl-C does.

Slurm (`scancel`, the end of `--time`), CI runners and `timeout` stop a job with SIGTERM, and a closed
terminal sends SIGHUP. Python's default for both is to die on the spot: no results saved, the status
left `running`, the runs (in their own sessions) and containers left going. Raising KeyboardInterrupt
instead sends the signal down the path Ctrl-C already takes: every run is killed, what was measured is
saved with `status: interrupted`, and the resume command is printed. The exit code is 128 + the signal,
as a shell reports a death by that signal (130 for Ctrl-C, 143 for SIGTERM), so a scheduler still sees
that the job was stopped.

A signal stops the work, not only the runs going: from the moment it arrives (SIGTERM, SIGHUP, Ctrl-C) or the
measurement is interrupted, `stop_runs` holds, and no run starts again in this process (a retry of a run the
signal killed, the next run a worker thread had queued): `refuse_if_stopping` is asked by every place a run's
process or container starts.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: signal.Signals | None = None
_stopping = threading.Event()  # set once the work is to stop: no run starts after it


class RunsStopped(KeyboardInterrupt):
    """A run that was about to start after the signal: not started (the work is stopping)."""


def stop_runs() -> None:
    """From now on, no run starts in this process (until the next command's `stop_signals_interrupt`)."""
    _stopping.set()


def refuse_if_stopping() -> None:
    """RunsStopped when the work is stopping: called just before a run's process or container starts."""
    if _stopping.is_set():
        raise RunsStopped("the work is stopping: no run starts after the signal")


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C: as Python's own handler (KeyboardInterrupt, each time), and no run starts after it."""
    _stopping.set()
    raise KeyboardInterrupt


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    global _received
    _stopping.set()
    if _received is not None:
        return  # already stopping: a second SIGTERM must not cut the saving short
    _received = signal.Signals(signum)
    raise KeyboardInterrupt


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread (once), and after any of them
    or Ctrl-C no run starts."""
    global _received
    _received = None
    _stopping.clear()
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {s: signal.signal(s, _on_stop_signal) for s in STOP_SIGNALS}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not where Ctrl-C is ignored)
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_interrupt)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupted_how() -> str:
    """The first word of the harness's last lines: "interrupted" (Ctrl-C), "interrupted by SIGTERM"."""
    return f"interrupted by {_received.name}" if _received is not None else "interrupted"


def interrupted_exit_code() -> int:
    """128 + the signal that stopped the harness (SIGINT, 130, when it was Ctrl-C)."""
    return 128 + int(_received if _received is not None else signal.SIGINT)
