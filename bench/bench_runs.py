"""The harness's own cost: N runs of one cell through the harness vs a bare shell loop.

Both run the same script, in the same virtualenv, with the same environment variables, each run a
fresh interpreter writing to a fresh cache folder. Prints wall times and ratios; target: serial within
5% of the bare loop, `--jobs 2` well under it. Then the cost of JAX's cache log (which every run gets, for
attribution) on the seed cell: the same runs with and without it, as a ratio (target: at most 1.05).

    python bench/bench_runs.py [--version 0.4.29] [--runs 8]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.inputs.config import Repro
from harness.environments import process
from harness.environments.process import clean_environment
from harness.environments.base import Environment
from harness.environments import dated_venv_backend
from harness.core.jaxlog import LOG_ENV
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform
from harness.inside.repros import BUILTIN
from harness.inputs.process_variables import process_env, repro_args
from harness.measure.cell_runner import CellRunner
from harness.measure.run_logs import read_jax_log


def bare_loop(python: Path, script: Path, args: list[str], spec: CellSpec, seeds: list[int], cache: Path,
              jax_log: bool = True, logs: Path | None = None) -> float:
    """`jax_log=False`: without the variables that turn JAX's cache log on (what the log costs); `logs`: keep
    each run's output there as run-NN.log (else /dev/null)."""
    lines = []
    for index, seed in enumerate(seeds, start=1):
        env = {**process_env(spec, seed), "JAX_COMPILATION_CACHE_DIR": str(cache)}
        if not jax_log:
            env = {k: v for k, v in env.items() if k not in LOG_ENV}
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        out = shlex.quote(str(logs / f"run-{index:02d}.log")) if logs else "/dev/null"
        lines.append(f"{assigns} {shlex.quote(str(python))} {shlex.quote(str(script))} "
                     f"{' '.join(map(shlex.quote, args))} > {out} 2>&1")
    start = time.monotonic()
    subprocess.run(["bash", "-c", "\n".join(lines)], check=True, env=clean_environment({}), cwd=script.parent)
    return time.monotonic() - start


def harness_cell(env: Environment, repro: Repro, spec: CellSpec, seeds: list[int], work: Path, at_once: int) -> float:
    start = time.monotonic()
    result = CellRunner(env, repro, timeout_s=600, at_once=at_once).run(spec, seeds, work / "cache", work / "logs")
    elapsed = time.monotonic() - start
    assert all(r.ok for r in result.runs), result.reason
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.4.29")
    parser.add_argument("--seed-version", default="0.4.28", help="the seed cell, for the cost of JAX's cache log")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="take the best of this many timings")
    args = parser.parse_args()

    env = dated_venv_backend().prepare(args.version, Platform.CPU, say=lambda m: print(m, file=sys.stderr))
    spec = CellSpec(args.version, Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))
    repro = Repro("shard_map_grad", BUILTIN["shard_map_grad"], builtin=True)
    seeds = list(range(1, args.runs + 1))
    best = {"bare loop": float("inf"), "harness": float("inf"), "harness --jobs 2": float("inf"),
            "harness, no supervisor": float("inf")}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            best["bare loop"] = min(best["bare loop"], bare_loop(env.python, repro.path, repro_args(repro, spec),
                                                                 spec, seeds, tmp / "bare"))
            best["harness"] = min(best["harness"], harness_cell(env, repro, spec, seeds, tmp / "h1", 1))
            best["harness --jobs 2"] = min(best["harness --jobs 2"],
                                           harness_cell(env, repro, spec, seeds, tmp / "h2", 2))
            # What the supervisor (the subreaper that kills what a run leaves behind) costs per run.
            process.SUPERVISED = False
            try:
                best["harness, no supervisor"] = min(best["harness, no supervisor"],
                                                     harness_cell(env, repro, spec, seeds, tmp / "h3", 1))
            finally:
                process.SUPERVISED = True
    base = best["bare loop"]
    print(f"jax {args.version}, {args.runs} runs of the built-in repro, best of {args.repeats}:")
    for name, seconds in best.items():
        print(f"  {name:22s} {seconds:7.2f} s   ratio to bare loop {seconds / base:5.3f}")
    log_cost(args, repro, seeds)


def log_cost(args: argparse.Namespace, repro: Repro, seeds: list[int]) -> None:
    """The seed cell's runs with JAX's cache log on (as the harness runs them) against the same runs
    without it, each in a fresh cache folder; and the harness's reading of the logs, per run."""
    env = dated_venv_backend().prepare(args.seed_version, Platform.CPU, say=lambda m: print(m, file=sys.stderr))
    spec = CellSpec(args.seed_version, Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))
    best = {True: float("inf"), False: float("inf")}
    parse_s = float("inf")
    for _ in range(args.repeats):
        for jax_log in (False, True):
            with tempfile.TemporaryDirectory() as folder:
                best[jax_log] = min(best[jax_log], bare_loop(env.python, repro.path, repro_args(repro, spec), spec,
                                                             seeds, Path(folder) / "c", jax_log))
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            CellRunner(env, repro, timeout_s=600).run(spec, seeds, tmp / "cache", tmp / "logs")
            logs = sorted((tmp / "logs").glob("*.log"))
            start = time.monotonic()
            for log in logs:
                read_jax_log(log, args.seed_version, True)
            parse_s = min(parse_s, (time.monotonic() - start) / len(logs))
    print(f"jax {args.seed_version} (the seed cell), {args.runs} runs, best of {args.repeats}: JAX's cache log on "
          f"{best[True]:.2f} s, off {best[False]:.2f} s, ratio {best[True] / best[False]:5.3f} (target <= 1.05); "
          f"reading one run's log {parse_s * 1000:.1f} ms")


if __name__ == "__main__":
    main()
