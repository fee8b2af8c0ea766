"""The images: the offline Debian base image and its Pythons, the default bases, the Dockerfile of a
platform, the tag that changes exactly when an image's inputs change, and the build context that
hands the wheelhouse's wheels to the build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from harness.inputs.dependencies import Requirements
from harness.core.errors import UserError
from harness.core.files import package_path
from harness.core.kinds import Platform
from harness.core.platforms import describe
from harness.inputs.pythons import PythonVersion

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
    # Its own process group: on Ctrl-C or SIGTERM the whole group (debootstrap and what it started) is told to
    # stop, and the script's trap removes its half-made rootfs once debootstrap has ended.
    script_run = subprocess.Popen(["bash", str(script), *([image] if image else [])], env=env,
                                  start_new_session=True)
    try:
        return script_run.wait()
    except BaseException:
        _stop_group(script_run, BUILD_STOP_GRACE_S)
        raise


BUILD_STOP_GRACE_S = 60.0  # the script's trap: debootstrap ends and unmounts, then the rootfs is removed


def _stop_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to `proc`'s process group, then SIGKILL if it has not ended within `grace_s`."""
    for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


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
    return {platform: slim for platform in Platform}


# Package data (pyproject.toml), so an installed harness (pipx, uv tool) finds them as a checkout does.
DOCKERFILES = Path(os.environ.get("HARNESS_DOCKERFILES") or package_path("harness.environments", "dockerfiles"))


def dockerfile_for(platform: Platform) -> Path:
    return DOCKERFILES / f"Dockerfile.{describe(platform).install.flavour}"


def image_tag(jax_version: str, platform: Platform, python_version: str, dockerfile_text: str,
              base_image_id: str, lock_text: str, requirements: Requirements = Requirements(),
              own_digests: tuple[str, ...] = ()) -> str:
    """A tag that changes exactly when something that goes into the image changes (the lock already
    pins the script's requirements; they are named too, so that a set resolving to the same pins
    still says what it asked for; `own_digests`: the content digests of the user's own packages)."""
    identity: dict[str, object] = {"dockerfile": dockerfile_text, "base": base_image_id, "lock": lock_text,
                                   "python": python_version, "platform": str(platform), "jax": jax_version}
    if requirements:  # absent when there are none: images built before requirements keep their tags
        identity["requirements"] = list(requirements.items)
    if own_digests:  # the same: absent without --with-editable
        identity["own_packages"] = list(own_digests)
    inputs = json.dumps(identity, sort_keys=True)
    digest = hashlib.sha256(inputs.encode()).hexdigest()[:12]
    flavour = describe(platform).install.flavour
    return f"{IMAGE_REPO}:jax{jax_version}-{flavour}-py{python_version}-{digest}"


OWN_FOLDER = "own"  # the build context's folder of the user's own packages' wheels


def with_own_packages(dockerfile_text: str, own: tuple[Path, ...]) -> str:
    """The Dockerfile with the user's own packages (--with-editable, built as wheels on the host) installed
    after jax, without dependencies (the lock has them, resolved with the release); unchanged without any,
    so that the images without them keep their tags."""
    if not own:
        return dockerfile_text
    wheels = " ".join(f"/opt/harness/{OWN_FOLDER}/{w.name}" for w in own)
    return dockerfile_text + (
        "\n# Your own package(s) (--with-editable), built as wheels on the host, after jax; their dependencies\n"
        "# are in requirements.lock, resolved with the release's.\n"
        f"COPY {OWN_FOLDER}/ /opt/harness/{OWN_FOLDER}/\n"
        "RUN /opt/jax/bin/pip install --no-index --no-deps --no-cache-dir --disable-pip-version-check "
        f"{wheels}\n")


def write_context(context: Path, dockerfile_text: str, lock: str, wheels: list[Path],
                  own: tuple[Path, ...] = ()) -> None:
    """The build context: the Dockerfile, the pinned list, and only the wheels it pins (and the user's own
    packages' wheels, in their folder)."""
    if own:
        (context / OWN_FOLDER).mkdir()
        for wheel in own:
            shutil.copy2(wheel, context / OWN_FOLDER / wheel.name)
    (context / "Dockerfile").write_text(dockerfile_text)
    (context / "requirements.lock").write_text(lock)
    folder = context / "wheels"
    folder.mkdir()
    for wheel in wheels:
        try:
            os.link(wheel, folder / wheel.name)  # no copy of 100 MB wheels when on one filesystem
        except OSError:
            shutil.copy2(wheel, folder / wheel.name)
