"""PyPIIndex, the edge that asks the package index: its on-disk copy, and the stale copy used when the
index cannot be reached. A small HTTP server on the loopback stands in for the index."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.core.errors import UserError
from harness.environments.package_index import IndexUnreadable, PyPIIndex, fetch
from harness.inputs.dependencies import Sources
from harness.inputs.versions import SIMPLE_JSON
from harness.service.measurement import recorded_sources, sources_line
from tests.local_index import simple_index

JAX = {"releases": {"0.4.28": [{"filename": "jax-0.4.28.tar.gz", "upload_time_iso_8601": "2024-05-09T12:00:00Z"}]}}


@pytest.fixture
def index_server():
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            body = json.dumps(JAX).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop to look again: every 10 ms, not the default 0.5 s
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", requests
    server.shutdown()
    server.server_close()


def unreachable() -> str:
    return "http://127.0.0.1:9"  # the discard port: nothing listens


def test_a_fetch_is_kept_on_disk_and_reused_within_the_ttl(index_server, tmp_path):
    url, requests = index_server
    first = PyPIIndex(url, cache_dir=tmp_path).releases("jax")
    assert list(first) == ["0.4.28"] and requests == ["/jax/json"]
    assert json.loads((tmp_path / "jax.json").read_text()) == JAX
    again = PyPIIndex(url, cache_dir=tmp_path).releases("jax")  # a new process, same cache folder
    assert list(again) == ["0.4.28"] and requests == ["/jax/json"], "the copy on disk was not used"


def test_an_expired_copy_is_fetched_again(index_server, tmp_path):
    url, requests = index_server
    (tmp_path / "jax.json").write_text(json.dumps({"releases": {}}))
    old = time.time() - 7200
    os.utime(tmp_path / "jax.json", (old, old))
    assert list(PyPIIndex(url, cache_dir=tmp_path, ttl_s=3600).releases("jax")) == ["0.4.28"]
    assert requests == ["/jax/json"]


def test_an_unreachable_index_falls_back_to_the_stale_copy(tmp_path):
    (tmp_path / "jax.json").write_text(json.dumps(JAX))
    old = time.time() - 7 * 86400
    os.utime(tmp_path / "jax.json", (old, old))
    assert list(PyPIIndex(unreachable(), cache_dir=tmp_path).releases("jax")) == ["0.4.28"]


def test_an_unreachable_index_without_a_copy_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="cannot reach the package index for jax"):
        PyPIIndex(unreachable(), cache_dir=tmp_path).releases("jax")
    assert not (tmp_path / "jax.json").exists()


# --- hostile and private indexes (issue 49, items 10-14) ------------------------------------------------

SECRET = "pypi-S3cr3tT0ken"
JAX_PAGE = {"meta": {"api-version": "1.0"},
            "files": [{"filename": "jax-0.4.28.tar.gz", "upload-time": "2024-05-09T12:00:00Z"}]}


@contextmanager
def page_server(respond):
    """A loopback server whose handler is `respond(handler)`: a stand-in for an index that misbehaves."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers.get("Authorization")))
            respond(self)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()


def send(handler, body: bytes, kind: str = SIMPLE_JSON, status: int = 200, headers: dict | None = None):
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def needs_token(handler):
    expected = "Basic " + base64.b64encode(f"__token__:{SECRET}".encode()).decode()
    if handler.headers.get("Authorization") != expected:
        send(handler, b"unauthorised", "text/plain", status=401)
    else:
        send(handler, json.dumps(JAX_PAGE).encode())


def test_credentials_in_the_index_url_are_sent_as_a_header_and_never_printed(tmp_path):
    with page_server(needs_token) as (host, seen):
        index = PyPIIndex(cache_dir=tmp_path, index_url=f"http://__token__:{SECRET}@{host}/simple")
        assert list(index.releases("jax")) == ["0.4.28"]
        assert seen[0][0] == "/simple/jax/"
        with pytest.raises(UserError) as wrong:
            PyPIIndex(cache_dir=tmp_path / "b", index_url=f"http://__token__:wrong-{SECRET}@{host}/simple").releases("jax")
    message = str(wrong.value)
    assert "HTTP 401" in message and "__token__:***@" in message and SECRET not in message, message


def test_credentials_from_netrc_are_used_as_uv_uses_them(tmp_path, monkeypatch):
    with page_server(needs_token) as (host, _):
        netrc = tmp_path / "netrc"
        netrc.write_text(f"machine 127.0.0.1 login __token__ password {SECRET}\n")
        netrc.chmod(0o600)
        monkeypatch.setenv("NETRC", str(netrc))
        assert list(PyPIIndex(cache_dir=tmp_path, index_url=f"http://{host}/simple").releases("jax")) == ["0.4.28"]


def test_a_token_is_never_recorded_or_said(tmp_path):
    sources = Sources(index_url=f"https://__token__:{SECRET}@example.org/simple",
                      extra_index_urls=(f"https://me:{SECRET}@example.org/extra",))
    recorded, said = json.dumps(recorded_sources(sources)), sources_line(sources)
    assert SECRET not in recorded and SECRET not in said
    assert "https://__token__:***@example.org/simple" in recorded and "https://me:***@example.org/extra" in said


def test_a_file_index_in_the_usual_layout_is_read(tmp_path):
    simple = simple_index(tmp_path / "index", {"jax": ["jax-0.4.28.tar.gz"], "jaxlib": []})
    index = PyPIIndex(cache_dir=tmp_path / "cache", index_url=simple.as_uri())
    assert list(index.releases("jax")) == ["0.4.28"]
    with pytest.raises(UserError, match="no such page"):
        index.releases("flax")


BAD_PAGES = {
    "utf-16": json.dumps(JAX_PAGE).encode("utf-16"),
    "upload-time in words": json.dumps({"files": [{"filename": "jax-0.4.28.tar.gz", "upload-time": "yesterday"}]}).encode(),
    "upload-time a number": json.dumps({"files": [{"filename": "jax-0.4.28.tar.gz", "upload-time": 5}]}).encode(),
    "a list": b'[{"filename": "jax-0.4.28.tar.gz"}]',
    "requires-python a number": json.dumps({"files": [{"filename": "jax-0.4.28.tar.gz", "requires-python": 5}]}).encode(),
    "files not a list": b'{"files": {"filename": "jax-0.4.28.tar.gz"}}',
}


@pytest.mark.parametrize("body", BAD_PAGES.values(), ids=BAD_PAGES.keys())
def test_a_bad_page_is_one_line_naming_the_index_and_is_never_kept(tmp_path, body):
    with page_server(lambda handler: send(handler, body)) as (host, _):
        with pytest.raises(UserError) as bad:
            PyPIIndex(cache_dir=tmp_path, index_url=f"http://{host}/simple").releases("jax")
    message = str(bad.value)
    assert "\n" not in message and f"http://{host}/simple: its page for jax is not a package index's" in message
    assert not list(tmp_path.rglob("*.json")), "a page that did not validate was kept on disk"


def test_a_bad_copy_on_disk_is_dropped_and_the_index_asked_again(index_server, tmp_path):
    url, requests = index_server
    (tmp_path / "jax.json").write_text('{"releases": {"0.4.28": [{"filename": "x", "upload_time_iso_8601": 5}]}}')
    assert list(PyPIIndex(url, cache_dir=tmp_path).releases("jax")) == ["0.4.28"]
    assert requests == ["/jax/json"]


def drip(handler):
    """Headers at once, then one byte every 0.3 s: each read is quick, the whole page never ends."""
    handler.send_response(200)
    handler.send_header("Content-Type", SIMPLE_JSON)
    handler.end_headers()
    try:
        for _ in range(200):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.3)
    except OSError:
        pass


def test_a_server_that_drips_is_cut_off_at_the_requests_deadline(tmp_path):
    with page_server(drip) as (host, _):
        start = time.monotonic()
        with pytest.raises(IndexUnreadable, match="took more than 2 s") as slow:
            fetch(f"http://{host}/simple/jax/", request_s=2)
        assert time.monotonic() - start < 4
    assert not slow.value.unreachable


def test_a_page_larger_than_an_index_page_is_refused_unread(tmp_path):
    with page_server(lambda handler: send(handler, b" " * 4096)) as (host, _):
        with pytest.raises(IndexUnreadable, match="more than an index page"):
            fetch(f"http://{host}/simple/jax/", max_bytes=1024)

    def unsized(handler):  # no Content-Length: the count is kept while reading
        handler.send_response(200)
        handler.send_header("Content-Type", SIMPLE_JSON)
        handler.end_headers()
        handler.wfile.write(b" " * 4096)

    with page_server(unsized) as (host, _):
        with pytest.raises(IndexUnreadable, match="more than"):
            fetch(f"http://{host}/simple/jax/", max_bytes=1024)


def test_a_redirect_loop_is_one_line(tmp_path):
    with page_server(lambda handler: send(handler, b"", status=302, headers={"Location": handler.path})) as (host, _):
        with pytest.raises(UserError) as loop:
            PyPIIndex(cache_dir=tmp_path, index_url=f"http://{host}/simple").releases("jax")
    assert "\n" not in str(loop.value) and "infinite loop" in str(loop.value)


def test_credentials_do_not_follow_a_redirect_to_another_host(tmp_path):
    with page_server(lambda handler: send(handler, json.dumps(JAX_PAGE).encode())) as (other, seen_there):
        def moved(handler):
            send(handler, b"", status=302, headers={"Location": f"http://{other}/simple/jax/"})

        with page_server(moved) as (host, _):
            fetch(f"http://__token__:{SECRET}@{host}/simple/jax/")
    assert seen_there == [("/simple/jax/", None)]


def test_sigterm_stops_a_harness_waiting_on_a_dripping_index(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("name: t\nrepro: shard_map_grad\njax_versions: ['>=0.4.26']\nplatform: cpu\ndevice_count: 8\n"
                      "meshes: [{shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}]\n")
    with page_server(drip) as (host, seen):
        proc = subprocess.Popen([sys.executable, "-m", "harness", "versions", str(config),
                                 "--index-url", f"http://{host}/simple"], cwd=tmp_path,
                                env={**os.environ, "HOME": str(tmp_path)}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen, f"the harness never asked the index: {proc.poll()} {proc.stderr.read() if proc.poll() is not None else ''}"
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        _, err = proc.communicate(timeout=10)
        took = time.monotonic() - start
    assert took < 2 and proc.returncode != 0, (took, proc.returncode, err)
    assert "Traceback" not in err, err
