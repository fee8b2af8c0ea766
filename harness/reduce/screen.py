"""The quick screen: a candidate first runs as a child forked from a pre-started interpreter of the deciding seed
(harness/inside/fork_server.py), which has already paid for `import jax` and the script's own libraries
(bench/bench_fork.py: 0.4 s a run against 1-3.5 s fresh on this machine, the same key per seed).

It rejects the candidate's own uncaught Python exception (a NameError, an AttributeError on a removed field, a
TypeError on a value made None), as a fresh run of the same seed would, or a hang past the child's timeout
(`child_timeout`: 10 s + 3x the original's own forked run, shorter than a fresh run's: a candidate much slower
than the original is rejected where a fresh run might have kept it; docs/reduce.md says so). Any other outcome (it ran to the end, exited otherwise, or the server is unwell) is unsure, and the candidate
is measured as `harness check` measures it (fresh processes: harness/reduce/measure_candidate.py), so every kept
candidate, and the reduced program, is a fresh process's answer.

Contained as candidates are: each server runs under bubblewrap (bwrap_argv: the file system read-only, its own
PID namespace, a private /tmp and /var/tmp, /run hidden, no engine socket), writable only in the screen's own
scratch folder, where each child gets a folder of its own (a copy of the working folder, its HOME and
TMPDIR, its cache); one child at a time per server. Used only where that holds: under bubblewrap, with a
venv's interpreter, for a plain cell, under --vary cache-path (a child's cache folder is the caller's: another
path for the factor's child) or between processes (a job of children, each of its own seed's server:
harness/reduce/forked_cells.py), and when every place the original wrote
outside its folder is in /tmp or /var/tmp (the server's private ones). And only once the original itself
passes the screen (a program that sets its cache folder in code, or needs the start-up hook, fails it: the
screen is then off for the reduction, said once).
"""

from __future__ import annotations

import ast
import errno
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

from harness.core.files import package_path
from harness.core.listing import Entry, entries, list_dir
from harness.inside.startup.jax_cache_harness_hook import JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR
from harness.measure.multiprocess_run import LOOPBACK, free_port
from harness.reduce.passes import PROBE_VARIABLE, digest, imported_packages
from harness.reduce.sandbox import HOME_DIR, PRIVATE_TMP, TMP_DIR, Confines, Workspace, bwrap_launcher, empty

SERVER = "fork_server.py"
BASE_PACKAGES = ("numpy", "jax")  # what every candidate imports first; a server imports them before any fork
# A file operation the sandbox stopped, or one into a folder outside that is not there (a candidate's write
# outside that fails for want of its parent): unsure, so the fresh run's write watch says where it wrote
# (`refused: it wrote outside its own folder (...)`), as it did before the screen.
FILE_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOENT)
START_TIMEOUT_S = 120.0  # a server's own `import jax` on a loaded machine
# A forked child may take this many times what the original took forked (plus the floor) before it is killed as
# hanging: a candidate much slower than the original is not one a reducer wants, and a hang should not cost the
# fresh run's timeout (10 s + 2x the original's slowest fresh run, `import jax` included) every time.
CHILD_TIMEOUT_FACTOR = 3.0
CHILD_TIMEOUT_FLOOR_S = 10.0


def child_timeout(original_forked_s: float, fresh_timeout_s: float) -> float:
    """A forked child's timeout: 10 s + 3x the original's own forked run, never past a fresh run's."""
    return min(fresh_timeout_s, CHILD_TIMEOUT_FLOOR_S + CHILD_TIMEOUT_FACTOR * original_forked_s)


def preloaded(source: str, local: tuple[Path, ...]) -> tuple[str, ...]:
    """The modules a server imports before forking: jax and numpy, then the top-level packages the original
    imports at module level, less those that sit in the script's folders (the user's code runs in the child
    only)."""
    names: list[str] = list(BASE_PACKAGES)
    for name in imported_packages(ast.parse(source).body):
        if name not in names and not any((f / f"{name}.py").exists() or (f / name).is_dir() for f in local):
            names.append(name)
    return tuple(names)


def job_variables(processes: int) -> Callable[[int], dict[str, str]]:
    """A job's variables by rank, as a fresh job's processes get them (harness/measure/multiprocess_env.py): a
    coordinator of its own on the loopback (the servers share the machine's network), the job's size, the rank."""
    coordinator = f"{LOOPBACK}:{free_port()}"
    return lambda rank: {JOB_COORDINATOR_VAR: coordinator, JOB_PROCESSES_VAR: str(processes), JOB_RANK_VAR: str(rank)}


def screen_allowed(places: tuple[str, ...]) -> bool:
    """Whether every place the original wrote outside its folders is in a private /tmp of the server's."""
    private = tuple(p.resolve() for p in PRIVATE_TMP)
    return all(any(Path(p).is_relative_to(t) for t in private) for p in places)


@dataclass(frozen=True)
class Screened:
    rejected: str | None = None  # the candidate's own uncaught exception (`Class: message`); None: unsure
    finished: bool = False  # the child ran the program to its end (exit 0)
    # Asked for a module: the persistent-cache keys of it the child computed (JAX's key function's, hits too; else
    # its cache folder's entries), and whether it computed any at all; None where it did not finish.
    keys: frozenset[str] | None = None
    computed: bool = False
    every: frozenset[str] = frozenset()  # asked for a module: every key the child computed, of any module
    values: str = ""  # asked for values: what the program's probes wrote (harness/reduce/passes/probe.py, probe_program)
    joined: bool = False  # a job's process (`env` with the job's variables): the program called jax.distributed.initialize()
    seconds: float = field(default=0.0, compare=False)  # how long the child ran (0: it did not run)
    # Unsure and not finished: what happened ("exited 2", "timed out after 30 s", "its server ..."), to say why
    why: str = field(default="", compare=False)


class _Request(TypedDict):
    """A line to harness/inside/fork_server.py: one candidate to run in a child."""

    script: str
    argv: list[str]
    cwd: str
    env: dict[str, str]
    cache: str
    log: str
    error: str  # the file the child writes its uncaught exception to
    timeout_s: float
    stop_at: str | None  # stop the child once it computed a key of this module
    keys: str  # the file the child names each key JAX computes in (made only where JAX is there to ask)
    warm: bool  # the child's cache folder is the server's own, kept from child to child (not `cache`)
    computations: str | None  # where the child names each module it lowers (fork_server.py), or None
    joined: str  # the file the child makes when the program joins a job (jax.distributed.initialize())
    remove: list[str]  # places right in the server's private /tmp an earlier child may have left: removed before the fork


class _Answer(TypedDict):
    """fork_server.py's line back: how the child ended."""

    exit: int
    timed_out: bool
    error: str  # the uncaught exception's `Class: message`, or ""
    errno: int | None  # its errno
    stopped: NotRequired[bool]  # at `stop_at`
    warm: NotRequired[bool]  # it ran with the server's own cache folder: its keys are `keys`' only
    cpu_s: NotRequired[float]  # the CPU seconds the child used (its rusage)


class _Server:
    def __init__(self, argv: list[str], env: dict[str, str], stand_ins: tuple[Path, ...] = ()) -> None:
        self.stand_ins = stand_ins  # its own stand-ins for the places the original wrote (emptied before each child)
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        assert self.process.stdin is not None and self.process.stdout is not None  # PIPEs
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self._ready: bool | None = None

    @property
    def ready(self) -> bool:
        """Whether it imported what it was asked to and waits for requests (read on first use, by the thread that
        uses it: servers started together import at once)."""
        if self._ready is None:
            self._ready = self._line(START_TIMEOUT_S) == "ready"
        return self._ready

    def _line(self, timeout_s: float) -> str:
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(self.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        return out[0].strip() if out else ""

    def ask(self, request: _Request, timeout_s: float) -> _Answer | None:
        try:
            self.stdin.write(json.dumps(request) + "\n")
            self.stdin.flush()
        except OSError:
            return None
        line = self._line(timeout_s + 30.0)  # the server kills a hung child itself at timeout_s
        try:
            answer: _Answer = json.loads(line)
            return answer
        except ValueError:
            return None

    def why_unwell(self) -> str:
        """Why it answered nothing: it ended (its exit status), never said it was ready, or went silent."""
        ended = self.process.poll()
        if ended is not None:
            return f"its interpreter ended ({'signal ' + str(-ended) if ended < 0 else 'exit ' + str(ended)})"
        if not self.ready:
            return f"its interpreter did not start within {START_TIMEOUT_S:.0f} s"
        return "its interpreter went silent past the child's timeout"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _read_small(path: Path, limit: int = 1 << 20) -> str:
    """A file the child wrote, up to `limit` bytes ("" where there is none)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _keys_of(named: Path, cache: Path | None) -> set[Entry]:
    """The keys a child computed: those it named as JAX computed them (fork_server.py's `keys`: hits too), and the
    entries of its cache folder where the folder was its own (None: its server's, earlier children's entries too),
    as a fresh run's keys are what JAX's log names and what its run wrote."""
    named_keys = entries(set(_read_small(named, 16 << 20).split()))
    return named_keys | (entries(list_dir(cache)) if cache is not None else set())


@dataclass
class ForkScreen:
    """Servers by seed, each started on first use; `ask` is thread-safe (one server per candidate at once)."""

    python: Path
    env: dict[str, str]  # a fresh run's variables less the hash seed and the cache folder
    modules: tuple[str, ...]
    work: Path  # the screen's scratch: the only place its servers may write
    workdir: Path
    script: Path
    files: list[tuple[Path, Path]]
    readable: tuple[Path, ...]
    timeout_s: float
    args: tuple[str, ...] = ()  # the script's arguments, as each fresh run gets them
    enabled: bool = True
    # The original's runs got the cache folder through the start-up hook (it sets its folder in code): a child's
    # folder is then set only where the program sets one (redirected to the child's own), never before it runs,
    # as in a fresh run (a program that computes before it sets its folder caches nothing there, on some releases).
    hook_folder: bool = False
    # Where the original wrote outside its folders (all in /tmp or /var/tmp: screen_allowed): a child may write
    # there too, as a fresh candidate may, each time into an empty place (one right in a private tmp is the
    # server's tmpfs's own, removed before each child; a deeper one gets a stand-in of the server's, emptied).
    places: tuple[str, ...] = ()
    say: Callable[[str], None] = lambda _: None  # the reduction's progress: the screen turning itself off is said
    network: bool = False  # a job's children reach their coordinator over the machine's network (Confines.network)
    _idle: dict[int, list[_Server]] = field(default_factory=dict)
    children: int = 0  # forked children run (for the reduction's tally)
    cpu_s: float = 0.0  # the CPU seconds they used (load moves their wall time, not this)
    _all: list[_Server] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _starter: ThreadPoolExecutor | None = None

    def _start(self, seed: int) -> _Server:
        interpreter = (self.python.parent.parent, self.python.resolve().parent.parent)
        # Without a stand-in, the machine's own entry at a place the original wrote (it exists: the original made
        # it) is bound back read-only, and the child's write there fails: the screen was off for such a program.
        stand_ins = Workspace(Path(tempfile.mkdtemp(prefix=f"server-{seed}-", dir=self.work))).stand_ins(self.places)
        confines = Confines((self.work,), (*interpreter, *self.readable), stand_ins, self.network)
        argv = [*bwrap_launcher(confines), str(self.python), str(package_path("harness.inside", SERVER)), *self.modules]
        # Started by the screen's own thread, which lives as long as the screen: bubblewrap's --die-with-parent
        # follows the thread that started it, so a server started by a batch's worker thread (measure.test_bad)
        # would be killed with that thread at the batch's end, and the screen turned off as unwell.
        with self._lock:
            if self._starter is None:
                self._starter = ThreadPoolExecutor(1, thread_name_prefix="fork-screen")
            starter = self._starter
        # every server's warm cache at one path (fork_server.py's SHARED_WARM: the path is in keys on some releases)
        warm_at = {"HARNESS_WARM_CACHE": str(self.work / "warm-cache")}
        server = starter.submit(_Server, argv, {**self.env, "PYTHONHASHSEED": str(seed), **warm_at},
                                tuple(s for _, s in stand_ins)).result()
        with self._lock:
            self._all.append(server)
        return server

    def prestart(self, seeds: list[int]) -> None:
        """Servers of `seeds` started at once, each idle for its seed (each imports jax and the script's libraries,
        1-3 s: one after the other as candidates first needed them, each start held a candidate up)."""
        if not self.enabled:
            return
        self.work.mkdir(parents=True, exist_ok=True)  # before a server binds it writable
        with self._lock:
            wanted = [s for s in dict.fromkeys(seeds) if not self._idle.get(s)]
        started = [(seed, self._start(seed)) for seed in wanted]
        with self._lock:
            for seed, server in started:
                self._idle.setdefault(seed, []).append(server)

    def screen(self, source: str, seed: int, module: str | None = None, stop: bool = False,
               values: bool = False, cache: Path | None = None, env: dict[str, str] | None = None,
               computations: bool = False) -> Screened:
        """The candidate in a child of `seed`'s server; with `module`, the keys of it the child computed too;
        `stop`: the child is stopped once it computed a key of `module` (the rest of the program unrun);
        `values`: what a probe program wrote (the file PROBE_VARIABLE names, in the child's HOME);
        `cache`: the child's cache folder, the caller's (under `work`, kept once answered: a factor's child gets
        another path, its control the same one again); `env`: more variables for the child (a job's process);
        `computations`: `keys` are what the child lowered (each module's text, hashed, named as an entry:
        fork_server.py), not its cache entries: a job's processes' keys always differ (each names its own devices),
        and a process other than the first writes no entry.
        A child's keys are those JAX computed (its key function, hits included: what JAX's log names in a fresh
        run), read from the file the child names them in; without JAX there, its cache folder's entries. Without
        `cache` or `computations`, the child's cache folder is its server's own, kept from child to child: a
        module an earlier candidate compiled is loaded rather than compiled again (fork_server.py's `warm`)."""
        if not self.enabled:
            return Screened()
        self.work.mkdir(parents=True, exist_ok=True)  # before a server binds it writable
        server = self._idle_server(seed)
        folder = Path(tempfile.mkdtemp(prefix=f"{digest(source)[:16]}-", dir=self.work))
        try:
            space = Workspace.make(folder, self.workdir, self.script, source, self.files)
            path = space.script_for(self.workdir, self.script)
            # Its HOME and TMPDIR, and its cache folder: set after the fork (JAX read the rest at import). Its own
            # unless the caller gives one (a factor's) or it lowers for a job: then its server's, kept warm.
            warm = cache is None and not computations
            cache = cache or folder / "cache"
            probed, lowered = folder / HOME_DIR / ".harness-values.jsonl", folder / "computations"
            named = folder / "keys"
            variables = self._variables(folder, cache, env, probed if values else None)
            if computations:
                lowered.mkdir()
            started = time.monotonic()
            answer = self._ask(server, {"script": str(path), "argv": list(self.args), "cwd": str(space.work),
                                        "env": variables, "cache": str(cache), "log": str(folder / "run.log"),
                                        "error": str(folder / ".fork-error"), "timeout_s": self.timeout_s,
                                        "stop_at": module if stop else None, "remove": self._own_places(),
                                        "keys": str(named), "warm": warm,
                                        "computations": str(lowered) if computations else None,
                                        "joined": str(folder / ".joined")})
            seconds = time.monotonic() - started
            own = None if answer is not None and answer.get("warm") else cache
            found = set() if module is None else entries(list_dir(lowered)) if computations else _keys_of(named, own)
            written = _read_small(probed) if values else ""
            joined = (folder / ".joined").exists()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if answer is None:
            return self._unwell(server, seed)
        with self._lock:
            self._idle[seed].append(server)
            self.cpu_s += answer.get("cpu_s") or 0.0
        return _screened(answer, module, found, written, joined, seconds, self.timeout_s)

    def _unwell(self, server: _Server, seed: int) -> Screened:
        """A server that did not start, died, or went silent: every later candidate runs fresh, rather than each
        paying for another server's `import jax`; said once, with why."""
        why = server.why_unwell()
        server.close()
        with self._lock:
            was, self.enabled = self.enabled, False
        if was:
            self.say(f"quick screen off: its server of seed {seed} answered nothing ({why}); every later "
                     "candidate runs as fresh processes")
        return Screened(why=f"its server answered nothing ({why})")

    def _ask(self, server: _Server, request: _Request) -> _Answer | None:
        """One child of `server` (its stand-ins emptied first, counted); None where the server is not ready."""
        if not server.ready:
            return None
        for stand_in in server.stand_ins:
            empty(stand_in)
        with self._lock:
            self.children += 1
        return server.ask(request, self.timeout_s)

    def _idle_server(self, seed: int) -> _Server:
        """An idle server of `seed`, else one started now."""
        with self._lock:
            idle = self._idle.setdefault(seed, [])
            server = idle.pop() if idle else None
        return server or self._start(seed)

    def _variables(self, folder: Path, cache: Path, env: dict[str, str] | None,
                   probed: Path | None) -> dict[str, str]:
        """A child's variables, set after the fork (JAX read the rest at import): `env`, its HOME and TMPDIR, its cache
        folder (but where the start-up hook sets it), and the file a probe program writes to (`probed`)."""
        variables = {**(env or {}), "HOME": str(folder / HOME_DIR), "TMPDIR": str(folder / TMP_DIR)}
        if not self.hook_folder:
            variables["JAX_COMPILATION_CACHE_DIR"] = str(cache)
        if probed is not None:
            variables[PROBE_VARIABLE] = str(probed)
        return variables

    def _own_places(self) -> list[str]:
        """The places right in a private tmp: the server's tmpfs's own, removed by it before each child."""
        private = tuple(p.resolve() for p in PRIVATE_TMP)
        return [p for p in self.places if Path(p).parent in private]

    def close(self) -> None:
        with self._lock:
            servers, self._all, self._idle = self._all, [], {}
            starter, self._starter = self._starter, None
        for server in servers:
            server.close()
        if starter is not None:
            starter.shutdown(wait=False)


def _screened(answer: _Answer, module: str | None, found: set[Entry], written: str, joined: bool, seconds: float,
              timeout_s: float) -> Screened:
    """A child's answer, as the screen says it: a hang or an exception of its own (not a file's: the fresh run may
    have the file) rejects it; any other failure is unsure; else what it computed (or wrote, as a probe)."""
    if answer["timed_out"]:
        # The fresh run hangs too, at the same timeout, with `import jax` still to pay: the child has more time.
        return Screened(rejected=f"timed out after {timeout_s:.0f} s")
    if answer["exit"] == 1 and answer["error"] and answer.get("errno") not in FILE_ERRNOS:
        return Screened(rejected=answer["error"])
    if answer["exit"] != 0:
        code = answer["exit"]
        raised = f": {answer['error']}" if answer["error"] else ""
        return Screened(why=(f"killed by signal {-code}" if code < 0 else f"exited {code}") + raised)
    if module is None:
        return Screened(finished=True, values=written, seconds=seconds)
    return Screened(finished=True, keys=frozenset(e.key for e in found if e.module == module),
                    computed=bool(found), every=frozenset(e.key for e in found), joined=joined, seconds=seconds)
