"""A pre-started interpreter that forks a child per candidate (harness reduce's quick screen; imports nothing
of the harness but the start-up hook's module, by its path, for a job's children).

Started with the hash seed fixed (PYTHONHASHSEED, read at its start, as a fresh run's is), it imports the
modules named on its command line (jax, numpy, the script's own libraries) but does not initialise JAX's
backend nor its cache: JAX read its configuration from the environment at import, before the cache folder
was known, so a child sets the cache options by `jax.config.update` after the fork, then runs the candidate
with runpy, in its own folder, with its own arguments and variables, its output to its log; a cache folder the
program sets itself becomes the child's own (as the start-up hook makes it the cell's in a fresh run), where
the reducer reads the keys it computed.

One request a line on stdin (JSON: script, argv, cwd, env, cache, log, error, timeout_s, remove: paths an
earlier child may have left, removed before the fork; env with HARNESS_JOB_*: the child is that process of a
job, its `jax.distributed.initialize()` joining it as the start-up hook makes a fresh process's; computations: a
folder where each module the child compiles is written as an empty file `<module>-<sha256 of its lowered text>`; joined: a file the child makes
when the program calls `jax.distributed.initialize()`); one answer a line on
stdout (JSON: exit, timed_out, error: the uncaught exception's `Class: message` or "", errno: its errno). One child at a time.

`keys`: a file where the child names each persistent-cache key JAX computes (`<module>-<hash>`, its entry's name, a
line each, hits included: what JAX's log names in a fresh run); the file exists only where JAX is there to ask.
With `stop_at` (a module's name), the child ends as soon as JAX computed a key of that module, before compiling it
(answered as exit 0, `stopped`): the key is known, the rest of the program is not needed (without JAX's key
function, once its cache folder holds an entry of that module).
`warm`: the child's cache folder is the server's own, kept from child to child (in its private /tmp), rather than
`cache`: a module an earlier child compiled is loaded, not compiled again; what a child computed is then read from
`keys` only (the folder holds the earlier children's entries too).
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import importlib.util
import json
import os
import re
import runpy
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

CACHE_OPTIONS = (("jax_compilation_cache_dir", "JAX_COMPILATION_CACHE_DIR", str),
                 ("jax_persistent_cache_min_compile_time_secs", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", float),
                 ("jax_persistent_cache_min_entry_size_bytes", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", int))


def _redirect(cache: str | None) -> None:
    """A cache folder the program sets itself (`jax.config.update("jax_compilation_cache_dir", ...)`,
    `compilation_cache.set_cache_dir`, which calls it) becomes the child's own, as the harness's start-up hook
    makes it the cell's in a fresh run (harness/inside/startup/jax_cache_harness_hook.py): its keys are read
    there, and nothing is written elsewhere."""
    config = sys.modules.get("jax._src.config")
    cls = getattr(config, "Config", None)
    original = getattr(cls, "update", None)
    if not cache or cls is None or original is None:
        return

    def update(self: Any, name: str, val: Any) -> Any:
        if name == "jax_compilation_cache_dir" and val:
            val = cache
        return original(self, name, val)

    setattr(cls, "update", update)  # noqa: B010 - a class of JAX's, known only at run time


def _startup_hook() -> Any:
    """The start-up hook's module (startup/jax_cache_harness_hook.py beside this file), loaded by its path under a
    name of its own: a job's child fills in initialize()'s arguments and waits for its coordinator with the code a
    fresh process runs, and nothing a program imports is shadowed (the folder is not put on sys.path). It
    imports only Python's own modules and does nothing until asked."""
    name = "_jax_cache_harness_hook_of_the_fork_server"
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup", "jax_cache_harness_hook.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_HOOK = _startup_hook()


def _join_job(environ: dict[str, str], joined: str | None) -> None:
    """A child that is a job's process: the program's `jax.distributed.initialize()` gets what it leaves out from
    the job's variables, and waits for the job's coordinator, as the start-up hook has a fresh process's (the
    server imported jax before the job was known, so the hook's import-time wrapping cannot be used); the call is
    said by the file `joined`."""
    module = sys.modules.get("jax._src.distributed")
    original = getattr(module, "initialize", None)
    if not environ.get(_HOOK.JOB_PROCESSES_VAR) or original is None:
        return

    def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
                   process_id: int | None = None, *args: Any, **kwargs: Any) -> Any:
        if joined:
            open(joined, "w").close()  # an empty file: the program joined the job
        address, processes, rank = _HOOK.job_defaults(environ, coordinator_address, num_processes, process_id)
        _HOOK.wait_for_job_coordinator(environ, address, rank)  # its process 0 is a child starting beside it
        return original(address, processes, rank, *args, **kwargs)

    setattr(module, "initialize", initialize)  # noqa: B010 - JAX's module, known only at run time
    public = sys.modules.get("jax.distributed")
    if public is not None and getattr(public, "initialize", None) is original:
        setattr(public, "initialize", initialize)  # noqa: B010


def _record_computations(folder: str | None) -> None:
    """Each module the child compiles, as an empty file named `<module>-<sha256 of its lowered text>` in `folder`
    (the name of a cache entry, so the reducer reads it as one): a job's processes are compared by what they
    lowered (their cache keys always differ, in `accelerator_config`: each names its own devices), and a process
    other than the first writes no cache entry at all (JAX writes from process 0 only)."""
    module = sys.modules.get("jax._src.compilation_cache")
    original = getattr(module, "get_cache_key", None)
    if not folder or original is None:
        return

    def get_cache_key(*args: Any, **kwargs: Any) -> Any:
        key = original(*args, **kwargs)
        if isinstance(key, str) and args:
            name = key.rpartition("-")[0]
            lowered = hashlib.sha256(str(args[0]).encode()).hexdigest()
            if name and "/" not in name:
                open(os.path.join(folder, f"{name}-{lowered}"), "w").close()  # an empty file: its name says it
        return key

    setattr(module, "get_cache_key", get_cache_key)  # noqa: B010 - JAX's module, known only at run time


def _key_function() -> Any:
    """JAX's `compilation_cache` module where it has the key function compile_or_get_cached calls; None: no JAX."""
    module = sys.modules.get("jax._src.compilation_cache")
    return module if callable(getattr(module, "get_cache_key", None)) else None


def _record_keys(path: str | None, stop_at: str | None) -> None:
    """Each key JAX computes, named in `path` as its entry would be (hits included, as JAX's log names them in a
    fresh run); with `stop_at`, the child ends at its first key of that module: compiling it, and the rest of the
    program, are not needed for the answer."""
    module = _key_function()
    if not path or module is None:
        return
    original = module.get_cache_key
    out = open(path, "w", buffering=1)  # noqa: SIM115 - open for the child's life; exists: keys are JAX's own

    def get_cache_key(*args: Any, **kwargs: Any) -> Any:
        key = original(*args, **kwargs)
        if isinstance(key, str):
            out.write(key + "\n")
            if stop_at and key.rpartition("-")[0] == stop_at:
                out.close()
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(0)
        return key

    setattr(module, "get_cache_key", get_cache_key)  # noqa: B010 - JAX's module, known only at run time


def _leave_job(joined: str | None) -> None:
    """A job's process leaves the job at the program's end, as a fresh process does at exit (JAX's atexit, which
    `os._exit` skips): else the other processes see it die, and end badly of that."""
    jax = sys.modules.get("jax")
    if joined and os.path.exists(joined) and jax is not None:
        jax.distributed.shutdown()


def _child(request: dict[str, Any]) -> None:
    os.setsid()  # its own process group: a timeout kills what it started too
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    # Its stdin /dev/null, as a fresh run's: the server's is the harness's pipe of requests, where a program that
    # reads stdin blocked (and could take the next request).
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - not the server's, which may hold a request it read ahead
    os.environ.update(request["env"])
    # tempfile keeps the folder it first found (a library's import asked for it: Flax's does), the server's /tmp:
    # the child's is its own TMPDIR, as a fresh run's is.
    tempfile.tempdir = None
    os.chdir(request["cwd"])
    sys.argv = [request["script"], *request["argv"]]
    sys.path[0] = os.path.dirname(request["script"])  # as `python script.py` sets it
    code = 0
    try:
        jax = sys.modules.get("jax")
        if jax is not None:
            for option, variable, kind in CACHE_OPTIONS:
                if variable in request["env"]:
                    jax.config.update(option, kind(request["env"][variable]))
            _redirect(request.get("cache"))
            _join_job(request["env"], request.get("joined"))
            _record_computations(request.get("computations"))
            _record_keys(request.get("keys"), request.get("stop_at"))
        runpy.run_path(request["script"], run_name="__main__")
        _leave_job(request.get("joined"))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - the candidate's own failure: said as Python says it
        traceback.print_exc()
        python_module = type(exc).__module__
        said = f"{python_module + '.' if python_module not in ('builtins', '__main__') else ''}{type(exc).__qualname__}: {' '.join(str(exc).split())[:300]}"
        with open(request["error"], "w") as out:
            json.dump({"error": said, "errno": getattr(exc, "errno", None)}, out)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _computed(cache: str | None, module: str) -> bool:
    """Whether `cache` holds an entry of `module` (`<module>-<64 hex>`, and `-cache`/`-atime` from 0.4.31)."""
    try:
        names = os.listdir(cache)
    except OSError:
        return False
    pattern = re.compile(re.escape(module) + r"-[0-9a-f]{64}(-cache|-atime)?$")
    return any(pattern.match(name) for name in names)


def _remove(paths: list[str]) -> None:
    """What an earlier child left at a place the original wrote in this server's private tmp: each child finds
    it absent, as a fresh run does in its own tmpfs."""
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            try:
                os.unlink(path)
            except OSError:
                pass


# The server's own cache folder (`warm`), kept from child to child; wiped when it grows past this (a reduction's
# children compile a few new modules each: tens of MiB in all).
WARM_LIMIT_BYTES = 256 << 20
_warm: list[str] = []


# One folder for the warm caches of every server of a reduction, named by the harness (its work folder's): from JAX
# 0.4.36 until 0.11.0 the cache folder's path is in every key, so servers of two seeds with folders of their own
# computed keys that differed by the path alone, and every candidate's seeds disagreed. Read once and taken out of
# the environment, so that no child sees it.
SHARED_WARM = os.environ.pop("HARNESS_WARM_CACHE", "")


def _warm_folder() -> str | None:
    """The server's cache folder for its children: the one the harness named for all its servers (SHARED_WARM), else
    one made on first use in its /tmp (gone with the server); emptied once past WARM_LIMIT_BYTES. None: no JAX key
    function to read keys by."""
    if _key_function() is None:
        return None
    if SHARED_WARM:
        folder = SHARED_WARM  # the harness's, removed with its work folder
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            return None
    else:
        if not _warm:
            try:
                _warm.append(tempfile.mkdtemp(prefix="harness-warm-cache-", dir="/tmp"))
            except OSError:
                return None
        folder = _warm[0]
    try:
        with os.scandir(folder) as found:
            size = sum(e.stat(follow_symlinks=False).st_size for e in found)
    except OSError:
        size = 0
    if size > WARM_LIMIT_BYTES:
        _remove([os.path.join(folder, name) for name in os.listdir(folder)])
    return folder


def _wait(pid: int, timeout_s: float) -> tuple[int, float] | None:
    """The child's wait status once it ends, and the CPU seconds it used; None past `timeout_s` (still running)."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):
        handle = None
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, usage.ru_utime + usage.ru_stime
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if handle is not None:
                select.select([handle], [], [], left)
            else:
                time.sleep(min(left, 0.01))
    finally:
        if handle is not None:
            os.close(handle)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # its own process group (setsid): what it started goes too
    except ProcessLookupError:
        pass


def _reap(pid: int) -> float:
    """Waits for a killed child; the CPU seconds it used."""
    _, _, usage = os.wait4(pid, 0)
    return usage.ru_utime + usage.ru_stime


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    _remove(request.get("remove", []))
    warm = _warm_folder() if request.get("warm") else None
    if warm is not None:
        request = {**request, "cache": warm, "env": {**request["env"], **(
            {"JAX_COMPILATION_CACHE_DIR": warm} if "JAX_COMPILATION_CACHE_DIR" in request["env"] else {})}}
    pid = os.fork()
    if pid == 0:
        try:
            _child(request)
        finally:
            os._exit(70)
    deadline = time.monotonic() + request["timeout_s"]
    stop_at = request.get("stop_at")
    if stop_at and _key_function() is None:
        # No JAX key function to stop at: the child is stopped once its cache folder holds the module's entry.
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                cpu_s = usage.ru_utime + usage.ru_stime
                break
            if _computed(request.get("cache"), stop_at):
                _kill(pid)
                return {"exit": 0, "timed_out": False, "error": "", "errno": None, "stopped": True, "warm": False,
                        "cpu_s": _reap(pid)}
            if time.monotonic() > deadline:
                _kill(pid)
                return {"exit": -9, "timed_out": True, "error": "", "errno": None, "warm": False, "cpu_s": _reap(pid)}
            time.sleep(0.01)
    else:
        ended = _wait(pid, request["timeout_s"])
        if ended is None:
            _kill(pid)
            return {"exit": -9, "timed_out": True, "error": "", "errno": None, "warm": warm is not None,
                    "cpu_s": _reap(pid)}
        status, cpu_s = ended
        _kill(pid)  # what the child started and left behind (it ended at stop_at, or the program did)
    error = {"error": "", "errno": None}
    try:
        with open(request["error"]) as found:
            error = json.load(found)
    except (OSError, ValueError):
        pass
    return {"exit": os.waitstatus_to_exitcode(status), "timed_out": False, **error, "warm": warm is not None,
            "cpu_s": cpu_s}


def _discover_plugins() -> None:
    """JAX's discovery of its PJRT plugins (an entry-point scan, and importlib.metadata's import), done once here
    rather than in every child at its backend's start: a tenth of a small program's child's CPU. On the CPU only
    (JAX_PLATFORMS=cpu, a CPU cell's): there no plugin is used, while an accelerator's plugin may load its
    library at registration, which stays in the child. JAX's private function, where it has one."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    discover = getattr(bridge, "_discover_and_register_pjrt_plugins", None)
    if os.environ.get("JAX_PLATFORMS") != "cpu" or not callable(discover):
        return
    try:
        discover()
    except Exception:  # noqa: BLE001, S110 - the child discovers them then, as a fresh process does
        pass


def main() -> None:
    for name in sys.argv[1:]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - a library that cannot be imported here is imported by the child
            pass
    _discover_plugins()
    # What the imports made is moved out of the collector's sight (after one collection, as a fresh run's would
    # have had by then): else each child's collections walk, and write to, every object of jax and the libraries
    # (copying the pages the fork shared): a third of a Flax/Optax program's child's CPU (docs/reduce.md).
    gc.collect()
    gc.freeze()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        for line in sys.stdin:
            answer = _serve(json.loads(line))
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        for folder in _warm:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
