"""The recorder, run inside a user's script's process (installed by this folder's `sitecustomize` when the harness
names a recorder file): JAX's account of its cache read where it is made (below), over the start-up hook's
import machinery (jax_cache_harness_hook: `_AfterImport`, and the settings hook whose record the first-use
fallback writes to too).

Standard library only, and no syntax newer than the oldest Python a JAX release supports (3.9 for 0.4.26), as
the hook; its own top-level name in a run, as the hook's, cannot be a user's module's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import sys
import threading
import time
import warnings

# typing.TYPE_CHECKING without importing typing at start-up (jax_cache_harness_hook says why).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from types import ModuleType
    from typing import Any

    from .jax_cache_harness_hook import ConfigUpdate, JaxConfig, JsonObject, ModuleHook
if TYPE_CHECKING or __package__:  # in harness/ (harness.inside.startup), and as the type checker sees it
    from . import jax_cache_harness_hook as hook
else:  # in a run: this folder is first on sys.path, and the hook is its top-level module
    import jax_cache_harness_hook as hook


# --- The recorder: JAX's account of its cache, read inside the process ------------------------------------
#
# A program may capture or close fd 2 (pytest does by default), reconfigure logging, or run quiet: JAX's log
# on stderr is then lost. The recorder reads it where it is made instead. Right after each of JAX's cache
# modules is executed, its module-level `logger` is wrapped: every message it is asked to log is written to
# the run's recorder file (one JSON object a line, written with one unbuffered write each, so a crash keeps
# what was seen), then handed to the real logger, which prints it or not as the program's logging says. The
# cache modules' loggers also say yes to `isEnabledFor`, so JAX computes its cache messages whatever the
# program did to logging. JAX's monitoring events for the cache, and its cache warnings, are recorded too.
# A pytest run loads the recorder's plugin (PYTEST_PLUGINS), which stamps each record with the test running.
RECORDER_VAR = "HARNESS_RECORDER"  # the recorder's file (in the run's own folder; a link there is refused)
# The run's key (hex) that chains the recorder's lines: each line ends with `"mac": M`, M an HMAC over the process's
# previous M and the line before it, so a line the program appended or rewrote afterwards does not check out
# (harness/core/recorder.py reads only the lines that do: docs/design/faults.md).
RECORDER_KEY_VAR = "HARNESS_RECORDER_KEY"
MAC_FIELD = ', "mac": "'
MAC_HEX = 32
RECORDER_MODULES = ("jax._src.cache_key", "jax._src.compiler", "jax._src.compilation_cache")
# Where JAX says what it compiles and at which argument types ("Compiling f with global shapes and types
# [ShapedArray(float32[2])]"): its logger too says yes to isEnabledFor (what that guards in pxla is a few
# cheap debug messages), so the types are recorded on every release, whatever the program's logging; only
# the messages that start with ARGS_MESSAGE are kept.
ARGS_MODULE = "jax._src.interpreters.pxla"
ARGS_MESSAGE = "Compiling "
MONITORING_MODULE = "jax._src.monitoring"
MONITORED_PREFIXES = ("/jax/compilation_cache/", "/jax/core/compile/backend_compile_duration")
CACHE_WARNING_MARKS = ("compilation cache", "CACHE MISS", "persistent cache")
PYTEST_PLUGIN = "jax_cache_harness_pytest"
# In hook-only mode, "first-use": when JAX first looks for its cache and the program has set no folder by then,
# the hook sets the cell's. One run then tells whether the program sets its own folder (and when) and still
# caches as a run with the folder from the environment would (no second run 1 without a folder).
FALLBACK_VAR = "HARNESS_CACHE_FALLBACK"
FIRST_USE = "first-use"

RECORDER: Recorder | None = None  # this process's recorder, once installed (the pytest plugin stamps test ids on it)


# The recorder file's cap: a suite that compiles millions of keys would fill the disk (600 keys wrote about 7 MiB).
# Past it a process writes one `problem` record and nothing more; the harness reads up to recorder.MAX_BYTES.
RECORDER_MAX_BYTES = 64 * 1024 * 1024
RECORDER_FULL = "the recorder's file reached its cap"  # the start of that record's detail


class Recorder:
    """Appends records to the run's file: each one JSON line, written by a single unbuffered write, up to
    `max_bytes` (all processes of the run together)."""

    def __init__(self, path: str, max_bytes: int = RECORDER_MAX_BYTES):
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self.path = path
        self.fd = os.open(path, flags, 0o666)
        st = os.fstat(self.fd)
        self.identity: tuple[int, int] | None = (st.st_dev, st.st_ino)  # None: lost, nothing more is written
        self.max_bytes = max_bytes
        self.full = False
        self.test: str | None = None  # the pytest test id running now (None: none, or not pytest)
        self.phase: str | None = None  # its phase: setup, call, teardown
        self.busy = threading.local()
        try:
            self.key: bytes | None = bytes.fromhex(os.environ.get(RECORDER_KEY_VAR, "")) or None
        except ValueError:
            self.key = None
        self.chain_pid, self.last = os.getpid(), ""  # this process's last MAC (a forked child starts its own)
        self.lock = threading.Lock()  # one thread at a time: the chain follows the file's order
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.lock = threading.Lock()  # (held by another thread of the parent at the fork: never released here)

    def signed(self, body: str) -> str:
        """`body` (a JSON object, ASCII) with its MAC, chained to this process's previous line."""
        if self.key is None:
            return body
        pid = os.getpid()
        if pid != self.chain_pid:
            self.chain_pid, self.last = pid, ""
        self.last = hmac.new(self.key, (self.last + body).encode(), hashlib.sha256).hexdigest()[:MAC_HEX]
        return f'{body[:-1]}{MAC_FIELD}{self.last}"}}'

    def write(self, record: JsonObject) -> None:
        if getattr(self.busy, "on", False):
            return  # a record about writing a record: never
        self.busy.on = True
        try:
            with self.lock:
                self._write(record)
        except Exception:  # noqa: BLE001, S110 - recording must never break the program it watches
            pass
        finally:
            self.busy.on = False

    def _own_file(self) -> os.stat_result | None:
        """The recorder's file as its descriptor shows it, or None: a program that closes the descriptors it
        inherited (`os.closerange(3, ...)`, as launchers do) may have reused its number for a file of its own, which
        is never written. The recorder's file is then opened again by its path, only if it is still the same file."""
        if self.identity is None:
            return None
        try:
            st = os.fstat(self.fd)
            if (st.st_dev, st.st_ino) == self.identity:
                return st
        except OSError:
            pass  # closed
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            self.identity = None
            return None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self.identity:
            os.close(fd)
            self.identity = None  # replaced by another file: the record ends here (the harness reads what it holds)
            return None
        self.fd = fd
        return st

    def _write(self, record: JsonObject) -> None:
        record["pid"] = os.getpid()
        if self.test is not None and "test" not in record:
            record["test"] = self.test
            if self.phase:
                record["phase"] = self.phase
        if self.full:
            return
        body = json.dumps(record, default=str, sort_keys=True)  # ASCII: json escapes the rest
        st = self._own_file()
        if st is None:
            return
        if st.st_size + len(body) + MAC_HEX + 12 > self.max_bytes:
            self.full = True  # one line to say so, past the cap by its own few bytes at most
            body = json.dumps({"kind": "problem", "pid": record["pid"], "detail": (
                f"{RECORDER_FULL} ({self.max_bytes} bytes): JAX's later messages in this process are not recorded"
            )}, sort_keys=True)
        os.write(self.fd, (self.signed(body) + "\n").encode("ascii", "backslashreplace"))

    def message(self, logger: str, level: int, msg: object, args: tuple[object, ...]) -> None:
        try:
            text = str(msg) % args if args else str(msg)  # as logging formats it (LogRecord.getMessage)
        except Exception:  # noqa: BLE001 - a message JAX would fail to format too
            text = str(msg)
        # The thread that logged it: JAX compiles on the caller's thread, and concurrent compilations interleave
        # their messages; the reader takes each thread's messages apart (recorder.run_log).
        self.write({"kind": "log", "logger": logger, "level": int(level), "message": text, "time": time.time(),
                    "thread": threading.get_ident()})


class _RecordingLogger:
    """A JAX module's `logger`, recorded: each message goes to the recorder, then to the real logger (one
    frame up, so the program's log shows JAX's own file and line). `always` says yes to isEnabledFor, so
    messages JAX computes only when asked are computed; `only` keeps the messages that start with it."""

    def __init__(self, real: logging.Logger, recorder: Recorder, always: bool, only: str | None = None):
        self._real, self._recorder, self._always, self._only = real, recorder, always, only

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def isEnabledFor(self, level: int) -> bool:  # logging's name
        return self._always or self._real.isEnabledFor(level)

    def _record(self, level: int, msg: object, args: tuple[object, ...]) -> None:
        if self._only is not None and not str(msg).startswith(self._only):
            return
        self._recorder.message(self._real.name, level, msg, args)

    def _log(self, level: int, msg: object, args: tuple[object, ...], kwargs: dict[str, Any]) -> None:
        """Two frames of ours (the method JAX called, this one) between JAX's line and the real logger. `kwargs`:
        logging's keyword arguments (exc_info, stack_info, stacklevel, extra), handed on as JAX gave them."""
        self._record(level, msg, args)
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 2
        self._real.log(level, msg, *args, **kwargs)

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(level, msg, args, kwargs)

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.DEBUG, msg, args, kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.INFO, msg, args, kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.WARNING, msg, args, kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        self._log(logging.ERROR, msg, args, kwargs)


def _wrap_logger(recorder: Recorder, always: bool, only: str | None = None) -> ModuleHook:
    def loaded(module: ModuleType) -> None:
        real: logging.Logger | None = getattr(module, "logger", None)
        if real is None or not hasattr(real, "log"):
            recorder.write({"kind": "problem", "detail": f"{module.__name__} has no logger: its messages are not "
                            "recorded"})
            return
        hook._replace(module, "logger", _RecordingLogger(real, recorder, always, only))
    return loaded


def _monitoring_loaded(recorder: Recorder) -> ModuleHook:
    def loaded(module: ModuleType) -> None:
        def event(name: object, *args: object, **kwargs: object) -> None:
            if str(name).startswith(MONITORED_PREFIXES):
                recorder.write({"kind": "event", "event": str(name), "time": time.time()})

        def duration(name: object, seconds: object = None, *args: object, **kwargs: object) -> None:
            if str(name).startswith(MONITORED_PREFIXES):
                recorder.write({"kind": "event", "event": str(name), "seconds": seconds, "time": time.time()})

        for register, listener in (("register_event_listener", event),
                                   ("register_event_duration_secs_listener", duration)):
            if hasattr(module, register):
                getattr(module, register)(listener)
    return loaded


class _FirstUse:
    """Hook-only mode's first-use fallback: at the start of JAX's first compilation (before it reads its cache
    options for the compile options or the cache), a program that has set no folder by then gets the cell's,
    as if it had come from JAX_COMPILATION_CACHE_DIR; recorded (both files), so the harness knows the order."""

    def __init__(self, recorder: Recorder, target: str):
        self.recorder, self.target, self.done = recorder, target, False

    def __call__(self) -> None:
        if self.done:
            return
        self.done = True
        config: JaxConfig | None = getattr(sys.modules.get(hook.CONFIG_MODULE), "config", None)
        cache = sys.modules.get(hook.API_MODULE)
        if config is None or getattr(cache, "_cache_initialized", False):
            return
        try:
            if config._read(hook.CACHE_DIR):
                return
        except Exception:  # noqa: BLE001 - an option this release lacks
            return
        update: ConfigUpdate = type(config).update
        original: ConfigUpdate = getattr(update, "__wrapped__", update)  # JAX's own, under the hook's
        original(config, hook.CACHE_DIR, self.target)
        self.recorder.write({"kind": "fallback", "option": hook.CACHE_DIR, "applied": self.target,
                             "time": time.time()})
        if hook.HOOK is not None:
            hook.HOOK.write({"kind": "fallback", "option": hook.CACHE_DIR, "applied": self.target})

    def wrap(self, module: ModuleType, name: str) -> None:
        original: Callable[..., object] | None = getattr(module, name, None)
        if original is None:
            return
        first_use = self

        def wrapper(*args: object, **kwargs: object) -> object:
            first_use()
            return original(*args, **kwargs)

        hook._wrapping(wrapper, original)
        hook._replace(module, name, wrapper)


def _module_loaded(recorder: Recorder, first_use: _FirstUse | None, names: Iterable[str], always: bool = True,
                   only: str | None = None) -> ModuleHook:
    """A JAX module loaded: its logger recorded; with `first_use`, its functions `names` start with it."""
    wrap = _wrap_logger(recorder, always, only)

    def loaded(module: ModuleType) -> None:
        wrap(module)
        if first_use is not None:
            for name in names:
                first_use.wrap(module, name)
    return loaded


# --- Where a host callback is put into a module ---------------------------------------------------------------
#
# A module's dump keeps only the frames JAX's lowering knew: a callback a library puts in while its primitive is
# lowered (equinox's `error_if`) carries the primitive's frames, not the call. So the callback APIs are wrapped: each
# call records its Python stack, innermost first, without JAX's, the standard library's and this folder's frames
# (harness/evidence/not_cached.py reads it: recorded_sites). A callback API called inside another (jax.debug.print
# calls debug_callback on older releases) is the outer one's.
CALLBACK_LOGGER = "jax_cache_harness.callback"
CALLBACK_MESSAGE = "Host callback "  # + the API + ": " + the frames as a JSON list of "path:line"
CALLBACK_APIS = {"jax._src.callback": {"pure_callback": "jax.pure_callback", "io_callback": "jax.experimental.io_callback"},
                 "jax._src.debugging": {"debug_callback": "jax.debug.callback", "debug_print": "jax.debug.print"}}
MAX_STACK = 200  # frames looked at, innermost first
MAX_FRAMES = 24  # frames kept


def _skipped_roots() -> tuple[str, ...]:
    import sysconfig  # noqa: PLC0415 - only where a callback API loads
    roots = {os.path.dirname(os.path.abspath(__file__)) + os.sep}
    for name in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(os.path.join(path, ""))
    return tuple(roots)


def _frames(skipped: tuple[str, ...]) -> list[str]:
    import traceback  # noqa: PLC0415 - only where a callback is traced
    out: list[str] = []
    for frame in reversed(traceback.extract_stack(sys._getframe(2), limit=MAX_STACK)):
        path = frame.filename
        parts = path.replace(os.sep, "/").split("/site-packages/")
        top = parts[1].split("/", 1)[0] if len(parts) > 1 else ""
        library = len(parts) > 1 or "/dist-packages/" in path  # (the stdlib's folder may hold site-packages)
        if top in ("jax", "jaxlib") or (path.startswith(skipped) and not library) or path.startswith("<"):
            continue
        out.append(f"{path}:{frame.lineno}")
        if len(out) >= MAX_FRAMES:
            break
    return out


def _callbacks_recorded(recorder: Recorder, apis: dict[str, str]) -> ModuleHook:
    state = threading.local()

    def loaded(module: ModuleType) -> None:
        skipped = _skipped_roots()
        for name, api in apis.items():
            original = getattr(module, name, None)
            if not callable(original):
                continue

            def wrapper(*args: Any, __original: Callable[..., Any] = original, __api: str = api,
                        **kwargs: Any) -> Any:
                if not getattr(state, "on", False):
                    try:
                        recorder.write({"kind": "log", "logger": CALLBACK_LOGGER, "level": logging.DEBUG,
                                        "message": CALLBACK_MESSAGE + __api + ": " + json.dumps(_frames(skipped)),
                                        "time": time.time(), "thread": threading.get_ident()})
                    except Exception:  # noqa: BLE001, S110 - recording must never break the program it watches
                        pass
                outer = getattr(state, "on", False)
                state.on = True
                try:
                    return __original(*args, **kwargs)
                finally:
                    state.on = outer
            hook._wrapping(wrapper, original, ("__module__", "__name__", "__qualname__", "__doc__"))
            hook._replace(module, name, wrapper)
    return loaded


def _warnings_recorded(recorder: Recorder) -> None:
    """JAX's cache warnings (an entry it could not read back) are warnings, not log messages: recorded as
    Python shows them, whether the program prints, records (pytest) or ignores them."""
    original: Callable[[warnings.WarningMessage], object] | None = getattr(warnings, "_showwarnmsg", None)
    if original is None:
        return

    def _showwarnmsg(msg: warnings.WarningMessage) -> object:
        try:
            text = str(msg.message)
            if any(mark in text for mark in CACHE_WARNING_MARKS):
                recorder.write({"kind": "log", "logger": "warnings", "level": logging.WARNING,
                                "message": f"{msg.category.__name__}: {text}", "time": time.time(),
                                "thread": threading.get_ident()})
        except Exception:  # noqa: BLE001, S110 - recording must never break the program it watches
            pass
        return original(msg)

    hook._replace(warnings, "_showwarnmsg", _showwarnmsg)


def install_recorder(target: str | None = None) -> Recorder | None:
    """Record JAX's cache messages, events and warnings in this process to the file RECORDER_VAR names; a
    pytest run in it loads the plugin that stamps test ids. None when the file cannot be opened (said)."""
    global RECORDER
    try:
        recorder = Recorder(os.environ[RECORDER_VAR])
    except OSError as exc:
        sys.stderr.write(f"harness: cannot open the recorder's file: {exc}\n")
        return None
    RECORDER = recorder
    recorder.write({"kind": "start", "argv": list(sys.argv), "time": time.time()})
    first_use: _FirstUse | None = None
    if target and os.environ.get(FALLBACK_VAR) == FIRST_USE and os.environ.get(hook.FOLDER_VAR) == hook.HOOK_ONLY:
        first_use = _FirstUse(recorder, target)
    hooks: dict[str, ModuleHook] = {
        "jax._src.cache_key": _wrap_logger(recorder, True),
        "jax._src.compiler": _module_loaded(recorder, first_use, ("get_compile_options",)),
        hook.API_MODULE: _module_loaded(recorder, first_use, ("_initialize_cache", "is_cache_used")),
        ARGS_MODULE: _wrap_logger(recorder, True, ARGS_MESSAGE),
        MONITORING_MODULE: _monitoring_loaded(recorder),
        **{name: _callbacks_recorded(recorder, apis) for name, apis in CALLBACK_APIS.items()}}
    sys.meta_path.insert(0, hook._AfterImport(hooks))
    _warnings_recorded(recorder)
    plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    if PYTEST_PLUGIN not in plugins:
        os.environ["PYTEST_PLUGINS"] = ",".join(plugins + [PYTEST_PLUGIN])
    return recorder
