"""`harness base-image` against a real Docker engine (the rest of `harness init` and `harness base-image`:
tests/unit/test_preparing.py)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import commands as cli
from harness.environments.docker import OFFLINE_BASE_IMAGE
from tests.docker_engine import engine_with_base_image


@pytest.mark.docker
def test_base_image_of_a_real_engine_keeps_the_image_it_has(capfd):
    engine_with_base_image().close()
    assert cli.main(["base-image"]) == 0
    assert f"base-image: {OFFLINE_BASE_IMAGE} already exists" in capfd.readouterr().out


def _debootstraps_into(folder: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder) in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("debootstrap"), reason="debootstrap needs root")
def test_sigterm_during_debootstrap_stops_it_and_removes_its_rootfs(tmp_path):
    """Issue 49, item 16: before, the harness exited 143 while debootstrap went on and its rootfs stayed."""
    harness = subprocess.Popen([sys.executable, "-m", "harness", "base-image", "--image", "jax-harness-test:stopped",
                                "--force"], env={**os.environ, "TMPDIR": str(tmp_path)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("jax-harness-rootfs.*/*")) and time.monotonic() < deadline:  # debootstrap writes
        assert harness.poll() is None, harness.communicate()
        time.sleep(0.2)
    assert _debootstraps_into(tmp_path), "debootstrap never started"
    harness.send_signal(signal.SIGTERM)
    out, err = harness.communicate(timeout=90)
    assert harness.returncode == 143, (out, err)
    assert not _debootstraps_into(tmp_path), "debootstrap outlived the harness"
    assert not list(tmp_path.iterdir()), f"left behind: {list(tmp_path.iterdir())}"
    assert "Traceback" not in err
