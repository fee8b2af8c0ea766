"""The docker backend's cost: a fresh container per run against a venv run of the same cell, and
the wall time of a warm re-sweep (images already built, so nothing is built).

    python bench/bench_docker.py [--version 0.4.29] [--runs 8] [--sweep-versions 0.4.28 0.4.29]

Skips (exit 0, with a message) when no Docker daemon answers or the base image is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.cli import commands as cli
from harness.inputs.config import Repro
from harness.environments.docker import OFFLINE_BASE_IMAGE, DockerBackend, docker_available
from harness.environments.base import Environment
from harness.environments.venv import VenvBackend
from harness.core.errors import BackendUnavailable
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform
from harness.inside.repros import BUILTIN
from harness.measure.cell_runner import CellRunner
from harness.environments.package_index import PyPIIndex

MESH = Mesh((8, 1, 1, 1), ("a", "b", "c", "d"))
REPRO = Repro("shard_map_grad", BUILTIN["shard_map_grad"], builtin=True)


def per_run_seconds(environment: Environment, spec: CellSpec, runs: int, work: Path) -> list[float]:
    """Wall time of each run as the runner sees it (a run = process or container, start to end)."""
    result = CellRunner(environment, REPRO, timeout_s=600).run(
        spec, list(range(1, runs + 1)), work / "cache", work / "logs")
    if not all(r.ok for r in result.runs):
        raise SystemExit(f"bench: runs failed in {environment.describe()['backend']}: {result.reason}")
    return [r.duration_s for r in result.runs]


def warm_resweep(versions: list[str], runs: int, base_image: str, work: Path) -> float:
    """The CLI's whole sweep, timed, after checking that no cell built anything."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "bench.yaml"
    config.write_text(json.dumps({
        "name": "bench-docker", "repro": "shard_map_grad", "jax_versions": versions,
        "device_count": 8, "meshes": [{"shape": list(MESH.shape), "axis_names": list(MESH.axis_names)}],
        "runs": runs, "docker": {"base_image": base_image}}))  # JSON is YAML
    start = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):  # the sweep's own table is not the benchmark's
        code = cli.main(["run", str(config), "--backend", "docker", "--out", str(work / "out"), "--quiet"])
    elapsed = time.monotonic() - start
    if code != 0:
        raise SystemExit(f"bench: the warm sweep failed (exit {code})")
    (run_dir,) = (work / "out").iterdir()
    cells = json.loads((run_dir / "results.json").read_text())["cells"]
    built = [c["spec"]["jax_version"] for c in cells if not c["environment"].get("reused")]
    if built:
        raise SystemExit(f"bench: the warm sweep built images for {built}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.4.29")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--sweep-versions", nargs="+", default=["0.4.28", "0.4.29"])
    parser.add_argument("--base-image", default=OFFLINE_BASE_IMAGE)
    args = parser.parse_args()

    ok, reason = docker_available()
    if not ok:
        print(f"bench_docker: skipped: {reason} (start one with .ci/install-docker.sh)")
        return 0
    index = PyPIIndex()
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    docker_backend = DockerBackend(base_image=args.base_image, release_date=index.release_date)
    try:
        for version in sorted({args.version, *args.sweep_versions}):
            docker_backend.prepare(version, Platform.CPU, say)  # build now, so the sweep below is warm
    except BackendUnavailable as exc:
        print(f"bench_docker: skipped: {exc}")
        return 0
    container = docker_backend.prepare(args.version, Platform.CPU)
    venv = VenvBackend(release_date=index.release_date).prepare(args.version, Platform.CPU, say)

    spec = CellSpec(args.version, Platform.CPU, 8, MESH)
    with tempfile.TemporaryDirectory(prefix="bench-docker-") as tmp:
        work = Path(tmp)
        # One warm-up each (page cache, first container start), then the measured cell.
        per_run_seconds(venv, spec, 2, work / "warm-venv")
        per_run_seconds(container, spec, 2, work / "warm-docker")
        venv_runs = per_run_seconds(venv, spec, args.runs, work / "venv")
        docker_runs = per_run_seconds(container, spec, args.runs, work / "docker")
        sweep_s = warm_resweep(args.sweep_versions, args.runs, args.base_image, work / "sweep")

    v, d = statistics.median(venv_runs), statistics.median(docker_runs)
    print(f"jax {args.version}, {args.runs} runs of the built-in repro on 8 simulated CPU devices")
    print(f"  venv run (fresh interpreter):      median {v:.2f} s")
    print(f"  docker run (fresh container):      median {d:.2f} s")
    print(f"  docker / venv per run:             {d / v:.2f}x  (+{d - v:.2f} s per run)")
    print(f"  warm re-sweep, {len(args.sweep_versions)} versions x {args.runs} runs, "
          f"no builds:  {sweep_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
