"""What a run or a killed harness leaves behind: the labels that name a container's owner (which process,
on which machine and boot), the deadline a run's container keeps by itself, and the removal of the
containers whose owner is gone.
"""

from __future__ import annotations

import os
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from harness.environments.base import Say

LABEL = "org.jax-cache-harness"
OWNER_LABEL = f"{LABEL}.owner-pid"
# With the pid, which process it was (its start time, in clock ticks since boot) and on which machine and
# boot (the kernel's boot id): a pid reused by another process, or one of another host sharing the
# engine, is never taken for the owner.
OWNER_START_LABEL = f"{LABEL}.owner-start"
OWNER_BOOT_LABEL = f"{LABEL}.owner-boot"
# A run's container ends by itself this long after the run's timeout, even when no harness is left to
# kill it (a SIGKILLed harness): the host-side timeout comes first while the harness lives.
INSIDE_DEADLINE_GRACE_S = 30
GRACE_VARIABLE = "HARNESS_DOCKER_GRACE_S"


def inside_deadline_grace_s() -> int:
    """INSIDE_DEADLINE_GRACE_S, or HARNESS_DOCKER_GRACE_S's whole number of seconds where it is set to one (the
    test of a SIGKILLed harness then sees its container end in seconds, not half a minute); anything else there is
    not a number of seconds, and the default holds."""
    given = os.environ.get(GRACE_VARIABLE, "").strip()
    return int(given) if given.isdigit() else INSIDE_DEADLINE_GRACE_S


def _process_start(pid: int) -> str | None:
    """A process's start time (clock ticks after boot, /proc/PID/stat field 22); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def owner_labels() -> dict[str, str]:
    """The labels that say which harness process, on which machine, owns a container."""
    return {OWNER_LABEL: str(os.getpid()), OWNER_START_LABEL: _process_start(os.getpid()) or "",
            OWNER_BOOT_LABEL: _boot_id()}


def owner_gone(labels: dict[str, str]) -> bool:
    """Whether the harness process a container's labels name is gone (pure but for /proc): its pid is
    no process, or another process now (another start time). False when the owner ran on another machine
    or boot (that machine's harness decides), or the labels name no owner of ours."""
    try:
        pid = int(labels.get(OWNER_LABEL, ""))
    except ValueError:
        return False
    boot = labels.get(OWNER_BOOT_LABEL)
    if boot and boot != _boot_id():
        return False
    started = _process_start(pid)
    if started is None:
        return True
    return bool(labels.get(OWNER_START_LABEL)) and labels[OWNER_START_LABEL] != started


def reap_orphans(client: docker.DockerClient, say: Say) -> list[str]:
    """Remove the harness's run containers whose owner is gone (a SIGKILLed harness cannot remove its own);
    the names of those removed. Only containers with the harness's label and an owner pid are looked at."""
    try:
        found = client.containers.list(all=True, filters={"label": [f"{LABEL}", OWNER_LABEL]})
    except (DockerException, requests.RequestException):
        return []
    removed: list[str] = []
    for container in found:
        if container.labels.get(LABEL) in ("run", "gpus") and owner_gone(container.labels):
            _remove(client, container, None)
            removed.append(container.name or str(container.id))
    if removed:
        say(f"docker: removed {len(removed)} container(s) left by harness processes that are gone: "
            f"{', '.join(removed[:3])}{', ...' if len(removed) > 3 else ''}")
    return removed


def _remove(client: docker.DockerClient, container: Container | None, name: str | None) -> None:
    try:
        if container is None:
            if not name:
                return
            container = client.containers.get(name)
        container.remove(force=True, v=True)
    except NotFound:
        pass
    except (DockerException, requests.RequestException):
        pass  # "removal already in progress", or the daemon went away: nothing more to do here
