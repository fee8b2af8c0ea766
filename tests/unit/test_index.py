"""PyPIIndex, the edge that asks the package index: its on-disk copy, and the stale copy used when the
index cannot be reached. A small HTTP server on the loopback stands in for the index."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.core.errors import UserError
from harness.environments.package_index import PyPIIndex

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
