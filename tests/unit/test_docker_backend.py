"""What the docker backend asks Docker for, checked against a fake client with the SDK's spec.

No daemon is needed: every test hands the backend a `create_autospec` client, and calls that do not
exist in the SDK (or have the wrong arguments) fail the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from unittest import mock

import docker
import pytest
import requests
from docker.errors import APIError, DockerException
from docker.models.containers import Container

from harness.core.platforms import JAX_CUDA_FIND_LINKS
from harness.environments import make_backend
from harness.environments.base import BackendOptions
from harness.environments import docker as dk
from harness.environments.docker import containers
from harness.environments import requirements as rq
from harness.environments import wheelhouse as wh
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable
from harness.core.kinds import Platform
from harness.core.runs import Program
from harness.inputs.pythons import PythonChooser, PythonVersion
from harness.inputs.process_variables import IR_DUMP_VAR
from tests.fakes import BASE, FACTS, fake_client, fake_container, fake_image

LOCK = "jax==0.4.28\njaxlib==0.4.28\nml-dtypes==0.4.0\nnumpy==1.26.4\n"
WHEELS = ["jax-0.4.28-py3-none-any.whl", "jaxlib-0.4.28-cp311-cp311-manylinux2014_x86_64.whl",
          "ml_dtypes-0.4.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
          "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
RUN_ENV = {"PYTHONHASHSEED": "7", "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}


# ---------------------------------------------------------------- fakes

@pytest.fixture
def no_subprocess(monkeypatch):
    """The wheelhouse must be answered from disk in these tests: no uv, no pip, no network."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"unexpected subprocess: {args[0]!r}")
    monkeypatch.setattr(wh.subprocess, "run", refuse)


@pytest.fixture
def state(tmp_path: Path, no_subprocess) -> Path:
    """A state folder whose wheelhouse already holds 0.4.28's lock and wheels."""
    house = tmp_path / "state" / "wheelhouse"
    (house / "locks").mkdir(parents=True)
    (house / "locks" / "jax-0.4.28-cpu-py3.11-latest.txt").write_text(LOCK)
    (house / "wheels").mkdir()
    for name in WHEELS + ["torch-2.0.0-cp311-cp311-manylinux1_x86_64.whl"]:  # torch: not pinned
        (house / "wheels" / name).write_bytes(b"wheel " + name.encode())
    return tmp_path / "state"


def backend(state: Path, client, **kwargs) -> dk.DockerBackend:
    kwargs.setdefault("base_image", "jax-harness-base:bookworm")
    return dk.DockerBackend(state_dir=state, client=client, user="1234:5678", **kwargs)


# ---------------------------------------------------------------- run arguments

def test_cpu_run_arguments(tmp_path):
    script = tmp_path / "scripts" / "repro.py"
    kwargs = dk.run_kwargs(script, RUN_ENV, tmp_path / "cache", Platform.CPU, "1234:5678")
    mounts = {m["Target"]: m for m in kwargs["mounts"]}
    assert mounts[dk.SCRIPT_MOUNT]["Source"] == str(script.parent.resolve())
    assert mounts[dk.SCRIPT_MOUNT]["ReadOnly"] is True
    assert mounts[dk.CACHE_MOUNT]["Source"] == str((tmp_path / "cache").resolve())
    assert mounts[dk.CACHE_MOUNT]["ReadOnly"] is False
    assert all(m["Type"] == "bind" for m in mounts.values())  # bind mounts: no volume is created
    assert not any("docker.sock" in m["Source"] for m in mounts.values())
    assert kwargs["environment"] == {**RUN_ENV, "JAX_COMPILATION_CACHE_DIR": dk.CACHE_MOUNT,
                                     "HOME": "/tmp", "TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp"}
    assert kwargs["network_disabled"] is True and kwargs["network_mode"] == "none"
    assert kwargs["user"] == "1234:5678"
    # An init is PID 1, so a script that signals itself dies as it would outside a container.
    assert kwargs["init"] is True
    assert "device_requests" not in kwargs and "privileged" not in kwargs and "volumes" not in kwargs


def test_the_seal_key_is_an_empty_file_in_a_container_that_mounts_its_folder(tmp_path, monkeypatch):
    """Issue 73 #5: a script right in HOME mounts HOME, the seal key in it: an empty file is bound over it."""
    from harness.core import seal
    from harness.environments import key_hiding

    home = tmp_path / "home"
    monkeypatch.setattr(seal, "KEY_FILE", home / ".cache" / "jax-cache-harness" / "reduce-state.key")
    mounts = dk.run_kwargs(home / "train.py", RUN_ENV, tmp_path / "cache", Platform.CPU, "0:0")["mounts"]
    cover = {m["Target"]: m for m in mounts}[f"{dk.SCRIPT_MOUNT}/.cache/jax-cache-harness/reduce-state.key"]
    assert cover["Source"] == str(key_hiding.empty_file()) and cover["ReadOnly"] is True
    assert len(seal.KEY_FILE.read_bytes()) == seal.KEY_BYTES  # made before the run: never one made meanwhile
    elsewhere = dk.run_kwargs(tmp_path / "project" / "train.py", RUN_ENV, tmp_path / "cache", Platform.CPU, "0:0")
    assert len(elsewhere["mounts"]) == len(mounts) - 1


def test_a_runs_temporary_folder_is_the_containers_own_whatever_the_host_said(tmp_path):
    """Issue 32.10: a host path (the harness's per-run folder, a config's TMPDIR) would not exist inside; the
    container's /tmp does, and goes with the container."""
    env = {**RUN_ENV, "TMPDIR": "/host/tmp/harness-run-x", "HARNESS_RUN_TMPDIR": "/host/tmp/harness-run-x"}
    environment = dk.run_kwargs(tmp_path / "s.py", env, tmp_path / "c", Platform.CPU, "0:0")["environment"]
    assert {k: environment.get(k) for k in ("TMPDIR", "TEMP", "TMP", "HARNESS_RUN_TMPDIR")} == {
        "TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp", "HARNESS_RUN_TMPDIR": None}


def test_a_user_scripts_ir_dump_folder_is_mounted_and_renamed(tmp_path):

    host_dump = tmp_path / "logs" / "run-01-seed-5.ir"
    kwargs = dk.run_kwargs(tmp_path / "s.py", {**RUN_ENV, IR_DUMP_VAR: str(host_dump)}, tmp_path / "c",
                           Platform.CPU, "0:0")
    mounts = {m["Target"]: m for m in kwargs["mounts"]}
    assert mounts[dk.IR_DUMP_MOUNT]["Source"] == str(host_dump.resolve()) and host_dump.is_dir()
    assert mounts[dk.IR_DUMP_MOUNT]["ReadOnly"] is False
    assert kwargs["environment"][IR_DUMP_VAR] == dk.IR_DUMP_MOUNT


def test_cuda_run_arguments_request_every_gpu_and_shared_memory(tmp_path):
    kwargs = dk.run_kwargs(tmp_path / "r.py", {}, tmp_path, Platform.CUDA, "0:0")
    [request] = kwargs["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert kwargs["shm_size"] == dk.CUDA_SHM_SIZE
    assert kwargs["network_disabled"] is True


def test_tpu_runs_get_the_host_s_chips_as_devices_and_the_devices_file_is_mounted(tmp_path, monkeypatch):
    from harness.environments.docker import containers
    from harness.inside.startup.jax_cache_harness_hook import DEVICES_VAR

    seen = []
    monkeypatch.setattr(containers, "device_nodes", lambda globs: seen.append(globs) or ["/dev/vfio/0", "/dev/vfio/vfio"])
    devices_file = tmp_path / "logs" / "run-01.devices.json"
    kwargs = dk.run_kwargs(tmp_path / "r.py", {DEVICES_VAR: str(devices_file)}, tmp_path, Platform.TPU, "0:0")
    assert kwargs["devices"] == ["/dev/vfio/0:/dev/vfio/0:rwm", "/dev/vfio/vfio:/dev/vfio/vfio:rwm"]
    assert "/dev/accel*" in seen[0] and "device_requests" not in kwargs
    assert kwargs["environment"][DEVICES_VAR] == f"{dk.RECORD_MOUNT}/run-01.devices.json"
    assert any(m["Source"] == str(devices_file.parent) for m in kwargs["mounts"])
    assert "devices" not in dk.run_kwargs(tmp_path / "r.py", {}, tmp_path, Platform.CPU, "0:0")
    assert dk.dockerfile_for(Platform.TPU).name == "Dockerfile.tpu" and dk.dockerfile_for(Platform.TPU).is_file()


def test_environment_run_creates_one_container_with_those_arguments(tmp_path):
    client = fake_client()
    container = fake_container(logs=b"hello\n")
    client.containers.create.side_effect = None
    client.containers.create.return_value = container
    env = dk.DockerEnvironment(client, "img:tag", "0.4.28", Platform.CUDA, {}, "1:2")
    script = tmp_path / "repro.py"
    outcome = env.run(Program(script, ("--mesh-shape", "8,1,1,1")), RUN_ENV, tmp_path / "cache",
                      tmp_path / "log.txt", 30)
    assert outcome.ok and outcome.exit_code == 0
    (image, command), kwargs = client.containers.create.call_args
    assert image == "img:tag"
    # Its own deadline inside (issue 27, item 9): the run's timeout and a grace, whatever the harness does.
    assert command[:2] == ["/bin/sh", "-c"] and command[4:] == ["timeout", "-s", "KILL", str(30 + dk.INSIDE_DEADLINE_GRACE_S),
                       "python", f"{dk.SCRIPT_MOUNT}/repro.py", "--mesh-shape", "8,1,1,1"]
    assert kwargs["device_requests"][0]["Capabilities"] == [["gpu"]]
    container.start.assert_called_once_with()
    container.wait.assert_called_once_with(timeout=30)
    container.remove.assert_called_once_with(force=True, v=True)
    assert (tmp_path / "log.txt").read_bytes() == b"hello\n"


@pytest.mark.parametrize("given, grace", [("4", 4), (" 0 ", 0), ("", 30), ("soon", 30), ("-5", 30), ("2.5", 30)])
def test_the_container_s_own_deadline_takes_its_grace_from_the_environment_where_it_is_seconds(monkeypatch, given,
                                                                                               grace):
    monkeypatch.setenv(dk.GRACE_VARIABLE, given)
    command = dk.container_command(Program(Path("/x/repro.py")), timeout_s=10)
    at = command.index("timeout")
    assert command[at:at + 4] == ["timeout", "-s", "KILL", str(10 + grace)]


# ---------------------------------------------------------------- how runs end

def run(client, tmp_path, timeout_s=30.0, **kwargs):
    kw = dk.run_kwargs(tmp_path / "s.py", {}, tmp_path, Platform.CPU, "0:0", **kwargs)
    return dk.run_container(client, "img", ["python", "s.py"], kw, tmp_path / "log", timeout_s)


def with_container(container):
    client = fake_client()
    client.containers.create.side_effect = None
    client.containers.create.return_value = container
    return client


def test_a_run_past_its_timeout_is_killed_recorded_and_removed(tmp_path):
    container = fake_container()
    container.wait.side_effect = [requests.exceptions.ReadTimeout("read timed out"), {"StatusCode": 137}]
    outcome = run(with_container(container), tmp_path, timeout_s=0.0)
    assert outcome.timed_out and outcome.exit_code is None and not outcome.ok
    assert "timeout" in outcome.reason
    container.kill.assert_called_once()
    container.remove.assert_called_once_with(force=True, v=True)


def test_an_oom_kill_is_the_reason(tmp_path):
    container = fake_container(status=137, oom=True)
    outcome = run(with_container(container), tmp_path, mem_limit="256m")
    assert outcome.exit_code == 137 and not outcome.ok
    assert "OOM" in outcome.reason and "256m" in outcome.reason
    container.reload.assert_called_once()


def test_a_crash_keeps_its_exit_code(tmp_path):
    outcome = run(with_container(fake_container(status=1, logs=b"Traceback\n")), tmp_path)
    assert outcome.exit_code == 1 and outcome.reason == "exit code 1"
    assert (tmp_path / "log").read_text() == "Traceback\n"


def test_a_container_that_prints_without_end_keeps_the_head_and_the_tail(tmp_path):
    container = fake_container(status=0)
    container.logs.side_effect = lambda **kw: iter([b"FIRST\n"] + [b"x" * 999 + b"\n"] * 5000 + [b"LAST\n"])
    containers._save_logs(container, tmp_path / "log", max_bytes=10_000)
    log = (tmp_path / "log").read_bytes()
    assert log.startswith(b"FIRST\n") and log.endswith(b"LAST\n") and len(log) < 10_200
    assert b"bytes of output cut here" in log


def test_a_death_by_signal_through_the_init_names_the_signal(tmp_path):
    outcome = run(with_container(fake_container(status=139)), tmp_path)
    assert outcome.exit_code == 139 and not outcome.ok
    assert outcome.reason == "killed by signal SIGSEGV (exit code 139)"


def test_ctrl_c_while_waiting_still_removes_the_container(tmp_path):
    container = fake_container()
    container.wait.side_effect = KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run(with_container(container), tmp_path)
    container.remove.assert_called_once_with(force=True, v=True)


def test_ctrl_c_during_create_removes_the_container_by_name(tmp_path):
    client = fake_client()
    client.containers.create.side_effect = KeyboardInterrupt
    leftover = fake_container()
    client.containers.get.return_value = leftover
    kw = dk.run_kwargs(tmp_path / "s.py", {}, tmp_path, Platform.CPU, "0:0", name="jax-harness-run-x")
    with pytest.raises(KeyboardInterrupt):
        dk.run_container(client, "img", ["python"], kw, tmp_path / "log", 5)
    client.containers.get.assert_called_once_with("jax-harness-run-x")
    leftover.remove.assert_called_once_with(force=True, v=True)


def test_a_runtime_without_gpus_gives_a_clear_reason(tmp_path):
    container = fake_container()
    container.start.side_effect = APIError(
        "500 Server Error", explanation='could not select device driver "" with capabilities: [[gpu]]')
    client = with_container(container)
    kw = dk.run_kwargs(tmp_path / "s.py", {}, tmp_path, Platform.CUDA, "0:0")
    outcome = dk.run_container(client, "img", ["python"], kw, tmp_path / "log", 5, gpu=True)
    assert not outcome.ok and "NVIDIA Container Toolkit" in outcome.reason
    container.remove.assert_called_once_with(force=True, v=True)


# ---------------------------------------------------------------- image tags and the build context

def test_image_tag_is_stable_and_changes_with_every_input():
    args = ("0.4.28", Platform.CPU, "3.11", "FROM x\n", "sha256:base", LOCK)
    tag = dk.image_tag(*args)
    assert tag == dk.image_tag(*args)
    assert tag.startswith(f"{dk.IMAGE_REPO}:jax0.4.28-cpu-py3.11-")
    for i, changed in enumerate(["0.4.29", Platform.CUDA, "3.12", "FROM y\n", "sha256:other", LOCK + "x==1\n"]):
        other = list(args)
        other[i] = changed
        assert dk.image_tag(*other) != tag, f"input {i} does not change the tag"


def test_build_context_holds_the_dockerfile_the_lock_and_only_the_pinned_wheels(tmp_path):
    source = tmp_path / "house"
    source.mkdir()
    for name in WHEELS + ["unrelated-1.0-py3-none-any.whl"]:
        (source / name).write_bytes(name.encode())
    context = tmp_path / "ctx"
    context.mkdir()
    dk.write_context(context, "FROM base\n", LOCK, [source / n for n in WHEELS])
    files = sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file())
    assert files == sorted(["Dockerfile", "requirements.lock", *(f"wheels/{n}" for n in WHEELS)])
    assert (context / "requirements.lock").read_text() == LOCK
    assert (context / "wheels" / WHEELS[1]).read_bytes() == WHEELS[1].encode()


@pytest.mark.parametrize("platform,name", [(Platform.CPU, "Dockerfile.cpu"), (Platform.CUDA, "Dockerfile.cuda")])
def test_dockerfiles_install_offline_with_the_build_args(platform, name):
    path = dk.dockerfile_for(platform)
    assert path.name == name
    text = path.read_text()
    for arg in ("ARG BASE_IMAGE", "ARG PYTHON_VERSION", "ARG JAX_VERSION"):
        assert arg in text
    assert "--no-index" in text and "requirements.lock" in text


# ---------------------------------------------------------------- prepare: build once, reuse after

def test_first_prepare_builds_offline_and_the_second_reuses(state):
    client = fake_client(BASE)
    say = []
    env = backend(state, client).prepare("0.4.28", Platform.CPU, say.append)
    build = client.api.build.call_args.kwargs
    assert build["buildargs"] == {"BASE_IMAGE": "jax-harness-base:bookworm", "PYTHON_VERSION": "3.11",
                                  "JAX_VERSION": "0.4.28"}
    assert build["network_mode"] == "none" and build["pull"] is False and build["tag"] == env.image
    assert env.describe()["reused"] is False and env.describe()["jax"] == "0.4.28"
    assert any("Step 2/2" in line for line in say)  # build progress reaches the user
    log = Path(next(line for line in say if "(log " in line).split("(log ")[1].rstrip(")"))
    assert "Step 2/2 : RUN pip install" in log.read_text()  # and the whole log is kept

    again = backend(state, client)
    env2 = again.prepare("0.4.28", Platform.CPU)
    assert client.api.build.call_count == 1 and again.builds == 0
    assert env2.image == env.image and env2.describe()["reused"] is True


def test_rebuild_builds_even_when_the_image_exists(state):
    client = fake_client(BASE)
    backend(state, client).prepare("0.4.28", Platform.CPU)
    with mock.patch.object(wh.Wheelhouse, "lock", return_value=LOCK) as lock:
        rebuilding = backend(state, client, rebuild=True)
        rebuilding.prepare("0.4.28", Platform.CPU)
        assert lock.call_args.kwargs["refresh"] is True  # --rebuild also resolves again
        rebuilding.prepare("0.4.28", Platform.CPU)  # the same sweep, another cell: once is enough
    assert client.api.build.call_count == 2
    assert client.api.build.call_args.kwargs["nocache"] is True
    assert client.api.build.call_args_list[0].kwargs["nocache"] is False
    client.images.remove.assert_called_once_with("sha256:built")  # the replaced image is not left


def test_a_failed_build_is_an_unavailable_environment_with_the_log_tail(state):
    client = fake_client(BASE)
    client.api.build.side_effect = lambda **kw: iter([
        {"stream": "Step 8/12 : RUN pip install\n"},
        {"stream": "ERROR: No matching distribution found for jaxlib==0.4.28\n"},
        {"error": "The command '/bin/sh -c pip install' returned a non-zero code: 1",
         "errorDetail": {"code": 1}}])
    with pytest.raises(EnvironmentUnavailable) as info:
        backend(state, client).prepare("0.4.28", Platform.CPU)
    assert "docker build for jax 0.4.28 failed" in str(info.value)
    assert "No matching distribution" in info.value.log_tail
    assert python_checks(client) == [["python3.11", "-c", "pass"]]  # and no run: only the base was asked
    assert client.containers.create.call_count == 1


def test_a_base_image_that_cannot_be_pulled_is_one_clear_line(state):
    client = fake_client({}, pull_error="dial tcp: lookup registry-1.docker.io: no such host")
    with pytest.raises(BackendUnavailable) as info:
        backend(state, client, base_image="python:3.11-slim").prepare("0.4.28", Platform.CPU)
    message = str(info.value)
    assert "python:3.11-slim" in message and "harness base-image" in message and "\n" not in message
    client.images.pull.assert_called_once_with("python:3.11-slim")


def test_the_default_base_falls_back_to_the_offline_image_when_it_is_here(state):
    client = fake_client(BASE)
    say = []
    backend(state, client, base_image=None).prepare("0.4.28", Platform.CPU, say.append)
    assert client.api.build.call_args.kwargs["buildargs"]["BASE_IMAGE"] == dk.OFFLINE_BASE_IMAGE
    assert any("python:3.11-slim" in line and dk.OFFLINE_BASE_IMAGE in line for line in say)


def test_an_image_whose_jax_does_not_import_is_an_unavailable_environment(state):
    client = fake_client(BASE)
    client.containers.create.side_effect = lambda image, command, **k: fake_container(
        status=0 if command[1:] == ["-c", "pass"] else 1,  # the base has its Python; jax fails to import
        logs=b"ImportError: numpy.core.multiarray failed to import\n")
    with pytest.raises(EnvironmentUnavailable) as info:
        backend(state, client).prepare("0.4.28", Platform.CPU)
    assert "does not start" in str(info.value) and "ImportError" in info.value.log_tail


def test_docker_available_says_why_not():
    def down(**kwargs):
        raise DockerException("Error while fetching server API version: Connection refused")
    ok, reason = dk.docker_available(down)
    assert not ok and "Connection refused" in reason

    client = fake_client()
    client.version.return_value = {"Version": "20.10.24"}
    client.api.base_url = "http+docker://localhost"
    ok, reason = dk.docker_available(lambda **kwargs: client)
    assert ok and "20.10.24" in reason
    client.ping.assert_called_once()


def test_no_daemon_is_backend_unavailable(monkeypatch, tmp_path):
    monkeypatch.setattr(docker, "from_env", mock.Mock(side_effect=DockerException("Connection refused")))
    with pytest.raises(BackendUnavailable, match="no Docker daemon answers"):
        dk.DockerBackend(state_dir=tmp_path).prepare("0.4.28", Platform.CPU)


# ---------------------------------------------------------------- the wheelhouse (pure parts)

def test_lock_parsing_accepts_pins_only():
    assert wh.parse_lock("# comment\nJAX==0.4.28\nml_dtypes==0.4.0  # via jax\n\n") == [
        wh.Pin("jax", "0.4.28"), wh.Pin("ml-dtypes", "0.4.0")]
    with pytest.raises(ValueError):
        wh.parse_lock("numpy>=1.26\n")


def test_wheels_are_picked_by_name_version_and_tag():
    tags = wh.image_tags("3.11")
    pins = wh.parse_lock(LOCK + "scipy==1.13.0\n")
    files = WHEELS + ["numpy-1.26.4-cp312-cp312-manylinux2014_x86_64.whl",  # other Python
                      "scipy-1.13.0-cp311-cp311-macosx_12_0_arm64.whl",  # other OS
                      "numpy-1.26.3-cp311-cp311-manylinux2014_x86_64.whl"]  # other version
    found, missing = wh.pick_wheels(pins, files, tags)
    assert set(found.values()) == set(WHEELS)
    assert missing == [wh.Pin("scipy", "1.13.0")]
    # a manylinux_2_28 wheel (newer jaxlib) installs on the images; 2_34 would not
    assert wh.pick_wheels([wh.Pin("jaxlib", "0.7.2")],
                          ["jaxlib-0.7.2-cp311-cp311-manylinux_2_27_x86_64.whl"], tags)[1] == []
    assert wh.pick_wheels([wh.Pin("jaxlib", "0.7.2")],
                          ["jaxlib-0.7.2-cp311-cp311-manylinux_2_34_x86_64.whl"], tags)[1] != []


def test_cuda_local_versions_are_kept_apart():
    tags = wh.image_tags("3.11")
    files = ["jaxlib-0.4.25-cp311-cp311-manylinux2014_x86_64.whl",
             "jaxlib-0.4.25+cuda12.cudnn89-cp311-cp311-manylinux2014_x86_64.whl"]
    found, _ = wh.pick_wheels([wh.Pin("jaxlib", "0.4.25+cuda12.cudnn89")], files, tags)
    assert list(found.values()) == [files[1]]
    assert rq.find_links_for("0.4.25", Platform.CUDA) == [JAX_CUDA_FIND_LINKS]
    assert rq.find_links_for("0.4.26", Platform.CUDA) == [] == rq.find_links_for("0.4.25", Platform.CPU)


def test_host_downloads_ignore_the_machines_pip_config_but_keep_its_ca_bundle():
    env = wh.host_pip_environment({"PIP_FIND_LINKS": "/opt/wheels", "PIP_CONSTRAINT": "/etc/c.txt",
                                   "PIP_INDEX_URL": "https://mirror/simple", "PATH": "/bin",
                                   "REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"})
    assert "PIP_FIND_LINKS" not in env and "PIP_CONSTRAINT" not in env
    assert env["PIP_CONFIG_FILE"] == "/dev/null" and env["PIP_INDEX_URL"] == "https://mirror/simple"
    assert env["PIP_CERT"] == "/etc/ssl/certs/ca-certificates.crt" and env["PATH"] == "/bin"


def test_resolution_is_as_of_the_release_date_and_downloads_are_binary_for_the_image():
    cutoff = datetime(2024, 5, 9, 23, 25, tzinfo=timezone.utc)
    cmd = wh.lock_command("uv", ["jax==0.4.28"], "3.11", Path("out.txt"), cutoff, [])
    assert cmd[cmd.index("--exclude-newer") + 1] == "2024-05-10T23:25:00Z"
    assert cmd[cmd.index("--python-platform") + 1] == wh.UV_WHEEL_PLATFORM
    dl = wh.download_command(Path("req.txt"), Path("wheels"), "3.11", [])
    assert "--no-deps" in dl and "--only-binary=:all:" in dl
    platforms = [dl[i + 1] for i, a in enumerate(dl) if a == "--platform"]
    assert "manylinux2014_x86_64" in platforms and f"manylinux_2_{wh.GLIBC_MAX}_x86_64" in platforms


def test_a_cached_lock_is_read_back_without_resolving(tmp_path, no_subprocess):
    house = wh.Wheelhouse(tmp_path)
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "jax-0.4.29-cpu-py3.11-20240610.txt").write_text("jax==0.4.29\n")
    cutoff = datetime(2024, 6, 10, 16, 36, tzinfo=timezone.utc)
    assert house.lock("0.4.29", Platform.CPU, "3.11", cutoff, tmp_path / "log") == "jax==0.4.29\n"
    with pytest.raises(AssertionError, match="unexpected subprocess"):
        house.lock("0.4.29", Platform.CPU, "3.11", cutoff, tmp_path / "log", refresh=True)


def test_a_user_scripts_cache_hook_and_its_record_are_mounted(tmp_path):
    from harness.inputs.process_variables import hook_env
    from harness.core.kinds import ThresholdMode
    from harness.inside.startup import startup_dir

    record = tmp_path / "logs" / "run-01-seed-5.cache.jsonl"
    kwargs = dk.run_kwargs(tmp_path / "s.py", {**RUN_ENV, **hook_env(record, ThresholdMode.HARNESS)},
                           tmp_path / "c", Platform.CPU, "0:0")
    mounts = {m["Target"]: m for m in kwargs["mounts"]}
    assert mounts[dk.STARTUP_MOUNT]["Source"] == str(startup_dir()) and mounts[dk.STARTUP_MOUNT]["ReadOnly"]
    assert mounts[dk.RECORD_MOUNT]["Source"] == str(record.parent.resolve())
    assert kwargs["environment"]["PYTHONPATH"] == dk.STARTUP_MOUNT
    assert kwargs["environment"]["HARNESS_CACHE_RECORD"] == f"{dk.RECORD_MOUNT}/{record.name}"
    assert kwargs["environment"]["HARNESS_CACHE_THRESHOLDS"] == "harness"


# ---------------------------------------------------------------- the images' Python per release

NEW_LOCK = "jax==0.12.0.1\njaxlib==0.12.0.1\nnumpy==2.3.0\n"
NEW_WHEELS = ["jax-0.12.0.1-py3-none-any.whl", "jaxlib-0.12.0.1-cp313-cp313-manylinux_2_27_x86_64.whl",
              "numpy-2.3.0-cp313-cp313-manylinux_2_28_x86_64.whl"]
TRIXIE = {"jax-harness-base:trixie": fake_image("sha256:trixie", ["jax-harness-base:trixie"])}


def newest_only(version: str):
    """Wheels as the index lists them: 0.4.28 for 3.9-3.12, 0.12.0.1 for 3.12-3.15."""
    minors = range(9, 13) if version == "0.4.28" else range(12, 16)
    return frozenset(PythonVersion(3, m) for m in minors)


def auto_backend(state: Path, client, **kwargs) -> dk.DockerBackend:
    house = state / "wheelhouse"
    (house / "locks" / "jax-0.12.0.1-cpu-py3.13-latest.txt").write_text(NEW_LOCK)
    for name in NEW_WHEELS:
        (house / "wheels" / name).write_bytes(b"wheel " + name.encode())
    pinned = kwargs.pop("pinned", None)
    pythons = PythonChooser(PythonVersion(3, 11), newest_only, pinned=pinned,
                            provided=dk.OFFLINE_PYTHONS | ({pinned} if pinned else set()))
    return dk.DockerBackend(state_dir=state, client=client, user="1234:5678", pythons=pythons, **kwargs)


def python_checks(client) -> list[list[str]]:
    return [c.args[1] for c in client.containers.create.call_args_list if c.args[1][1:] == ["-c", "pass"]]


def test_the_images_python_follows_the_choice_on_the_offline_base_that_has_it(state):
    client = fake_client({**BASE, **TRIXIE})
    newest_facts = {**FACTS, "python": "3.13.5", "jax": "0.12.0.1", "jaxlib": "0.12.0.1"}
    client.containers.create.side_effect = lambda *a, **k: fake_container(logs=json.dumps(newest_facts).encode())
    say = []
    backend = auto_backend(state, client)
    env = backend.prepare("0.12.0.1", Platform.CPU, say.append)
    assert env.describe()["python_choice"]["version"] == "3.13" and env.describe()["python_choice"]["why"] == "newest"
    build = client.api.build.call_args.kwargs
    assert build["buildargs"]["PYTHON_VERSION"] == "3.13"
    assert build["buildargs"]["BASE_IMAGE"] == "jax-harness-base:trixie" and "-py3.13-" in build["tag"]
    assert any(line.startswith("jax 0.12.0.1: Python 3.13 (") for line in say)
    assert python_checks(client) == [["python3.13", "-c", "pass"]]  # the base's Python, asked first
    # The release the harness's Python runs keeps the 3.11 image on bookworm, as before.
    client.containers.create.side_effect = lambda *a, **k: fake_container(logs=json.dumps(FACTS).encode())
    backend.prepare("0.4.28", Platform.CPU)
    assert client.api.build.call_args.kwargs["buildargs"]["BASE_IMAGE"] == dk.OFFLINE_BASE_IMAGE


def test_no_base_image_with_that_python_names_the_fix_and_builds_nothing(state):
    client = fake_client(BASE)  # bookworm only: Python 3.11
    with pytest.raises(EnvironmentUnavailable) as info:
        auto_backend(state, client).prepare("0.12.0.1", Platform.CPU)
    message = str(info.value)
    assert "no base image with Python 3.13" in message and "harness base-image --debian trixie" in message
    assert "\n" not in message
    client.api.build.assert_not_called()


def test_a_base_image_without_that_python_is_refused_before_any_download_or_build(state):
    client = fake_client(BASE)
    client.containers.create.side_effect = lambda *a, **k: fake_container(status=127)
    with pytest.raises(EnvironmentUnavailable) as info:
        auto_backend(state, client, base_image=dk.OFFLINE_BASE_IMAGE).prepare("0.12.0.1", Platform.CPU)
    assert "jax-harness-base:bookworm has no python3.13, the Python chosen for jax 0.12.0.1" in str(info.value)
    assert "set docker.base_image to one with python3.13, e.g. jax-harness-base:trixie" in str(info.value)
    client.api.build.assert_not_called()


def test_a_pinned_python_no_debian_release_has_says_what_to_do(state):
    client = fake_client({**BASE, **TRIXIE})
    with pytest.raises(EnvironmentUnavailable, match="no Debian release offline has Python 3.12.*docker.base_image"):
        auto_backend(state, client, pinned=PythonVersion(3, 12)).prepare("0.12.0.1", Platform.CPU)
    client.api.build.assert_not_called()



# ---------------------------------------------------------------- containers a gone harness left (issue 27, item 9)

def test_a_container_names_its_owner_by_pid_start_time_and_boot():
    labels = dk.run_kwargs(Path("/s.py"), {}, Path("/c"), Platform.CPU, "0:0")["labels"]
    assert labels[dk.OWNER_LABEL] == str(os.getpid()) and labels[dk.OWNER_START_LABEL].isdigit()
    assert labels[dk.OWNER_BOOT_LABEL] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert not dk.owner_gone(labels)  # this process: alive, the same one


def test_an_owner_is_gone_when_its_pid_is_free_or_another_process():
    mine = dk.owner_labels()
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert dk.owner_gone({**mine, dk.OWNER_LABEL: str(dead.pid)})  # (a pid freed just now, not yet reused)
    assert dk.owner_gone({**mine, dk.OWNER_START_LABEL: "1"})  # our pid, but not the process that started it
    assert dk.owner_gone({dk.OWNER_LABEL: str(dead.pid)})  # a container of an earlier release: the pid alone
    assert not dk.owner_gone({**mine, dk.OWNER_LABEL: str(dead.pid), dk.OWNER_BOOT_LABEL: "another-machine"})
    assert not dk.owner_gone({dk.OWNER_LABEL: "not a pid"}) and not dk.owner_gone({})


def test_the_next_sweep_removes_only_run_containers_whose_owner_is_gone():
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = {**dk.owner_labels(), dk.OWNER_LABEL: str(dead.pid)}

    def container(name, labels):
        c = mock.create_autospec(Container, instance=True)
        c.name, c.labels = name, labels
        return c

    orphan = container("orphan", {dk.LABEL: "run", **gone})
    alive = container("alive", {dk.LABEL: "run", **dk.owner_labels()})
    image_build = container("build", {dk.LABEL: "image", **gone})
    client = fake_client()
    client.containers.list.return_value = [orphan, alive, image_build]
    said = []
    assert dk.reap_orphans(client, said.append) == ["orphan"]
    orphan.remove.assert_called_once_with(force=True, v=True)
    alive.remove.assert_not_called()
    image_build.remove.assert_not_called()
    (_, kwargs), = client.containers.list.call_args_list
    assert kwargs == {"all": True, "filters": {"label": [dk.LABEL, dk.OWNER_LABEL]}}
    assert said == ["docker: removed 1 container(s) left by harness processes that are gone: orphan"]


def test_the_docker_sdk_is_imported_only_when_a_docker_backend_is_made():
    """Every command's start (a check's, before its first run) imports the CLI; the Docker SDK and requests under
    it (about 0.07 s of CPU) come only with a docker backend. A fresh interpreter: this one has them already."""
    code = ("import sys; import harness.cli.commands; from harness.environments import make_backend; "
            "from harness.environments.base import BackendOptions; "
            "print(sorted(m for m in ('docker', 'requests') if m in sys.modules)); "
            "make_backend('venv', BackendOptions()); print(sorted(m for m in ('docker', 'requests') if m in sys.modules)); "
            "make_backend('docker', BackendOptions()); print('docker' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split("\n")[:3] == ["[]", "[]", "True"]


def test_the_backend_line_says_asked_only_when_it_was():
    """The default (venv) is said as the default, typed or not; another backend was asked for by name."""
    assert make_backend("venv", BackendOptions()).why == "--backend venv, the default"
    assert make_backend("docker", BackendOptions()).why == "asked for with --backend docker"  # no daemon asked yet
