"""The console, beside the CLI: `ConsoleProgress` prints the `Progress` a sweep reports (harness/measure/progress.py)
as timestamped lines on stderr; `console_streams` keeps a closed pipe from stopping the work."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import weakref
from typing import Any, ClassVar, TextIO
from collections.abc import Iterator

from harness.core.markdown import visible
from harness.core.platforms import devices_differ, open_cost_line
from harness.core.model import NO_MESH, CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.verdicts.cell_facts import weak_bound


class ConsoleProgress:
    """Progress as timestamped lines on stderr (nothing with `quiet`); `stream`: another one.

    With `hold_s`, the first lines (what a command resolves before it measures: backend, versions,
    runs at once) are held until the first cell starts, `hold_s` seconds pass or `release()`: bad input found
    meanwhile is then said alone (`discard()` drops them), and slow preparations still show."""

    _instances: ClassVar[weakref.WeakSet[ConsoleProgress]] = weakref.WeakSet()

    def __init__(self, stream: TextIO | None = None, quiet: bool = False, hold_s: float = 0.0):
        self._stream, self.quiet = stream, quiet
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._held: list[str] | None = [] if hold_s > 0 else None
        self._hold_s = hold_s
        self._timer: threading.Timer | None = None
        ConsoleProgress._instances.add(self)

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr  # as it is now (see console_streams)

    def say(self, message: str) -> None:
        if self.quiet:
            return
        line = f"[{time.monotonic() - self._start:6.1f}s] {message}"
        with self._lock:
            if self._held is not None:
                self._held.append(line)
                if self._timer is None:
                    self._timer = threading.Timer(self._hold_s, self.release)
                    self._timer.daemon = True
                    self._timer.start()
                return
        print(line, file=self.stream, flush=True)

    def release(self) -> None:
        """Print the held lines; from now on every line as it comes."""
        with self._lock:
            held, self._held = self._held or [], None
            if self._timer is not None:
                self._timer.cancel()
            for line in held:
                print(line, file=self.stream, flush=True)

    def discard(self) -> None:
        """Drop the held lines (the command ends with one line of bad input instead)."""
        with self._lock:
            self._held = [] if self._held is not None else None

    @classmethod
    def release_all(cls) -> None:
        for progress in list(cls._instances):
            progress.release()

    @classmethod
    def discard_all(cls) -> None:
        for progress in list(cls._instances):
            progress.discard()

    def cell_started(self, spec: CellSpec, number: int, total: int) -> None:
        self.release()
        mesh = spec.mesh.label if spec.mesh else f"user {NO_MESH}"
        self.say(f"cell {number}/{total}: jax {spec.jax_version}, {mesh}, {spec.platform} x{spec.device_count}")

    def run_finished(self, spec: CellSpec, run: RunRecord, planned: int) -> None:
        status = "ok" if run.ok else f"FAILED ({run.reason or run.exit_code})"
        new = run.own_new_keys()  # its own account: two overlapping runs never both list one new entry
        shown = ", ".join(k[: k.rfind("-") + 9] + "…" for k in new if k.startswith("jit_f")) or \
            (f"{len(new)} new" if new else "no new entry")
        # Cells overlap (a cell's last runs beside the next one's first): each line names its cell.
        where = " in the moved folder (a copy of run 1's, elsewhere)" if run.in_moved_folder else ""
        self.say(f"  jax {spec.jax_version} {spec.mesh_label} run {run.index}/{planned} seed {run.seed}{where}: "
                 f"{status} in {run.duration_s:.1f}s, {shown}")
        if run.index == 1 and run.devices is not None:  # what JAX ran on, and whether it is what was asked
            differ = devices_differ(spec.platform, spec.device_count, run.devices)
            shown_version = run.devices.version_line not in ("", "<unknown>", run.devices.platform)  # cpu: <unknown>
            version = f" ({run.devices.version_line})" if shown_version else ""
            self.say(f"  devices: {differ or run.devices.label + version}")
        if run.index == 1 and run.ok and (plan := open_cost_line(spec.platform, run.devices, run.duration_s, planned)):
            self.say(f"  plan: {plan}")

    def cell_finished(self, cell: CellResult) -> None:
        bound = weak_bound(cell)  # a clean cell's bound, when weak or above the 1e-3 target
        self.say(f"  => {cell.verdict}: {cell.detail}" + (f"; {bound}" if bound else ""))


class QuietWhenClosed:
    """A text stream that goes silent once its reader has gone (`harness check ... 2>&1 | head -3`): what
    cannot be printed must never cost a measurement, so the sweep goes on, saves everything and exits as it
    would have; only the printing stops. Its file descriptor then points at /dev/null, so the
    interpreter's own last flush cannot fail either.

    Everything written through it reaches the terminal with control characters (ESC, BEL, BS, a carriage
    return, the C1 range) and bidi overrides shown as escapes (`\x1b[31m`): a crash line, a module name or a
    reason a program wrote cannot move the cursor, retitle the window or recolour what follows."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self._stream.write(visible(text))
                return len(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self) -> None:
        self.reader_gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): nothing to redirect
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def console_streams() -> Iterator[None]:
    """stdout and stderr as QuietWhenClosed for the duration (a command's run), then as they were."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = QuietWhenClosed(sys.stdout), QuietWhenClosed(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
