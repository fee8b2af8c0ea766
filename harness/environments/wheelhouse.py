"""A host-side wheelhouse: the exact wheels an image needs, fetched on the host, installed offline.

Why on the host: image builds here have no network, and where they do, HTTPS goes through a
TLS-intercepting proxy whose CA only the host trusts. The host resolves each JAX version's
dependencies as of its release date (uv, `--exclude-newer`), keeps that pinned list (a *lock*),
downloads the pinned wheels once into a folder shared by all versions, and the image build installs
them with `pip install --no-index`. A warm second sweep touches neither the network nor pip.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from harness.inputs.dependencies import Requirements
from harness.environments.locking import held
from harness.environments.process import log_tail
from harness.environments.gpus import driver_cuda_for
from harness.environments.requirements import exclude_newer, find_links_for, jax_requirements, resolver_reason
from harness.environments.venv import find_uv
from harness.core.errors import EnvironmentUnavailable
from harness.core.kinds import Platform
from harness.core.platforms import describe
from harness.inputs.pythons import PythonVersion
from harness.inputs.versions import target_tags

# The images are glibc Linux on x86_64: Debian bookworm (glibc 2.36) and Ubuntu 22.04 (2.35) both
# run manylinux_2_28 wheels and everything older. pip does not widen a --platform to older glibc
# versions by itself, so every accepted tag is listed (newest first).
GLIBC_MAX = 28
MANYLINUX_X86_64 = tuple(
    [f"manylinux_2_{minor}_x86_64" for minor in range(GLIBC_MAX, 4, -1)]
    + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
)
UV_WHEEL_PLATFORM = f"x86_64-manylinux_2_{GLIBC_MAX}"

# Before 0.4.26 the CUDA jaxlib wheels (`jaxlib==V+cuda12.cudnn89`) lived only on this page.

# pip settings of the host that must not reach the downloads (this machine's global pip.conf adds a
# constraints file and a local find-links folder); index and certificate settings are kept.
_PIP_KEEP = {"PIP_CERT", "PIP_CLIENT_CERT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST",
             "PIP_DEFAULT_TIMEOUT", "PIP_PROXY", "PIP_RETRIES", "PIP_DISABLE_PIP_VERSION_CHECK"}


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503) name
    version: str

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


def image_tags(python_version: str, wheel_platforms: tuple[str, ...] = MANYLINUX_X86_64) -> frozenset[Tag]:
    """Every wheel tag a CPython `python_version` ("3.11") in the images accepts."""
    return target_tags(PythonVersion.parse(python_version), wheel_platforms)


def parse_lock(text: str) -> list[Pin]:
    """`name==version` lines (uv's output without annotations) -> pins; anything else is an error."""
    pins = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            raise ValueError(f"not a pinned requirement: {raw!r} ({exc})") from None
        specs = list(req.specifier)
        if len(specs) != 1 or specs[0].operator != "==":
            raise ValueError(f"not a pinned requirement: {raw!r}")
        pins.append(Pin(canonicalize_name(req.name), specs[0].version))
    return pins


def pick_wheels(pins: list[Pin], files: list[str], tags: AbstractSet[Tag]) -> tuple[dict[Pin, str], list[Pin]]:
    """Match each pin to a wheel file name that installs on the target; also return the unmatched."""
    by_pin: dict[Pin, str] = {}
    for name in sorted(files):
        try:
            dist, version, _build, wheel_tags = parse_wheel_filename(name)
        except InvalidWheelFilename:
            continue
        if not wheel_tags & tags:
            continue
        for candidate in pins:
            # Exact version equality, local part included: `jaxlib==0.4.25` is the CPU wheel and
            # `jaxlib==0.4.25+cuda12.cudnn89` the CUDA one.
            if candidate.name == canonicalize_name(dist) and Version(candidate.version) == version:
                by_pin.setdefault(candidate, name)
    return by_pin, [p for p in pins if p not in by_pin]


def lock_command(uv: str, requirements: list[str], python_version: str, output: Path,
                 cutoff: datetime | None, find_links: list[str]) -> list[str]:
    cmd = [uv, "pip", "compile", "-", "--no-config", "--quiet", "--no-header", "--no-annotate",
           "--only-binary", ":all:", "--python-version", python_version,
           "--python-platform", UV_WHEEL_PLATFORM, "-o", str(output)]
    newer = exclude_newer(cutoff)
    if newer is not None:
        cmd += ["--exclude-newer", newer]
    for link in find_links:
        cmd += ["--find-links", link]
    return cmd


def download_command(requirements_file: Path, dest: Path, python_version: str,
                     find_links: list[str]) -> list[str]:
    major, minor = python_version.split(".")[:2]
    cmd = [*_pip(), "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off",
           "--python-version", f"{major}.{minor}", "--implementation", "cp", "--abi", f"cp{major}{minor}",
           "-d", str(dest), "-r", str(requirements_file)]
    for platform in MANYLINUX_X86_64:
        cmd += ["--platform", platform]
    for link in find_links:
        cmd += ["--find-links", link]
    return cmd


def host_pip_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The host's environment for pip and uv, without the machine's pip config and local wheels,
    keeping its CA bundle (pip uses its own certifi bundle unless told about the system's)."""
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in environ.items() if not k.startswith("PIP_") or k in _PIP_KEEP}
    env["PIP_CONFIG_FILE"] = os.devnull
    if "PIP_CERT" not in env:
        bundle = environ.get("REQUESTS_CA_BUNDLE") or environ.get("SSL_CERT_FILE")
        if bundle:
            env["PIP_CERT"] = bundle
    return env


def _pip() -> list[str]:
    # The harness's own venv may be a uv venv without pip: then let uv run pip.
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    return [find_uv(), "tool", "run", "pip"]


class Wheelhouse:
    """`root/wheels/` (shared by every version) and `root/locks/` (one pinned list per version)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.wheels = self.root / "wheels"
        self.locks = self.root / "locks"

    def lock(self, jax_version: str, platform: Platform, python_version: str,
             cutoff: datetime | None, log: Path, refresh: bool = False,
             extra: Requirements = Requirements(), local: tuple[Path, ...] = ()) -> str:
        """The pinned requirements for this version (and the script's `extra` requirements, and the
        dependencies of the `local` wheels (the user's own packages, built by local_wheel), resolved
        together with it as of the same date), resolved once and then read back. The local wheels
        themselves are not in the list: the image installs them after it (Dockerfile lines of
        images.local_steps)."""
        stamp = cutoff.strftime("%Y%m%d") if cutoff else "latest"
        cuda = driver_cuda_for(platform)
        requirements = jax_requirements(jax_version, platform, cuda)
        # An extra the host's driver chose (cuda13 for CUDA 13) resolves to another list than the release's default.
        install = describe(platform).install
        chosen = install.extra_for(jax_version, cuda)
        suffix = (f"-{chosen}" if chosen != install.extra_for(jax_version) else "") + (f"-req{extra.digest}" if extra else "")
        if local:
            named = "\n".join(f"{w.parent.name}/{w.name}" for w in local)  # the folders name the contents
            suffix += "-own" + hashlib.sha256(named.encode()).hexdigest()[:10]
        path = self.locks / f"jax-{jax_version}-{platform}-py{python_version}-{stamp}{suffix}.txt"
        if path.exists() and not refresh:
            return path.read_text()
        self.locks.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        own = {canonicalize_name(parse_wheel_filename(w.name)[0]): w for w in local}
        requirements = [*requirements, *extra.items,
                        *(f"{name} @ {wheel.resolve().as_uri()}" for name, wheel in own.items())]
        cmd = lock_command(find_uv(), requirements, python_version, tmp, cutoff,
                           find_links_for(jax_version, platform))
        what = f"jax {jax_version}" + (f" with {', '.join([*extra.items, *own])}" if extra or own else "")
        _run_logged(cmd, log, f"could not resolve the dependencies of {what}",
                    stdin="\n".join(requirements) + "\n", cwd=self.root)
        text = _without(tmp.read_text(), set(own))
        parse_lock(text)  # refuse to keep a list the build could not use
        tmp.write_text(text)
        tmp.replace(path)
        return text

    def local_wheel(self, folder: Path, digest: str, log: Path) -> Path:
        """The wheel of the user's package in `folder` (its content digest `digest`), built on the host once
        per content (`uv build --wheel`: the image build has no network for a build backend)."""
        out = self.root / "local" / f"{Path(folder).name}-{digest}"
        built = sorted(out.glob("*.whl")) if out.is_dir() else []
        if built:
            return built[0]
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        _run_logged([find_uv(), "build", "--wheel", "--no-config", "--quiet", "--out-dir", str(tmp), str(folder)],
                    log, f"could not build a wheel of your package {folder}")
        wheels = sorted(tmp.glob("*.whl"))
        if len(wheels) != 1:
            raise EnvironmentUnavailable(f"building {folder} gave {len(wheels)} wheels, not one ({log})",
                                         log_tail=log_tail(log))
        if not out.exists():  # another sweep's build of the same content may have landed first
            tmp.replace(out)
        return min(out.glob("*.whl"))

    def files_for(self, lock_text: str, jax_version: str, platform: Platform, python_version: str,
                  log: Path) -> list[Path]:
        """Wheel paths for every pin, downloading only the ones the wheelhouse lacks."""
        pins = parse_lock(lock_text)
        tags = image_tags(python_version)
        self.wheels.mkdir(parents=True, exist_ok=True)
        found, missing = pick_wheels(pins, os.listdir(self.wheels), tags)
        if missing:
            # Shared by every version: two images built at once must not download into it together.
            with held(self.root / "download.lock", "wheels in the wheelhouse"):
                found, missing = pick_wheels(pins, os.listdir(self.wheels), tags)  # the other's, now here
                if missing:
                    self._download(missing, jax_version, platform, python_version, log)
                    found, missing = pick_wheels(pins, os.listdir(self.wheels), tags)
            if missing:
                raise EnvironmentUnavailable(
                    f"no wheel for {', '.join(map(str, missing))} on CPython {python_version} "
                    f"manylinux x86_64 (jax {jax_version})", log_tail=log_tail(log))
        return [self.wheels / found[p] for p in pins]

    def _download(self, missing: list[Pin], jax_version: str, platform: Platform, python_version: str,
                  log: Path) -> None:
        wanted = self.root / f"download-{os.getpid()}.txt"
        wanted.write_text("".join(f"{p}\n" for p in missing))
        try:
            _run_logged(download_command(wanted, self.wheels, python_version,
                                         find_links_for(jax_version, platform)),
                        log, f"could not download wheels for jax {jax_version}")
        finally:
            wanted.unlink(missing_ok=True)


def _without(lock_text: str, names: set[str]) -> str:
    """The lock without the lines of the user's own packages (`name @ file:///...whl`)."""
    if not names:
        return lock_text
    kept = []
    for raw in lock_text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-") and canonicalize_name(Requirement(line).name) in names:
            continue
        kept.append(raw)
    return "".join(f"{line}\n" for line in kept)


def _run_logged(cmd: list[str], log: Path, failure: str, stdin: str | None = None,
                cwd: Path | None = None) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        proc = subprocess.run(cmd, input=stdin, text=True, stdout=out, stderr=subprocess.STDOUT,
                              env=host_pip_environment(), cwd=cwd, check=False)
    if proc.returncode != 0:
        why = resolver_reason(log_tail(log, chars=20_000))  # uv's reason, when it gave one
        raise EnvironmentUnavailable(f"{failure}: {why or 'see the log'} ({log})", log_tail=log_tail(log))
