"""The GPU check of a container runtime: the container that lists the GPUs it gives, the probe that asks
JAX for its CUDA devices in an image, and what is said when there are none.
"""

from __future__ import annotations

import uuid
from typing import Any

from docker.types import DeviceRequest

from harness.environments.docker.reaping import LABEL, owner_labels

GPU_LIST_TIMEOUT_S = 60.0
NO_CUDA_DEVICE = ("no CUDA device is visible in {image} (jax: {said}); check that the NVIDIA Container Toolkit "
                  "is installed (dockerd restarted since) and that the GPUs are requested (the harness asks for "
                  "all; `docker run --rm --gpus all IMAGE nvidia-smi -L` must list them)")
# Run in the image with JAX_PLATFORMS=cuda: the plugin's version (0.4.26 on) and the devices it gives.
CUDA_PROBE = """\
import importlib.metadata as md, json
facts = {}
for dist in ("jax-cuda13-plugin", "jax-cuda13-pjrt", "jax-cuda12-plugin", "jax-cuda12-pjrt"):
    try:
        facts[dist] = md.version(dist)
    except md.PackageNotFoundError:
        pass
import jax
devices = jax.devices("cuda")
facts.update(cuda_devices=len(devices), device_kind=devices[0].device_kind)
print(json.dumps(facts))
"""
NO_GPU = ("the Docker runtime has no GPU support ({detail}); install the NVIDIA Container Toolkit "
          "and restart dockerd, or use platform: cpu")


def gpu_list_kwargs() -> dict[str, Any]:
    """A container that lists the GPUs the runtime gives (pure, so tests can read it)."""
    return {"name": f"jax-harness-gpus-{uuid.uuid4().hex[:12]}",
            # The NVIDIA runtime mounts the driver's nvidia-smi only for the `utility` capability.
            "environment": {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"},
            "device_requests": [DeviceRequest(count=-1, capabilities=[["gpu"]])],
            "network_disabled": True, "network_mode": "none", "labels": {LABEL: "gpus", **owner_labels()},
            "detach": True}
