"""SIGTERM and SIGHUP stop the harness the way Ctrl-C does.

Slurm (`scancel`, the end of `--time`), CI runners and `timeout` stop a job with SIGTERM, and a closed
terminal sends SIGHUP. Python's default for both is to die on the spot: no results saved, the status
left `running`, the runs (in their own sessions) and containers left going. Raising KeyboardInterrupt
instead sends the signal down the path Ctrl-C already takes: every run is killed, what was measured is
saved with `status: interrupted`, and the resume command is printed. The exit code is 128 + the signal,
as a shell reports a death by that signal (130 for Ctrl-C, 143 for SIGTERM), so a scheduler still sees
that the job was stopped.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: signal.Signals | None = None


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is not None:
        return  # already stopping: a second SIGTERM must not cut the saving short
    _received = signal.Signals(signum)
    raise KeyboardInterrupt


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread (once)."""
    global _received
    _received = None
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {s: signal.signal(s, _on_stop_signal) for s in STOP_SIGNALS}
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
