"""The package index, the one edge of version resolution that does I/O: PyPI's JSON API, or the simple
API (PEP 691 JSON or PEP 503 HTML) of the index the user names (--index-url, UV_INDEX_URL, PIP_INDEX_URL),
with a short-lived copy on disk so repeated sweeps don't ask again (harness/inputs/versions.py resolves, purely).

An index is someone else's server: every request is bounded in time and size, every page is checked
before it is used or kept on disk, and credentials in its URL (or in ~/.netrc, as uv reads them) are sent
as a header and never printed."""

from __future__ import annotations

import base64
import http.client
import hashlib
import json
import netrc
import os
import time
import urllib.error
import urllib.request
from datetime import datetime
from email.message import Message
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit
from urllib.request import url2pathname

from harness.core.errors import UserError
from harness.core.files import write_atomic
from harness.inputs.index_urls import redacted, redacted_text, split_credentials
from harness.inputs.versions import (
    SIMPLE_JSON,
    PageError,
    Release,
    parse_pypi,
    parse_simple,
    simple_html_as_json,
    simple_projects,
)

# One page of one project: jaxlib's JSON on PyPI is a few MB. Past this it is not an index's page.
MAX_PAGE_BYTES = 64 << 20
# The whole request, connection to last byte: a server that answers a byte at a time is cut off here.
REQUEST_S = 60.0
# One read of the socket (urlopen's timeout); the request's deadline is checked between reads.
READ_S = 15.0


class PyPIIndex:
    """PyPI's JSON API (`url`; HARNESS_PYPI_JSON names another), or, given `index_url`, that index's simple
    API (any mirror has one; a JSON API is PyPI's own), cached on disk for `ttl_s` (default an hour)."""

    def __init__(self, url: str | None = None, cache_dir: Path | None = None, ttl_s: float = 3600,
                 index_url: str | None = None):
        self.url = (url or os.environ.get("HARNESS_PYPI_JSON", "https://pypi.org/pypi")).rstrip("/")
        self.index_url = index_url.rstrip("/") if index_url else None
        root = cache_dir or Path.home() / ".cache" / "jax-cache-harness" / "index"
        # Another index's answers are kept apart from PyPI's (the same name, other releases); its credentials
        # are not part of which index it is.
        self.cache_dir = (root / hashlib.sha256(split_credentials(self.index_url)[0].encode()).hexdigest()[:10]
                          if self.index_url else root)
        self.ttl_s = ttl_s
        self._memo: dict[str, dict[str, Release]] = {}

    @property
    def where(self) -> str:
        return redacted(self.index_url) if self.index_url else "the package index"

    def releases(self, package: str) -> dict[str, Release]:
        if package not in self._memo:
            self._memo[package] = self._fetch(package)
        return self._memo[package]

    def release_date(self, version: str) -> datetime | None:
        """When jax==version and jaxlib==version were published (the later of the two)."""
        dates = [self.releases(p).get(version) for p in ("jax", "jaxlib")]
        known = [r.uploaded for r in dates if r and r.uploaded]
        return max(known) if known else None

    def _parse(self, raw: bytes) -> dict[str, Release]:
        return parse_simple(raw) if self.index_url else parse_pypi(raw)

    def _copy(self, cached: Path) -> dict[str, Release] | None:
        """The page kept on disk, when it is still one (a copy no release of the harness checked is dropped)."""
        try:
            return self._parse(cached.read_bytes())
        except (OSError, PageError):
            return None

    def _fetch(self, package: str) -> dict[str, Release]:
        cached = self.cache_dir / f"{package}.json"
        fresh = cached.exists() and time.time() - cached.stat().st_mtime < self.ttl_s
        if fresh and (kept := self._copy(cached)) is not None:
            return kept
        try:
            raw = self._simple(package) if self.index_url else self._json_api(package)
            releases = self._parse(raw)
        except IndexUnreadable as exc:
            stale = self._copy(cached) if cached.exists() else None
            if stale is not None and exc.unreachable:  # stale beats nothing when the index is unreachable
                return stale
            if exc.unreachable:
                raise UserError(f"cannot reach {self.where} for {package} ({exc}); "
                                "name exact versions with --backend local, or retry online") from None
            raise UserError(f"{self.where}: its page for {package} cannot be read ({exc})") from None
        except PageError as exc:
            raise UserError(f"{self.where}: its page for {package} is not a package index's ({exc}); "
                            "nothing of it was kept") from None
        # Only a page that was read whole and checked is kept. A unique temporary name: shards of one sweep
        # (a Slurm array) may share this folder.
        write_atomic(cached, raw.decode())
        return releases

    def _json_api(self, package: str) -> bytes:
        return fetch(f"{self.url}/{package}/json").body

    def _simple(self, package: str) -> bytes:
        """The simple API's page for `package` as PEP 691 JSON (an HTML page, as every mirror serves,
        read into the same shape), so the disk copy is one format."""
        assert self.index_url is not None
        page = fetch(f"{self.index_url}/{package}/", accept=f"{SIMPLE_JSON}, text/html;q=0.1")
        if page.kind == SIMPLE_JSON:
            return page.body
        return json.dumps(simple_html_as_json(page.text())).encode()


class IndexUnreadable(Exception):
    """A request that got no page: `unreachable` when the index could not be asked at all (a stale copy
    on disk may stand in), else the index answered with no page (401, 404, too large, too slow)."""

    def __init__(self, reason: str, unreachable: bool):
        super().__init__(reason)
        self.unreachable = unreachable


class Page:
    def __init__(self, kind: str, charset: str, body: bytes):
        self.kind, self.charset, self.body = kind, charset, body

    def text(self) -> str:
        try:
            return self.body.decode(self.charset, "replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", "replace")


class _SameHostAuth(urllib.request.HTTPRedirectHandler):
    """Redirects keep the credentials only to the same scheme, host and port (as pip and requests do)."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: http.client.HTTPMessage,
                         newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        old, moved = urlsplit(req.full_url), urlsplit(newurl)
        if new is not None and auth and (old.scheme, old.netloc) == (moved.scheme, moved.netloc):
            new.add_unredirected_header("Authorization", auth)
        return new


def fetch(url: str, accept: str | None = None, request_s: float = REQUEST_S, max_bytes: int = MAX_PAGE_BYTES) -> Page:
    """One page of an index, whole, within `request_s` and `max_bytes`; credentials from the URL or
    ~/.netrc sent as a header. IndexUnreadable (a one-line reason, credentials hidden) otherwise."""
    plain, credentials = split_credentials(url)
    parts = urlsplit(plain)
    try:
        if parts.scheme == "file":
            return _file_page(Path(url2pathname(parts.path)), max_bytes)
        request = urllib.request.Request(plain, headers={"Accept": accept} if accept else {})
        credentials = credentials or _netrc_credentials(parts.hostname)
        if credentials:
            token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
            request.add_unredirected_header("Authorization", f"Basic {token}")
        opener = urllib.request.build_opener(_SameHostAuth)
        deadline = time.monotonic() + request_s
        with opener.open(request, timeout=min(READ_S, request_s)) as response:
            body = _read_bounded(response, deadline, request_s, max_bytes)
            headers: Message = response.headers
            return Page(headers.get_content_type(), headers.get_content_charset() or "utf-8", body)
    except IndexUnreadable as exc:
        raise IndexUnreadable(redacted_text(str(exc), (url,)), exc.unreachable) from None
    except urllib.error.HTTPError as exc:
        hint = " (credentials: in the URL as https://user:token@host/..., or in ~/.netrc)" \
            if exc.code in (401, 403) else ""
        raise IndexUnreadable(_one_line(f"HTTP {exc.code} {exc.reason}{hint}", url), unreachable=False) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # ValueError: a URL urllib cannot use
        unreachable = not isinstance(exc, ValueError)
        raise IndexUnreadable(_one_line(str(getattr(exc, "reason", exc)), url), unreachable) from None


def _read_bounded(response: http.client.HTTPResponse, deadline: float, request_s: float, max_bytes: int) -> bytes:
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise IndexUnreadable(f"the page is {int(declared) >> 20} MiB, more than an index page "
                              f"({max_bytes >> 20} MiB)", unreachable=False)
    chunks, size = [], 0
    while chunk := response.read1(1 << 16):
        size += len(chunk)
        if size > max_bytes:
            raise IndexUnreadable(f"the page is more than {max_bytes >> 20} MiB", unreachable=False)
        if time.monotonic() > deadline:
            raise IndexUnreadable(f"the page took more than {request_s:.0f} s to arrive ({size} bytes by then)",
                                  unreachable=False)
        chunks.append(chunk)
    return b"".join(chunks)


def _file_page(path: Path, max_bytes: int) -> Page:
    """A page of a file:// index: a project's folder serves its index.html, as a web server would."""
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file():
        raise IndexUnreadable(f"{path}: no such page (a file:// index has <root>/<project>/index.html)",
                              unreachable=False)
    if path.stat().st_size > max_bytes:
        raise IndexUnreadable(f"{path} is more than {max_bytes >> 20} MiB", unreachable=False)
    kind = SIMPLE_JSON if path.suffix == ".json" else "text/html"
    return Page(kind, "utf-8", path.read_bytes())


def _netrc_credentials(host: str | None) -> tuple[str, str] | None:
    """The login and password ~/.netrc (or $NETRC) holds for `host`, as uv and pip read them."""
    if not host:
        return None
    try:
        entry = netrc.netrc(os.environ.get("NETRC") or None).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return (entry[0] or "", entry[2] or "") if entry else None


def _one_line(reason: str, url: str) -> str:
    """An error's text on one line (urllib's redirect-loop error is three), credentials hidden."""
    return redacted_text(" ".join(reason.split()), (url,))


# An extra index listing more projects than this is a mirror of PyPI, not a private index of one's own.
MAX_PRIVATE_PROJECTS = 500


def private_projects(index_url: str, timeout_s: float = REQUEST_S) -> tuple[str, ...]:
    """The projects a private (extra) index lists at its root (PEP 503/691), canonical names, all of them
    (more than MAX_PRIVATE_PROJECTS: a mirror). UserError when it cannot be read."""
    try:
        page = fetch(index_url.rstrip("/") + "/", accept=f"{SIMPLE_JSON}, text/html;q=0.1", request_s=timeout_s)
    except IndexUnreadable as exc:
        verb = "reach" if exc.unreachable else "read"
        raise UserError(f"--extra-index-url: cannot {verb} {redacted(index_url)} ({exc})") from None
    try:
        names = simple_projects(page.text(), page.kind == SIMPLE_JSON)
    except PageError as exc:
        raise UserError(f"--extra-index-url: {redacted(index_url)}: its root page cannot be read ({exc})") from None
    return names
