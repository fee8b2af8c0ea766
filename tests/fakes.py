"""The stand-ins the unit tests share, each written once: a package index, a backend and an environment
that need no JAX, a Docker client with the SDK's spec, and a tiny git repository of a fake `jax`.
Fakes stand in for pure logic only: a test about JAX itself uses a real release (tests/integration/)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from unittest import mock

from docker.errors import APIError, ImageNotFound
from docker.models.containers import Container, ContainerCollection
from docker.models.images import Image, ImageCollection

import docker
from harness.core.runs import ProcessOutcome
from harness.environments.base import Backend, Environment
from harness.inputs.config import Repro
from harness.inputs.versions import Release, parse_pypi

# ---------------------------------------------------------------- the package index


class FakeIndex:
    """The package index a test names, answering as PyPIIndex does: each package's releases by version;
    release_date from jax's upload times where `dated`, else None (as for an index without dates)."""

    def __init__(self, releases: dict[str, dict[str, Release]], dated: bool = False):
        self.data, self.dated = releases, dated

    @classmethod
    def listing(cls, jax, jaxlib, yanked=()) -> FakeIndex:
        """jax and jaxlib releases of these versions, all of one day; jax's `yanked` ones yanked."""
        day = datetime(2024, 1, 1, tzinfo=timezone.utc)
        return cls({"jax": {v: Release(v, day, v in yanked) for v in jax},
                    "jaxlib": {v: Release(v, day) for v in jaxlib}})

    @classmethod
    def of_wheels(cls, jaxlib: dict[str, list[int]], extra: dict[str, list[str]] | None = None) -> FakeIndex:
        """The releases as PyPI lists them: jax is pure Python, jaxlib has a wheel per CPython 3.`minor`
        (`extra`: more file names of a release)."""
        return cls({
            "jax": parse_pypi(json.dumps({"releases": {v: [{"filename": f"jax-{v}-py3-none-any.whl",
                                                            "requires_python": f">=3.{min(p)}"}]
                                                       for v, p in jaxlib.items()}}).encode()),
            "jaxlib": parse_pypi(json.dumps({"releases": {v: wheels("jaxlib", v, p, (extra or {}).get(v, []))
                                                          for v, p in jaxlib.items()}}).encode()),
        })

    @classmethod
    def published(cls, versions) -> FakeIndex:
        """jax and jaxlib releases of `versions`, one a day from 2024-01-01 in that order, dated."""
        releases = {v: Release(v, datetime(2024, 1, 1 + i, tzinfo=timezone.utc)) for i, v in enumerate(versions)}
        return cls({"jax": releases, "jaxlib": releases}, dated=True)

    def releases(self, package):
        return self.data[package]

    def release_date(self, version):
        return self.data["jax"][version].uploaded if self.dated else None


def wheels(package: str, version: str, pythons: list[int], extra: list[str] = ()) -> list[dict]:
    """PyPI JSON `files` of a release: Linux x86_64 wheels per CPython, plus other files."""
    names = [f"{package}-{version}-cp3{m}-cp3{m}-manylinux_2_27_x86_64.whl" for m in pythons]
    names += [f"{package}-{version}-cp3{m}-cp3{m}-win_amd64.whl" for m in pythons]
    names += list(extra) + [f"{package}-{version}.tar.gz"]
    return [{"filename": n, "upload_time_iso_8601": "2026-01-01T00:00:00Z", "yanked": False,
             "requires_python": f">=3.{min(pythons)}"} for n in names]


# The releases most unit tests resolve against: the seed's range, a yanked one, an rc, a dev release, a
# jax without its jaxlib (0.4.34).
INDEX = FakeIndex.listing(
    jax=["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31", "0.4.32rc1", "0.4.33.dev1",
         "0.4.9", "0.5.0", "0.4.34"],
    jaxlib=["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31", "0.4.32rc1", "0.4.9",
            "0.5.0", "0.4.33.dev1"],
    yanked=["0.4.30"],
)


# ---------------------------------------------------------------- environments and backends

# The built-in repro as a scripted environment runs it: never (its path is any file).
REPRO = Repro("shard_map_grad", __file__, builtin=True)


class ScriptedEnvironment(Environment):
    """Writes the entry `key_for(seed)` into the cache, like a JAX process would."""

    jax_version = "0.4.28"

    def __init__(self, key_for, fail_seeds=(), delay=0.0):
        self.key_for, self.fail_seeds, self.delay = key_for, set(fail_seeds), delay
        self.calls = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()

    def run(self, program, env, cache_dir, log_path, timeout_s):
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.calls.append((list(program.args), dict(env)))
        seed = int(env["PYTHONHASHSEED"])
        time.sleep(self.delay)
        log_path.write_text(f"seed {seed}\n")
        (cache_dir / f"jit_f-{self.key_for(seed):064x}").write_text("x")
        with self.lock:
            self.active -= 1
        if seed in self.fail_seeds:
            return ProcessOutcome(1, 0.01, reason="exit code 1")
        return ProcessOutcome(0, 0.01)

    def describe(self):
        return {"backend": "scripted"}


class FakeBackend(Backend):
    """prepare(version) does what `plan[version]` says: raise that exception or give that environment; a
    version the plan does not name raises `failure` where one is given, else gets `default(version)` (by
    default a scripted environment whose runs all write one key: clean). Every prepare is counted.
    `name` is the backend it stands in for: "local" has the CLI ask `installed_version`, not the index."""

    def __init__(self, plan: dict | None = None, *, failure: BaseException | None = None,
                 default: Callable[[str], Environment] | None = None, name: str = "venv",
                 installed: str | None = None):
        self.plan, self.failure, self.prepared = dict(plan or {}), failure, []
        self.default = default or (lambda version: ScriptedEnvironment(lambda seed: 1))
        self.name, self.installed = name, installed

    def installed_version(self) -> str | None:
        return self.installed

    def prepare(self, jax_version, platform, say=None):
        self.prepared.append(jax_version)
        planned = self.plan.get(jax_version)
        if isinstance(planned, BaseException):
            raise planned
        if planned is not None:
            return planned
        if self.failure is not None:
            raise self.failure
        return self.default(jax_version)


# ---------------------------------------------------------------- a Docker client with the SDK's spec

# What the facts probe prints in a fake container.
FACTS = {"python": "3.11.2", "jax": "0.4.28", "jaxlib": "0.4.28", "numpy": "1.26.4"}


def fake_image(image_id: str, tags: list[str]) -> Image:
    image = mock.create_autospec(Image, instance=True)
    image.id, image.tags = image_id, tags
    return image


def fake_container(status: int = 0, logs: bytes = b"", oom: bool = False) -> Container:
    container = mock.create_autospec(Container, instance=True)
    container.attrs = {"State": {"OOMKilled": oom, "ExitCode": status}}
    container.wait.return_value = {"StatusCode": status, "Error": None}
    # The SDK gives the whole output as bytes, or with stream=True as an iterator of chunks.
    container.logs.side_effect = lambda **kw: iter([logs[:3], logs[3:]]) if kw.get("stream") else logs
    return container


def fake_client(images: dict[str, Image] | None = None, pull_error: str | None = None):
    """A client whose images.get knows `images` (by name or tag) and whose builds add the tag."""
    client = mock.create_autospec(docker.DockerClient, instance=True)
    client.api = mock.create_autospec(docker.APIClient, instance=True)
    client.images = mock.create_autospec(ImageCollection, instance=True)
    client.containers = mock.create_autospec(ContainerCollection, instance=True)
    known = dict(images or {})

    def get(name):
        if name in known:
            return known[name]
        raise ImageNotFound(f"no such image: {name}")

    def build(**kwargs):
        previous = known.get(kwargs["tag"])
        known[kwargs["tag"]] = fake_image("sha256:rebuilt" if previous else "sha256:built", [kwargs["tag"]])
        return iter([{"stream": "Step 1/2 : FROM base\n"}, {"stream": "Step 2/2 : RUN pip install\n"},
                     {"stream": "Successfully built abc\n"}])

    client.images.get.side_effect = get
    client.images.pull.side_effect = APIError(pull_error or "pull access denied")
    client.api.build.side_effect = build
    client.containers.create.side_effect = lambda *a, **k: fake_container(
        logs=(json.dumps(FACTS) + "\n").encode())
    client.known = known
    return client


BASE = {"jax-harness-base:bookworm": fake_image("sha256:base", ["jax-harness-base:bookworm"])}


# ---------------------------------------------------------------- a git repository of a fake `jax`

ORDERED = 'def lower(names):\n    return ",".join(names)\n'
SET_ORDERED = 'def lower(names):\n    return ",".join(set(names) - set())\n'
BROKEN = 'def lower(names) oops\n'
VERSION_PY = '_version = "0.1.9"\n_minimum_jaxlib_version = "0.1.0"\n'


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo: Path, message: str, lowering: str | None = None) -> str:
    if lowering is not None:
        (repo / "jax" / "__init__.py").write_text(lowering)
    (repo / "NOTES").write_text(message)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def fake_jax_repository(work: Path, bare: Path) -> dict:
    """0.1.0 ordered; set-ordered from `bad`; an unimportable commit inside; ordered again from `fix`.
    Made in `work`, cloned bare to `bare` (the repository a bisection reads)."""
    (work / "jax").mkdir()
    (work / "jax" / "version.py").write_text(VERSION_PY)
    git(work, "init", "-q", "-b", "main")
    commit(work, "release 0.1.0", ORDERED)
    git(work, "tag", "jax-v0.1.0")
    for i in range(9):
        commit(work, f"filler {i}")
    bad = commit(work, "iterate the names as a set", SET_ORDERED)
    broken = commit(work, "a commit that cannot be imported", BROKEN)
    commit(work, "repair the import", SET_ORDERED)
    for i in range(6):
        commit(work, f"more filler {i}")
    git(work, "tag", "jax-v0.1.1")
    for i in range(4):
        commit(work, f"later filler {i}")
    fix = commit(work, "order the names again", ORDERED)
    for i in range(7):
        commit(work, f"last filler {i}")
    git(work, "tag", "jax-v0.1.2")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return {"repo": bare, "bad": bad, "broken": broken, "fix": fix}
