"""The cost of measuring seconds (what a miss costs, harness/evidence/cost.py) on the seed cell, as two ratios:

- the seconds' own work: reading each run's compile times from its JAX log and computing the cell's cost,
  on top of the runs the harness makes anyway (target <= 1.05);
- the source: the same runs with JAX's cache log on (as every run has it: the attribution reads it too)
  against the same runs with it off. The arms alternate, best of N; on a loaded machine this one is noisy.

    python bench/bench_seconds.py [--version 0.4.28] [--runs 4] [--repeats 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_runs import bare_loop

from harness.inputs.config import Repro
from harness.evidence.cost import cell_cost
from harness.environments import dated_venv_backend
from harness.core.model import CellSpec, Mesh
from harness.core.kinds import Platform
from harness.core.runs import RunRecord
from harness.inside.repros import BUILTIN
from harness.inputs.process_variables import process_env, repro_args
from harness.measure.run_logs import read_jax_log


def with_seconds(python: Path, repro: Repro, spec: CellSpec, seeds: list[int], work: Path) -> tuple[float, float]:
    """(wall seconds of the runs with JAX's log, then the log read and the cost computed; the cost's part)."""
    logs = work / "logs"
    logs.mkdir(parents=True)
    start = time.monotonic()
    runs = bare_loop(python, repro.path, repro_args(repro, spec), spec, seeds, work / "cache", jax_log=True,
                     logs=logs)
    reading = time.monotonic()
    records = []
    for index, seed in enumerate(seeds, start=1):
        keys, _ = read_jax_log(logs / f"run-{index:02d}.log", spec.jax_version, True)
        records.append(RunRecord(index=index, seed=seed, exit_code=0, duration_s=0.0, new_entries=[], keys=keys))
    cost = cell_cost(records)
    done = time.monotonic()
    assert cost is not None and cost.starts == len(seeds) - 1, cost
    assert runs <= reading - start + 1e-6
    return done - start, done - reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.4.28")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=4, help="take the best of this many timings")
    args = parser.parse_args()
    env = dated_venv_backend().prepare(args.version, Platform.CPU, say=lambda m: print(m, file=sys.stderr))
    spec = CellSpec(args.version, Platform.CPU, 8, Mesh((8, 1, 1, 1), ("a", "b", "c", "d")))
    repro = Repro("shard_map_grad", BUILTIN["shard_map_grad"], builtin=True)
    seeds = list(range(1, args.runs + 1))
    assert "JAX_DEBUG_LOG_MODULES" in process_env(spec, 1)  # what every run gets; the bare arm drops it
    best_on, best_reading, best_off = float("inf"), 0.0, float("inf")
    for repeat in range(args.repeats):  # the arms alternate, so the machine's load falls on both alike
        for measured in ((True, False) if repeat % 2 else (False, True)):
            with tempfile.TemporaryDirectory() as tmp:
                if measured:
                    total, reading = with_seconds(env.python, repro, spec, seeds, Path(tmp))
                    if total < best_on:  # the best repeat, its reading time with it
                        best_on, best_reading = total, reading
                else:
                    best_off = min(best_off, bare_loop(env.python, repro.path, repro_args(repro, spec), spec, seeds,
                                                       Path(tmp) / "cache", jax_log=False))
    runs_only = best_on - best_reading
    print(f"seconds on the seed cell (jax {args.version}, {args.runs} runs, best of {args.repeats}): reading the "
          f"compile times and the cost {best_reading * 1000:.1f} ms on {runs_only:.2f} s of runs, ratio "
          f"{best_on / runs_only:5.3f} (target <= 1.05); JAX's cache log they come from: on {best_on:.2f} s, "
          f"off {best_off:.2f} s, ratio {best_on / best_off:5.3f}")

if __name__ == "__main__":
    main()
