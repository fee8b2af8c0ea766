"""The harness's cache hook, run inside a user's script's process (installed by this folder's
`sitecustomize`): the script's own cache settings are taken over, not fought.

Every release from 0.4.26 to the newest routes each way a script sets its cache through one method,
`jax._src.config.Config.update`: `jax.config.update("jax_compilation_cache_dir", ...)`, and
`compilation_cache.set_cache_dir` / `initialize_cache`, which call it. Once `jax._src.config` has
been executed, that method is wrapped: a cache folder the script asks for becomes the cell's folder
(the one the harness gave in JAX_COMPILATION_CACHE_DIR), thresholds are kept (or replaced by the
harness's zeros with HARNESS_CACHE_THRESHOLDS=harness), and each setting is appended as one JSON line
to the file HARNESS_CACHE_RECORD names. At exit the cache JAX actually used is appended too, so a
setting this hook could not redirect is seen rather than guessed.

With HARNESS_CACHE_FOLDER=hook the cell's folder is taken out of the environment before the script
starts: JAX then has a folder only once the script sets one, at the moment it sets it, so the order in
which the script initialises things stays its own (jax-ml/jax#25768: a computation before the folder
is set leaves the cache uninitialised on 0.5.0). Each folder setting records whether JAX's cache was
already initialised then.

Beside it in this folder: the recorder (jax_cache_harness_recorder.py: JAX's account of its cache, read in the
process, and hook-only mode's first-use fallback), which builds on this module's import machinery.

Standard library only, and no syntax newer than the oldest Python a JAX release supports (3.9 for 0.4.26):
the annotations are never evaluated (`from __future__ import annotations`), and the types they name exist only
for the type checker.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import socket
import sys
import threading
import time

# typing.TYPE_CHECKING without importing typing in every process at start-up (Python 3.9 does not import it by
# itself); mypy and ruff read this name as they read typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Literal, NotRequired, Protocol, TypeAlias, TypedDict

    # One record (a line of a record file): a JSON object.
    JsonObject: TypeAlias = dict[str, object]
    # What runs right after a module is executed (_AfterImport), given the module.
    ModuleHook: TypeAlias = Callable[[ModuleType], None]

    class JaxConfig(Protocol):
        """jax._src.config.config, JAX's one Config: the two methods the hook calls, on every release (`_read`
        is private, and JAX's own types for it differ between releases)."""

        def update(self, name: str, val: object, /) -> object: ...

        def _read(self, name: str, /) -> object: ...

    # Config.update as its class holds it: called with the config first.
    ConfigUpdate: TypeAlias = Callable[[JaxConfig, str, object], object]

    class CacheState(TypedDict):
        """JAX's persistent cache in this process (cache_state)."""

        initialized: bool
        path: str | None

    class SettingEvent(TypedDict):
        """One cache setting the script made, as the record file has it (harness/evidence/script_settings.py)."""

        kind: Literal["setting"]
        option: str
        api: str  # the way it was set: jax.config.update, set_cache_dir, os.environ, ...
        requested: object
        applied: object
        cache_then: NotRequired[CacheState | None]  # a folder setting: JAX's cache when it was made

RECORD_VAR = "HARNESS_CACHE_RECORD"  # the file the events go to, one JSON object a line
THRESHOLDS_VAR = "HARNESS_CACHE_THRESHOLDS"  # "script" (default): keep the script's; "harness": zeros
TARGET_VAR = "JAX_COMPILATION_CACHE_DIR"  # the cell's cache folder, as this process sees it
# "environment" (default): JAX reads the cell's folder from TARGET_VAR; "hook": TARGET_VAR is removed
# at start-up, and the folder is the cell's only where the script sets one.
FOLDER_VAR = "HARNESS_CACHE_FOLDER"
HOOK_ONLY = "hook"
# Where hook-only mode keeps the cell's folder, so that processes the script starts redirect theirs too.
KEPT_TARGET_VAR = "HARNESS_CACHE_TARGET"

CACHE_DIR = "jax_compilation_cache_dir"
ENABLE = "jax_enable_compilation_cache"
MIN_COMPILE_TIME = "jax_persistent_cache_min_compile_time_secs"
MIN_ENTRY_SIZE = "jax_persistent_cache_min_entry_size_bytes"
# What the harness gives every run (as environment variables): every compiled module is cached.
HARNESS_THRESHOLDS = {MIN_COMPILE_TIME: 0.0, MIN_ENTRY_SIZE: -1}
WATCHED = (CACHE_DIR, ENABLE, MIN_COMPILE_TIME, MIN_ENTRY_SIZE)
# JAX reads each option's start value from the variable of its name in capitals.
VARIABLES = {option: option.upper() for option in WATCHED}

# The options whose variables the script (or a process that started this one) put in os.environ.
PUT_VAR = "HARNESS_CACHE_PUT"
# A folder the script put in os.environ after JAX had read its options (at `import jax`).
LATE_ENVIRON = "os.environ after import jax"
# The cache module's public setters call Config.update: recorded under their own names.
API_MODULE = "jax._src.compilation_cache"
API_FUNCTIONS = ("set_cache_dir", "initialize_cache")
CONFIG_MODULE = "jax._src.config"

# A multi-process run (a job): each process is told the job, and jax.distributed.initialize() called as on a
# cluster (no arguments, or some) gets what it leaves out from here, on every release.
JOB_COORDINATOR_VAR = "HARNESS_JOB_COORDINATOR"  # host:port of process 0's coordinator
JOB_PROCESSES_VAR = "HARNESS_JOB_PROCESSES"
JOB_RANK_VAR = "HARNESS_JOB_RANK"
DISTRIBUTED_MODULE = "jax._src.distributed"
# The line each process prints when the script calls initialize(): the harness reads it in the run's log.
JOINED_MARK = "harness: jax.distributed.initialize("
COORDINATOR_WAIT_S = 10.0  # the longest a process waits for process 0's coordinator before it connects anyway


def caller_api(module: str | None, function: str) -> str | None:
    """The name a Config.update call is recorded under, from its caller; None for JAX's own updates
    (`_initialize_cache` setting its default entry size, absl flags), which are not the script's."""
    if module == API_MODULE and function in API_FUNCTIONS:
        return function
    if module and (module == "jax" or module.startswith("jax.")):
        return None
    return "jax.config.update"


def decide(option: str, value: object, api: str | None, target: str | None,
           thresholds: str) -> tuple[object, SettingEvent | None]:
    """What one update of `option` to `value` becomes: (value to apply, event to record or None).

    A cache folder always becomes `target` (None or "" is the script turning its cache off: kept);
    a threshold the script sets is kept unless `thresholds` is "harness"; JAX's own updates pass.
    """
    if option not in WATCHED:
        return value, None
    applied: object
    if option == CACHE_DIR and value and target and value != target:
        applied = target
    elif api is None:
        return value, None
    elif option in HARNESS_THRESHOLDS and thresholds == "harness":
        applied = HARNESS_THRESHOLDS[option]
    else:
        applied = value
    return applied, {"kind": "setting", "option": option, "api": api or "jax", "requested": value,
                     "applied": applied}


def environment_changes(values: Mapping[str, object], changed: Collection[str], target: str | None,
                        thresholds: str) -> list[tuple[str, object, SettingEvent]]:
    """The settings a script made through os.environ before importing jax, as JAX read them when
    its options were defined: [(option, value to apply, event)]. `values` maps option to value,
    `changed` holds the options whose variable the script changed after start-up."""
    changes: list[tuple[str, object, SettingEvent]] = []
    for option in WATCHED:
        if option not in values or option not in changed:
            continue
        applied, event = decide(option, values[option], "os.environ", target, thresholds)
        if event is not None:
            changes.append((option, applied, event))
    return changes


def environment_snapshot(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The watched options' variables as the process started (what the harness gave)."""
    return {option: environ.get(variable) for option, variable in VARIABLES.items()}


def cache_state() -> CacheState | None:
    """JAX's persistent cache in this process now: {"initialized", "path"}; None before JAX's cache
    module is imported (then nothing can have initialised it)."""
    module = sys.modules.get(API_MODULE)
    if module is None:
        return None
    cache = getattr(module, "_cache", None)
    path = getattr(cache, "_path", None)
    return {"initialized": bool(getattr(module, "_cache_initialized", cache is not None)),
            "path": str(path) if path is not None else None}


class _Hook:
    def __init__(self, record: str, target: str | None, thresholds: str, started_with: dict[str, str | None]):
        self.record, self.target, self.thresholds = record, target, thresholds
        self.started_with = started_with  # environment_snapshot() at start-up
        # Options whose variable the script set itself, even to the value the harness gave (a script's
        # own zero thresholds under harness thresholds are still its own): seen through os.putenv's
        # audit event, and inherited from the process that started this one (PUT_VAR).
        self.put = {o for o in os.environ.get(PUT_VAR, "").split(",") if o in VARIABLES}
        self.config_read = False
        self.lock = threading.Lock()

    def audit(self, event: str, args: tuple[object, ...]) -> None:
        if event != "os.putenv" or not args:
            return
        key = args[0].decode("utf-8", "replace") if isinstance(args[0], bytes) else str(args[0])
        for option, variable in VARIABLES.items():
            if key == variable and option not in self.put:
                self.put.add(option)
                # Told to the processes the script starts: what it set is its own there too (a launcher's
                # zero threshold for its workers is the launcher's, though it equals the harness's).
                os.environ[PUT_VAR] = ",".join(sorted(self.put))
        if self.config_read:
            # JAX read its options at import: a folder put in os.environ now is never this process's
            # (only the processes it starts read it). Recorded, so the cell can say so when nothing is cached.
            if key == VARIABLES[CACHE_DIR] and len(args) > 1:
                value = args[1].decode("utf-8", "replace") if isinstance(args[1], bytes) else str(args[1])
                self.write({"kind": "setting", "option": CACHE_DIR, "api": LATE_ENVIRON, "requested": value,
                            "applied": value, "cache_then": cache_state()})
            return

    def write(self, event: Mapping[str, object]) -> None:
        line = json.dumps(event, default=str, sort_keys=True)
        with self.lock:
            try:
                # A pipe the program put in the record's place must not block its exit (no reader: ENXIO), nor a
                # link carry the write elsewhere.
                flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_CLOEXEC", 0))
                with os.fdopen(os.open(self.record, flags, 0o666), "a") as out:
                    out.write(line + "\n")
            except OSError as exc:
                sys.stderr.write(f"harness: cannot record a cache setting: {exc}\n")

    def config_loaded(self, module: ModuleType) -> None:
        cls: type[JaxConfig] | None = getattr(module, "Config", None)
        config: JaxConfig | None = getattr(module, "config", None)
        original: ConfigUpdate | None = getattr(cls, "update", None)
        if original is None or config is None:
            self.write({"kind": "problem", "detail": "jax._src.config has no Config.update: the script's "
                        "cache settings were not redirected"})
            return
        hook = self

        def update(self: JaxConfig, name: str, val: object) -> object:
            if name in WATCHED:
                frame = sys._getframe(1)
                api = caller_api(frame.f_globals.get("__name__"), frame.f_code.co_name)
                val, event = decide(name, val, api, hook.target, hook.thresholds)
                if event is not None:
                    if name == CACHE_DIR:
                        event["cache_then"] = cache_state()
                    hook.write(event)
            return original(self, name, val)

        _wrapping(update, original)
        _replace(cls, "update", update)
        self.config_read = True
        now = environment_snapshot(os.environ)
        changed = [option for option in WATCHED if now[option] != self.started_with[option] or option in self.put]
        for option, applied, event in environment_changes(_values(config), changed, self.target, self.thresholds):
            self.write(event)
            original(config, option, applied)

    def at_exit(self) -> None:
        config: JaxConfig | None = getattr(sys.modules.get(CONFIG_MODULE), "config", None)
        if config is None:
            return  # the script never imported jax
        final: JsonObject = {"kind": "final", "target": self.target}
        final.update(_values(config))
        state: CacheState = cache_state() or {"initialized": False, "path": None}
        final["cache_path"] = state["path"]
        final["cache_initialized"] = state["initialized"]
        self.write(final)


def _values(config: JaxConfig) -> JsonObject:
    out: JsonObject = {}
    for option in WATCHED:
        try:
            out[option] = config._read(option)
        except Exception:  # noqa: BLE001, S110 - an option this release lacks (the error differs between releases)
            pass
    return out


def _replace(owner: object, name: str, replacement: object) -> None:
    """Put `replacement` in place of JAX's (or Python's) `owner.name`: an attribute of a module, class or loader
    that no type the checker knows declares (or declares as a method), so set by name."""
    setattr(owner, name, replacement)


def _wrapping(wrapper: Callable[..., object], original: Callable[..., object], copied: tuple[str, ...] = ()) -> None:
    """Mark `wrapper` as wrapping `original`: its `__wrapped__` (functools.unwrap and the first-use fallback
    follow it), and the attributes `copied` names."""
    functools.update_wrapper(wrapper, original, assigned=copied, updated=())


class _AfterImport:
    """A meta-path finder that runs `hooks[name](module)` right after module `name` is executed
    (before anything imports names from it), and otherwise finds nothing."""

    def __init__(self, hooks: Mapping[str, ModuleHook]):
        self.hooks = hooks

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        hook = self.hooks.get(name)
        if hook is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        if spec is None:
            return None
        loader = spec.loader
        execute: Callable[[ModuleType], object] | None = getattr(loader, "exec_module", None)
        if execute is None:
            return spec

        def exec_module(module: ModuleType) -> None:
            execute(module)
            hook(module)

        _replace(loader, "exec_module", exec_module)
        return spec


def job_defaults(environ: Mapping[str, str], coordinator_address: str | None, num_processes: int | None,
                 process_id: int | None) -> tuple[str | None, int | None, int | None]:
    """initialize()'s job arguments: what the script passed, else the job's, from the environment; what
    neither gives stays None, for JAX's own cluster detection (srun's tasks: from SLURM_*)."""
    if coordinator_address is None:
        coordinator_address = environ.get(JOB_COORDINATOR_VAR)
    if num_processes is None and environ.get(JOB_PROCESSES_VAR):
        num_processes = int(environ[JOB_PROCESSES_VAR])
    if process_id is None and environ.get(JOB_RANK_VAR):
        process_id = int(environ[JOB_RANK_VAR])
    return coordinator_address, num_processes, process_id


def wait_for_job_coordinator(environ: Mapping[str, str], coordinator_address: str | None, process_id: int | None,
                             timeout_s: float = COORDINATOR_WAIT_S) -> None:
    """In a process other than 0 of the harness's own job (its coordinator the one the job's variables name),
    until that coordinator accepts a connection, at most `timeout_s`: a process that connects before it listens
    is retried by gRPC only after its reconnect backoff, about a second (jax 0.8.1, two processes started at once:
    3 jobs of 4 lost 0.9-1.1 s in initialize(); 5 ms each once process 1 waited here). A fresh process's
    initialize() (below) and a forked child's (harness/inside/fork_server.py, which loads this module) both wait
    here."""
    if not process_id or not coordinator_address or coordinator_address != environ.get(JOB_COORDINATOR_VAR):
        return
    host, _, port = coordinator_address.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=1.0).close()
            return
        except (OSError, ValueError):  # not listening yet (ValueError: not host:port, which JAX then says)
            time.sleep(0.005)


# The reducer's candidates (harness/reduce/sandbox.py): the folders a run may write to, and the file where a
# write elsewhere is recorded (the candidate is then refused). Seen through the audit events of Python's own
# file operations, in this process and every Python process it starts (they inherit both variables).
WRITE_ROOTS_VAR = "HARNESS_WRITE_ROOTS"
WRITES_RECORD_VAR = "HARNESS_WRITES_RECORD"
# Event -> the positions of its arguments that are paths written to (open: when its flags write).
_WRITING_EVENTS = {"open": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.remove": (0,), "os.rmdir": (0,),
                   "os.truncate": (0,), "shutil.rmtree": (0,), "os.symlink": (1,), "os.link": (1,),
                   "os.chmod": (0,), "os.utime": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_MAX_WRITES_RECORDED = 20


def _bytecode_cache(full: str) -> bool:
    """Python's own bytecode cache: a `__pycache__` folder, or a file in one (importlib writes `x.pyc.NNN` and
    renames it to `x.pyc`): what importing a package the first time writes, in any environment."""
    parent, name = os.path.split(full)
    return name == "__pycache__" or os.path.basename(parent) == "__pycache__"


class _WriteWatch:
    """Records every write outside `roots` (devices aside; bytecode caches too, which Python writes and a
    read-only place refuses silently)."""

    def __init__(self, roots: Iterable[str], record: str):
        self.roots = [os.path.realpath(r) for r in roots if r]
        self.record, self.recorded = record, 0
        self.busy = threading.local()
        self.connected = False

    def outside(self, path: object) -> str | None:
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if not isinstance(path, str) or not path:
            return None  # a file descriptor: opened by a path seen before
        full = os.path.realpath(path)
        if full.startswith("/dev/") or _bytecode_cache(full):
            return None
        for root in self.roots:
            if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
                return None
        return full

    def audit(self, event: str, args: tuple[object, ...]) -> None:
        if event == "socket.connect":
            self.network(args)
            return
        positions = _WRITING_EVENTS.get(event)
        if positions is None or getattr(self.busy, "on", False) or self.recorded >= _MAX_WRITES_RECORDED:
            return
        if event == "open" and (len(args) < 3 or not isinstance(args[2], int) or not args[2] & _WRITE_FLAGS):
            return
        self.busy.on = True
        try:
            for position in positions:
                full = self.outside(args[position]) if len(args) > position else None
                if full is not None:
                    self.recorded += 1
                    with open(self.record, "a") as out:
                        out.write(json.dumps({"event": event, "path": full, "pid": os.getpid()}) + "\n")
        except Exception:  # noqa: BLE001, S110 - an audit hook must never break the program it watches
            pass
        finally:
            self.busy.on = False


    def network(self, args: tuple[object, ...]) -> None:
        """A connection over the network (an address that is a (host, port) tuple, not a unix socket's path),
        recorded once: the original's run needed the network, so its candidates keep the machine's (the reducer's
        sandbox gives a candidate a network of its own otherwise)."""
        if self.connected or len(args) < 2 or not isinstance(args[1], tuple):
            return
        self.connected = True
        try:
            with open(self.record, "a") as out:
                out.write(json.dumps({"event": "socket.connect", "network": True, "pid": os.getpid()}) + "\n")
        except Exception:  # noqa: BLE001, S110 - an audit hook must never break the program it watches
            pass


def install_write_watch() -> _WriteWatch | None:
    """Record writes outside the run's own folders (the reducer's candidates)."""
    if hasattr(sys, "addaudithook"):
        # The run's TMPDIR too: the harness gives each run its own, removed with it (environments/process.py).
        roots = os.environ[WRITE_ROOTS_VAR].split(os.pathsep) + [os.environ.get("TMPDIR", "")]
        watch = _WriteWatch(roots, os.environ[WRITES_RECORD_VAR])
        sys.addaudithook(watch.audit)
        return watch
    return None


def distributed_loaded(module: ModuleType) -> None:
    """Wrap jax._src.distributed.initialize before jax.distributed takes its name."""
    original: Callable[..., object] | None = getattr(module, "initialize", None)
    if original is None:
        sys.stderr.write("harness: jax._src.distributed has no initialize(): the job was not set up\n")
        return

    def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
                   process_id: int | None = None, *args: object, **kwargs: object) -> object:
        coordinator_address, num_processes, process_id = job_defaults(
            os.environ, coordinator_address, num_processes, process_id)
        sys.stderr.write(f"{JOINED_MARK}coordinator_address={coordinator_address!r}, "
                         f"num_processes={num_processes!r}, process_id={process_id!r})\n")
        sys.stderr.flush()
        wait_for_job_coordinator(os.environ, coordinator_address, process_id)  # its process 0 is starting too
        return original(coordinator_address, num_processes, process_id, *args, **kwargs)

    _wrapping(initialize, original, copied=("__doc__",))
    _replace(module, "initialize", initialize)


def install_job() -> None:
    """Watch for jax's distributed module: a script's initialize() joins this run's job."""
    sys.meta_path.insert(0, _AfterImport({DISTRIBUTED_MODULE: distributed_loaded}))


HOOK: _Hook | None = None  # this process's settings hook, once installed


# The file a run's devices go to at exit, once JAX has opened them (harness/core/runs.py: DeviceFacts).
DEVICES_VAR = "HARNESS_DEVICES"
BACKENDS_MODULE = "jax._src.xla_bridge"


def device_facts() -> JsonObject | None:
    """What `jax.devices()` says (platform, kind, count, the backend's version), when the process has opened its
    backends; None when it has not: asking then would open them, seconds on an accelerator, for a fact the run
    never used."""
    bridge = sys.modules.get(BACKENDS_MODULE)
    if not getattr(bridge, "_backends", None):
        return None
    try:
        jax = sys.modules["jax"]
        devices = jax.devices()
        first = devices[0]
        return {"platform": str(first.platform), "device_kind": str(first.device_kind), "count": len(devices),
                "platform_version": str(getattr(first.client, "platform_version", "") or "")}
    except Exception:  # noqa: BLE001 - a fact not had, never the run's failure
        return None


def install_devices_record() -> None:
    """At exit, before JAX's own exit handlers drop its backends (registered after `import jax` has run, so called
    first), the devices it opened to the file DEVICES_VAR names; the variable leaves the environment, so that the
    processes the script starts do not write over it."""
    path = os.environ.pop(DEVICES_VAR, "")

    def record() -> None:
        facts = device_facts()
        if facts is None:
            return
        try:
            with open(path, "w") as out:
                out.write(json.dumps(facts, sort_keys=True) + "\n")
        except OSError as exc:
            sys.stderr.write(f"harness: cannot record the devices: {exc}\n")

    def jax_loaded(module: ModuleType) -> None:
        atexit.register(record)

    if path:
        sys.meta_path.insert(0, _AfterImport({"jax": jax_loaded}))


def install() -> _Hook:
    """Watch for jax's config module; record what the script sets and what JAX used at exit. In
    hook-only mode the cell's folder leaves the environment first (the script and JAX never see it)."""
    kept = os.environ.get(KEPT_TARGET_VAR)
    started_with = environment_snapshot(os.environ)
    target: str | None
    if kept:
        # A process the script started: the cell's folder is the kept one, and a folder in this process's
        # environment that is not it was set by the script (a launcher's os.environ for its workers): the
        # script's own, redirected when JAX reads it, never the cell's (nor written to as the target).
        target = kept
        if started_with[CACHE_DIR] != kept:
            started_with[CACHE_DIR] = None
    elif os.environ.get(FOLDER_VAR) == HOOK_ONLY:
        target = os.environ.pop(TARGET_VAR, None)
        started_with[CACHE_DIR] = None
    else:
        target = os.environ.get(TARGET_VAR)
    if target:
        os.environ[KEPT_TARGET_VAR] = target
    hook = _Hook(os.environ[RECORD_VAR], target, os.environ.get(THRESHOLDS_VAR, "script"), started_with)
    sys.meta_path.insert(0, _AfterImport({CONFIG_MODULE: hook.config_loaded}))
    atexit.register(hook.at_exit)
    if hasattr(sys, "addaudithook"):  # Python 3.8+; os.putenv's event from 3.9 (before: the values' diff)
        sys.addaudithook(hook.audit)
    global HOOK
    HOOK = hook
    return hook
