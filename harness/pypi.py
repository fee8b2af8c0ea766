"""The package index, the one edge of version resolution that does I/O: PyPI's JSON API, with a
short-lived copy on disk so repeated sweeps don't ask again (harness/versions.py resolves, purely)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

from harness.errors import UserError
from harness.files import write_atomic
from harness.versions import Release, parse_pypi


class PyPIIndex:
    """PyPI's JSON API, cached on disk for `ttl_s` (default an hour)."""

    def __init__(self, url: str | None = None, cache_dir: Path | None = None, ttl_s: float = 3600):
        self.url = (url or os.environ.get("HARNESS_PYPI_JSON", "https://pypi.org/pypi")).rstrip("/")
        self.cache_dir = cache_dir or Path.home() / ".cache" / "jax-cache-harness" / "index"
        self.ttl_s = ttl_s
        self._memo: dict[str, dict[str, Release]] = {}

    def releases(self, package: str) -> dict[str, Release]:
        if package not in self._memo:
            self._memo[package] = parse_pypi(self._fetch(package))
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
