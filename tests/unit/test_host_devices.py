"""On an accelerator the device count nobody gave is the host's (a one-chip TPU host: 1), not cpu's 8 simulated;
a count given that the host lacks is still the probe's one line (fake device facts: no accelerator here)."""

from __future__ import annotations

import pytest

from harness.core.errors import BackendUnavailable
from harness.core.kinds import Platform
from harness.core.model import Mesh
from harness.environments.base import Backend, Environment
from harness.environments.gpus import GpuCount
from harness.inputs.config import parse_config
from harness.results.header import recorded_config
from harness.service.measurement import with_host_devices


class Host(Backend):
    """A backend on a host with `chips` TPU chips and `gpus` GPUs."""

    name = "local"

    def __init__(self, chips: int = 0, gpus: int = 0):
        self.chips, self.gpus = chips, gpus

    def prepare(self, jax_version, platform, say=None) -> Environment:
        raise AssertionError("nothing is run here")

    def visible_chips(self) -> GpuCount:
        return GpuCount(self.chips, "/dev/accel*, /dev/vfio/N")

    def visible_gpus(self, say=None) -> GpuCount:
        return GpuCount(self.gpus, "nvidia-smi -L")


def config(platform: str, **keys):
    return parse_config({"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.10.2"], "platform": platform,
                         **keys})


@pytest.mark.parametrize("platform, host, count", [
    ("tpu", Host(chips=1), 1), ("tpu", Host(chips=4), 4), ("cuda", Host(gpus=2), 2),
    ("auto", Host(chips=1, gpus=2), 1), ("auto", Host(gpus=2), 2),
    ("auto", Host(), 8), ("cpu", Host(chips=4, gpus=2), 8),  # no accelerator found, or simulated: 8
])
def test_a_count_nobody_gave_is_the_hosts_on_an_accelerator(platform, host, count):
    given = config(platform)
    assert given.host_devices and given.device_count == 8
    resolved, line = with_host_devices(given, host)
    assert resolved.device_count == count and not resolved.host_devices
    assert resolved.meshes == (Mesh((count, 1, 1, 1), ("a", "b", "c", "d")),)  # the built-in repro's, resized
    assert recorded_config(resolved).device_count == count  # results.json says the count used
    assert (f"devices: {count} {platform}" in line or f"devices: {count} tpu" in line
            or f"devices: {count} cuda" in line) == (platform != "cpu" and (host.chips or host.gpus) > 0)
    host.check_gpus(resolved.platform, resolved.device_count)  # enough here: no shortfall


def test_a_count_given_is_kept_and_a_shortfall_still_refused():
    given = config("tpu", device_count=8)
    assert not given.host_devices
    resolved, line = with_host_devices(given, Host(chips=1))
    assert resolved.device_count == 8 and line == ""
    with pytest.raises(BackendUnavailable, match="tpu needs 8 chip"):
        Host(chips=1).check_gpus(resolved.platform, resolved.device_count, "--device-count")


def test_an_accelerator_with_none_here_needs_one_and_says_so():
    resolved, _ = with_host_devices(config("tpu"), Host())
    assert resolved.device_count == 1
    with pytest.raises(BackendUnavailable, match="tpu needs 1 chip"):
        Host().check_gpus(resolved.platform, resolved.device_count)


def test_an_accelerators_mesh_says_its_count():
    given = config("tpu", meshes=[{"shape": [2, 1, 1, 1], "axis_names": ["a", "b", "c", "d"]}])
    assert given.device_count == 2 and not given.host_devices
    cpu = {"meshes": [{"shape": [2, 1, 1, 1], "axis_names": ["a", "b", "c", "d"]}]}
    with pytest.raises(Exception, match="device_count is 8"):  # cpu keeps its 8 simulated unless given
        config("cpu", **cpu)


@pytest.mark.parametrize("platform, given, host_devices", [
    (Platform.TPU, None, True), (Platform.TPU, 8, False), (Platform.CPU, None, True), (Platform.CPU, 4, False)])
def test_check_leaves_the_count_to_the_host_only_when_none_is_given(tmp_path, platform, given, host_devices):
    from harness.service import ScriptCheck, ScriptRunOptions, check_config

    script = tmp_path / "prog.py"
    script.write_text("import jax\n")
    made = check_config(ScriptCheck(script=script, script_run=ScriptRunOptions(), versions=("0.10.2",), platform=platform,
                                    device_count=given, runs=None, timeout_s=60.0))
    assert made.host_devices == host_devices and made.device_count == (given or 8)
    resolved, _ = with_host_devices(made, Host(chips=1))
    assert resolved.device_count == (given or (1 if platform == Platform.TPU else 8))


def test_autos_container_sees_no_accelerator_so_none_is_counted():
    class Container(Host):
        runs_on_host = False

        def visible_gpus(self, say=None) -> GpuCount:
            raise AssertionError("no container is started to count GPUs auto's runs could not see")

    assert with_host_devices(config("auto"), Container(chips=1, gpus=2))[0].device_count == 8
    assert with_host_devices(config("tpu"), Container(chips=1))[0].device_count == 1  # tpu's gets the chips


@pytest.mark.parametrize("host, said", [
    (Host(chips=1), "this host has 1 tpu chip(s): --platform tpu runs on them"),
    (Host(gpus=2), "this host has 2 cuda GPU(s): --platform cuda runs on them"),
    (Host(), None)])
def test_on_cpu_a_host_s_accelerator_is_named_with_the_option_that_uses_it(host, said):
    """Seen on a TPU host: `check --pytest` of a TPU user's suite ran on 8 simulated CPU devices (the default
    platform), said only as `cpu x8`; the devices line now names the chips it left unused and how to use them."""
    resolved, line = with_host_devices(config("cpu"), host)
    assert resolved.device_count == 8
    if said is None:
        assert line == ""
    else:
        assert line.startswith("devices: 8 simulated on the CPU (--platform cpu); ") and line.endswith(said), line


def test_a_backend_whose_runs_see_none_of_the_hosts_devices_names_none():
    class Container(Host):
        runs_on_host = False

    assert with_host_devices(config("cpu"), Container(chips=1))[1] == ""
