"""Where a reducer's candidate runs (harness/reduce/sandbox.py): a copy of the working folder, its own HOME and
TMPDIR, the write watch of the start-up hook, and bubblewrap's read-only file system where the machine has it."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.core.records import convert, plain
from harness.core.runs import Program
from harness.core.errors import UserError
from harness.inside.startup import startup_dir
from harness.reduce import sandbox, socket_filter
from harness.reduce.measure_candidate import MeasuredCandidate, wrote_outside
from harness.reduce.sandbox import (Confinement, Confines, Sandbox, Workspace, bwrap_argv, bwrap_launcher,
                                    bwrap_problem, copy_plan, write_places)

WRITER = """
import os, sys
from pathlib import Path
own, outside = Path(sys.argv[1]), Path(sys.argv[2])
(own / "fine.txt").write_text("mine")
open("relative.log", "w").write("in my cwd, my folder")
for write in (lambda: (outside / "canary.txt").write_text("escaped"), lambda: os.mkdir(outside / "made"),
              lambda: open(outside / "appended.log", "a").write("x")):
    try:
        write()
    except OSError as exc:
        print("refused:", exc.strerror)
open(os.devnull, "w").write("devices are fine")
"""


def _space(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "train.py").write_text("print('the original')\n")
    (user / "data.csv").write_text("1,2\n")
    (user / ".git").mkdir()
    (user / ".git" / "HEAD").write_text("ref\n")
    space = Workspace.make(tmp_path / "candidate", user, user / "train.py", WRITER, copy_plan(user, []))
    return user, space


def _run(space, user, launcher=()):
    env = {**os.environ, "PYTHONPATH": str(startup_dir()), **space.env()}
    return subprocess.run([*launcher, sys.executable, str(space.script_for(user, user / "train.py")),
                           str(space.folder), str(user)], cwd=space.work, env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_workspace_is_a_copy_with_the_candidate_in_the_script_s_place(tmp_path):
    user, space = _space(tmp_path)
    assert (space.work / "data.csv").read_text() == "1,2\n"  # what the script reads is there
    assert (space.work / "train.py").read_text() == WRITER  # the candidate, not the original
    assert not (space.work / ".git").exists()  # version control is not copied
    assert (user / "train.py").read_text() == "print('the original')\n"
    assert set(space.env()) >= {"HOME", "TMPDIR"} and space.env()["HOME"].startswith(str(space.folder))


def test_the_write_watch_records_every_write_outside_the_candidate_s_folder(tmp_path):
    user, space = _space(tmp_path)
    done = _run(space, user)
    assert done.returncode == 0, done.stderr
    assert sorted(space.writes_outside()) == sorted(str(user.resolve() / n) for n in
                                                     ("canary.txt", "made", "appended.log"))
    why = MeasuredCandidate(None, tuple(space.writes_outside())).refused
    assert why.startswith("refused: it wrote outside its own folder (") and "and 2 more" in why
    assert wrote_outside(()) is None


@pytest.fixture
def bwrap():
    """Skips where bubblewrap cannot run, unless HARNESS_REQUIRE_BWRAP=1 (CI: .ci/run installs it)."""
    if bwrap_problem():
        if os.environ.get("HARNESS_REQUIRE_BWRAP") == "1":
            pytest.fail(f"HARNESS_REQUIRE_BWRAP=1 but {bwrap_problem()}")
        pytest.skip(f"no bubblewrap here: {bwrap_problem()}")


def test_under_bubblewrap_the_user_s_folder_is_read_only_and_the_write_is_still_refused(tmp_path, bwrap):
    user, space = _space(tmp_path)
    before = sorted(p.name for p in user.iterdir())
    done = _run(space, user, bwrap_launcher(Confines((space.folder,), readable=(user,))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused: Read-only file system") == 3  # the writes failed
    assert sorted(p.name for p in user.iterdir()) == before  # nothing appeared beside the user's files
    assert (space.work / "relative.log").exists() and (space.folder / "fine.txt").exists()
    # Failing under the sandbox is no pass: the watch saw each attempt, so the candidate is refused.
    assert len(space.writes_outside()) == 3


def test_under_bubblewrap_tmp_is_private_to_the_candidate(tmp_path, bwrap):
    # A training script's checkpoint under /tmp works (it used to be refused: /tmp was read-only) and never
    # reaches the machine's /tmp; what is there already is still read (bound back read-only).
    marker, existing = f"/tmp/harness-sandbox-probe-{os.getpid()}", tmp_path / "input.txt"
    existing.write_text("data")
    (tmp_path / "own").mkdir()
    code = (f"open({marker!r}, 'w').write('x'); print(open({marker!r}).read(), open({str(existing)!r}).read())\n"
            f"import os; os.makedirs('/var/tmp/harness-probe-{os.getpid()}/ckpt')")
    done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",), readable=(tmp_path,))), sys.executable,
                           "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["x", "data"]
    assert not os.path.exists(marker) and not os.path.exists(f"/var/tmp/harness-probe-{os.getpid()}")


def _outside_process(folder):
    """A process outside any sandbox whose working folder is `folder` (as the user's shell or editor)."""
    return subprocess.Popen(["sleep", "60"], cwd=folder)


def test_a_non_python_child_cannot_write_through_proc_into_the_user_s_folder(tmp_path, bwrap):
    # Issue 49: without a PID namespace, a candidate's shell wrote into the user's folder, bound read-only,
    # through /proc/<pid of a process outside>/root/... and /proc/<pid>/cwd/.
    user = tmp_path / "project"
    user.mkdir()
    (tmp_path / "own").mkdir()
    outside = _outside_process(user)
    try:
        shell = (f"for p in /proc/[0-9]*; do echo x > $p/root{user}/via-root 2>/dev/null; "
                 "echo x > $p/cwd/via-cwd 2>/dev/null; done; "
                 f"echo x > /proc/{outside.pid}/cwd/via-pid 2>/dev/null; "
                 f"echo x > /proc/{os.getpid()}/root{user}/via-harness 2>/dev/null; ls /proc | grep -c '^[0-9]'")
        code = f"import subprocess; subprocess.run(['sh', '-c', {shell!r}])"
        done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",), readable=(user,))), sys.executable,
                               "-c", code], capture_output=True, text=True, timeout=60)
    finally:
        outside.kill()
        outside.wait()
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in user.iterdir()) == []  # nothing written into the user's folder
    assert int(done.stdout.split()[-1]) <= 6  # its own few (bwrap's, python, sh, ls, grep), none outside


def test_the_container_engine_s_socket_cannot_be_reached(tmp_path, bwrap):
    # Issue 49: the candidate reached /var/run/docker.sock (HTTP 200), root on the host.
    ask = ("import socket, sys\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect('/var/run/docker.sock')\n"
           "except OSError as e:\n    print('refused', e.errno); sys.exit(0)\n"
           "s.sendall(b'GET /_ping HTTP/1.0\\r\\nHost: d\\r\\n\\r\\n'); print(s.recv(64).decode().split()[1])")
    if os.path.exists("/var/run/docker.sock"):  # the engine runs here: outside the sandbox the socket answers
        plain = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, timeout=60)
        assert plain.stdout.strip() == "200", plain.stdout + plain.stderr
    (tmp_path / "own").mkdir()
    done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",))), sys.executable, "-c", ask],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("refused"), done.stdout + done.stderr
    listed = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",))), "sh", "-c", "ls -A /run /var/run"],
                            capture_output=True, text=True, timeout=60)
    assert "docker" not in listed.stdout and "containerd" not in listed.stdout and "user" not in listed.stdout


def test_bubblewrap_s_options_hold_the_namespace_and_the_session():
    argv = bwrap_argv(Confines())
    for option in ("--unshare-pid", "--die-with-parent", "--new-session", "--unshare-user"):
        assert option in argv
    assert argv[argv.index("--proc") + 1] == "/proc"
    assert argv.index("--unshare-pid") < argv.index("--proc")  # a fresh /proc of its own namespace
    assert argv[argv.index("--cap-drop") + 1] == "ALL"  # as root too


def test_a_private_tmp_links_into_one_view_and_stands_in_where_the_original_wrote(tmp_path, monkeypatch):
    fake_tmp = tmp_path / "tmp"
    (fake_tmp / "data").mkdir(parents=True)
    (fake_tmp / "agent" / "deeper").mkdir(parents=True)
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(fake_tmp / "agent" / "deeper" / "sock"))  # an ssh agent's, say
    (fake_tmp / "ckpt").mkdir()
    (fake_tmp / "project" / "logs").mkdir(parents=True)  # what it reads beside a log it writes
    monkeypatch.setattr(sandbox, "PRIVATE_TMP", (fake_tmp,))
    monkeypatch.setattr(sandbox, "RUNTIME_DIRS", ())
    elsewhere = tmp_path / "logs"
    elsewhere.mkdir()
    try:
        argv = bwrap_argv(Confines((tmp_path / "own",), (), ((fake_tmp / "ckpt", tmp_path / "s0"),
                                                               (elsewhere, tmp_path / "s1"),
                                                               (fake_tmp / "project" / "logs", tmp_path / "s2"),
                                                               (tmp_path / "gone", tmp_path / "s3"))))
    finally:
        listening.close()
    pairs = list(zip(argv, argv[1:], argv[2:]))
    view = fake_tmp / sandbox.HOST_VIEW
    # The machine's tmp once, read-only, inside the private one; an entry a link into it (one mount, not one each).
    assert ("--ro-bind", str(fake_tmp), str(view)) in pairs
    assert ("--symlink", str(view / "data"), str(fake_tmp / "data")) in pairs
    assert argv.count("--ro-bind-try") == 1  # only "project", where a stand-in is bound deeper
    # A folder holding a socket is linked as any other (no scan per start): the seccomp filter refuses the socket.
    assert ("--symlink", str(view / "agent"), str(fake_tmp / "agent")) in pairs
    assert not any(a == str(fake_tmp / "ckpt") for a in argv)  # the original's place: the tmpfs's own
    assert ("--bind", str(tmp_path / "s1"), str(elsewhere)) in pairs  # elsewhere: the candidate's stand-in
    assert ("--ro-bind-try", str(fake_tmp / "project"), str(fake_tmp / "project")) in pairs
    assert ("--bind", str(tmp_path / "s2"), str(fake_tmp / "project" / "logs")) in pairs  # over what is bound back
    assert argv.index(str(fake_tmp / "project")) < argv.index(str(tmp_path / "s2"))
    assert str(tmp_path / "gone") not in argv  # removed since: nothing to stand in for
    assert argv.index("--tmpfs") < argv.index(str(fake_tmp / "data"))


def test_the_places_the_original_wrote_are_the_outermost_outside_its_folders(tmp_path):
    own = (tmp_path / "project",)
    written = ["/tmp/ckpt", "/tmp/ckpt/step_1/params.npy", "/tmp/train.log", str(tmp_path / "project" / "out.txt"),
               "/var/tmp/x/y", "relative/path"]
    assert write_places(written, own) == ("/tmp/ckpt", "/tmp/train.log", "/var/tmp/x/y")


def test_without_bubblewrap_the_reduction_says_why_and_watches(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.bwrap_problem.cache_clear()
    try:
        here = Sandbox.here("venv")
        assert here.confinement == Confinement.WATCH and "bwrap) is not installed" in here.why_not
        assert "not confined (bubblewrap (bwrap) is not installed)" in here.describe()
    finally:
        sandbox.bwrap_problem.cache_clear()
    assert Sandbox.here("docker").confinement == Confinement.CONTAINER and not Sandbox.here("docker").watched


def test_a_working_folder_too_large_to_copy_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "MAX_COPY_FILES", 3)
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x")
    with pytest.raises(UserError, match="files to copy for each candidate"):
        copy_plan(tmp_path, [])
    (tmp_path / "results").mkdir()
    monkeypatch.setattr(sandbox, "MAX_COPY_FILES", 10)
    (tmp_path / "results" / "big.json").write_text(json.dumps(list(range(10))))
    assert all(rel.parts[0] != "results" for rel, _ in copy_plan(tmp_path, [tmp_path / "results"]))


def test_the_reduced_program_s_check_is_watched_where_the_original_ran(tmp_path):
    from harness.environments.base import Backend, Environment
    from harness.core.runs import Program
    from harness.reduce.sandbox import WatchedBackend

    class Recorded(Environment):  # what the check's runs are started with
        jax_version = "0.4.28"

        def run(self, program, env, cache_dir, log_path, timeout_s, variation=None):
            self.started = (program, env)

        def describe(self):
            return {}

    class Made(Backend):
        name = "venv"

        def prepare(self, jax_version, platform, say=None):
            return Recorded()

    user = tmp_path / "user"
    user.mkdir()
    script = user / "reduced.py"
    script.write_text(f"open({str(user / 'mine.txt')!r}, 'w').write('x')\n"
                      f"open({str(tmp_path / 'elsewhere.txt')!r}, 'w').write('x')\n")
    space = Workspace(tmp_path / "check")
    for sub in ("home", "tmp"):
        (space.folder / sub).mkdir(parents=True)
    environment = WatchedBackend(Made(), space, Sandbox(Confinement.BWRAP), (user,)).prepare("0.4.28", None)
    environment.run(Program(script), {"PYTHONPATH": str(startup_dir())}, tmp_path / "cache", tmp_path / "log", 10)
    program, env = environment.inner.started
    assert program.launcher == ()  # run as a user runs reduced.py: not under bubblewrap, but watched
    assert env["HOME"] == str(space.folder / "home") and str(user) in env["HARNESS_WRITE_ROOTS"]
    done = subprocess.run([sys.executable, str(script)], cwd=user, env={**os.environ, **env}, timeout=60)
    assert done.returncode == 0 and (user / "mine.txt").exists()
    assert space.writes_outside() == [str((tmp_path / "elsewhere.txt").resolve())]


def test_the_job_probe_runs_once_for_all_the_candidates_of_one_environment(monkeypatch, tmp_path):
    # Each candidate runs in a wrapper of its own (its workspace); whether JAX can run a job here is the
    # environment's and the confinement's, so the probe job runs once, not before every candidate.
    from harness.core.model import CellSpec
    from harness.core.kinds import Platform
    from harness.measure import multiprocess_run
    from harness.reduce.sandbox import ConfinedEnvironment
    from tests.fakes import ScriptedEnvironment
    probed = []
    monkeypatch.setattr(multiprocess_run, "_checked", {})
    monkeypatch.setattr(multiprocess_run, "_probe", lambda env, spec, log_dir, timeout_s: probed.append(env))
    spec = CellSpec("0.8.1", Platform.CPU, 2, None, processes=2)
    inner, other = ScriptedEnvironment(lambda *a: "k"), ScriptedEnvironment(lambda *a: "k")
    confined = Sandbox(Confinement.BWRAP)
    for _ in range(3):
        assert multiprocess_run.group_problem(ConfinedEnvironment(inner, None, confined), spec, tmp_path, 10) is None
    assert len(probed) == 1
    multiprocess_run.group_problem(ConfinedEnvironment(inner, None, Sandbox(Confinement.WATCH, "no bwrap")), spec,
                                   tmp_path, 10)
    multiprocess_run.group_problem(ConfinedEnvironment(other, None, confined), spec, tmp_path, 10)
    assert len(probed) == 3  # another confinement, another environment: probed again


def test_without_bubblewrap_what_is_not_contained_is_said_once():
    places = ("/tmp/ckpt", "/tmp/train.log")
    watched = Sandbox(Confinement.WATCH, "bubblewrap (bwrap) is not installed", places)
    line = watched.describe()
    assert "not contained: their writes where the original wrote (/tmp/ckpt, /tmp/train.log) go to those real " \
           "places" in line
    assert "a private /tmp" in Sandbox(Confinement.BWRAP, places=places).describe()
    assert convert(plain(watched), Sandbox) == watched  # results.json's reduce.sandbox keeps them


def test_a_candidate_may_write_where_the_original_wrote_and_nowhere_else(tmp_path):
    user, space = _space(tmp_path)
    env = space.env((str(user.resolve() / "canary.txt"),))
    assert env["HARNESS_WRITE_ROOTS"].split(os.pathsep) == [str(space.folder), str(user.resolve() / "canary.txt")]
    done = subprocess.run([sys.executable, str(space.script_for(user, user / "train.py")), str(space.folder),
                           str(user)], cwd=space.work, env={**os.environ, "PYTHONPATH": str(startup_dir()), **env},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(space.writes_outside()) == sorted(str(user.resolve() / n) for n in ("made", "appended.log"))


REACH = """
import socket, sys
for path in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect("\\0" + path[1:] if path.startswith("@") else path)  # @: an abstract socket's name
        print("reached", path)
    except OSError as e:
        print("refused", e.errno)
"""


def test_no_unix_socket_of_the_machine_is_reachable_at_any_depth_time_or_place(tmp_path, bwrap, monkeypatch):
    """Issue 61 #4: a candidate reached a socket 4 folders deep in /tmp (the view's scan looked 3 deep), one made
    in /tmp after its sandbox started (the view is live), and an agent's socket in HOME. The seccomp filter
    refuses every unix socket (abstract ones too), wherever it is and whenever it was made; socketpair stays."""
    deep = Path(tempfile.mkdtemp(prefix="harness-test-sock-", dir="/tmp"))
    home = tmp_path / "home"
    (home / ".gnupg").mkdir(parents=True)
    listening = []

    def listen(where: str) -> str:
        s = socket.socket(socket.AF_UNIX)
        s.bind(where)
        s.listen(4)
        listening.append(s)
        return where

    (tmp_path / "own").mkdir()
    late = deep / "late.sock"
    ask = REACH + f"""
import os, time
while not os.path.exists({str(late)!r}):
    time.sleep(0.02)
a, b = socket.socketpair(); a.sendall(b"p"); print("pair", b.recv(1).decode())
"""
    try:
        deep.joinpath("a", "b", "c", "d").mkdir(parents=True)
        sockets = [listen(str(deep.joinpath("a", "b", "c", "d", "s.sock"))), listen(str(home / ".ssh-agent.sock")),
                   listen(str(home / ".gnupg" / "S.gpg-agent.ssh")), "@harness-test-abstract"]
        listen("\0harness-test-abstract")
        started = subprocess.Popen([*bwrap_launcher(Confines((tmp_path / "own",))), sys.executable, "-c", ask,
                                    *sockets, str(late)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        listen(str(late))  # made after the sandbox started
        out, err = started.communicate(timeout=60)
        outside = subprocess.run([sys.executable, "-c", REACH, *sockets, str(late)], capture_output=True, text=True,
                                 timeout=60)
    finally:
        for s in listening:
            s.close()
        shutil.rmtree(deep, ignore_errors=True)
    assert outside.stdout.count("reached") == 5, outside.stdout  # each answers outside the sandbox
    lines = out.splitlines()
    assert started.returncode == 0 and lines[:5] == ["refused 13"] * 5, out + err
    assert lines[5] == "pair p", out


def test_the_filter_refuses_unix_sockets_io_uring_mounts_namespaces_and_other_architectures_only():
    import struct
    for machine in ("x86_64", "aarch64"):
        program = socket_filter.unix_socket_filter(machine)
        assert len(program) % 8 == 0
        ops = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
        returns = [k for code, _, _, k in ops if code == 0x06]
        # EACCES (sockets), EPERM (mounts, namespaces), ENOSYS (clone3: glibc falls back to clone), or allowed
        assert sorted(set(returns)) == [0x00050000 | 1, 0x00050000 | 13, 0x00050000 | 38, 0x7FFF0000]
        compared = {k for code, _, _, k in ops if code == 0x15}
        assert {425, 435} <= compared  # io_uring_setup, clone3
        calls = socket_filter.SOCKET_ARCH[machine]
        assert set(calls.refused) <= compared and {calls.socket, calls.socketpair, calls.clone} <= compared
        for i, (code, true, false, _) in enumerate(ops):  # every jump lands inside the program
            if code & 0x07 == 0x05:
                assert i + 1 + max(true, false) < len(ops)


MOUNTS = r"""
grep CapEff /proc/self/status
mount -o remount,bind,rw / 2>/dev/null && echo remounted
touch "$1/via-remount" 2>/dev/null && echo wrote
umount /run 2>/dev/null && echo unmounted
umount -l /tmp 2>/dev/null && echo unmounted-tmp
mount -t tmpfs none "$2" 2>/dev/null && echo mounted
unshare -Urm sh -c "mount -o remount,bind,rw / && touch '$1/via-userns'" 2>/dev/null && echo own-namespace
ls -A /run | grep -v '^mount$' || true
"""


def test_a_candidate_holds_no_capability_and_cannot_change_a_mount_as_root_too(tmp_path, bwrap):
    """Issue 73 #1: run as root, bubblewrap kept every capability: a candidate's shell remounted / read-write and
    wrote into HOME, and unmounted /run (the engine's socket then showed). Now none, and mounts are refused."""
    user, own = tmp_path / "user", tmp_path / "own"
    user.mkdir()
    own.mkdir()
    done = subprocess.run([*bwrap_launcher(Confines((own,))), "sh", "-c", MOUNTS, "sh", str(user), str(own)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["CapEff:\t0000000000000000"], done.stdout
    assert list(user.iterdir()) == []


SOCKET_TYPES = r"""
import asyncio, errno, socket, sys
def attempt(name, action):
    try:
        action()
        print(name, "reached")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
for target in sys.argv[1:]:
    address = "\0" + target[1:] if target.startswith("@") else target
    attempt("dgram-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0].sendto(b"x", address))
    attempt("seqpacket-pair", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)[0].connect(address))
    a, b = socket.socketpair()
    attempt("sendto", lambda: a.sendto(b"x", address))
    attempt("sendmsg", lambda: a.sendmsg([b"x"], [], 0, address))
    b.close()
    attempt("connect", lambda: a.connect(address))
a, b = socket.socketpair()
a.sendall(b"p")
print("pair", b.recv(1).decode(), asyncio.run(asyncio.sleep(0, "asyncio")))
"""


def test_no_unix_socket_is_reachable_by_any_socket_type(tmp_path, bwrap):
    """Issue 73 #2: socketpair(AF_UNIX, SOCK_DGRAM), then sendto(path) or connect(path), delivered datagrams to
    the machine's sockets in /tmp and HOME: the filter looked at socket() alone. Only stream pairs are made now
    (connected for good: nothing but their peer), so asyncio and multiprocessing's pipes still work."""
    deep = Path(tempfile.mkdtemp(prefix="harness-test-sock-", dir="/tmp"))
    made = []
    try:
        for kind, where in ((socket.SOCK_DGRAM, str(deep / "d.sock")), (socket.SOCK_DGRAM, str(tmp_path / "h.sock")),
                            (socket.SOCK_STREAM, str(deep / "s.sock")), (socket.SOCK_DGRAM, "@harness-test-dgram")):
            s = socket.socket(socket.AF_UNIX, kind)
            s.bind("\0" + where[1:] if where.startswith("@") else where)
            if kind == socket.SOCK_STREAM:
                s.listen(4)
            s.setblocking(False)
            made.append((s, where))
        (tmp_path / "own").mkdir()
        for network in (False, True):
            done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",), network=network)), sys.executable,
                                   "-c", SOCKET_TYPES, *(w for _, w in made)], capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode == 0, done.stderr
            lines = done.stdout.splitlines()
            assert lines[-1] == "pair p asyncio" and len(lines) == 1 + 5 * len(made), done.stdout
            assert not any(line.endswith("reached") for line in lines), done.stdout
        for s, where in made:
            with pytest.raises(BlockingIOError):
                s.accept() if s.type == socket.SOCK_STREAM else s.recv(8)
    finally:
        for s, _ in made:
            s.close()
        shutil.rmtree(deep, ignore_errors=True)


def test_a_job_s_candidate_keeps_the_network_and_every_other_gets_its_own():
    assert "--unshare-net" in bwrap_argv(Confines())
    assert "--unshare-net" not in bwrap_argv(Confines(network=True))
    assert bwrap_argv(Confines())[bwrap_argv(Confines()).index("--seccomp") + 1] == "9"


def test_the_machine_s_tmp_reads_through_its_links_and_keeps_its_sockets_and_writes_away(tmp_path, bwrap):
    """Under bubblewrap a candidate reads what the machine's /tmp holds (through a link into one read-only view of
    it), cannot write there nor reach a socket there (through the link or the view), and writes new files into its
    private tmpfs only."""
    data = Path(tempfile.mkdtemp(prefix="harness-test-data-", dir="/tmp"))
    agent = Path(tempfile.mkdtemp(prefix="harness-test-agent-", dir="/tmp"))
    listening = socket.socket(socket.AF_UNIX)
    try:
        (data / "x.txt").write_text("hello")
        listening.bind(str(agent / "sock"))
        listening.listen(1)
        (tmp_path / "own").mkdir()
        view = Path("/tmp") / sandbox.HOST_VIEW
        ask = (f"import os, socket\nprint(open({str(data / 'x.txt')!r}).read())\n"
               f"for path in ({str(agent / 'sock')!r}, {str(view / agent.name / 'sock')!r}):\n"
               "    try:\n        s = socket.socket(socket.AF_UNIX); s.connect(path); print('reached', path)\n"
               "    except OSError as e:\n        print('refused', e.errno)\n"
               f"try:\n    open({str(data / 'y.txt')!r}, 'w')\nexcept OSError as e:\n    print('read-only', e.errno)\n"
               "open('/tmp/harness-test-new.txt', 'w').write('new')\n"
               f"open({str(tmp_path / 'own' / 'z.txt')!r}, 'w').write('own')\n")
        done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",))), sys.executable, "-c", ask],
                              capture_output=True, text=True, timeout=60)
    finally:
        listening.close()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0] == "hello" and lines[1].startswith("refused") and lines[2].startswith("refused"), done.stdout
    assert lines[3].startswith("read-only"), done.stdout
    assert not (data / "y.txt").exists() and not Path("/tmp/harness-test-new.txt").exists()
    assert (tmp_path / "own" / "z.txt").read_text() == "own"
    for folder in (data, agent):
        shutil.rmtree(folder, ignore_errors=True)


def test_the_original_s_network_connection_is_recorded_and_its_candidates_keep_the_network(tmp_path):
    """Issue 61 #4: a candidate gets a network of its own unless the original needed the machine's: the write
    watch records a connection over the network (not a unix socket's), and the sandbox keeps the network then."""
    import socket as sockets
    listening = sockets.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(4)
    unix = sockets.socket(sockets.AF_UNIX)
    unix.bind(str(tmp_path / "s.sock"))
    unix.listen(4)
    port = listening.getsockname()[1]
    by_unix = "import socket\ns = socket.socket(socket.AF_UNIX); s.connect(%r)\n" % str(tmp_path / "s.sock")
    by_tcp = by_unix + f"socket.create_connection(('127.0.0.1', {port}))\n"
    found = []
    try:
        for name, source in (("unix", by_unix), ("tcp", by_tcp)):
            space = Workspace(tmp_path / name)
            space.folder.mkdir()
            env = {**os.environ, "PYTHONPATH": str(startup_dir()), **space.env()}
            subprocess.run([sys.executable, "-c", source], env=env, check=True, timeout=60)
            found.append(space.connected())
    finally:
        listening.close()
        unix.close()
    assert found == [False, True]
    from harness.reduce.sandbox import ConfinedEnvironment

    class Inner:
        python = sys.executable
        jax_version = "0.4.28"

    space = Workspace(tmp_path / "candidate")
    for network, unshared in ((False, True), (True, False)):
        sandboxed = ConfinedEnvironment(Inner(), space, Sandbox(Confinement.BWRAP, network=network))
        launcher = sandboxed._program(Program(tmp_path / "c.py"), space.folder / "cache", {}).launcher
        assert ("--unshare-net" in launcher) is unshared and "--seccomp" in launcher
        job = sandboxed._program(Program(tmp_path / "c.py"), space.folder / "cache", {}, network=True).launcher
        assert "--unshare-net" not in job  # a job's processes reach their coordinator
    assert "the machine's network" in Sandbox(Confinement.BWRAP, network=True).describe()
    assert "no network but a job's" in Sandbox(Confinement.BWRAP).describe()


def test_earlier_results_folders_beside_the_script_are_never_copied(tmp_path):
    """Seen reducing a script whose folder held two earlier reductions' --out folders: each candidate's copy held
    them (30 MB, 1,716 files), and the harness spent more CPU copying than the candidates running. A folder the
    harness wrote (its writer's lock, a reduction's state, or results.json with table.md) is left out wherever it
    sits; a user's own results.json is input like any other file."""
    (tmp_path / "train.py").write_text("import jax\n")
    for run, marker in (("out/20261206T061609Z-reduce-train", "reduce.json"),
                        ("out2/20261206T062000Z-check-train", ".writer.lock"),
                        ("old/v1-run", "results.json")):
        (tmp_path / run / "logs").mkdir(parents=True)
        (tmp_path / run / marker).write_text("{}")
        (tmp_path / run / "logs" / "run-01.log").write_text("x" * 1000)
    (tmp_path / "old/v1-run/table.md").write_text("| jax |\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "results.json").write_text("[1, 2]")  # the user's own: no table.md beside it
    copied = sorted(str(rel) for rel, _ in copy_plan(tmp_path, []))
    assert copied == ["data/results.json", "train.py"]


def test_a_candidate_cannot_read_the_harness_s_seal_key(tmp_path, bwrap, monkeypatch):
    """Issue 73 #5: the seal key was readable from every run (the file system is only read-only to a candidate);
    now it is an empty file, also through the private /tmp's view of the machine's (where this test's key is)."""
    from harness.core import seal

    key = tmp_path / "keys" / "reduce-state.key"
    monkeypatch.setattr(seal, "KEY_FILE", key)
    secret = seal.state_key(key).hex()
    (tmp_path / "own").mkdir()
    view = Path("/tmp") / sandbox.HOST_VIEW / key.resolve().relative_to(Path("/tmp").resolve())
    done = subprocess.run([*bwrap_launcher(Confines((tmp_path / "own",))), "sh", "-c",
                           'od -An -tx1 "$0" "$1" | wc -c; cat "$0" "$1" | wc -c', str(key), str(view)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0"] and secret not in done.stdout, done.stdout
