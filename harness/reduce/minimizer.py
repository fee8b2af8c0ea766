"""pysource-minimize in a process of its own whose path can be forked at a question (`Minimizer`).

pysource-minimize calls its checker one candidate at a time, and its next candidate depends on the answer. To
measure its candidates side by side, the search tells it at once that a candidate not known yet is rejected
(most are) and lets it go on to the next; if that candidate is then kept, pysource-minimize must go on as if it
had been told so. Run again from its start with the answers it was given (what the search did before), it
repeats all its own work up to that question after each kept candidate: reducing
examples/train_shard_map_grad.py, 11,500 questions for 1,340 texts, two thirds of the search's CPU. Here the
process that asks is forked at such a question instead: the copy waits for the real answer, and when the
candidate is kept it is told so and goes on from there, with nothing repeated (the original goes).

The protocol, one socket per process: the harness sends the start text; the process sends ("ask", text) and gets
"yes", "no" or "fork" (it forks: the copy's end of a new socket is passed back (SCM_RIGHTS), the copy waits on
it for "yes", and the asking one is answered "no"); at the end ("ended", result) or ("failed", exception). A
closed socket ends the process that reads it.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from typing import cast

from pysource_minimize import minimize

FORK, KEPT, REJECTED = "fork", "yes", "no"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h: orphaned copies are reparented to the first process, which reaps them
CLOSE_TIMEOUT_S = 10.0
# This very harness's code, whatever the working folder holds (`python -m` would look there first).
_MAIN = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
         "from harness.reduce.minimizer import main; main(int(sys.argv[1]))")


def _send(channel: socket.socket, message: object) -> None:
    data = pickle.dumps(message)
    channel.sendall(len(data).to_bytes(4, "big") + data)


def _exactly(channel: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = channel.recv(left)
        if not chunk:
            raise EOFError("the other end closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive(channel: socket.socket) -> object:
    return pickle.loads(_exactly(channel, int.from_bytes(_exactly(channel, 4), "big")))


class Snapshot:
    """A copy of the minimizer waiting at a question it was answered "rejected" for: told "kept" (`resume`),
    it goes on from there; closed, it ends."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel

    def close(self) -> None:
        self.channel.close()


class Minimizer:
    """pysource-minimize from `start` in a process of its own; its questions read and answered one at a time
    (`question`, then `answer`, `answer_rejected_for_now` or `resume`)."""

    def __init__(self, start: str) -> None:
        self.result: str | None = None  # its answer, once it ended
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen([sys.executable, "-c", _MAIN, str(theirs.fileno())],
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL)
        theirs.close()
        self._channel = ours
        _send(ours, start)

    def question(self) -> str | None:
        """The next text it asks about, or None: it ended (`result`)."""
        message = _receive(self._channel)
        assert isinstance(message, tuple)
        what, value = message
        if what == "failed":
            raise cast(BaseException, value)
        if what == "ended":
            self.result = cast(str, value)
            return None
        return cast(str, value)

    def answer(self, kept: bool) -> None:
        _send(self._channel, KEPT if kept else REJECTED)

    def answer_rejected_for_now(self) -> Snapshot:
        """Told "rejected"; the copy returned waits at this question for the real answer."""
        _send(self._channel, FORK)
        _, fds, _, _ = socket.recv_fds(self._channel, 1, 1)
        os.set_inheritable(fds[0], False)
        return Snapshot(socket.socket(fileno=fds[0]))

    def resume(self, snapshot: Snapshot) -> None:
        """The candidate `snapshot` waits on was kept: it is told so and goes on as this minimizer; the one that
        went on as if it were rejected ends."""
        self._channel.close()
        self._channel = snapshot.channel
        self.answer(True)

    def close(self) -> None:
        """It ends, and so do the copies of it whose snapshots are closed (the caller closes those)."""
        self._channel.close()
        try:
            self._process.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


# ---- the process -----------------------------------------------------------------------------


def _ask(channel: socket.socket, text: str) -> tuple[socket.socket, bool]:
    """pysource-minimize's question, in the process that asks it: the answer, and the socket to go on with (a
    copy forked at this question goes on with its own, once told the candidate was kept)."""
    _send(channel, ("ask", text))
    while True:
        said = _receive(channel)
        if said != FORK:
            return channel, said == KEPT
        _reap()
        mine, theirs = socket.socketpair()
        if os.fork() == 0:  # the copy: waits here on its own socket
            channel.close()
            theirs.close()
            channel = mine
            continue
        socket.send_fds(channel, [b"F"], [theirs.fileno()])
        mine.close()
        theirs.close()
        return channel, False


def _reap() -> None:
    """This process's copies that ended (their CPU time counted, as it would not be if they were reaped unwaited)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _minimize(channel: socket.socket) -> None:
    start = cast(str, _receive(channel))

    def checker(text: str) -> bool:
        nonlocal channel
        channel, kept = _ask(channel, text)
        return kept

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            result = minimize(start, checker)
    except (EOFError, OSError):
        return  # abandoned: the harness closed this one's socket
    except BaseException as exc:  # noqa: BLE001 - raised again in the harness
        try:
            _send(channel, ("failed", exc))
        except (pickle.PicklingError, TypeError, AttributeError):
            _send(channel, ("failed", RuntimeError(f"pysource-minimize failed: {exc!r}")))
        return
    _send(channel, ("ended", result))
    try:
        _receive(channel)  # until it is closed
    except EOFError:
        pass


def main(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's: it closes the sockets
    try:  # the copies left when their parent ended are this process's to reap (Linux), not init's
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    channel = socket.socket(fileno=fd)
    pid = os.fork()
    if pid == 0:
        try:
            _minimize(channel)
        finally:
            os._exit(0)  # a forked process: none of the parent's clean-up
    channel.close()
    while True:  # until every copy ended: each ends when its socket is closed
        try:
            os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue


if __name__ == "__main__":
    main(int(sys.argv[1]))
