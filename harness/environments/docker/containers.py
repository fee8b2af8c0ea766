"""A run in a container: what the container is created with (mounts, user, environment, limits, no
network), the command it runs, and create, start, wait, logs, kill and removal whatever happens.
"""

from __future__ import annotations

import math
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any
from collections.abc import Callable

import docker
import requests
from docker.errors import DockerException
from docker.models.containers import Container
from docker.types import DeviceRequest, Mount

from harness.core.signals import refuse_if_stopping
from harness.environments.docker.gpu_probe import NO_GPU
from harness.environments.docker.reaping import LABEL, _remove, inside_deadline_grace_s, owner_labels
from harness.environments.key_hiding import another_pid_argv, empty_file
from harness.environments.process import MAX_LOG_BYTES, RUN_TMP_VARS, RUN_TMPDIR_VAR
from harness.inside.supervise import CappedLog
from harness.core import seal
from harness.core.files import open_fresh, write_atomic
from harness.core.factors import OTHER_GID, Factor, RunVariation, reordered
from harness.core.kinds import Platform
from harness.core.platforms import describe, device_nodes
from harness.core.runs import ProcessOutcome, Program
from harness.inputs.process_variables import IR_DUMP_VAR
from harness.inside.startup import startup_dir
from harness.inside.startup.jax_cache_harness_hook import DEVICES_VAR, RECORD_VAR
from harness.inside.startup.jax_cache_harness_recorder import RECORDER_VAR

# Where a run sees its folders inside the container.
CACHE_MOUNT = "/harness/cache"
SCRIPT_MOUNT = "/harness/script"
IR_DUMP_MOUNT = "/harness/ir"
WORK_MOUNT = "/harness/cwd"  # the run's working folder when it is not the script's
STARTUP_MOUNT = "/harness/inside/startup"  # the start-up hook's folder (read-only)
RECORD_MOUNT = "/harness/record"  # the folder of the hook's record file
ELSEWHERE = "-elsewhere"  # --vary cache-path / script-path: the folder mounted at another path
OTHER_HOME = "/tmp/harness-home-elsewhere"  # --vary home inside a container
CONTAINER_TMP = "/tmp"  # a run's TMPDIR inside its container (the container's own, gone with it)
# XLA's GPU clients use shared memory for collectives; Docker's default 64 MB is too small.
CUDA_SHM_SIZE = "16g"


def run_kwargs(program: Program | Path, env: dict[str, str], cache_dir: Path, platform: Platform, user: str,
               mem_limit: str | None = None, name: str | None = None,
               variation: RunVariation | None = None) -> dict[str, Any]:
    """What `containers.create` is asked for one run (pure, so tests can read it). A bare path is a
    script run in its own folder. A factor's run (--vary) changes what its `variation` says: the cache
    and script folders mounted at other paths, another user, host name, home, variables' order."""
    if not isinstance(program, Program):
        program = Program(Path(program))
    cache_mount, script_mount, work_mount = mount_points(variation)
    environment = {**env, "JAX_COMPILATION_CACHE_DIR": cache_mount, "HOME": "/tmp"}
    if variation is not None:
        environment.update(variation.env)
        if dict(variation.env).get("HOME"):  # the host folder does not exist inside
            environment["HOME"] = OTHER_HOME
    # The run's temporary folder is the container's own /tmp (a host path would not exist inside): a
    # fresh container per run, removed with it, so what the script leaves there goes with the run.
    environment.update({name: CONTAINER_TMP for name in RUN_TMP_VARS})
    environment.pop(RUN_TMPDIR_VAR, None)
    mounts = [Mount(target=cache_mount, source=str(Path(cache_dir).resolve()), type="bind")]
    workdir = program.workdir.resolve()
    working_dir = work_mount
    if program.script is not None:
        script_dir = program.script.resolve().parent
        mounts.insert(0, Mount(target=script_mount, source=str(script_dir), type="bind", read_only=True))
        if workdir == script_dir:
            working_dir = script_mount  # already mounted
    if working_dir == work_mount:
        # The working folder (--cwd, or a module's package folder), read-only like the script's.
        mounts.append(Mount(target=work_mount, source=str(workdir), type="bind", read_only=True))
    mounts += _key_covers(mounts)
    _mount_harness_files(env, environment, mounts)
    if variation is not None and variation.uid is not None:
        user = f"{variation.uid}:{OTHER_GID}"
    kwargs: dict[str, Any] = {
        "name": name or f"jax-harness-run-{uuid.uuid4().hex[:12]}",
        "environment": reordered(environment, variation),
        "mounts": mounts,
        "working_dir": working_dir,
        # Without an init the script is PID 1, and the kernel drops the signals PID 1 sends itself:
        # a script that crashes with os.kill(os.getpid(), SIGSEGV) would exit 0 and read as clean.
        "init": True,
        "user": user,
        "network_disabled": True,
        "network_mode": "none",
        # Which harness process started it: a test (or a user) counts only its own containers.
        "labels": {LABEL: "run", **owner_labels()},
        "detach": True,
    }
    if mem_limit:
        kwargs["mem_limit"] = mem_limit
    if variation is not None and variation.hostname is not None:
        kwargs["hostname"] = variation.hostname
    access = describe(platform).container
    if access.gpus:
        kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        kwargs["shm_size"] = CUDA_SHM_SIZE
    if access.device_globs:  # the TPU's chips as the host has them (libtpu opens the nodes itself)
        kwargs["devices"] = [f"{node}:{node}:rwm" for node in device_nodes(access.device_globs)]
    return kwargs


def _key_covers(mounts: list[Mount]) -> list[Mount]:
    """An empty file over the harness's seal key where a folder mounted holds it (a script right in HOME, `--cwd
    ~`): no program may read it (environments/key_hiding.py)."""
    key = seal.KEY_FILE.absolute().resolve()
    covers = []
    for mount in mounts:
        source = Path(mount["Source"])
        if key.is_relative_to(source):
            seal.state_key(key)  # made now if there is none yet: one made while the run goes would show
            covers.append(Mount(target=str(Path(mount["Target"]) / key.relative_to(source)),
                                source=str(empty_file()), type="bind", read_only=True))
    return covers


def _mount_harness_files(env: dict[str, str], environment: dict[str, str], mounts: list[Mount]) -> None:
    """The host files the harness hands a run (IR dump, the hook's record, the devices file, the start-up
    folder): each mounted, and its variable in `environment` pointed at the path inside."""
    if IR_DUMP_VAR in env:
        # The runner names a host folder for JAX's IR dump (a user script's evidence): mount it.
        host_dump = Path(env[IR_DUMP_VAR]).resolve()
        host_dump.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount(target=IR_DUMP_MOUNT, source=str(host_dump), type="bind"))
        environment[IR_DUMP_VAR] = IR_DUMP_MOUNT
    if RECORD_VAR in env:
        # The start-up hook (a user's script's own cache settings) and the file it records to.
        record = Path(env[RECORD_VAR]).resolve()
        record.parent.mkdir(parents=True, exist_ok=True)
        mounts.append(Mount(target=RECORD_MOUNT, source=str(record.parent), type="bind"))
        environment[RECORD_VAR] = f"{RECORD_MOUNT}/{record.name}"
        if RECORDER_VAR in env:  # the in-process recorder's file: beside the record (the same folder)
            environment[RECORDER_VAR] = f"{RECORD_MOUNT}/{Path(env[RECORDER_VAR]).name}"
    if DEVICES_VAR in env:
        # The devices run 1 reports, beside its log: that folder mounted (where the record's is, once).
        devices = Path(env[DEVICES_VAR]).resolve()
        devices.parent.mkdir(parents=True, exist_ok=True)
        if not any(m["Target"] == RECORD_MOUNT for m in mounts):
            mounts.append(Mount(target=RECORD_MOUNT, source=str(devices.parent), type="bind"))
        environment[DEVICES_VAR] = f"{RECORD_MOUNT}/{devices.name}"
    startup = str(startup_dir())
    if startup in env.get("PYTHONPATH", "").split(os.pathsep):
        mounts.append(Mount(target=STARTUP_MOUNT, source=startup, type="bind", read_only=True))
        environment["PYTHONPATH"] = os.pathsep.join(
            STARTUP_MOUNT if part == startup else part for part in env["PYTHONPATH"].split(os.pathsep))


def mount_points(variation: RunVariation | None) -> tuple[str, str, str]:
    """Where the cache, the script's folder and the working folder are seen inside: elsewhere for the
    factor that moves them (cache-path the cache; script-path the script and its folder; cwd the
    working folder), so the path the process sees changes as it does on the host."""
    factor = variation.factor if variation is not None else None
    cache = CACHE_MOUNT + ELSEWHERE if factor == Factor.CACHE_PATH else CACHE_MOUNT
    script = SCRIPT_MOUNT + ELSEWHERE if factor == Factor.SCRIPT_PATH else SCRIPT_MOUNT
    work = WORK_MOUNT + ELSEWHERE if factor in (Factor.CWD, Factor.SCRIPT_PATH) else WORK_MOUNT
    return cache, script, work


def container_command(program: Program, variation: RunVariation | None = None,
                      timeout_s: float | None = None) -> list[str]:
    """`python SCRIPT ARGS` or `python -m MODULE ARGS` as the container sees them; with `timeout_s`, under
    `timeout -s KILL` (coreutils or busybox, in every base image) a little past the run's timeout, so the
    container ends by itself even if the harness that should stop it is gone. (Docker has no run-time
    limit of its own; `timeout` kills its whole process group, and passes a signal death on as its own.)"""
    script = f"{mount_points(variation)[1]}/{program.script.name}" if program.script else None
    command = ["python", *program.argv(script)]
    if timeout_s is not None and math.isfinite(timeout_s):
        command = ["timeout", "-s", "KILL", str(math.ceil(timeout_s) + inside_deadline_grace_s()), *command]
    # A container is a PID namespace of its own, where every run's interpreter would have one pid: a program that
    # bakes its pid into a computation would compute one key every start, where each start on a machine has another.
    return [*another_pid_argv("/bin/sh"), *command]


def run_container(client: docker.DockerClient, image: str, command: list[str], kwargs: dict[str, Any],
                  log_path: Path, timeout_s: float, gpu: bool = False,
                  started: Callable[[], None] | None = None) -> ProcessOutcome:
    """Create, start, wait (kill at the timeout), save the output, and always remove the container.
    `started` is called once the container runs (or could not be started)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    container = None
    try:
        try:
            refuse_if_stopping()  # (a signal has stopped the work: no run starts, a retry included)
            container = client.containers.create(image, command, **kwargs)
            container.start()
        except (DockerException, requests.RequestException) as exc:
            reason = _explain(exc, gpu)
            write_atomic(log_path, reason + "\n")
            return ProcessOutcome(None, time.monotonic() - start, reason=reason)
        finally:
            if started is not None:
                started()
        try:
            status = container.wait(timeout=timeout_s)
        except requests.RequestException as exc:  # ReadTimeout, or ConnectionError wrapping one
            if time.monotonic() - start < timeout_s:
                return ProcessOutcome(None, time.monotonic() - start,
                                      reason=f"docker: lost the daemon during the run ({_one_line(exc)})")
            _kill(container)
            _save_logs(container, log_path)
            return ProcessOutcome(None, time.monotonic() - start, timed_out=True,
                                  reason=f"killed after the {timeout_s:g} s timeout")
        duration = time.monotonic() - start
        _save_logs(container, log_path)
        container.reload()
        state = container.attrs.get("State", {})
        code = status.get("StatusCode", state.get("ExitCode"))
        error = status.get("Error")
        reason = ""
        if state.get("OOMKilled"):
            limit = kwargs.get("mem_limit") or "none set: host memory ran out"
            reason = f"killed by the OOM killer (memory limit {limit})"
        elif error and error.get("Message"):
            reason = f"docker: {error['Message']}"
        elif code is not None and code > 128 and _signal_name(code - 128):
            # docker-init exits 128+N when the script dies by signal N, as a shell reports it.
            reason = f"killed by signal {_signal_name(code - 128)} (exit code {code})"
        elif code != 0:
            reason = f"exit code {code}"
        return ProcessOutcome(code, duration, reason=reason)
    finally:
        # Also on Ctrl-C: a container created before the interrupt is found by its name.
        _remove(client, container, kwargs.get("name"))


def _kill(container: Container) -> None:
    try:
        container.kill()
        container.wait(timeout=30)
    except (DockerException, requests.RequestException):
        pass  # it exited between the timeout and the kill: removal below does the rest


def _save_logs(container: Container, log_path: Path, max_bytes: int = MAX_LOG_BYTES) -> None:
    """The container's output into the run's log, streamed: its head and tail kept, the cut said."""
    with open(open_fresh(log_path), "wb") as out:
        log = CappedLog(out.fileno(), max_bytes)
        try:
            for chunk in container.logs(stdout=True, stderr=True, stream=True):
                log.write(chunk)
        except (DockerException, requests.RequestException) as exc:
            log.write(f"(could not read the container's output: {_one_line(exc)})\n".encode())
        log.close()


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _explain(exc: Exception, gpu: bool) -> str:
    text = _one_line(exc)
    if gpu and ("device driver" in text or "nvidia" in text.lower() or "gpu" in text.lower()):
        return NO_GPU.format(detail=text)
    return f"docker: {text}"


def _one_line(exc: BaseException | str) -> str:
    text = getattr(exc, "explanation", None) or str(exc)
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
