"""Everything that differs between platforms (pure), one record per platform: the only place a layer asks
"which platform?". The run's variables, what to install, a container's devices, the Slurm resource line, what
the device probe checks and how runs share devices are read from `describe(platform)`; a platform that lacks a
part fails tests/unit/test_platforms.py, not a run on a machine nobody tried.
"""

from __future__ import annotations

import enum
import glob
from dataclasses import dataclass

from packaging.version import Version

from harness.core.kinds import Platform
from harness.core.runs import DeviceFacts

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


class DeviceProbe(enum.StrEnum):
    """What the harness counts before a sweep, so that a shortfall is one line, not every run failing."""

    NONE = "none"  # nothing to count: simulated devices, or whatever JAX finds
    GPUS = "gpus"  # the GPUs the runs would see (nvidia-smi, or the runtime's in a container)
    CHIPS = "chips"  # the TPU chips of this host (/dev/accel*, /dev/vfio/N)


class Sharing(enum.StrEnum):
    """How several runs at once share the devices (harness/measure/parallelism.py)."""

    CORES = "cores"  # simulated devices: one run a core
    SPLIT = "split"  # each run its own devices (a visibility variable), as many runs as the host has shares
    ONE_AT_A_TIME = "one at a time"  # whatever JAX picks: one run at a time unless --jobs says otherwise


@dataclass(frozen=True)
class Install:
    """What pip/uv installs for a release: the extra (newest first: (first release, extra)) and the pages of
    wheels that are not on the package index (before a release: (first release that no longer needs it, url))."""

    extras: tuple[tuple[str, str], ...]
    find_links: tuple[tuple[str, str], ...]
    flavour: str  # the venv's and image's name part, and the Dockerfile: Dockerfile.<flavour>
    # An extra only a host's driver of at least this CUDA major runs ((extra, major)): where the driver is older or
    # not known, the release's next extra (a driver runs what an older CUDA built, not a newer one's).
    needs_cuda: tuple[tuple[str, int], ...] = ()

    def extra_for(self, jax_version: str, driver_cuda: str | None = None) -> str | None:
        """The extra for `jax_version` on a host whose driver runs CUDA `driver_cuda` (`13.0`; None: not known)."""
        v, major, needs = Version(jax_version), cuda_major(driver_cuda), dict(self.needs_cuda)
        return next((extra for since, extra in self.extras if v >= Version(since)
                     and (extra not in needs or (major is not None and major >= needs[extra]))), None)

    def find_links_for(self, jax_version: str) -> list[str]:
        v = Version(jax_version)
        return [url for before, url in self.find_links if v < Version(before)]


@dataclass(frozen=True)
class Container:
    """A run's container: the GPU request, the device nodes bound in, whether it may have a network."""

    gpus: bool  # docker's device request for every GPU (`--gpus all`)
    device_globs: tuple[str, ...]  # host device nodes passed through as they are (`--device`)
    network: bool  # builds and runs need the network (the NVIDIA base may apt-get its Python)


@dataclass(frozen=True)
class Devices:
    """How runs get and share the devices."""

    sharing: Sharing
    # The variable naming a run's own devices (SPLIT), and what each needs beside it (the process bounds).
    visible_var: str
    # Why --jobs auto chose what it did, when it chose one run at a time.
    alone_because: str
    unit: str  # the devices as the probe counts them: "GPU(s)", "chip(s)"
    # A device admits one process at all (a second fails): --jobs is capped so that the harness never causes that.
    exclusive: bool


@dataclass(frozen=True)
class PlatformSpec:
    platform: Platform
    name: str  # in sentences: "the TPU", "the GPUs"
    # JAX_PLATFORMS ("" leaves it to JAX); the first is the default backend. An accelerator's lists cpu after it, as
    # JAX does when none is set: a host callback (jax.debug.print, jax.pure_callback) places its operands on a CPU
    # device, and with JAX_PLATFORMS=tpu a suite's test that passes bare failed under the harness (seen on a TPU v5e:
    # "jax.debug.callback failed to find a local CPU device").
    jax_platforms: str
    reported_as: str  # the platform jax.devices() reports ("gpu" for cuda; "" whichever it is)
    simulated: bool  # devices made by DEVICE_COUNT_FLAG on the host's CPU
    install: Install
    container: Container
    slurm: str  # the #SBATCH line asking for `{count}` devices ("" asks for none)
    probe: DeviceProbe
    devices: Devices
    # Whose devices decide the count when none is given (the first that has any): the accelerator's own; auto's,
    # a TPU's or the GPUs; none on cpu, whose simulated devices are 8 (harness/service/measurement.py).
    counts: tuple[Platform, ...]

    def run_env(self, device_count: int) -> dict[str, str]:
        """The variables every run of a cell on this platform gets."""
        env = {"JAX_PLATFORMS": self.jax_platforms} if self.jax_platforms else {}
        if self.simulated:
            env["XLA_FLAGS"] = f"{DEVICE_COUNT_FLAG}={device_count}"
        return env

    def slurm_line(self, device_count: int) -> str:
        return self.slurm.format(count=device_count) if self.slurm else ""

    @property
    def sees_gpus(self) -> bool:
        """Whether its runs may open GPUs (cuda's, or auto's where JAX finds them)."""
        return self.probe == DeviceProbe.GPUS or Platform.CUDA in self.counts

    @property
    def accelerator(self) -> bool:
        """Real devices, each costly to open (the plan of runs says so: harness/measure/seeds.py)."""
        return not self.simulated and self.probe != DeviceProbe.NONE


# Where the cuda12_pip extra's jaxlib wheels were published (they are not on the package index).
JAX_CUDA_FIND_LINKS = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"
# libtpu's wheels, before jax 0.5.1 took libtpu from the package index (jax-ml/jax#26713).
LIBTPU_FIND_LINKS = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"
# TPU chips as device nodes: /dev/accel0.. (v4, v5p) or /dev/vfio/0.. (v5e, v6e; /dev/vfio/vfio is the control node).
TPU_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/*")

PLATFORMS: dict[Platform, PlatformSpec] = {
    Platform.CPU: PlatformSpec(
        Platform.CPU, "the CPU", "cpu", "cpu", True, Install((), (), "cpu"), Container(False, (), False), "", DeviceProbe.NONE,
        Devices(Sharing.CORES, "", "", "core(s)", False), ()),
    Platform.CUDA: PlatformSpec(
        Platform.CUDA, "the GPUs", "cuda,cpu", "gpu", False,
        # jax-cuda13-plugin from 0.7.2, for a driver that runs CUDA 13; jax[cuda12] runs on 12 and 13 alike.
        Install((("0.7.2", "cuda13"), ("0.4.26", "cuda12"), ("0", "cuda12_pip")), (("0.4.26", JAX_CUDA_FIND_LINKS),),
                "cuda", (("cuda13", 13),)),
        Container(True, (), True), "#SBATCH --gres=gpu:{count}", DeviceProbe.GPUS,
        # A second process on a GPU fails: JAX preallocates 75% of every GPU it sees at its first operation.
        Devices(Sharing.SPLIT, "CUDA_VISIBLE_DEVICES",
                "each run claims 75% of every GPU it sees (JAX preallocates it): a second fails on memory", "GPU(s)",
                True),
        (Platform.CUDA,)),
    Platform.TPU: PlatformSpec(
        Platform.TPU, "the TPU", "tpu,cpu", "tpu", False,
        Install((("0", "tpu"),), (("0.5.1", LIBTPU_FIND_LINKS),), "tpu"),
        # libtpu opens its chips through the device nodes; Slurm has no standard TPU resource: a whole node.
        Container(False, TPU_DEVICE_GLOBS, False), "#SBATCH --exclusive", DeviceProbe.CHIPS,
        Devices(Sharing.SPLIT, "TPU_VISIBLE_CHIPS",
                "one process at a time holds a TPU chip: a second fails on libtpu's lockfile", "chip(s)", True),
        (Platform.TPU,)),
    Platform.AUTO: PlatformSpec(
        Platform.AUTO, "the devices JAX picks", "", "", False, Install((), (), "cpu"), Container(False, (), False), "",
        DeviceProbe.NONE,
        Devices(Sharing.ONE_AT_A_TIME, "", "JAX picks the devices: an accelerator may admit one process at a time",
                "device(s)", False), (Platform.TPU, Platform.CUDA)),
}


def describe(platform: Platform) -> PlatformSpec:
    return PLATFORMS[platform]


def cuda_major(version: str | None) -> int | None:
    """`13.0` -> 13 (None for none, or words that are no version)."""
    head = (version or "").strip().split(".")[0]
    return int(head) if head.isdigit() else None


def device_nodes(globs: tuple[str, ...]) -> list[str]:
    """The host's device nodes matching `globs`, sorted."""
    return sorted({p for g in globs for p in glob.glob(g)})


def tpu_chips(globs: tuple[str, ...] = TPU_DEVICE_GLOBS) -> list[str]:
    """This host's TPU chips as device nodes (the vfio control node, which every chip needs, is not one)."""
    return [p for p in device_nodes(globs) if p.rsplit("/", 1)[-1] != "vfio"]


# What the TPU's processes need beside TPU_VISIBLE_CHIPS to share a host: each its own chips as a host of its own,
# and its own port (JAX's documented way to run several processes on one TPU host).
TPU_BOUNDS = ("TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_PROCESS_BOUNDS", "TPU_MESH_CONTROLLER_ADDRESS",
              "TPU_MESH_CONTROLLER_PORT")
TPU_FIRST_PORT = 8476


def share_env(platform: Platform, share: tuple[int, ...], slot: int, visible: str | None = None) -> dict[str, str]:
    """The variables that give one of several runs at once its own devices `share` ({} when it need not be told):
    indices into `visible`, the devices the harness itself was given (its own CUDA_VISIBLE_DEVICES or
    TPU_VISIBLE_CHIPS; None: all of the host's)."""
    spec = describe(platform)
    if spec.devices.sharing != Sharing.SPLIT or not share:
        return {}
    given = [d.strip() for d in visible.split(",") if d.strip()] if visible is not None else None
    ids = [given[i] if given is not None and i < len(given) else str(i) for i in share]
    env = {spec.devices.visible_var: ",".join(ids)}
    if platform == Platform.TPU:  # the bounds below are the TPU's own words: data, in the one place that knows them
        port = TPU_FIRST_PORT + slot
        env.update({"TPU_CHIPS_PER_PROCESS_BOUNDS": f"1,{len(share)},1", "TPU_PROCESS_BOUNDS": "1,1,1",
                    "TPU_MESH_CONTROLLER_ADDRESS": f"localhost:{port}", "TPU_MESH_CONTROLLER_PORT": str(port)})
    return env


def devices_differ(platform: Platform, device_count: int, seen: DeviceFacts) -> str:
    """One line when the devices JAX reported are not what the cell asked for ("" when they are): `asked for 8,
    JAX saw 1`, or the platform too when that differs."""
    reported = describe(platform).reported_as
    if reported and seen.platform != reported:
        return f"asked for {platform} ×{device_count}, JAX saw {seen.label} ({seen.platform})"
    if seen.count != device_count:
        return f"asked for {device_count}, JAX saw {seen.count} ({seen.label})"
    return ""


def open_cost_line(platform: Platform, seen: DeviceFacts | None, run_seconds: float, planned: int) -> str:
    """The plan, once run 1 has shown what a run costs on an accelerator: `each run opens the TPU: ~12 s; 6 runs ≈
    75 s` ("" on simulated devices, where a run costs about as much as its import)."""
    accelerator = describe(platform).accelerator or (seen is not None and seen.platform not in ("", "cpu"))
    if not accelerator or planned < 2:
        return ""
    name = describe(platform).name if describe(platform).accelerator else f"the {seen.device_kind if seen else 'devices'}"
    return f"each run opens {name}: ~{run_seconds:.0f} s a run; {planned} runs ≈ {run_seconds * planned:.0f} s"
