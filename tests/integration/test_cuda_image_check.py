"""`make cuda-image-check` (docker/check_cuda_image.py) needs a 2 GB download, so CI cannot run it whole;
its measuring step is the one part that calls deep into the harness (measure_cell), and it broke unseen
when that call's signature changed. Here that same step runs for real, in a venv of the release the
script checks, so a change the script does not follow fails a test."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harness.cli.console import ConsoleProgress
from harness.core.kinds import Platform, Verdict
from harness.environments import dated_venv_backend

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "check_cuda_image.py"


def load_script():
    spec = importlib.util.spec_from_file_location("check_cuda_image", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cuda_image_checks_seed_step_measures_the_release_it_checks(tmp_path):
    script = load_script()
    version = script.DEFAULT_VERSION
    environment = dated_venv_backend().prepare(version, Platform.CPU)
    cell = script.seed_repro(environment, version, tmp_path / "cell", ConsoleProgress())
    assert cell.verdict == Verdict.REPRODUCED, cell.reason
