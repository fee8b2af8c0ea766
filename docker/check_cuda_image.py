"""`make cuda-image-check`: the cuda image of one release, built and checked on a machine with no GPU.

Builds (or reuses) the docker backend's cuda image for JAX 0.4.28 offline from the host wheelhouse
(`jax[cuda12]`, a plain Python base), then, in containers with no GPU:
  1. the CUDA plugin imports and reports its version;
  2. the seed's repro with JAX_PLATFORMS=cpu (8 simulated devices) reproduces, as 0.4.28 must;
  3. asking for CUDA fails fast with one line: the image's CUDA probe (no GPU requested) and the
     harness's GPU check before a cuda sweep (every GPU requested, as the runs request them).
Prints the image size, the wheelhouse size and the build time; exit 0 when every check passed.
Downloads about 2 GB of wheels the first time (kept in the wheelhouse for later sweeps).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from harness.inputs.config import load_config
from harness.environments.docker import (SCRIPT_MOUNT, DockerBackend, DockerEnvironment, run_container,
                                         run_kwargs)
from harness.environments.process import log_tail
from harness.core.errors import BackendUnavailable, EnvironmentUnavailable
from harness.core.model import CellResult, CellSpec, Mesh
from harness.core.kinds import Platform, Verdict
from harness.environments.base import Environment
from harness.cli.console import ConsoleProgress
from harness.measure.seeds import SeedPlanner
from harness.measure.sweep import measure_cell
from harness.environments.package_index import PyPIIndex

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ("import importlib.metadata as md, jax_plugins.xla_cuda12 as plugin; "
          "print(plugin.__name__, md.version('jax-cuda12-plugin'), 'pjrt', md.version('jax-cuda12-pjrt'))")
DEFAULT_VERSION = "0.4.28"  # the seed reproduces on it
FAST_S = 60  # "fails fast": well under one run's timeout


def gigabytes(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class Checks:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def record(self, name: str, ok: bool, detail: str) -> None:
        print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}", flush=True)
        if not ok:
            self.failed.append(name)


def seed_repro(environment: Environment, version: str, work: Path, progress: ConsoleProgress) -> CellResult:
    """The seed's repro measured in `environment` on 8 simulated CPU devices, as a sweep measures a cell
    (the same measure_cell call: tests/integration/test_cuda_image_check.py runs it in a venv, so a change
    of its signature fails a test and not only this script, which needs a 2 GB download)."""
    config = load_config(ROOT / "configs" / "smoke.yaml")
    spec = CellSpec(version, Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))
    return measure_cell(spec, environment, config, SeedPlanner(runs=4), work, progress, keep=lambda cell: None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--base-image", help="default: the cuda default (python:3.11-slim, else the offline one)")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args(argv)
    progress = ConsoleProgress()
    checks = Checks()
    release_date = PyPIIndex().release_date
    backend = DockerBackend(base_image=args.base_image, rebuild=args.rebuild, release_date=release_date)
    client = backend.client

    start = time.monotonic()
    tag, facts, log = backend.image(args.version, Platform.CUDA, progress.say)
    took = time.monotonic() - start
    image = client.images.get(tag)
    python = facts["python_choice"]["version"]
    lock = backend.wheelhouse.lock(args.version, Platform.CUDA, python, release_date(args.version), log)
    wheels = backend.wheelhouse.files_for(lock, args.version, Platform.CUDA, python, log)
    built = f"built in {facts['build_s']:.0f} s" if "build_s" in facts else "reused (built before; --rebuild to time it)"
    print(f"image {tag} on {facts['base_image']}: {gigabytes(image.attrs['Size'])}, {built} "
          f"({took:.0f} s with the wheelhouse step)")
    print(f"wheelhouse: this image's {len(wheels)} wheels {gigabytes(sum(w.stat().st_size for w in wheels))}; "
          f"the whole wheelhouse {gigabytes(folder_size(backend.wheelhouse.wheels))} in {backend.wheelhouse.wheels}")

    with tempfile.TemporaryDirectory(prefix="cuda-image-check-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        # 1. The plugin imports (no GPU needed for that) and says which version it is.
        script = work / "plugin.py"
        script.write_text(PLUGIN + "\n")
        script.chmod(0o644)
        log = work / "plugin.log"
        outcome = run_container(client, tag, ["python", f"{SCRIPT_MOUNT}/plugin.py"],
                                run_kwargs(script, {}, work, Platform.CPU, backend.user), log, 300)
        said = log_tail(log).strip().splitlines()[-1:] or ["(no output)"]
        checks.record("CUDA plugin imports", outcome.ok and f" {args.version} " in f" {said[0]} ", said[0])

        # 2. The seed's repro on 8 simulated CPU devices, in the cuda image.
        environment = DockerEnvironment(client, tag, args.version, Platform.CPU, facts, backend.user)
        cell = seed_repro(environment, args.version, work / "cell", progress)
        checks.record(f"seed repro with JAX_PLATFORMS=cpu reproduces on {args.version}",
                      cell.verdict == Verdict.REPRODUCED, f"{cell.verdict}: {cell.reason}")

        # 3a. The image's CUDA probe in a container with no GPU: one line saying what to check.
        start = time.monotonic()
        try:
            found = backend.cuda_probe(tag, work / "probe.log", request_gpus=False)
            checks.record("cuda without a GPU fails fast", False, f"the probe saw devices: {found}")
        except EnvironmentUnavailable as exc:
            took = time.monotonic() - start
            text = str(exc)
            checks.record("cuda without a GPU fails fast, in one line",
                          took < FAST_S and "\n" not in text and "no CUDA device is visible" in text,
                          f"{took:.1f} s: {text}")

    # 3b. The harness's own check before a cuda sweep, as `harness run` does it (GPUs requested).
    start = time.monotonic()
    try:
        backend.check_gpus(Platform.CUDA, 1, "platform: cuda")
        checks.record("cuda sweep refused without GPUs", False, "the runtime gave a GPU: is there one here?")
    except BackendUnavailable as exc:
        checks.record("cuda sweep refused before any run, in one line",
                      time.monotonic() - start < FAST_S and "\n" not in str(exc),
                      f"{time.monotonic() - start:.1f} s: {exc}")

    leftover = client.containers.list(all=True, filters={"ancestor": tag})
    checks.record("no container left behind", not leftover, f"{len(leftover)} left")
    print("cuda image check: " + ("all passed" if not checks.failed else f"FAILED: {', '.join(checks.failed)}"))
    return 0 if not checks.failed else 1


if __name__ == "__main__":
    sys.exit(main())
