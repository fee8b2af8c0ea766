"""What the harness prints when nobody reads any more (issue 27, item 4): a closed pipe on stdout or
stderr stops the printing, never the measuring. Real pipes, no JAX."""

import io
import os
import subprocess
import sys

from harness.cli.console import ConsoleProgress, QuietWhenClosed, console_streams


def test_a_stream_whose_reader_is_gone_goes_silent_and_points_at_devnull():
    read_end, write_end = os.pipe()
    os.close(read_end)
    raw = open(write_end, "w", buffering=1)
    stream = QuietWhenClosed(raw)
    assert stream.write("nobody reads this\n") == len("nobody reads this\n")
    stream.flush()
    assert stream.reader_gone
    assert os.path.samefile(f"/proc/self/fd/{write_end}", os.devnull)
    print("and this", file=raw, flush=True)  # the interpreter's own writes (its last flush) fail no more
    raw.close()


def test_progress_prints_to_the_stderr_of_the_moment():
    with console_streams():
        assert isinstance(sys.stderr, QuietWhenClosed)
        progress = ConsoleProgress()
        assert progress.stream is sys.stderr
    assert not isinstance(sys.stderr, QuietWhenClosed)
    mine = io.StringIO()
    ConsoleProgress(mine).say("hello")
    assert "hello" in mine.getvalue()


def test_a_python_that_prints_into_a_closed_pipe_exits_cleanly(tmp_path):
    """As `harness ... | head -3` does: everything after the third line goes nowhere, quietly."""
    code = ("import sys\nfrom harness.cli.console import console_streams\nwith console_streams():\n"
            "    for i in range(100000):\n        print(i)\nprint('after')\nsys.exit(3)\n")
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err)
        for _ in range(3):
            proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=60) == 3  # its own exit code
    assert (tmp_path / "stderr").read_text() == ""  # no BrokenPipeError, no "Exception ignored"
