"""A real package index for tests: a folder laid out as a PEP 503 simple index (one page per project, one
anchor per file), served by the standard library's http.server on the loopback, stopped by the test; and
wheels built by hand (a wheel is a zip with its metadata), so no build backend or network is needed."""

from __future__ import annotations

import base64
import hashlib
import threading
import zipfile
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator


def build_wheel(folder: Path, name: str, version: str, code: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of one module `name` holding `code`."""
    dist = f"{name}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    files = {f"{name}/__init__.py": code, f"{dist}.dist-info/METADATA": metadata,
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                         "Tag: py3-none-any\n"}
    record = "".join(f"{path},sha256={_digest(text)},{len(text.encode())}\n" for path, text in files.items())
    files[f"{dist}.dist-info/RECORD"] = record + f"{dist}.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def simple_index(root: Path, projects: dict[str, list[str]], files: dict[str, Path] | None = None) -> Path:
    """`root/simple/` listing each project's file names (PEP 503 HTML, no upload times); a file in `files`
    (by name) is copied under `root/files/`, the others are listed only (their links lead nowhere)."""
    simple = root / "simple"
    (root / "files").mkdir(parents=True, exist_ok=True)
    for path in (files or {}).values():
        (root / "files" / path.name).write_bytes(path.read_bytes())
    anchors = []
    for project, names in projects.items():
        (simple / project).mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{n}" data-requires-python="&gt;=3.9">{n}</a><br>\n' for n in names)
        (simple / project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        anchors.append(f'<a href="{project}/">{project}</a>')
    (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>{''.join(anchors)}</body></html>\n")
    return simple


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """`folder` over HTTP on 127.0.0.1 (a free port) while the block runs: its base URL."""
    handler = partial(_Quiet, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown() waits for the loop to look again: every 10 ms, not the default 0.5 s
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
