"""Every platform is described whole, in one place (harness/core/platforms.py), and what differs is read from it."""

import dataclasses

import pytest

from harness.core.kinds import Platform
from harness.core.platforms import (DEVICE_COUNT_FLAG, PLATFORMS, Container, Devices, Install, PlatformSpec, DeviceProbe,
                                    Sharing, describe, tpu_chips)
from harness.environments.requirements import find_links_for, jax_requirements


def _parts(record: object) -> list[tuple[str, object]]:
    out = []
    for f in dataclasses.fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        out += _parts(value) if dataclasses.is_dataclass(value) else [(f.name, value)]
    return out


@pytest.mark.parametrize("platform", list(Platform))
def test_every_platform_has_every_part(platform):
    spec = PLATFORMS[platform]
    assert spec.platform == platform and isinstance(spec, PlatformSpec)
    for part in (spec.install, spec.container, spec.devices):
        assert type(part) in (Install, Container, Devices)
    for name, value in _parts(spec):
        assert value is not None, f"{platform}: {name} missing"
    assert spec.name and spec.devices.unit and spec.install.flavour
    if spec.devices.sharing != Sharing.CORES:
        assert spec.devices.alone_because, f"{platform}: --jobs auto would not say why"
    if spec.devices.sharing == Sharing.SPLIT:
        assert spec.devices.visible_var, f"{platform}: runs could not be given their own devices"
    if spec.accelerator:
        assert spec.probe != DeviceProbe.NONE and spec.jax_platforms
        assert spec.counts == (platform,), f"{platform}: with no --device-count, the host's would not be counted"
        assert spec.slurm, f"{platform}: a Slurm job would not ask for its devices"


def test_a_platform_added_without_a_description_fails():
    assert set(PLATFORMS) == set(Platform)


def test_run_variables():
    assert describe(Platform.CPU).run_env(8) == {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"{DEVICE_COUNT_FLAG}=8"}
    # An accelerator first (the default backend), cpu after it: a host callback's operands go to a CPU device.
    assert describe(Platform.TPU).run_env(1) == {"JAX_PLATFORMS": "tpu,cpu"}
    assert describe(Platform.CUDA).run_env(8) == {"JAX_PLATFORMS": "cuda,cpu"}
    assert describe(Platform.AUTO).run_env(8) == {}


def test_install_extras_and_find_links():
    assert jax_requirements("0.4.31", Platform.CUDA)[0] == "jax[cuda12]==0.4.31"
    assert jax_requirements("0.4.25", Platform.CUDA)[0] == "jax[cuda12_pip]==0.4.25"
    assert jax_requirements("0.4.31", Platform.TPU)[0] == "jax[tpu]==0.4.31"
    assert jax_requirements("0.4.31", Platform.CPU)[0] == "jax==0.4.31"
    assert find_links_for("0.4.31", Platform.TPU) == ["https://storage.googleapis.com/jax-releases/libtpu_releases.html"]
    assert find_links_for("0.5.1", Platform.TPU) == [] and find_links_for("0.4.26", Platform.CUDA) == []
    assert find_links_for("0.4.25", Platform.CUDA) == ["https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"]


def test_container_access():
    assert describe(Platform.CUDA).container.gpus and not describe(Platform.TPU).container.gpus
    assert "/dev/accel*" in describe(Platform.TPU).container.device_globs


def test_tpu_chips_leave_out_the_vfio_control_node(tmp_path):
    (tmp_path / "vfio").mkdir()
    for name in ("vfio/vfio", "vfio/1", "vfio/0", "accel0"):
        (tmp_path / name).touch()
    found = tpu_chips((str(tmp_path / "accel*"), str(tmp_path / "vfio" / "*")))
    assert [p.rsplit("/", 2)[-1] for p in found] == ["accel0", "0", "1"]
