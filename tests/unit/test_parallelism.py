"""--jobs auto: one run per core for cpu cells; on an accelerator each run its own devices, or one at a time, and
never two processes on one TPU chip, nor on one GPU unless the memory settings make them fit."""

import threading
from concurrent.futures import ThreadPoolExecutor

from harness.core.kinds import Platform
from harness.core.platforms import share_env
from harness.measure.parallelism import choose_runs_at_once, gpu_runs_per_device, slot_env, usable_cores


def test_auto_uses_the_cores_for_cpu_cells():
    at_once = choose_runs_at_once(None, Platform.CPU, 16)
    assert at_once.count == 16 and "16 core(s)" in at_once.why and at_once.line().startswith("jobs: 16 (auto")
    assert at_once.shares == ()


def test_auto_keeps_gpu_cells_at_one_and_says_why():
    at_once = choose_runs_at_once(None, Platform.CUDA, 16)
    assert at_once.count == 1 and "75% of every GPU it sees" in at_once.why
    assert choose_runs_at_once(None, Platform.AUTO, 16).count == 1


def test_a_tpu_chip_is_one_process_s_and_the_reason_says_so():
    at_once = choose_runs_at_once(None, Platform.TPU, 13, devices_here=1, devices_per_run=1)
    assert at_once.count == 1 and "lockfile" in at_once.why and "GPU" not in at_once.why
    assert "1 chip(s) here" in at_once.why


def test_jobs_on_one_chip_is_capped_so_the_harness_never_causes_the_lockfile_failure():
    at_once = choose_runs_at_once(2, Platform.TPU, 13, devices_here=1, devices_per_run=1)
    assert at_once.count == 1 and at_once.why.startswith("--jobs 2 capped")


def test_several_chips_give_each_run_its_own():
    at_once = choose_runs_at_once(None, Platform.TPU, 13, devices_here=8, devices_per_run=2)
    assert at_once.count == 4 and at_once.shares == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert "TPU_VISIBLE_CHIPS" in at_once.why
    assert choose_runs_at_once(8, Platform.TPU, 13, devices_here=8, devices_per_run=2).count == 4


def test_gpus_split_n_over_k_with_their_own_visible_devices():
    at_once = choose_runs_at_once(None, Platform.CUDA, 16, devices_here=8, devices_per_run=4)
    assert at_once.count == 2 and at_once.shares == ((0, 1, 2, 3), (4, 5, 6, 7))
    # asked for more than fit: capped at whole GPUs each, as a TPU's chips are
    asked = choose_runs_at_once(3, Platform.CUDA, 16, devices_here=8, devices_per_run=4)
    assert asked.count == 2 and asked.shares == ((0, 1, 2, 3), (4, 5, 6, 7)) and asked.why.startswith("--jobs 3 capped")


def test_jobs_on_one_gpu_is_capped_so_a_second_process_never_fails_on_its_memory():
    at_once = choose_runs_at_once(2, Platform.CUDA, 16, devices_here=1, devices_per_run=1)
    assert at_once.count == 1 and at_once.line() == (
        "jobs: 1 (--jobs 2 capped: each run claims 75% of every GPU it sees (JAX preallocates it): a second fails "
        "on memory; 1 GPU(s) here, 1 a run)")
    auto = choose_runs_at_once(None, Platform.CUDA, 16, devices_here=1, devices_per_run=1)
    assert auto.count == 1 and "1 GPU(s) here" in auto.why


def test_runs_share_a_gpu_only_where_the_memory_settings_make_them_fit():
    assert gpu_runs_per_device({}) == 1  # JAX's 75%
    assert gpu_runs_per_device({"XLA_PYTHON_CLIENT_MEM_FRACTION": ".3"}) == 3
    assert gpu_runs_per_device({"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.5"}) == 2
    assert gpu_runs_per_device({"XLA_PYTHON_CLIENT_MEM_FRACTION": "lots"}) == 1
    assert gpu_runs_per_device({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}) is None
    assert gpu_runs_per_device({"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}) is None
    three = choose_runs_at_once(4, Platform.CUDA, 16, devices_here=1, devices_per_run=1, runs_per_device=3)
    assert three.count == 3 and "3 fit on one by the memory settings" in three.why and three.shares == ()
    assert choose_runs_at_once(4, Platform.CUDA, 16, devices_here=1, devices_per_run=1, runs_per_device=None).count == 4


def test_a_command_that_cannot_hand_out_devices_runs_one_at_a_time():
    at_once = choose_runs_at_once(None, Platform.TPU, 13, devices_here=4, devices_per_run=1)
    assert at_once.unshared().count == 1
    cpu = choose_runs_at_once(None, Platform.CPU, 4)
    assert cpu.unshared() is cpu


def test_each_run_thread_gets_its_own_chips_and_port(monkeypatch):
    monkeypatch.delenv("TPU_VISIBLE_CHIPS", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    shares = ((0,), (1,))
    with ThreadPoolExecutor(2, thread_name_prefix="run") as pool:
        barrier = threading.Barrier(2)

        def env() -> dict[str, str]:
            barrier.wait()  # both threads alive: one slot each
            return slot_env(Platform.TPU, shares)

        envs = [f.result() for f in [pool.submit(env), pool.submit(env)]]
    assert sorted(e["TPU_VISIBLE_CHIPS"] for e in envs) == ["0", "1"]
    assert len({e["TPU_MESH_CONTROLLER_PORT"] for e in envs}) == 2
    assert all(e["TPU_PROCESS_BOUNDS"] == "1,1,1" and e["TPU_CHIPS_PER_PROCESS_BOUNDS"] == "1,1,1" for e in envs)
    assert slot_env(Platform.CUDA, ((4, 5),)) == {"CUDA_VISIBLE_DEVICES": "4,5"}
    assert share_env(Platform.CUDA, (0, 1), 0, visible="4,5,6,7") == {"CUDA_VISIBLE_DEVICES": "4,5"}  # the user's
    assert slot_env(Platform.TPU, ()) == {}


def test_a_number_asked_for_is_kept():
    assert choose_runs_at_once(3, Platform.CUDA, 16, runs_per_device=None).count == 3
    assert choose_runs_at_once(3, Platform.AUTO, 16).count == 3
    assert choose_runs_at_once(1, Platform.CPU, 16).why == "--jobs"


def test_usable_cores_is_at_least_one():
    assert usable_cores() >= 1
