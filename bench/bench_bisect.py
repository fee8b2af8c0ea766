"""What bisection and chosen seeds save.

1. Runs per clean verdict at the 1e-3 miss target: chosen seeds (probed in the environment's own
   interpreter, every pair of axis names in both orders) against plain random seeds (two equally likely
   orderings, the worst case: 11 runs), as a ratio.
2. Wall time of the seed config's release bisection against a full sweep of the same range (with the
   config's runs, and with the 11 runs random seeds need for the same target).

    python bench/bench_bisect.py [--config configs/shard_map_grad.yaml]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.inputs.config import load_config  # noqa: E402
from harness.environments import dated_venv_backend  # noqa: E402
from harness.core.model import CellSpec  # noqa: E402
from harness.core.confidence import TARGET_MISS, runs_for_target  # noqa: E402
from harness.measure.seeds import SeedPlanner  # noqa: E402


def timed(argv: list[str]) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def clean_cell_runs(folder: Path) -> list[int]:
    data = json.loads((folder / "results.json").read_text())
    return [len(c.get("runs", [])) for c in data["cells"] if c["verdict"] == "clean"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/shard_map_grad.yaml")
    parser.add_argument("--version", default="0.4.29", help="release whose interpreter is probed")
    args = parser.parse_args()
    config = load_config(ROOT / args.config)

    env = dated_venv_backend().prepare(args.version, config.platform)
    random_runs = runs_for_target(TARGET_MISS)
    print(f"runs per clean verdict at miss <= {TARGET_MISS:g}:")
    with tempfile.TemporaryDirectory() as tmp:
        for mesh in config.meshes:
            plan = SeedPlanner().plan(CellSpec(args.version, config.platform, config.device_count, mesh), env,
                                      Path(tmp))
            print(f"  mesh {mesh.label}: chosen seeds {len(plan.seeds)} (bound {plan.miss_bound:g}, "
                  f"{len(plan.covers)} name sets covered), random seeds {random_runs} "
                  f"(bound {2.0 ** (1 - random_runs):.1e}): ratio {random_runs / len(plan.seeds):.1f}x")

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        bisect_s = timed(["bisect", args.config, "--fresh", "--out", str(out / "bisect"), "-q"])
        # The brute-force baseline: every release, random seeds, every run made.
        brute = ["--seeds", "random", "--all-runs", "-q"]
        sweep_s = timed(["run", args.config, "--out", str(out / "sweep"), *brute])
        target_s = timed(["run", args.config, "--runs", str(random_runs), "--out", str(out / "sweep11"), *brute])
        [bisect_dir] = (out / "bisect").iterdir()
        bisect = json.loads((bisect_dir / "results.json").read_text())["bisect"]
        [sweep_dir] = (out / "sweep").iterdir()
        print(f"\nrelease bisection of {args.config}: {bisect_s:.1f} s, {bisect['releases_tested']} releases, "
              f"{bisect['runs_total']} runs, clean cells {clean_cell_runs(bisect_dir)} runs each")
        print(f"full sweep, config runs ({config.runs}, random): {sweep_s:.1f} s, clean cells "
              f"{clean_cell_runs(sweep_dir)} runs each; bisection is {sweep_s / bisect_s:.1f}x faster")
        print(f"full sweep at the same target ({random_runs} random runs): {target_s:.1f} s; "
              f"bisection is {target_s / bisect_s:.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
