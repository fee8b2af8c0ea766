"""Commit bisection inside a release boundary: the `jax/` package at a commit, run with a jaxlib release.

No checkout: `git archive <sha>:jax` works on a bare clone and reads nothing outside `jax/` (a clone
with large files missing elsewhere is fine). The archived package goes on PYTHONPATH ahead of the
release environment's site-packages, so that environment's jaxlib (and numpy...) serve it.

Which jaxlib: jax at a commit refuses a jaxlib older than its `_minimum_jaxlib_version` or newer than
its own version (jax/_src/lib/__init__.py), and was developed against jaxlib built at the same commit,
newer than any release before it; so the newest release environment it accepts is the closest.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Callable, Sequence

from packaging.version import InvalidVersion, Version

from harness.environments.base import Environment
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.model import CommitInfo
from harness.core.factors import RunVariation
from harness.core.runs import ProcessOutcome, Program

_VERSION_RE = re.compile(r'^_version\s*(?::\s*str\s*)?=\s*["\']([^"\']+)["\']', re.MULTILINE)
_MIN_JAXLIB_RE = re.compile(r'^_minimum_jaxlib_version\s*(?::\s*str\s*)?=\s*["\']([^"\']+)["\']', re.MULTILINE)


@dataclass(frozen=True)
class JaxSource:
    """What the archived jax/version.py says."""

    version: str  # e.g. 0.4.27 (the base the next release will have)
    minimum_jaxlib: str


def parse_version_py(text: str) -> JaxSource | None:
    version, minimum = _VERSION_RE.search(text), _MIN_JAXLIB_RE.search(text)
    if not version or not minimum:
        return None
    return JaxSource(version[1], minimum[1])


def _numeric(v: str) -> tuple[int, ...]:
    # jax compares the dotted numeric prefix only (0.4.27.dev2024... -> (0, 4, 27)).
    match = re.match(r"[0-9]+(?:\.[0-9]+)*", v)
    return tuple(int(x) for x in match[0].split(".")) if match else ()


def acceptable_jaxlibs(source: JaxSource, jaxlibs: Sequence[str]) -> list[str]:
    """The jaxlib releases this jax accepts, newest first (the one it was developed against is newer
    than any release; but a newer jaxlib may already lack a module the commit imports, so the caller
    falls back to the older ones)."""
    ok = [j for j in jaxlibs if _numeric(source.minimum_jaxlib) <= _numeric(j) <= _numeric(source.version)]
    return sorted(ok, key=Version, reverse=True)


def commit_label(source: JaxSource | None, sha: str) -> str:
    """A PEP 440 version naming the commit, so cells of commits read like releases in tables."""
    base = source.version if source else "0"
    try:
        Version(base)
    except InvalidVersion:
        base = "0"
    return f"{base}.dev0+g{sha[:10]}"


class GitRepo:
    """The few git plumbing commands the bisection needs; works on bare clones."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"--jax-repo: {self.path} does not exist")
        if self._git("rev-parse", "--git-dir", check=False).returncode != 0:
            raise UserError(f"--jax-repo: {self.path} is not a git repository")

    def _git(self, *args: str, check: bool = True, text: bool = True) -> subprocess.CompletedProcess[Any]:
        try:
            proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=text, check=False)
        except FileNotFoundError:
            raise UserError("--jax-repo: git is not installed (or not on PATH)") from None
        if check and proc.returncode != 0:
            err = proc.stderr if text else proc.stderr.decode(errors="replace")
            raise UserError(f"--jax-repo: git {' '.join(args)} failed: {err.strip().splitlines()[-1:]}")
        return proc

    def resolve(self, ref: str) -> str | None:
        proc = self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def remotes(self) -> list[str]:
        names: str = self._git("remote").stdout
        return names.split()

    def fetch(self, remote: str, ref: str) -> tuple[str | None, str]:
        """Fetch `ref` from `remote`: the commit it names there (FETCH_HEAD), or None and git's last
        line when that failed (no network, or no such ref on the remote)."""
        proc = self._git("fetch", "--quiet", remote, ref, check=False)
        if proc.returncode != 0:
            lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
            return None, lines[-1] if lines else f"exit code {proc.returncode}"
        return self.resolve("FETCH_HEAD"), ""

    def release_commit(self, version: str) -> str:
        for tag in (f"jax-v{version}", f"v{version}"):
            sha = self.resolve(tag)
            if sha:
                return sha
        raise UserError(f"--jax-repo: no tag jax-v{version} (or v{version}) in {self.path}; "
                        "fetch the tags (git fetch --tags)")

    def first_parent_range(self, old: str, new: str) -> list[str]:
        """`old`, then every first-parent commit after it up to `new`, oldest first: a linear
        history, so binary search is meaningful (a merged branch is judged by its merge commit)."""
        if self._git("merge-base", "--is-ancestor", old, new, check=False).returncode != 0:
            raise UserError(f"--jax-repo: {old[:10]} is not an ancestor of {new[:10]}")
        out = self._git("rev-list", "--first-parent", "--reverse", f"{old}..{new}").stdout.split()
        return [old, *out]

    def version_py(self, sha: str) -> JaxSource | None:
        """What jax/version.py says at `sha` (None when it is missing or unreadable)."""
        proc = self._git("show", f"{sha}:jax/version.py", check=False)
        return parse_version_py(proc.stdout) if proc.returncode == 0 else None

    def remote_url(self) -> str | None:
        """The URL of `origin` (None: no such remote)."""
        proc = self._git("remote", "get-url", "origin", check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def info(self, sha: str) -> CommitInfo:
        out = self._git("show", "-s", "--format=%H%x00%cI%x00%s", sha).stdout.strip()
        full, date, subject = out.split("\x00", 2)
        return CommitInfo(full, date, subject)

    def archive_jax(self, sha: str, dest: Path) -> None:
        """Extract `jax/` at `sha` into `dest/jax` (complete or not at all)."""
        proc = self._git("archive", "--format=tar", f"{sha}:jax", check=False, text=False)
        if proc.returncode != 0:
            raise EnvironmentUnavailable(f"git archive {sha[:10]}:jax failed: "
                                         + proc.stderr.decode(errors="replace").strip()[-300:])
        tmp = dest.with_name(dest.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        tmp.rename(dest)


class CommitEnvironment(Environment):
    """A release environment (for its jaxlib) running the jax package of one commit."""

    def __init__(self, base: Environment, source_root: Path, sha: str, label: str, jaxlib: str):
        self.base, self.source_root, self.sha, self.jaxlib = base, source_root, sha, jaxlib
        self.jax_version = label

    def run(self, program: Program, env: dict[str, str], cache_dir: Path, log_path: Path,
            timeout_s: float, variation: RunVariation | None = None) -> ProcessOutcome:
        # The commit's jax first; a user script's start-up hook folder (process_variables.hook_env) stays on the path.
        # (`variation`: never given, as a commit's environment varies nothing: Environment.cannot_vary.)
        path = os.pathsep.join(p for p in (str(self.source_root), env.get("PYTHONPATH", "")) if p)
        return self.base.run(program, {**env, "PYTHONPATH": path}, cache_dir, log_path, timeout_s)

    def describe(self) -> dict[str, Any]:
        return {**self.base.describe(), "jax_commit": self.sha, "jax_source": str(self.source_root),
                "jaxlib_release": self.jaxlib}


@dataclass
class CommitSources:
    """Archived `jax/` trees, one folder per commit, reused across bisections."""

    repo: GitRepo
    root: Path

    def get(self, sha: str) -> tuple[Path, JaxSource | None]:
        folder = self.root / sha
        if not (folder / "jax").exists():
            folder.mkdir(parents=True, exist_ok=True)
            self.repo.archive_jax(sha, folder / "jax")
        version_py = folder / "jax" / "version.py"
        source = parse_version_py(version_py.read_text()) if version_py.exists() else None
        return folder, source


def commit_environments(sha: str, sources: CommitSources,
                        jaxlib_envs: dict[str, Callable[[], Environment]]) -> list[Callable[[], CommitEnvironment]]:
    """Ways to run one commit, preferred first: one per acceptable jaxlib. Each raises
    EnvironmentUnavailable (the commit is skipped) when the package cannot be taken or no jaxlib fits."""
    try:
        folder, source = sources.get(sha)
    except EnvironmentUnavailable as exc:
        return [_fail(exc)]
    if source is None:
        return [_fail(EnvironmentUnavailable(f"{sha[:10]}: jax/version.py missing or unreadable"))]
    jaxlibs = acceptable_jaxlibs(source, list(jaxlib_envs))
    if not jaxlibs:
        return [_fail(EnvironmentUnavailable(
            f"{sha[:10]}: jax {source.version} needs jaxlib >= {source.minimum_jaxlib} and <= "
            f"{source.version}; offered {', '.join(jaxlib_envs) or 'none'}"))]
    label = commit_label(source, sha)

    def prepare(jaxlib: str) -> Callable[[], CommitEnvironment]:
        return lambda: CommitEnvironment(jaxlib_envs[jaxlib](), folder, sha, label, jaxlib)
    return [prepare(j) for j in jaxlibs]


def _fail(exc: EnvironmentUnavailable) -> Callable[[], CommitEnvironment]:
    def prepare() -> CommitEnvironment:
        raise exc
    return prepare
