"""--backend docker with your own package (--with-editable): the pieces that need no engine. The image's
Dockerfile installs the package's wheel after jax (unchanged without one, so other images keep their tags),
the tag follows the package's content, the lock keeps the package's dependencies but not the package, and
the backend is made instead of refused (tests/integration/test_docker_own_package.py builds a real one)."""

from __future__ import annotations

from pathlib import Path

from harness.environments import make_backend
from harness.environments.base import BackendOptions
from harness.environments.docker import DockerBackend
from harness.environments.docker.images import OWN_FOLDER, image_tag, with_own_packages, write_context
from harness.environments.wheelhouse import _without, parse_lock
from harness.inputs.dependencies import Sources
from harness.core.kinds import Platform

WHEEL = Path("/wh/local/mypkg-project-0123456789/mypkg-0.1-py3-none-any.whl")


def test_the_dockerfile_installs_the_wheel_after_jax_and_is_unchanged_without_one():
    text = "FROM base\nRUN pip install -r requirements.lock\n"
    assert with_own_packages(text, ()) == text
    with_own = with_own_packages(text, (WHEEL,))
    assert with_own.startswith(text) and f"COPY {OWN_FOLDER}/" in with_own
    assert "--no-index --no-deps" in with_own and f"/opt/harness/{OWN_FOLDER}/{WHEEL.name}" in with_own


def test_the_tag_follows_the_packages_content_and_is_unchanged_without_one():
    args = ("0.4.31", Platform.CPU, "3.11", "FROM base\n", "sha256:b", "jax==0.4.31\n")
    plain = image_tag(*args)
    assert image_tag(*args, own_digests=()) == plain
    one, edited = image_tag(*args, own_digests=("aaaa",)), image_tag(*args, own_digests=("bbbb",))
    assert len({plain, one, edited}) == 3


def test_the_lock_keeps_the_packages_dependencies_not_the_package():
    text = "jax==0.4.31\nmypkg @ file:///wh/local/mypkg-0.1-py3-none-any.whl\nnumpy==2.0.1\n"
    kept = _without(text, {"mypkg"})
    assert [str(p) for p in parse_lock(kept)] == ["jax==0.4.31", "numpy==2.0.1"]
    assert _without(text, set()) == text


def test_the_build_context_holds_the_wheel_in_its_own_folder(tmp_path):
    wheel = tmp_path / "mypkg-0.1-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    context = tmp_path / "context"
    context.mkdir()
    write_context(context, "FROM base\n", "jax==0.4.31\n", [], (wheel,))
    assert (context / OWN_FOLDER / wheel.name).read_bytes() == b"PK"


def test_docker_takes_your_package_instead_of_refusing_it(tmp_path):
    sources = Sources(editables=(str(tmp_path),), editable_digests=("0123456789",))
    backend = make_backend("docker", BackendOptions(sources=sources)).backend
    assert isinstance(backend, DockerBackend) and backend.sources.editables == (str(tmp_path),)
