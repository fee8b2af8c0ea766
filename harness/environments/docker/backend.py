"""The docker backend: finds or builds an image per (JAX version, platform, Python), probes it, and gives
its Environment; checks the daemon, the base image and the GPUs the runtime gives.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterator

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound
from docker.models.images import Image

from harness.inputs.dependencies import Requirements, Sources
from harness.environments.base import Backend, BackendOptions, Environment, Say, _quiet
from harness.environments.docker.containers import SCRIPT_MOUNT, _one_line, run_container, run_kwargs
from harness.environments.docker.environment import DockerEnvironment
from harness.environments.docker.gpu_probe import (CUDA_PROBE, GPU_LIST_TIMEOUT_S, NO_CUDA_DEVICE, NO_GPU,
                                                   gpu_list_kwargs)
from harness.environments.docker.images import (DEFAULT_PYTHON, OFFLINE_BASE_IMAGE, OFFLINE_BASE_IMAGES,
                                                OFFLINE_PYTHONS, default_base_images, dockerfile_for, image_tag,
                                                offline_fix, with_own_packages, write_context)
from harness.environments.docker.reaping import LABEL, reap_orphans
from harness.environments.gpus import CONTAINER_ADVICE, GpuCount, parse_gpu_list
from harness.environments.locking import held
from harness.environments.process import PROBE, log_tail
from harness.environments.wheelhouse import MANYLINUX_X86_64, Wheelhouse
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable
from harness.core.kinds import Platform
from harness.core.platforms import DeviceProbe, describe
from harness.inputs.pythons import NoPython, PythonChoice, PythonChooser, PythonVersion

STATE_DIR = Path(os.environ.get("HARNESS_DOCKER_DIR", Path.home() / ".cache" / "jax-cache-harness" / "docker"))
PROBE_TIMEOUT_S = 300.0


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


def _id(image: Image) -> str:
    """An image the daemon gave has an id (docker's types allow none)."""
    if image.id is None:
        raise EnvironmentUnavailable(f"docker: image {image.tags} has no id")
    return image.id


class DockerBackend(Backend):
    """Images from dockerfiles/Dockerfile.<platform>, wheels from a host-side wheelhouse, runs in containers."""

    name = "docker"
    runs_on_host = False

    def __init__(self, base_image: str | None = None, python_version: str | None = None,
                 rebuild: bool = False, wheelhouse: Path | None = None, state_dir: Path = STATE_DIR,
                 client: docker.DockerClient | None = None,
                 release_date: Callable[[str], Any] | None = None,
                 base_images: dict[Platform, str] | None = None, mem_limit: str | None = None,
                 user: str | None = None, pythons: PythonChooser | None = None,
                 requirements: Requirements = Requirements(), sources: Sources = Sources()):
        self.base_image, self.rebuild = base_image, rebuild
        self.requirements = requirements  # the script's own, resolved with each jax into its image
        # The user's own packages (--with-editable): built as wheels on the host, their dependencies resolved
        # with each jax, installed after it; the image's tag names their content digests.
        self.sources = sources
        # The images' Python per release, chosen as for venvs (harness/inputs/pythons.py) among those the
        # offline base images provide; python_version (docker.python) pins it.
        pinned = PythonVersion.parse(python_version) if python_version else None
        self.pythons: PythonChooser = pythons or PythonChooser(PythonVersion.parse(DEFAULT_PYTHON), lambda _v: None,
                                                pinned=pinned, provided=OFFLINE_PYTHONS)
        self.python_version = python_version or "auto"
        self.state_dir = Path(state_dir)
        self.wheelhouse = Wheelhouse(Path(wheelhouse) if wheelhouse else self.state_dir / "wheelhouse")
        self.release_date = release_date
        self._base_images = base_images
        self.mem_limit = mem_limit
        self.user = user or f"{os.getuid()}:{os.getgid()}"
        self._client = client
        self._bases: dict[tuple[Platform, str], Image] = {}
        self._has_python: dict[tuple[str, str], bool] = {}  # (base image id, "3.N")
        self._rebuilt: set[tuple[str, Platform]] = set()
        self.builds = 0  # images built by this backend (a warm re-sweep builds none)

    @classmethod
    def from_options(cls, options: BackendOptions) -> DockerBackend:
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
                   requirements=options.requirements, sources=options.sources)

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
        if describe(platform).probe == DeviceProbe.GPUS:
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
        base_name = base.tags[0] if base.tags else _id(base)
        # Before any download or build: an image whose Python cannot install the wheels is never built.
        self._require_python(base, base_name, choice, jax_version, platform)
        extra = f"-req{self.requirements.digest}" if self.requirements else ""
        extra += f"-src{self.sources.digest}" if self.sources.editables else ""  # as a venv's folder
        log = self.state_dir / "logs" / f"jax-{jax_version}-{platform}-py{python}{extra}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        cutoff = self.release_date(jax_version) if self.release_date else None
        # --rebuild means once per sweep: a version prepared again (another mesh, a bisection step)
        # reuses what this backend just rebuilt.
        rebuild = self.rebuild and (jax_version, platform) not in self._rebuilt
        own = self._own_wheels(log)
        lock = self.wheelhouse.lock(jax_version, platform, python, cutoff, log, refresh=rebuild,
                                    extra=self.requirements, local=own)
        dockerfile = dockerfile_for(platform)
        dockerfile_text = with_own_packages(dockerfile.read_text(), own)
        tag = image_tag(jax_version, platform, python, dockerfile_text, _id(base), lock, self.requirements,
                        self.sources.editable_digests if own else ())
        facts: dict[str, Any] = {"base_image": base_name, "base_image_id": _id(base),
                                 "exclude_newer": cutoff.isoformat() if cutoff else None,
                                 "python_choice": choice.recorded()}
        if self.requirements:
            facts["requirements"] = list(self.requirements.items)
        if own:
            facts["own_packages"] = [w.name for w in own]
        if not rebuild and self._image_exists(tag):
            facts["reused"] = True
        else:
            wheels = self.wheelhouse.files_for(lock, jax_version, platform, python, log)
            previous = self._image_id(tag)
            facts["build_s"] = self._build(tag, dockerfile_text, base_name, lock, wheels, jax_version,
                                           platform, python, log, say, nocache=rebuild, own=own)
            facts["reused"] = False
            self._rebuilt.add((jax_version, platform))
            if previous and previous != self._image_id(tag):
                self._discard(previous)  # the image --rebuild replaced would linger untagged
        return tag, facts, log

    def _own_wheels(self, log: Path) -> tuple[Path, ...]:
        """The wheels of the user's own packages, built once per content (their digests name them)."""
        digests = self.sources.editable_digests or tuple("" for _ in self.sources.editables)
        return tuple(self.wheelhouse.local_wheel(Path(folder), digest or "nodigest", log)
                     for folder, digest in zip(self.sources.editables, digests))

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
                facts: dict[str, Any] = json.loads(lines[-1])
                return facts
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
        counted_by = "a container with the GPUs requested (nvidia-smi -L)"
        image = self.base_image_for(Platform.CUDA, say, str(self.pythons.pinned or self.pythons.own))
        log = self.state_dir / "logs" / "gpus.log"
        kwargs = gpu_list_kwargs()
        outcome = run_container(self.client, _id(image), ["nvidia-smi", "-L"], kwargs, log, GPU_LIST_TIMEOUT_S)
        if not outcome.ok:
            last = (log_tail(log).strip().splitlines() or [""])[-1]
            problem = outcome.reason if last in outcome.reason else f"{outcome.reason}: {last}"
            return GpuCount(0, counted_by, problem, CONTAINER_ADVICE)
        return GpuCount(parse_gpu_list(log.read_text(errors="replace")), counted_by, advice=CONTAINER_ADVICE)

    def base_image_for(self, platform: Platform, say: Say = _quiet, python: str = DEFAULT_PYTHON) -> Image:
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

    def _require_python(self, base: Image, base_name: str, choice: PythonChoice, jax_version: str,
                        platform: Platform) -> None:
        """EnvironmentUnavailable, naming the fix, when the base image has no python3.N (asked once
        per image and Python, in a throwaway container like the runs'). The cuda Dockerfile installs
        its Python itself, so a cuda base is not asked."""
        if describe(platform).container.network:  # the cuda Dockerfile: its own Python
            return
        python = str(choice.version)
        key = (_id(base), python)
        if key not in self._has_python:
            with tempfile.TemporaryDirectory(prefix="jax-harness-python-") as tmp:
                os.chmod(tmp, 0o755)
                kwargs = run_kwargs(Path(tmp) / "none.py", {}, Path(tmp), platform, self.user)
                outcome = run_container(self.client, _id(base), [f"python{python}", "-c", "pass"], kwargs,
                                        Path(tmp) / "python.log", PROBE_TIMEOUT_S)
            self._has_python[key] = outcome.ok
        if not self._has_python[key]:
            raise EnvironmentUnavailable(f"docker: base image {base_name} has no python{python}, the Python "
                                         f"chosen for jax {jax_version} ({choice.reason}); "
                                         f"{offline_fix(python, configured=bool(self.base_image))}")

    def _get_or_pull(self, name: str, say: Say, pull: bool = True) -> Image | Exception:
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

    def _build(self, tag: str, dockerfile_text: str, base_name: str, lock: str, wheels: list[Path],
               jax_version: str, platform: Platform, python: str, log: Path, say: Say,
               nocache: bool = False, own: tuple[Path, ...] = ()) -> float:
        say(f"jax {jax_version}: building image {tag} on {base_name} (log {log})")
        start = time.monotonic()
        error = ""
        with tempfile.TemporaryDirectory(prefix="jax-harness-context-") as tmp:
            context = Path(tmp)
            write_context(context, dockerfile_text, lock, wheels, own)
            with open(log, "a") as out:
                try:
                    stream = self.client.api.build(
                        path=str(context), tag=tag, rm=True, forcerm=True, pull=False,
                        nocache=nocache, decode=True,
                        buildargs={"BASE_IMAGE": base_name, "PYTHON_VERSION": python,
                                   "JAX_VERSION": jax_version},
                        # cpu installs need nothing from outside; the cuda file may apt-get a Python.
                        network_mode=None if describe(platform).container.network else "none",
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
                                    probe_log, PROBE_TIMEOUT_S, gpu=describe(platform).container.gpus)
        output = log_tail(probe_log)
        if not outcome.ok:
            raise EnvironmentUnavailable(f"jax {jax_version} does not start in {tag}: "
                                         f"{outcome.reason or 'probe failed'}", log_tail=output)
        try:
            facts: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
            return facts
        except (IndexError, json.JSONDecodeError):
            raise EnvironmentUnavailable(f"unreadable probe output from {tag}", log_tail=output) from None
