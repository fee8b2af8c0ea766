"""Before a cuda sweep: enough GPUs visible, or one line saying why not (no run is made)."""

from __future__ import annotations

import json
import stat

import pytest
from docker.errors import APIError

from harness import service
from harness.cli import commands as cli
from harness.environments import docker as dk
from harness.environments.base import Backend
from harness.environments.gpus import (CONTAINER_ADVICE, GpuCount, host_gpus, parse_gpu_list, shortfall,
                                       within_visible_devices)
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable
from harness.core.kinds import Platform
from tests.fakes import BASE, INDEX, fake_client, fake_container

SMI_L = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b)\n"
         "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2c3d)\n")


def fake_smi(tmp_path, output=SMI_L, code=0):
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir(exist_ok=True)
    smi.write_text(f"#!/bin/sh\n[ \"$1\" = -L ] || exit 9\nprintf '%s' '{output}'\nexit {code}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return smi


def test_parse_and_narrow():
    assert parse_gpu_list(SMI_L) == 2
    assert parse_gpu_list("No devices found.\n") == 0
    assert within_visible_devices(8, None) == 8
    assert within_visible_devices(8, "0,1,2") == 3
    assert within_visible_devices(2, "0,1,2,3") == 2
    assert within_visible_devices(8, "") == 0


def test_shortfall_is_one_line_naming_what_to_check():
    assert shortfall(GpuCount(8, "nvidia-smi -L"), 8) is None
    text = shortfall(GpuCount(2, "nvidia-smi -L"), 8, "configs/nightly.yaml: device_count")
    assert text == ("configs/nightly.yaml: device_count: platform cuda needs 8 GPU(s), but nvidia-smi -L lists 2; "
                    "check the NVIDIA driver (`nvidia-smi -L`) and CUDA_VISIBLE_DEVICES")
    text = shortfall(GpuCount(0, "a container", "docker: no GPU runtime", CONTAINER_ADVICE), 1)
    assert "but a container: docker: no GPU runtime; check that the NVIDIA Container Toolkit" in text
    assert "\n" not in text


def test_host_gpus_asks_nvidia_smi(tmp_path):
    assert host_gpus(str(fake_smi(tmp_path)), environ={}) == GpuCount(2, "nvidia-smi -L")
    narrowed = host_gpus(str(fake_smi(tmp_path)), environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert narrowed.visible == 1 and "CUDA_VISIBLE_DEVICES='1'" in narrowed.counted_by
    failed = host_gpus(str(fake_smi(tmp_path, "NVIDIA-SMI has failed because it could not communicate", 9)),
                       environ={})
    assert failed.visible == 0 and failed.problem == ("exit code 9: NVIDIA-SMI has failed because it could not "
                                                      "communicate")


def test_no_nvidia_smi_on_path(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    count = host_gpus(environ={})
    assert count.visible == 0 and "nvidia-smi is not on PATH" in count.problem


class Counting(Backend):
    name = "fake"

    def __init__(self, visible):
        self.visible, self.asked = visible, 0

    def prepare(self, jax_version, platform, say=None):
        raise AssertionError("nothing is prepared before the check")

    def visible_gpus(self, say=None):
        self.asked += 1
        return GpuCount(self.visible, "nvidia-smi -L")


def test_check_gpus_only_for_cuda():
    backend = Counting(2)
    backend.check_gpus(Platform.CPU, 8)
    backend.check_gpus(Platform.AUTO, 8)
    assert backend.asked == 0
    backend.check_gpus(Platform.CUDA, 2)
    with pytest.raises(BackendUnavailable, match="needs 8 GPU"):
        backend.check_gpus(Platform.CUDA, 8)


def test_a_cuda_sweep_with_too_few_gpus_stops_before_writing_anything(tmp_path, monkeypatch, write, capsys):
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    monkeypatch.setenv("PATH", f"{fake_smi(tmp_path).parent}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    config = write("gpu.yaml", "name: gpu\nrepro: shard_map_grad\njax_versions: ['0.4.28']\nplatform: cuda\n"
                               "device_count: 8\n")
    out = tmp_path / "out"
    assert cli.main(["run", str(config), "--backend", "venv", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"harness: error: {config}: device_count: platform cuda needs 8 GPU(s), but nvidia-smi -L "
                       "lists 2; check the NVIDIA driver (`nvidia-smi -L`) and CUDA_VISIBLE_DEVICES")
    assert not out.exists()


def test_docker_counts_what_a_container_with_the_gpus_requested_sees(tmp_path):
    client = fake_client(dict(BASE))
    client.containers.create.side_effect = lambda *a, **k: fake_container(logs=SMI_L.encode())
    backend = dk.DockerBackend(state_dir=tmp_path, client=client, base_image="jax-harness-base:bookworm")
    count = backend.visible_gpus()
    assert count.visible == 2 and count.advice == CONTAINER_ADVICE
    image, command = client.containers.create.call_args.args
    kwargs = client.containers.create.call_args.kwargs
    assert (image, command) == ("sha256:base", ["nvidia-smi", "-L"])
    (request,) = kwargs["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert "utility" in kwargs["environment"]["NVIDIA_DRIVER_CAPABILITIES"]  # or nvidia-smi is not mounted
    assert kwargs["network_mode"] == "none"


def test_docker_without_a_gpu_runtime_says_so_in_one_line(tmp_path):
    client = fake_client(dict(BASE))
    client.containers.create.side_effect = APIError(
        "500 Server Error", explanation='could not select device driver "" with capabilities: [[gpu]]')
    backend = dk.DockerBackend(state_dir=tmp_path, client=client, base_image="jax-harness-base:bookworm")
    with pytest.raises(BackendUnavailable) as caught:
        backend.check_gpus(Platform.CUDA, 8, "nightly.yaml: device_count")
    assert str(caught.value) == (
        "nightly.yaml: device_count: platform cuda needs 8 GPU(s), but a container with the GPUs requested "
        "(nvidia-smi -L): docker: could not select device driver \"\" with capabilities: [[gpu]]; "
        + CONTAINER_ADVICE)


# ---------------------------------------------------------------- the cuda image's own probe

JAX_NO_CUDA = (b"WARNING: cuda plugin found but failed to initialize\n"
               b"RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices. "
               b"(you may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this "
               b"backend.)\n")


def test_cuda_probe_reports_the_plugin_and_devices(tmp_path):
    client = fake_client(dict(BASE))
    facts = {"jax-cuda12-plugin": "0.4.28", "cuda_devices": 8, "device_kind": "NVIDIA H100 80GB HBM3"}
    client.containers.create.side_effect = lambda *a, **k: fake_container(logs=(json.dumps(facts) + "\n").encode())
    backend = dk.DockerBackend(state_dir=tmp_path, client=client, base_image="jax-harness-base:bookworm")
    assert backend.cuda_probe("img:cuda", tmp_path / "x.log") == facts
    kwargs = client.containers.create.call_args.kwargs
    assert kwargs["environment"]["JAX_PLATFORMS"] == "cuda" and kwargs["device_requests"]


def test_cuda_probe_without_a_visible_device_is_one_line_naming_what_to_check(tmp_path):
    client = fake_client(dict(BASE))
    client.containers.create.side_effect = lambda *a, **k: fake_container(status=1, logs=JAX_NO_CUDA)
    backend = dk.DockerBackend(state_dir=tmp_path, client=client, base_image="jax-harness-base:bookworm")
    with pytest.raises(EnvironmentUnavailable) as caught:
        backend.cuda_probe("img:cuda", tmp_path / "x.log", request_gpus=False)
    text = str(caught.value)
    assert "\n" not in text and text.startswith("no CUDA device is visible in img:cuda (jax: RuntimeError: Unable "
                                                "to initialize backend 'cuda'")
    assert "NVIDIA Container Toolkit" in text and "GPUs are requested" in text
    assert "device_requests" not in client.containers.create.call_args.kwargs


def test_cuda_probe_when_the_runtime_gives_no_gpu_keeps_the_runtime_s_reason(tmp_path):
    client = fake_client(dict(BASE))
    client.containers.create.side_effect = APIError(
        "500", explanation='could not select device driver "" with capabilities: [[gpu]]')
    backend = dk.DockerBackend(state_dir=tmp_path, client=client, base_image="jax-harness-base:bookworm")
    with pytest.raises(EnvironmentUnavailable, match="the Docker runtime has no GPU support .*Container Toolkit"):
        backend.cuda_probe("img:cuda", tmp_path / "x.log")


def test_the_cuda_default_base_is_a_plain_python():
    assert dk.default_base_images("3.11")[Platform.CUDA] == "python:3.11-slim"
