"""JAX versions: check what a config names, and resolve specifiers against the package index.

The resolution itself is pure (it takes an index object); `PyPIIndex` is the thin edge that asks
PyPI's JSON API and keeps a short-lived copy on disk so repeated sweeps don't ask again.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from harness.errors import UserError
from harness.files import write_atomic

_SPEC_CHARS = "<>=!~,"
_CP_TAG = re.compile(r"-cp(\d+)-")  # CPython tag in a wheel's file name


def is_specifier(entry: str) -> bool:
    return any(c in entry for c in _SPEC_CHARS)


LATEST = "latest"  # the newest usable release on the index


def check_syntax(entry: str) -> str | None:
    """None when `entry` is a well-formed version, PEP 440 specifier or `latest`, else what is wrong."""
    if entry == LATEST:
        return None
    try:
        if is_specifier(entry):
            SpecifierSet(entry)
        else:
            Version(entry)
    except (InvalidSpecifier, InvalidVersion):
        return (f"{entry!r} is not a version (e.g. 0.4.28), a specifier (e.g. \">=0.4.26,<0.4.32\") "
                f"or latest")
    return None


@dataclass(frozen=True)
class Release:
    version: str
    uploaded: datetime | None  # latest upload among the release's files
    yanked: bool = False
    requires_python: str | None = None
    wheel_pythons: frozenset[str] = frozenset()  # CPython tags of its binary wheels, e.g. "311"

    def supports(self, python: str | None) -> bool:
        """Whether this release installs on CPython `python` ("3.11"); True when unknown."""
        if python is None:
            return True
        if self.wheel_pythons:
            return python.replace(".", "") in self.wheel_pythons
        if self.requires_python:
            try:
                return Version(python) in SpecifierSet(self.requires_python)
            except (InvalidSpecifier, InvalidVersion):
                return True
        return True


class PackageIndex(Protocol):
    def releases(self, package: str) -> dict[str, Release]: ...


def resolve(entries: tuple[str, ...] | list[str], index: PackageIndex, source: str = "jax_versions",
            python: str | None = None) -> list[str]:
    """Versions named by `entries`: final releases of jax that have a jaxlib of the same version
    installable on `python` (when given), sorted, without duplicates. An entry that matches nothing
    is an error naming that entry."""
    jax = index.releases("jax")
    jaxlib = index.releases("jaxlib")
    released = {v for v, r in jax.items() if not r.yanked and v in jaxlib and not jaxlib[v].yanked
                and _is_final(v)}
    usable = {v for v in released if jax[v].supports(python) and jaxlib[v].supports(python)}
    chosen: set[str] = set()
    for entry in entries:
        if entry == LATEST:
            matched = {max(usable, key=Version)} if usable else set()
        elif is_specifier(entry):
            spec = SpecifierSet(entry)
            matched = {v for v in usable if Version(v) in spec}
        else:
            wanted = Version(entry)
            matched = {v for v in usable if Version(v) == wanted}
            if not matched and any(Version(v) == wanted for v in released):
                raise UserError(f"{source}: jax {entry} has no jaxlib for Python {python} "
                                f"(the environments' Python; it needs {jaxlib_or_jax(jax, jaxlib, entry)})")
            if not matched and any(Version(v) == wanted for v in jax):
                raise UserError(f"{source}: jax {entry} has no matching jaxlib release (or was yanked)")
        if not matched:
            raise UserError(f"{source}: {entry!r} matches no jax release on the package index")
        chosen |= matched
    return sorted(chosen, key=Version)


def jaxlib_or_jax(jax: dict[str, Release], jaxlib: dict[str, Release], entry: str) -> str:
    version = next(v for v in jax if Version(v) == Version(entry))
    tags = sorted(jaxlib[version].wheel_pythons, key=int)
    if tags:
        return "CPython " + ", ".join(f"{t[0]}.{t[1:]}" for t in tags)
    return f"Python {jax[version].requires_python or jaxlib[version].requires_python}"


def _is_final(v: str) -> bool:
    try:
        parsed = Version(v)
    except InvalidVersion:
        return False
    return not (parsed.is_prerelease or parsed.is_devrelease)


class PyPIIndex:
    """PyPI's JSON API, cached on disk for `ttl_s` (default an hour)."""

    def __init__(self, url: str | None = None, cache_dir: Path | None = None, ttl_s: float = 3600):
        self.url = (url or os.environ.get("HARNESS_PYPI_JSON", "https://pypi.org/pypi")).rstrip("/")
        self.cache_dir = cache_dir or Path.home() / ".cache" / "jax-cache-harness" / "index"
        self.ttl_s = ttl_s
        self._memo: dict[str, dict[str, Release]] = {}

    def releases(self, package: str) -> dict[str, Release]:
        if package not in self._memo:
            self._memo[package] = _parse_pypi(self._fetch(package))
        return self._memo[package]

    def release_date(self, version: str) -> datetime | None:
        """When jax==version and jaxlib==version were published (the later of the two)."""
        dates = [self.releases(p).get(version) for p in ("jax", "jaxlib")]
        known = [r.uploaded for r in dates if r and r.uploaded]
        return max(known) if known else None

    def _fetch(self, package: str) -> dict:
        cached = self.cache_dir / f"{package}.json"
        if cached.exists() and time.time() - cached.stat().st_mtime < self.ttl_s:
            try:
                return json.loads(cached.read_text())
            except (OSError, json.JSONDecodeError):
                pass
        try:
            with urllib.request.urlopen(f"{self.url}/{package}/json", timeout=60) as response:
                raw = response.read()
        except (urllib.error.URLError, OSError) as exc:
            if cached.exists():  # stale beats nothing when the index is unreachable
                return json.loads(cached.read_text())
            raise UserError(f"cannot reach the package index for {package} ({exc}); "
                            "name exact versions with --backend local, or retry online") from None
        data = json.loads(raw)
        # A unique temporary name: shards of one sweep (a Slurm array) may share this folder.
        write_atomic(cached, raw.decode())
        return data


def _parse_pypi(data: dict) -> dict[str, Release]:
    out = {}
    for version, files in data.get("releases", {}).items():
        if not files:
            continue
        times = [f.get("upload_time_iso_8601") for f in files if f.get("upload_time_iso_8601")]
        uploaded = max((datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times), default=None)
        requires = next((f["requires_python"] for f in files if f.get("requires_python")), None)
        tags = frozenset(m.group(1) for f in files if (m := _CP_TAG.search(f.get("filename", ""))))
        out[version] = Release(version, uploaded, yanked=all(f.get("yanked") for f in files),
                               requires_python=requires, wheel_pythons=tags)
    return out


def matches(entry: str, version: str) -> bool:
    """Whether one config entry names `version` (`latest` names whatever is installed)."""
    if entry == LATEST:
        return True
    if is_specifier(entry):
        return Version(version) in SpecifierSet(entry)
    return Version(entry) == Version(version)
