"""The local backend's interpreter probe reads versions only: it must not open a TPU host's chip (seconds each)."""

from __future__ import annotations

import stat
from pathlib import Path

from harness.environments.process import probe_interpreter


def test_the_interpreter_probe_asks_jax_for_the_cpu_only(tmp_path: Path):
    fake = tmp_path / "python"  # prints what JAX would be told as its version, so the probe's answer shows it
    fake.write_text('#!/bin/sh\necho "{\\"jax\\": \\"$JAX_PLATFORMS\\"}"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert probe_interpreter(fake, {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "tpu"})["jax"] == "cpu"
