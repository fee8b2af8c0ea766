"""The scheduler's overhead: `harness submit CONFIG --shards N --wait` against `harness run CONFIG`,
both with the environments already made, printed as a ratio of wall times (below 1: sharding paid off;
above 1: Slurm's queueing, job start-up and the merge cost more than the parallelism gained).

    python bench/bench_slurm.py [--config configs/smoke.yaml] [--shards 2] [--repeats 3]

Skips (exit 0, with a message) where no Slurm controller answers (.ci/install-slurm.sh makes one).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"bench: harness {argv[0]} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/smoke.yaml")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not shutil.which("sinfo") or subprocess.run(["sinfo"], capture_output=True, check=False).returncode != 0:
        print("bench_slurm: skipped (no Slurm controller answers; .ci/install-slurm.sh starts one)")
        return 0
    with tempfile.TemporaryDirectory() as work:
        timed(["run", args.config, "--out", f"{work}/warm", "--quiet"])  # environments made, not timed
        plain, submitted = [], []
        for i in range(args.repeats):
            plain.append(timed(["run", args.config, "--out", f"{work}/run-{i}", "--quiet"]))
            submitted.append(timed(["submit", args.config, "--shards", str(args.shards), "--wait",
                                    "--out", f"{work}/submit-{i}", "--quiet"]))
    run_s, submit_s = statistics.median(plain), statistics.median(submitted)
    print(f"bench_slurm: {args.config}: harness run {run_s:.1f}s, harness submit --shards {args.shards} --wait "
          f"{submit_s:.1f}s (medians of {args.repeats}); ratio submit/run = {submit_s / run_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
