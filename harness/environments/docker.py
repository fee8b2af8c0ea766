"""The docker backend: an image per (JAX version, platform, base image), a fresh container per run.

Images are built through the Docker SDK from `harness/environments/dockerfiles/Dockerfile.<platform>`, with the wheels from
the host-side wheelhouse (see wheelhouse.py and docker/README.md), and tagged from a hash of
everything that goes into them, so a second sweep builds nothing. Every run is a new container:
the script's folder mounted read-only, the cell's cache folder mounted read-write (listings are
read on the host), no network, no Docker socket, run as the host's uid:gid so the host can read and
delete what it writes, removed afterwards whatever happened.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import DeviceRequest, Mount

from harness.inputs.dependencies import Requirements
from harness.environments.base import Backend, Environment, Say, _quiet
from harness.environments.gpus import CONTAINER_ADVICE, GpuCount, parse_gpu_list
from harness.environments.locking import held
from harness.environments.process import (AFTER_PEERS, MAX_LOG_BYTES, PEER_GRACE_S, PROBE, RUN_TMP_VARS,
                                          RUN_TMPDIR_VAR, log_tail)
from harness.inside.supervise import CappedLog
from harness.environments.wheelhouse import MANYLINUX_X86_64, Wheelhouse
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable, UserError
from harness.core.vary_factors import OTHER_GID, Factor, RunVariation, reordered
from harness.core.files import package_path
from harness.core.model import Platform, ProcessOutcome, Program
from harness.inputs.pythons import NoPython, PythonChoice, PythonChooser, PythonVersion
from harness.inputs.run_env import IR_DUMP_VAR
from harness.inputs.run_env import STARTUP_DIR
from harness.inside.startup.jax_cache_harness_hook import RECORD_VAR

IMAGE_REPO = "jax-cache-harness"
# What `harness base-image` builds from Debian's packages, no registry needed: a Debian release and
# the Python it ships. `harness base-image --debian trixie` gives the Python the newest JAX needs.
DEBIAN_PYTHONS = {"bookworm": "3.11", "trixie": "3.13"}
OFFLINE_BASE_IMAGES = {python: f"jax-harness-base:{release}" for release, python in DEBIAN_PYTHONS.items()}
OFFLINE_BASE_IMAGE = OFFLINE_BASE_IMAGES["3.11"]
OFFLINE_PYTHONS = frozenset(PythonVersion.parse(p) for p in DEBIAN_PYTHONS.values())
DEFAULT_PYTHON = "3.11"


def build_base_image(debian: str, image: str | None = None, force: bool = False) -> int:
    """`harness base-image`: the offline Debian base image (debootstrap, then `docker import`) built by the
    script shipped in the package, so an installed harness needs no checkout; it says its own progress.
    Its exit code: 0 built or already there, 2 an unsupported Debian release, 1 a failed step."""
    if debian not in DEBIAN_PYTHONS:
        raise UserError(f"--debian {debian}: not supported ({', '.join(DEBIAN_PYTHONS)})")
    script = package_path("harness.environments", "dockerfiles", "make_base_image.sh")
    env = {**os.environ, "DEBIAN": debian, "FORCE": "1" if force else "0"}
    return subprocess.run(["bash", str(script), *([image] if image else [])], env=env, check=False).returncode


def offline_fix(python_version: str, configured: bool = False) -> str:
    """How to get a base image with this Python where no registry can be reached (`configured`: the
    config names a base image, which must then change too)."""
    release = next((r for r, p in DEBIAN_PYTHONS.items() if p == python_version), None)
    if release and configured:
        return (f"set docker.base_image to one with python{python_version}, e.g. "
                f"{OFFLINE_BASE_IMAGES[python_version]} (`harness base-image --debian {release}`)")
    if release:
        return f"build it with `harness base-image --debian {release}` (Debian {release}'s Python {python_version})"
    offers = ", ".join(f"{r}: {p}" for r, p in DEBIAN_PYTHONS.items())
    return (f"no Debian release offline has Python {python_version} ({offers}): set docker.base_image to "
            f"an image with python{python_version}, or pin python: to one of those")


def default_base_images(python_version: str = DEFAULT_PYTHON) -> dict[Platform, str]:
    """A plain Python base for every platform: jax[cuda12]'s wheels bring CUDA's libraries and the
    NVIDIA runtime mounts the driver (dockerfiles/Dockerfile.cuda says why an nvidia/cuda base is optional)."""
    slim = f"python:{python_version}-slim"
    return {Platform.CPU: slim, Platform.AUTO: slim, Platform.CUDA: slim}


# Package data (pyproject.toml), so an installed harness (pipx, uv tool) finds them as a checkout does.
DOCKERFILES = Path(os.environ.get("HARNESS_DOCKERFILES") or package_path("harness.environments", "dockerfiles"))
STATE_DIR = Path(os.environ.get("HARNESS_DOCKER_DIR", Path.home() / ".cache" / "jax-cache-harness" / "docker"))

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
LABEL = "org.jax-cache-harness"
OWNER_LABEL = f"{LABEL}.owner-pid"
# With the pid, which process it was (its start time, in clock ticks since boot) and on which machine and
# boot (the kernel's boot id): a pid reused by another process, or one of another host sharing the
# engine, is never taken for the owner.
OWNER_START_LABEL = f"{LABEL}.owner-start"
OWNER_BOOT_LABEL = f"{LABEL}.owner-boot"
# A run's container ends by itself this long after the run's timeout, even when no harness is left to
# kill it (a SIGKILLed harness): the host-side timeout comes first while the harness lives.
INSIDE_DEADLINE_GRACE_S = 30
PROBE_TIMEOUT_S = 300.0
GPU_LIST_TIMEOUT_S = 60.0

NO_CUDA_DEVICE = ("no CUDA device is visible in {image} (jax: {said}); check that the NVIDIA Container Toolkit "
                  "is installed (dockerd restarted since) and that the GPUs are requested (the harness asks for "
                  "all; `docker run --rm --gpus all IMAGE nvidia-smi -L` must list them)")
# Run in the image with JAX_PLATFORMS=cuda: the plugin's version (0.4.26 on) and the devices it gives.
CUDA_PROBE = """\
import importlib.metadata as md, json
facts = {}
for dist in ("jax-cuda12-plugin", "jax-cuda12-pjrt"):
    try:
        facts[dist] = md.version(dist)
    except md.PackageNotFoundError:
        pass
import jax
devices = jax.devices("cuda")
facts.update(cuda_devices=len(devices), device_kind=devices[0].device_kind)
print(json.dumps(facts))
"""
NO_GPU = ("the Docker runtime has no GPU support ({detail}); install the NVIDIA Container Toolkit "
          "and restart dockerd, or use platform: cpu")


def docker_available(factory: Callable[..., docker.DockerClient] = docker.from_env) -> tuple[bool, str]:
    """Whether a Docker daemon answers, and a reason fit for one line of output."""
    try:
        client = factory(timeout=10)
        try:
            client.ping()
            return True, f"Docker {client.version().get('Version', '?')} at {client.api.base_url}"
        finally:
            client.close()
    except (DockerException, requests.RequestException) as exc:
        return False, f"no Docker daemon answers ({_one_line(exc)})"


def dockerfile_for(platform: Platform) -> Path:
    return DOCKERFILES / ("Dockerfile.cuda" if platform == Platform.CUDA else "Dockerfile.cpu")


def image_tag(jax_version: str, platform: Platform, python_version: str, dockerfile_text: str,
              base_image_id: str, lock_text: str, requirements: Requirements = Requirements()) -> str:
    """A tag that changes exactly when something that goes into the image changes (the lock already
    pins the script's requirements; they are named too, so that a set resolving to the same pins
    still says what it asked for)."""
    identity = {"dockerfile": dockerfile_text, "base": base_image_id, "lock": lock_text,
                "python": python_version, "platform": str(platform), "jax": jax_version}
    if requirements:  # absent when there are none: images built before requirements keep their tags
        identity["requirements"] = requirements.to_json()
    inputs = json.dumps(identity, sort_keys=True)
    digest = hashlib.sha256(inputs.encode()).hexdigest()[:12]
    flavour = "cuda" if platform == Platform.CUDA else "cpu"
    return f"{IMAGE_REPO}:jax{jax_version}-{flavour}-py{python_version}-{digest}"


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
    if str(STARTUP_DIR) in env.get("PYTHONPATH", "").split(os.pathsep):
        mounts.append(Mount(target=STARTUP_MOUNT, source=str(STARTUP_DIR), type="bind", read_only=True))
        environment["PYTHONPATH"] = os.pathsep.join(
            STARTUP_MOUNT if part == str(STARTUP_DIR) else part for part in env["PYTHONPATH"].split(os.pathsep))
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
    if platform == Platform.CUDA:
        kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        kwargs["shm_size"] = CUDA_SHM_SIZE
    return kwargs


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
        command = ["timeout", "-s", "KILL", str(math.ceil(timeout_s) + INSIDE_DEADLINE_GRACE_S), *command]
    return command


def _process_start(pid: int) -> str | None:
    """A process's start time (clock ticks after boot, /proc/PID/stat field 22); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def owner_labels() -> dict[str, str]:
    """The labels that say which harness process, on which machine, owns a container."""
    return {OWNER_LABEL: str(os.getpid()), OWNER_START_LABEL: _process_start(os.getpid()) or "",
            OWNER_BOOT_LABEL: _boot_id()}


def owner_gone(labels: dict[str, str]) -> bool:
    """Whether the harness process a container's labels name is gone (pure but for /proc): its pid is
    no process, or another process now (another start time). False when the owner ran on another machine
    or boot (that machine's harness decides), or the labels name no owner of ours."""
    try:
        pid = int(labels.get(OWNER_LABEL, ""))
    except ValueError:
        return False
    boot = labels.get(OWNER_BOOT_LABEL)
    if boot and boot != _boot_id():
        return False
    started = _process_start(pid)
    if started is None:
        return True
    return bool(labels.get(OWNER_START_LABEL)) and labels[OWNER_START_LABEL] != started


def reap_orphans(client: docker.DockerClient, say: Say) -> list[str]:
    """Remove the harness's run containers whose owner is gone (a SIGKILLed harness cannot remove its own);
    the names of those removed. Only containers with the harness's label and an owner pid are looked at."""
    try:
        found = client.containers.list(all=True, filters={"label": [f"{LABEL}", OWNER_LABEL]})
    except (DockerException, requests.RequestException):
        return []
    removed = []
    for container in found:
        if container.labels.get(LABEL) in ("run", "gpus") and owner_gone(container.labels):
            _remove(client, container, None)
            removed.append(container.name)
    if removed:
        say(f"docker: removed {len(removed)} container(s) left by harness processes that are gone: "
            f"{', '.join(removed[:3])}{', ...' if len(removed) > 3 else ''}")
    return removed


def gpu_list_kwargs() -> dict[str, Any]:
    """A container that lists the GPUs the runtime gives (pure, so tests can read it)."""
    return {"name": f"jax-harness-gpus-{uuid.uuid4().hex[:12]}",
            # The NVIDIA runtime mounts the driver's nvidia-smi only for the `utility` capability.
            "environment": {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
            "device_requests": [DeviceRequest(count=-1, capabilities=[["gpu"]])],
            "network_disabled": True, "network_mode": "none", "labels": {LABEL: "gpus", **owner_labels()},
            "detach": True}


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
            container = client.containers.create(image, command, **kwargs)
            container.start()
        except (DockerException, requests.RequestException) as exc:
            reason = _explain(exc, gpu)
            log_path.write_text(reason + "\n")
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
        reason = ""
        if state.get("OOMKilled"):
            limit = kwargs.get("mem_limit") or "none set: host memory ran out"
            reason = f"killed by the OOM killer (memory limit {limit})"
        elif (status.get("Error") or {}).get("Message"):
            reason = f"docker: {status['Error']['Message']}"
        elif code is not None and code > 128 and _signal_name(code - 128):
            # docker-init exits 128+N when the script dies by signal N, as a shell reports it.
            reason = f"killed by signal {_signal_name(code - 128)} (exit code {code})"
        elif code != 0:
            reason = f"exit code {code}"
        return ProcessOutcome(code, duration, reason=reason)
    finally:
        # Also on Ctrl-C: a container created before the interrupt is found by its name.
        _remove(client, container, kwargs.get("name"))


class DockerEnvironment(Environment):
    def __init__(self, client: docker.DockerClient, image: str, jax_version: str, platform: Platform,
                 facts: dict[str, Any], user: str, mem_limit: str | None = None):
        self.client, self.image, self.jax_version, self.platform = client, image, jax_version, platform
        self.facts, self.user, self.mem_limit = facts, user, mem_limit
        self._running: set[str] = set()  # container names of runs in flight

    def run(self, program, env, cache_dir, log_path, timeout_s, variation: RunVariation | None = None,
            ) -> ProcessOutcome:
        kwargs = run_kwargs(program, env, cache_dir, self.platform, self.user, self.mem_limit, variation=variation)
        command = container_command(program, variation, timeout_s)
        self._running.add(kwargs["name"])
        try:
            return run_container(self.client, self.image, command, kwargs, Path(log_path), timeout_s,
                                 gpu=self.platform == Platform.CUDA)
        finally:
            self._running.discard(kwargs["name"])

    def cannot_vary(self, factor: Factor) -> str:
        if factor == Factor.PREFIX:
            return "the image's Python is at one path (vary it with --backend venv)"
        if factor == Factor.COMPRESSION:
            return "zstandard would have to be installed into the image (vary it with --backend venv)"
        return ""

    def run_job(self, program, envs, cache_dir, log_paths, timeout_s) -> list[ProcessOutcome]:
        return run_job_containers(self, program, envs, cache_dir, log_paths, timeout_s)

    def interrupt(self) -> None:
        """Kill the containers of runs still going; each run's own clean-up then removes them."""
        for name in list(self._running):
            try:
                self.client.containers.get(name).kill()
            except (DockerException, requests.RequestException):
                pass  # already gone

    def describe(self) -> dict[str, Any]:
        return {"backend": "docker", "image": self.image, **self.facts}


class DockerBackend(Backend):
    """Images from dockerfiles/Dockerfile.<platform>, wheels from a host-side wheelhouse, runs in containers."""

    name = "docker"

    def __init__(self, base_image: str | None = None, python_version: str | None = None,
                 rebuild: bool = False, wheelhouse: Path | None = None, state_dir: Path = STATE_DIR,
                 client: docker.DockerClient | None = None,
                 release_date: Callable[[str], Any] | None = None,
                 base_images: dict[Platform, str] | None = None, mem_limit: str | None = None,
                 user: str | None = None, pythons: PythonChooser | None = None,
                 requirements: Requirements = Requirements()):
        self.base_image, self.rebuild = base_image, rebuild
        self.requirements = requirements  # the script's own, resolved with each jax into its image
        # The images' Python per release, chosen as for venvs (harness/inputs/pythons.py) among those the
        # offline base images provide; python_version (docker.python) pins it.
        pinned = PythonVersion.parse(python_version) if python_version else None
        self.pythons = pythons or PythonChooser(PythonVersion.parse(DEFAULT_PYTHON), lambda _v: None,
                                                pinned=pinned, provided=OFFLINE_PYTHONS)
        self.python_version = python_version or "auto"
        self.state_dir = Path(state_dir)
        self.wheelhouse = Wheelhouse(Path(wheelhouse) if wheelhouse else self.state_dir / "wheelhouse")
        self.release_date = release_date
        self._base_images = base_images
        self.mem_limit = mem_limit
        self.user = user or f"{os.getuid()}:{os.getgid()}"
        self._client = client
        self._bases: dict[tuple[Platform, str], Any] = {}
        self._has_python: dict[tuple[str, str], bool] = {}  # (base image id, "3.N")
        self._rebuilt: set[tuple[str, Platform]] = set()
        self.builds = 0  # images built by this backend (a warm re-sweep builds none)

    @classmethod
    def from_options(cls, options) -> DockerBackend:
        """From the CLI's BackendOptions: the config's `docker:` section, --rebuild, release dates."""
        section = options.docker or {}
        pin = section.get("python")
        pinned = PythonVersion.parse(pin) if pin else options.python_pin
        # The images' Pythons are the base images', not the host's: the machine is not searched.
        pythons = PythonChooser(PythonVersion.parse(DEFAULT_PYTHON),
                                options.wheel_pythons(MANYLINUX_X86_64) if options.wheel_pythons else (lambda _v: None),
                                pinned=pinned, provided=OFFLINE_PYTHONS | ({pinned} if pinned else set()))
        return cls(base_image=section.get("base_image"), python_version=pin, rebuild=options.rebuild,
                   release_date=options.release_date, pythons=pythons,
                   requirements=options.requirements)

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                client = docker.from_env()
                client.ping()
            except (DockerException, requests.RequestException) as exc:
                raise BackendUnavailable(
                    f"--backend docker: no Docker daemon answers ({_one_line(exc)}); start one "
                    "(.ci/install-docker.sh does it on Debian) or use --backend venv") from None
            self._client = client
        return self._client

    def describe(self) -> dict[str, Any]:
        version = self.client.version()
        return {"backend": self.name, "docker_version": version.get("Version"),
                "docker_api": version.get("ApiVersion"), "python": self.python_version,
                "base_image": self.base_image or "platform default"}

    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> Environment:
        with self._image_lock(jax_version, platform, say) as choice:
            return self._prepare_locked(jax_version, platform, choice, say)

    @contextmanager
    def _image_lock(self, jax_version: str, platform: Platform, say: Say) -> Iterator[PythonChoice]:
        """The release's Python, with its image's lock held: another sweep building this image right
        now is waited for, then its image is reused."""
        try:
            choice = self.pythons.choose(jax_version)
        except NoPython as exc:
            raise EnvironmentUnavailable(str(exc)) from None
        name = f"jax-{jax_version}-{platform}-py{choice.version}"
        with held(self.state_dir / "locks" / f"{name}.lock", f"the image for {name}", say):
            yield choice

    def _prepare_locked(self, jax_version: str, platform: Platform, choice: PythonChoice,
                        say: Say) -> Environment:
        tag, facts, log = self._image_locked(jax_version, platform, choice, say)
        facts.update(self._probe(tag, jax_version, platform, log))
        if facts.get("jax") != jax_version:
            raise EnvironmentUnavailable(f"image {tag} has jax {facts.get('jax')}, expected {jax_version}")
        if platform == Platform.CUDA:
            facts.update(self.cuda_probe(tag, log))
        facts["image_id"] = self.client.images.get(tag).id
        return DockerEnvironment(self.client, tag, jax_version, platform, facts, self.user, self.mem_limit)

    def image(self, jax_version: str, platform: Platform,
              say: Say = _quiet) -> tuple[str, dict[str, Any], Path]:
        """The image's tag, built unless it exists, the facts of how it was had, and its log: what
        prepare() does before it probes the image (`make cuda-image-check` probes it its own way)."""
        with self._image_lock(jax_version, platform, say) as choice:
            return self._image_locked(jax_version, platform, choice, say)

    def _image_locked(self, jax_version: str, platform: Platform, choice: PythonChoice,
                      say: Say) -> tuple[str, dict[str, Any], Path]:
        python = str(choice.version)
        say(f"jax {jax_version}: {choice}")
        base = self.base_image_for(platform, say, python)
        base_name = base.tags[0] if base.tags else base.id
        # Before any download or build: an image whose Python cannot install the wheels is never built.
        self._require_python(base, base_name, choice, jax_version, platform)
        extra = f"-req{self.requirements.digest}" if self.requirements else ""
        log = self.state_dir / "logs" / f"jax-{jax_version}-{platform}-py{python}{extra}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        cutoff = self.release_date(jax_version) if self.release_date else None
        # --rebuild means once per sweep: a version prepared again (another mesh, a bisection step)
        # reuses what this backend just rebuilt.
        rebuild = self.rebuild and (jax_version, platform) not in self._rebuilt
        lock = self.wheelhouse.lock(jax_version, platform, python, cutoff, log, refresh=rebuild,
                                    extra=self.requirements)
        dockerfile = dockerfile_for(platform)
        tag = image_tag(jax_version, platform, python, dockerfile.read_text(), base.id, lock, self.requirements)
        facts: dict[str, Any] = {"base_image": base_name, "base_image_id": base.id,
                                 "exclude_newer": cutoff.isoformat() if cutoff else None,
                                 "python_choice": choice.to_json()}
        if self.requirements:
            facts["requirements"] = self.requirements.to_json()
        if not rebuild and self._image_exists(tag):
            facts["reused"] = True
        else:
            wheels = self.wheelhouse.files_for(lock, jax_version, platform, python, log)
            previous = self._image_id(tag)
            facts["build_s"] = self._build(tag, dockerfile, base_name, lock, wheels, jax_version,
                                           platform, python, log, say, nocache=rebuild)
            facts["reused"] = False
            self._rebuilt.add((jax_version, platform))
            if previous and previous != self._image_id(tag):
                self._discard(previous)  # the image --rebuild replaced would linger untagged
        return tag, facts, log

    def cuda_probe(self, tag: str, log: Path, request_gpus: bool = True) -> dict[str, Any]:
        """The CUDA plugin's version and the devices JAX sees in `tag`, in a container like a cuda
        run's. EnvironmentUnavailable, one line, when it sees none: before any run, not in each."""
        probe_log = log.with_suffix(".cuda-probe.log")
        with tempfile.TemporaryDirectory(prefix="jax-harness-probe-") as tmp:
            script = Path(tmp) / "cuda_probe.py"
            script.write_text(CUDA_PROBE)
            os.chmod(tmp, 0o755)
            os.chmod(script, 0o644)
            kwargs = run_kwargs(script, {"JAX_PLATFORMS": "cuda"}, Path(tmp),
                                Platform.CUDA if request_gpus else Platform.CPU, self.user)
            outcome = run_container(self.client, tag, ["python", f"{SCRIPT_MOUNT}/cuda_probe.py"], kwargs,
                                    probe_log, PROBE_TIMEOUT_S, gpu=request_gpus)
        output = log_tail(probe_log)
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        if outcome.ok:
            try:
                return json.loads(lines[-1])
            except (IndexError, json.JSONDecodeError):
                raise EnvironmentUnavailable(f"unreadable CUDA probe output from {tag}", log_tail=output) from None
        if outcome.reason.startswith(NO_GPU.split("(")[0]):
            raise EnvironmentUnavailable(outcome.reason, log_tail=output)  # the runtime gave no GPU at all
        said = lines[-1] if lines else outcome.reason
        raise EnvironmentUnavailable(NO_CUDA_DEVICE.format(image=tag, said=said[:200]), log_tail=output)

    def check(self, platform: Platform, say: Say = _quiet) -> None:
        """The base image of the Python most releases use (the pinned one, or the default); first, the
        run containers a harness that is gone left behind are removed."""
        reap_orphans(self.client, say)
        self.base_image_for(platform, say, str(self.pythons.pinned or self.pythons.own))

    def visible_gpus(self, say: Say = _quiet) -> GpuCount:
        """What the container runtime gives a run: `nvidia-smi -L` (mounted by the NVIDIA runtime) in
        a container of the cuda base image with every GPU requested, as the runs request them."""
        how = "a container with the GPUs requested (nvidia-smi -L)"
        image = self.base_image_for(Platform.CUDA, say, str(self.pythons.pinned or self.pythons.own))
        log = self.state_dir / "logs" / "gpus.log"
        kwargs = gpu_list_kwargs()
        outcome = run_container(self.client, image.id, ["nvidia-smi", "-L"], kwargs, log, GPU_LIST_TIMEOUT_S)
        if not outcome.ok:
            last = (log_tail(log).strip().splitlines() or [""])[-1]
            problem = outcome.reason if last in outcome.reason else f"{outcome.reason}: {last}"
            return GpuCount(0, how, problem, CONTAINER_ADVICE)
        return GpuCount(parse_gpu_list(log.read_text(errors="replace")), how, advice=CONTAINER_ADVICE)

    def base_image_for(self, platform: Platform, say: Say = _quiet, python: str = DEFAULT_PYTHON):
        """The base image for `python`, pulled if absent. Cannot be had: BackendUnavailable (one
        line) for the configured or default image, EnvironmentUnavailable for another Python's
        default image (only the releases that need that Python are affected).

        Public so that a sweep can check it before it writes anything."""
        if (platform, python) in self._bases:
            return self._bases[(platform, python)]
        name = self.base_image or self._default_bases(python)[platform]
        image = self._get_or_pull(name, say)
        offline_name = OFFLINE_BASE_IMAGES.get(python)
        if isinstance(image, Exception) and not self.base_image and offline_name:
            # The registry is out of reach (as on these machines) but the offline image may be here.
            offline = self._get_or_pull(offline_name, _quiet, pull=False)
            if not isinstance(offline, Exception):
                say(f"docker: default base image {name} is not available; using {offline_name}")
                image = offline
        if isinstance(image, Exception):
            if self.base_image or python == DEFAULT_PYTHON:
                raise BackendUnavailable(
                    f"docker base image {name} is not here and cannot be pulled ({_one_line(image)}); "
                    f"build the offline one with `harness base-image` and set docker.base_image: {OFFLINE_BASE_IMAGE}")
            raise EnvironmentUnavailable(f"docker: no base image with Python {python} here ({name} cannot be "
                                         f"pulled); {offline_fix(python)}")
        self._bases[(platform, python)] = image
        return image

    def _default_bases(self, python: str) -> dict[Platform, str]:
        return self._base_images or default_base_images(python)

    def _require_python(self, base, base_name: str, choice: PythonChoice, jax_version: str,
                        platform: Platform) -> None:
        """EnvironmentUnavailable, naming the fix, when the base image has no python3.N (asked once
        per image and Python, in a throwaway container like the runs'). The cuda Dockerfile installs
        its Python itself, so a cuda base is not asked."""
        if platform == Platform.CUDA:
            return
        python = str(choice.version)
        key = (base.id, python)
        if key not in self._has_python:
            with tempfile.TemporaryDirectory(prefix="jax-harness-python-") as tmp:
                os.chmod(tmp, 0o755)
                kwargs = run_kwargs(Path(tmp) / "none.py", {}, Path(tmp), platform, self.user)
                outcome = run_container(self.client, base.id, [f"python{python}", "-c", "pass"], kwargs,
                                        Path(tmp) / "python.log", PROBE_TIMEOUT_S)
            self._has_python[key] = outcome.ok
        if not self._has_python[key]:
            raise EnvironmentUnavailable(f"docker: base image {base_name} has no python{python}, the Python "
                                         f"chosen for jax {jax_version} ({choice.reason}); "
                                         f"{offline_fix(python, configured=bool(self.base_image))}")

    def _get_or_pull(self, name: str, say: Say, pull: bool = True):
        try:
            return self.client.images.get(name)
        except ImageNotFound as exc:
            if not pull:
                return exc
        except (APIError, requests.RequestException) as exc:
            return exc
        say(f"docker: pulling base image {name}")
        try:
            return self.client.images.pull(name)
        except (DockerException, requests.RequestException) as exc:
            return exc

    def _image_exists(self, tag: str) -> bool:
        return self._image_id(tag) is not None

    def _image_id(self, tag: str) -> str | None:
        try:
            return self.client.images.get(tag).id
        except ImageNotFound:
            return None

    def _discard(self, image_id: str) -> None:
        try:
            self.client.images.remove(image_id)
        except (DockerException, requests.RequestException):
            pass  # still used by a container, or already gone: leave it to `docker image prune`

    def _build(self, tag: str, dockerfile: Path, base_name: str, lock: str, wheels: list[Path],
               jax_version: str, platform: Platform, python: str, log: Path, say: Say,
               nocache: bool = False) -> float:
        say(f"jax {jax_version}: building image {tag} on {base_name} (log {log})")
        start = time.monotonic()
        error = ""
        with tempfile.TemporaryDirectory(prefix="jax-harness-context-") as tmp:
            context = Path(tmp)
            write_context(context, dockerfile.read_text(), lock, wheels)
            with open(log, "a") as out:
                try:
                    stream = self.client.api.build(
                        path=str(context), tag=tag, rm=True, forcerm=True, pull=False,
                        nocache=nocache, decode=True,
                        buildargs={"BASE_IMAGE": base_name, "PYTHON_VERSION": python,
                                   "JAX_VERSION": jax_version},
                        # cpu installs need nothing from outside; the cuda file may apt-get a Python.
                        network_mode=None if platform == Platform.CUDA else "none",
                        labels={LABEL: "image", f"{LABEL}.jax": jax_version})
                    for chunk in stream:
                        text = chunk.get("stream", "")
                        out.write(text)
                        if text.startswith("Step "):
                            say(f"jax {jax_version}: {text.strip()[:100]}")
                        if "error" in chunk:
                            error = chunk["error"].strip()
                            out.write(f"ERROR: {error}\n")
                except (DockerException, requests.RequestException) as exc:
                    error = _one_line(exc)
                    out.write(f"ERROR: {error}\n")
        if not error and not self._image_exists(tag):
            error = "the build ended without an image"
        if error:
            raise EnvironmentUnavailable(f"docker build for jax {jax_version} failed: {_one_line(error)} "
                                         f"(log {log})", log_tail=log_tail(log))
        self.builds += 1
        seconds = time.monotonic() - start
        say(f"jax {jax_version}: image built in {seconds:.0f} s")
        return round(seconds, 1)

    def _probe(self, tag: str, jax_version: str, platform: Platform, log: Path) -> dict[str, Any]:
        """python/jax/jaxlib/numpy versions, from a container like the runs' (so, for cuda, it also
        finds out early whether the runtime can give GPUs at all)."""
        probe_log = log.with_suffix(".probe.log")
        with tempfile.TemporaryDirectory(prefix="jax-harness-probe-") as tmp:
            script = Path(tmp) / "probe.py"
            script.write_text(PROBE + "\n")
            os.chmod(tmp, 0o755)
            os.chmod(script, 0o644)
            kwargs = run_kwargs(script, {}, Path(tmp), platform, self.user)
            outcome = run_container(self.client, tag, ["python", f"{SCRIPT_MOUNT}/probe.py"], kwargs,
                                    probe_log, PROBE_TIMEOUT_S, gpu=platform == Platform.CUDA)
        output = log_tail(probe_log)
        if not outcome.ok:
            raise EnvironmentUnavailable(f"jax {jax_version} does not start in {tag}: "
                                         f"{outcome.reason or 'probe failed'}", log_tail=output)
        try:
            return json.loads(output.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            raise EnvironmentUnavailable(f"unreadable probe output from {tag}", log_tail=output) from None


def write_context(context: Path, dockerfile_text: str, lock: str, wheels: list[Path]) -> None:
    """The build context: the Dockerfile, the pinned list, and only the wheels it pins."""
    (context / "Dockerfile").write_text(dockerfile_text)
    (context / "requirements.lock").write_text(lock)
    folder = context / "wheels"
    folder.mkdir()
    for wheel in wheels:
        try:
            os.link(wheel, folder / wheel.name)  # no copy of 100 MB wheels when on one filesystem
        except OSError:
            shutil.copy2(wheel, folder / wheel.name)


def _kill(container) -> None:
    try:
        container.kill()
        container.wait(timeout=30)
    except (DockerException, requests.RequestException):
        pass  # it exited between the timeout and the kill: removal below does the rest


def _save_logs(container, log_path: Path, max_bytes: int = MAX_LOG_BYTES) -> None:
    """The container's output into the run's log, streamed: its head and tail kept, the cut said."""
    with open(log_path, "wb") as out:
        log = CappedLog(out.fileno(), max_bytes)
        try:
            for chunk in container.logs(stdout=True, stderr=True, stream=True):
                log.write(chunk)
        except (DockerException, requests.RequestException) as exc:
            log.write(f"(could not read the container's output: {_one_line(exc)})\n".encode())
        log.close()


def _remove(client, container, name: str | None) -> None:
    try:
        if container is None:
            if not name:
                return
            container = client.containers.get(name)
        container.remove(force=True, v=True)
    except NotFound:
        pass
    except (DockerException, requests.RequestException):
        pass  # "removal already in progress", or the daemon went away: nothing more to do here


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


def _one_line(exc: Exception | str) -> str:
    text = getattr(exc, "explanation", None) or str(exc)
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


# ---- multi-process runs (jobs) ---------------------------------------------------------------------

def job_kwargs(program: Program, envs: list[dict[str, str]], cache_dir: Path, platform: Platform, user: str,
               mem_limit: str | None = None) -> list[dict[str, Any]]:
    """One container per process of a job (pure): each its own process tree, init and mounts, as a host
    would be; process 0's has a network namespace of its own with nothing but a loopback, and the others
    join it (`network_mode: container:<process 0>`), so the coordinator is 127.0.0.1 for all and no process
    reaches anything else. (Chosen over N processes in one container: every process keeps the run's own
    supervision, timeout, OOM report and log, and nothing new runs inside the image.)"""
    stem = f"jax-harness-job-{uuid.uuid4().hex[:12]}"
    out = []
    for rank, env in enumerate(envs):
        kwargs = run_kwargs(program, env, cache_dir, platform, user, mem_limit, name=f"{stem}-rank{rank}")
        # gloo finds its address from the host name: with the network disabled outright a container has no
        # /etc/hosts and nothing resolves; with network mode `none` and the host name `localhost` it is the
        # loopback the processes share.
        kwargs.pop("network_disabled", None)
        if rank:
            kwargs["network_mode"] = f"container:{stem}-rank0"
        else:
            kwargs["hostname"] = "localhost"
        out.append(kwargs)
    return out


def run_job_containers(environment: DockerEnvironment, program: Program, envs: list[dict[str, str]],
                       cache_dir: Path, log_paths: list[Path], timeout_s: float,
                       peer_grace_s: float = PEER_GRACE_S) -> list[ProcessOutcome]:
    """Run a job's containers: process 0's first (the others join its network once it runs), each waited
    for in its own thread with the run's timeout; once one has failed, or all but one have ended well, the
    rest are killed `peer_grace_s` later. Every container is removed when this returns."""
    kwargs = job_kwargs(program, envs, cache_dir, environment.platform, environment.user, environment.mem_limit)
    names = [k["name"] for k in kwargs]
    command = container_command(program, timeout_s=timeout_s)
    outcomes: list[ProcessOutcome | None] = [None] * len(kwargs)
    first_running = threading.Event()
    done = threading.Condition()

    def run(rank: int) -> None:
        started = first_running.set if rank == 0 else None
        try:
            outcome = run_container(environment.client, environment.image, command, kwargs[rank],
                                    Path(log_paths[rank]), timeout_s, gpu=environment.platform == Platform.CUDA,
                                    started=started)
        except BaseException as exc:  # noqa: BLE001 - told as this process's failure, never lost in a thread
            outcome = ProcessOutcome(None, 0.0, reason=f"docker: {_one_line(exc)}")
        finally:
            first_running.set()
        with done:
            outcomes[rank] = outcome
            done.notify_all()

    environment._running.update(names)
    threads = [threading.Thread(target=run, args=(0,), daemon=True)]
    threads[0].start()
    try:
        first_running.wait(timeout_s)
        for rank in range(1, len(kwargs)):
            threads.append(threading.Thread(target=run, args=(rank,), daemon=True))
            threads[-1].start()
        stopped: dict[int, str] = {}
        deadline = None
        with done:
            while any(o is None for o in outcomes):
                ended = [o for o in outcomes if o is not None]
                failed = next((i for i, o in enumerate(outcomes) if o is not None and not o.ok), None)
                if deadline is None and (failed is not None or (len(ended) == len(outcomes) - 1 and len(outcomes) > 1)):
                    deadline = time.monotonic() + peer_grace_s
                    why = (f"stopped {peer_grace_s:g} s after process {failed} failed ({outcomes[failed].reason})"
                           if failed is not None else f"{AFTER_PEERS} ({peer_grace_s:g} s after the last one)")
                if deadline is not None and time.monotonic() >= deadline:
                    for rank, outcome in enumerate(outcomes):
                        if outcome is None and rank not in stopped:
                            stopped[rank] = why
                            _kill_named(environment.client, names[rank])
                    deadline = float("inf")
                done.wait(0.2 if deadline is not None else 1.0)
    finally:
        for thread in threads:
            thread.join()
        environment._running.difference_update(names)
    return [ProcessOutcome(None, o.duration_s, timed_out=True, reason=stopped[rank])
            if rank in stopped and not o.ok else o for rank, o in enumerate(outcomes)]


def _kill_named(client, name: str) -> None:
    try:
        client.containers.get(name).kill()
    except (DockerException, requests.RequestException):
        pass  # it ended meanwhile
