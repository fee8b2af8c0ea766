"""The docker backend: an image per (JAX version, platform, base image), a fresh container per run.

Images are built through the Docker SDK from `harness/environments/dockerfiles/Dockerfile.<platform>`, with the wheels from
the host-side wheelhouse (see wheelhouse.py and docker/README.md), and tagged from a hash of
everything that goes into them, so a second sweep builds nothing. Every run is a new container:
the script's folder mounted read-only, the cell's cache folder mounted read-write (listings are
read on the host), no network, no Docker socket, run as the host's uid:gid so the host can read and
delete what it writes, removed afterwards whatever happened.

By what the code does: images.py (the base images, Dockerfiles, tags, the build context), containers.py
(one run's container: its mounts and command, create, start, wait, logs, removal), reaping.py (owner labels,
the container's own deadline, removing what a gone harness left), gpu_probe.py (what the runtime's GPUs
are asked with), environment.py (a prepared image's runs and multi-process jobs), backend.py (the backend:
image found or built, probed, checked). What callers use is re-exported here.
"""

from harness.environments.docker.backend import PROBE_TIMEOUT_S, STATE_DIR, DockerBackend, docker_available
from harness.environments.docker.containers import (CACHE_MOUNT, CONTAINER_TMP, CUDA_SHM_SIZE, ELSEWHERE,
                                                    IR_DUMP_MOUNT, OTHER_HOME, RECORD_MOUNT, SCRIPT_MOUNT,
                                                    STARTUP_MOUNT, WORK_MOUNT, container_command, mount_points,
                                                    run_container, run_kwargs)
from harness.environments.docker.environment import DockerEnvironment, group_kwargs, run_group_containers
from harness.environments.docker.gpu_probe import (CUDA_PROBE, GPU_LIST_TIMEOUT_S, NO_CUDA_DEVICE, NO_GPU,
                                                   gpu_list_kwargs)
from harness.environments.docker.images import (DEBIAN_PYTHONS, DEFAULT_PYTHON, DOCKERFILES, IMAGE_REPO,
                                                OFFLINE_BASE_IMAGE, OFFLINE_BASE_IMAGES, OFFLINE_PYTHONS,
                                                build_base_image, default_base_images, dockerfile_for, image_tag,
                                                offline_fix, write_context)
from harness.environments.docker.reaping import (GRACE_VARIABLE, INSIDE_DEADLINE_GRACE_S, LABEL, OWNER_BOOT_LABEL,
                                                 OWNER_LABEL, OWNER_START_LABEL, inside_deadline_grace_s, owner_gone,
                                                 owner_labels, reap_orphans)

__all__ = [
    "PROBE_TIMEOUT_S", "STATE_DIR", "DockerBackend", "docker_available",
    "CACHE_MOUNT", "CONTAINER_TMP", "CUDA_SHM_SIZE", "ELSEWHERE", "IR_DUMP_MOUNT", "OTHER_HOME", "RECORD_MOUNT",
    "SCRIPT_MOUNT", "STARTUP_MOUNT", "WORK_MOUNT", "container_command", "mount_points", "run_container", "run_kwargs",
    "DockerEnvironment", "group_kwargs", "run_group_containers",
    "CUDA_PROBE", "GPU_LIST_TIMEOUT_S", "NO_CUDA_DEVICE", "NO_GPU", "gpu_list_kwargs",
    "DEBIAN_PYTHONS", "DEFAULT_PYTHON", "DOCKERFILES", "IMAGE_REPO", "OFFLINE_BASE_IMAGE", "OFFLINE_BASE_IMAGES",
    "OFFLINE_PYTHONS", "build_base_image", "default_base_images", "dockerfile_for", "image_tag", "offline_fix",
    "write_context",
    "GRACE_VARIABLE", "INSIDE_DEADLINE_GRACE_S", "LABEL", "OWNER_BOOT_LABEL", "OWNER_LABEL", "OWNER_START_LABEL",
    "inside_deadline_grace_s", "owner_gone", "owner_labels", "reap_orphans",
]
