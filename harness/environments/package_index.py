"""The package index, the one edge of version resolution that does I/O: PyPI's JSON API, or the simple
API (PEP 691 JSON or PEP 503 HTML) of the index the user names (--index-url, UV_INDEX_URL, PIP_INDEX_URL),
with a short-lived copy on disk so repeated sweeps don't ask again (harness/inputs/versions.py resolves, purely)."""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

from harness.core.errors import UserError
from harness.core.files import write_atomic
from harness.inputs.versions import SIMPLE_JSON, Release, parse_pypi, parse_simple, simple_html_as_json, simple_projects


class PyPIIndex:
    """PyPI's JSON API (`url`; HARNESS_PYPI_JSON names another), or, given `index_url`, that index's simple
    API (any mirror has one; a JSON API is PyPI's own), cached on disk for `ttl_s` (default an hour)."""

    def __init__(self, url: str | None = None, cache_dir: Path | None = None, ttl_s: float = 3600,
                 index_url: str | None = None):
        self.url = (url or os.environ.get("HARNESS_PYPI_JSON", "https://pypi.org/pypi")).rstrip("/")
        self.index_url = index_url.rstrip("/") if index_url else None
        root = cache_dir or Path.home() / ".cache" / "jax-cache-harness" / "index"
        # Another index's answers are kept apart from PyPI's (the same name, other releases).
        self.cache_dir = root / hashlib.sha256(self.index_url.encode()).hexdigest()[:10] if self.index_url else root
        self.ttl_s = ttl_s
        self._memo: dict[str, dict[str, Release]] = {}

    def releases(self, package: str) -> dict[str, Release]:
        if package not in self._memo:
            data = self._fetch(package)
            self._memo[package] = parse_simple(data) if self.index_url else parse_pypi(data)
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
            raw = self._simple(package) if self.index_url else self._json_api(package)
        except (urllib.error.URLError, OSError) as exc:
            if cached.exists():  # stale beats nothing when the index is unreachable
                return json.loads(cached.read_text())
            where = self.index_url or "the package index"
            raise UserError(f"cannot reach {where} for {package} ({exc}); "
                            "name exact versions with --backend local, or retry online") from None
        except ValueError as exc:
            raise UserError(f"{self.index_url}: its page for {package} cannot be read ({exc})") from None
        data = json.loads(raw)
        # A unique temporary name: shards of one sweep (a Slurm array) may share this folder.
        write_atomic(cached, raw.decode())
        return data

    def _json_api(self, package: str) -> bytes:
        with urllib.request.urlopen(f"{self.url}/{package}/json", timeout=60) as response:
            return response.read()

    def _simple(self, package: str) -> bytes:
        """The simple API's page for `package` as PEP 691 JSON (an HTML page, as every mirror serves,
        read into the same shape), so the disk copy is one format."""
        request = urllib.request.Request(f"{self.index_url}/{package}/", headers={
            "Accept": f"{SIMPLE_JSON}, text/html;q=0.1"})
        with urllib.request.urlopen(request, timeout=60) as response:
            kind = response.headers.get_content_type()
            body = response.read()
            charset = response.headers.get_content_charset() or "utf-8"
        if kind == SIMPLE_JSON:
            json.loads(body)  # ValueError when it is not JSON
            return body
        return json.dumps(simple_html_as_json(body.decode(charset, "replace"))).encode()


# An extra index listing more projects than this is a mirror of PyPI, not a private index of one's own.
MAX_PRIVATE_PROJECTS = 500


def private_projects(index_url: str, timeout_s: float = 60) -> tuple[str, ...]:
    """The projects a private (extra) index lists at its root (PEP 503/691), canonical names, all of them
    (more than MAX_PRIVATE_PROJECTS: a mirror). UserError when it cannot be read."""
    request = urllib.request.Request(index_url.rstrip("/") + "/", headers={"Accept": f"{SIMPLE_JSON}, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            kind = response.headers.get_content_type()
            body = response.read(8 << 20)
            charset = response.headers.get_content_charset() or "utf-8"
    except (urllib.error.URLError, OSError) as exc:
        raise UserError(f"--extra-index-url: cannot reach {index_url} ({exc})") from None
    try:
        names = simple_projects(body.decode(charset, "replace"), kind == SIMPLE_JSON)
    except ValueError as exc:
        raise UserError(f"--extra-index-url: {index_url}: its root page cannot be read ({exc})") from None
    return names
