"""A prepared image as an Environment: its runs, each a fresh container, and its multi-process runs (jobs),
a container per process sharing one loopback.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import DockerException

from harness.environments.base import Environment
from harness.environments.docker.containers import _one_line, container_command, run_container, run_kwargs
from harness.environments.process import AFTER_PEERS, PEER_GRACE_S
from harness.core.factors import Factor, RunVariation
from harness.core.kinds import Platform
from harness.core.platforms import describe
from harness.core.runs import ProcessOutcome, Program


class DockerEnvironment(Environment):
    def __init__(self, client: docker.DockerClient, image: str, jax_version: str, platform: Platform,
                 facts: dict[str, Any], user: str, mem_limit: str | None = None):
        self.client, self.image, self.jax_version, self.platform = client, image, jax_version, platform
        self.facts, self.user, self.mem_limit = facts, user, mem_limit
        self._running: set[str] = set()  # container names of runs in flight

    def run(self, program: Program, env: dict[str, str], cache_dir: Path, log_path: Path, timeout_s: float,
            variation: RunVariation | None = None) -> ProcessOutcome:
        kwargs = run_kwargs(program, env, cache_dir, self.platform, self.user, self.mem_limit, variation=variation)
        command = container_command(program, variation, timeout_s)
        self._running.add(kwargs["name"])
        try:
            return run_container(self.client, self.image, command, kwargs, Path(log_path), timeout_s,
                                 gpu=describe(self.platform).container.gpus)
        finally:
            self._running.discard(kwargs["name"])

    def cannot_vary(self, factor: Factor) -> str:
        if factor == Factor.PREFIX:
            return "the image's Python is at one path (vary it with --backend venv)"
        if factor == Factor.COMPRESSION:
            return "zstandard would have to be installed into the image (vary it with --backend venv)"
        return ""

    def own_folder_problem(self) -> str:
        return ""

    def own_folder_run(self, program: Program, cell_folder: Path, own: Path) -> tuple[Program, Path]:
        """A container sees whichever host folder a run is given at one path (containers.CACHE_MOUNT)."""
        return program, own

    def run_group(self, program: Program, envs: list[dict[str, str]], cache_dir: Path, log_paths: list[Path],
                  timeout_s: float) -> list[ProcessOutcome]:
        return run_group_containers(self, program, envs, cache_dir, log_paths, timeout_s)

    def interrupt(self) -> None:
        """Kill the containers of runs still going; each run's own clean-up then removes them."""
        for name in list(self._running):
            try:
                self.client.containers.get(name).kill()
            except (DockerException, requests.RequestException):
                pass  # already gone

    def describe(self) -> dict[str, Any]:
        return {"backend": "docker", "image": self.image, **self.facts}


# ---- multi-process runs (jobs) ---------------------------------------------------------------------

def group_kwargs(program: Program, envs: list[dict[str, str]], cache_dir: Path, platform: Platform, user: str,
               mem_limit: str | None = None) -> list[dict[str, Any]]:
    """One container per process of a job (pure): each its own process tree, init and mounts, as a host
    would be; process 0's has a network namespace of its own with nothing but a loopback, and the others
    join it (`network_mode: container:<process 0>`), so the coordinator is 127.0.0.1 for all and no process
    reaches anything else. (Chosen over N processes in one container: every process keeps the run's own
    supervision, timeout, OOM report and log, and nothing new runs inside the image.)"""
    stem = f"jax-harness-job-{uuid.uuid4().hex[:12]}"
    out = []
    for rank, env in enumerate(envs):
        kwargs = run_kwargs(program, env, cache_dir, platform, user, mem_limit, name=f"{stem}-rank{rank}")
        # gloo finds its address from the host name: with the network disabled outright a container has no
        # /etc/hosts and nothing resolves; with network mode `none` and the host name `localhost` it is the
        # loopback the processes share.
        kwargs.pop("network_disabled", None)
        if rank:
            kwargs["network_mode"] = f"container:{stem}-rank0"
        else:
            kwargs["hostname"] = "localhost"
        out.append(kwargs)
    return out


def run_group_containers(environment: DockerEnvironment, program: Program, envs: list[dict[str, str]],
                       cache_dir: Path, log_paths: list[Path], timeout_s: float,
                       peer_grace_s: float = PEER_GRACE_S) -> list[ProcessOutcome]:
    """Run a job's containers: process 0's first (the others join its network once it runs), each waited
    for in its own thread with the run's timeout; once one has failed, or all but one have ended well, the
    rest are killed `peer_grace_s` later. Every container is removed when this returns."""
    kwargs = group_kwargs(program, envs, cache_dir, environment.platform, environment.user, environment.mem_limit)
    names = [k["name"] for k in kwargs]
    command = container_command(program, timeout_s=timeout_s)
    outcomes: list[ProcessOutcome | None] = [None] * len(kwargs)
    first_running = threading.Event()
    done = threading.Condition()

    def run(rank: int) -> None:
        started = first_running.set if rank == 0 else None
        try:
            outcome = run_container(environment.client, environment.image, command, kwargs[rank],
                                    Path(log_paths[rank]), timeout_s, gpu=describe(environment.platform).container.gpus,
                                    started=started)
        except BaseException as exc:  # noqa: BLE001 - told as this process's failure, never lost in a thread
            outcome = ProcessOutcome(None, 0.0, reason=f"docker: {_one_line(exc)}")
        finally:
            first_running.set()
        with done:
            outcomes[rank] = outcome
            done.notify_all()

    environment._running.update(names)
    threads = [threading.Thread(target=run, args=(0,), daemon=True)]
    threads[0].start()
    try:
        first_running.wait(timeout_s)
        for rank in range(1, len(kwargs)):
            threads.append(threading.Thread(target=run, args=(rank,), daemon=True))
            threads[-1].start()
        stopped: dict[int, str] = {}
        deadline = None
        with done:
            while any(o is None for o in outcomes):
                ended = [o for o in outcomes if o is not None]
                failed = next(((i, o) for i, o in enumerate(outcomes) if o is not None and not o.ok), None)
                if deadline is None and (failed is not None or (len(ended) == len(outcomes) - 1 and len(outcomes) > 1)):
                    deadline = time.monotonic() + peer_grace_s
                    why = (f"stopped {peer_grace_s:g} s after process {failed[0]} failed ({failed[1].reason})"
                           if failed is not None else f"{AFTER_PEERS} ({peer_grace_s:g} s after the last one)")
                if deadline is not None and time.monotonic() >= deadline:
                    for rank, outcome in enumerate(outcomes):
                        if outcome is None and rank not in stopped:
                            stopped[rank] = why
                            _kill_named(environment.client, names[rank])
                    deadline = float("inf")
                done.wait(0.2 if deadline is not None else 1.0)
    finally:
        for thread in threads:
            thread.join()
        environment._running.difference_update(names)
    return [ProcessOutcome(None, o.duration_s, timed_out=True, reason=stopped[rank])
            if rank in stopped and not o.ok else o
            for rank, o in enumerate(outcomes) if o is not None]  # each one set by now


def _kill_named(client: docker.DockerClient, name: str) -> None:
    try:
        client.containers.get(name).kill()
    except (DockerException, requests.RequestException):
        pass  # it ended meanwhile
