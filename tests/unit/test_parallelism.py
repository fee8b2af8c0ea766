"""--jobs auto: one run per core for cpu cells, one at a time for GPU cells unless asked."""

from harness.core.kinds import Platform
from harness.measure.parallelism import choose_runs_at_once, usable_cores


def test_auto_uses_the_cores_for_cpu_cells():
    at_once = choose_runs_at_once(None, Platform.CPU, 16)
    assert at_once.count == 16 and "16 core(s)" in at_once.why and at_once.line().startswith("jobs: 16 (auto")


def test_auto_keeps_gpu_cells_at_one_and_says_why():
    for platform in (Platform.CUDA, Platform.AUTO):
        at_once = choose_runs_at_once(None, platform, 16)
        assert at_once.count == 1 and "GPU memory" in at_once.why


def test_a_number_asked_for_is_kept():
    assert choose_runs_at_once(3, Platform.CUDA, 16).count == 3
    assert choose_runs_at_once(1, Platform.CPU, 16).why == "--jobs"


def test_usable_cores_is_at_least_one():
    assert usable_cores() >= 1
