"""The seed's table through `harness run` (no flags) against the seed's own method, warm and cold.

The seed's method: for each release, 11 fresh runs of the repro sharing one cache folder, then `ls -1`
of it; run here as one shell loop with the very environments (venvs) the harness uses. Then:
  warm: `harness run configs/shard_map_grad.yaml`, its environments already made;
  cold: the same with an empty environment folder (uv's download cache stays warm: no network cost).
Prints each timing per repeat, the median, and the ratios (targets on a 2-core machine: warm <= 0.35x
the shell loop, cold <= 1.5x warm). The machine's load average is printed too: timings on a loaded
machine are noisy.

    python bench/bench_table.py [--repeats 3] [--config configs/shard_map_grad.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.inputs.config import load_config  # noqa: E402
from harness.environments.process import clean_environment  # noqa: E402
from harness.core.model import CellSpec  # noqa: E402
from harness.inputs.process_variables import process_env, repro_args  # noqa: E402

SEED_RUNS = 11


def harness_run(config: Path, env_dir: Path, out: Path) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "HARNESS_ENV_DIR": str(env_dir)}
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "harness", "run", str(config), "--out", str(out), "-q"],
                   check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    elapsed = time.monotonic() - start
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return elapsed, json.loads((folder / "results.json").read_text())


def shell_loop(document: dict[str, Any], config_path: Path, work: Path) -> float:
    """The seed's loop over the releases of `document` (a harness results file), in their venvs."""
    config = load_config(config_path)
    lines = []
    for cell in document["cells"]:
        python = Path(cell["environment"]["path"]) / "bin" / "python"
        mesh = config.meshes[0]
        spec = CellSpec(cell["spec"]["jax_version"], config.platform, config.device_count, mesh)
        cache = work / f"cache-{spec.jax_version}"
        env = {k: v for k, v in process_env(spec, 1).items() if k != "PYTHONHASHSEED"}  # seed-style: random
        env["JAX_COMPILATION_CACHE_DIR"] = str(cache)
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = (f"{assigns} {shlex.quote(str(python))} {shlex.quote(str(config.repro.path))} "
                   f"{' '.join(map(shlex.quote, repro_args(config.repro, spec)))} > /dev/null 2>&1")
        lines += [f"for i in $(seq {SEED_RUNS}); do {command}; done", f"ls -1 {shlex.quote(str(cache))} > /dev/null 2>&1 || true"]
    start = time.monotonic()
    subprocess.run(["bash", "-c", "\n".join(lines)], check=True, env=clean_environment({}),
                   cwd=config.repro.path.parent)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "shard_map_grad.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--env-dir", type=Path, default=Path(os.environ.get(
        "HARNESS_ENV_DIR", Path.home() / ".cache" / "jax-cache-harness" / "envs")),
        help="the warm environments (made first if missing)")
    args = parser.parse_args()

    timings: dict[str, list[float]] = {"shell loop": [], "harness warm": [], "harness cold": []}
    loads = []
    with tempfile.TemporaryDirectory(prefix="bench-table-") as name:
        tmp = Path(name)
        _, document = harness_run(args.config, args.env_dir, tmp / "warm-up")  # makes what is missing
        print("verdicts: " + ", ".join(f"{c['spec']['jax_version']} {c['verdict']}" for c in document["cells"]))
        for repeat in range(args.repeats):
            loads.append(os.getloadavg()[0])
            timings["shell loop"].append(shell_loop(document, args.config, tmp / f"loop-{repeat}"))
            timings["harness warm"].append(harness_run(args.config, args.env_dir, tmp / f"warm-{repeat}")[0])
            timings["harness cold"].append(harness_run(args.config, tmp / f"envs-{repeat}", tmp / f"cold-{repeat}")[0])
    median = {name: statistics.median(values) for name, values in timings.items()}
    print(f"the seed's table ({args.config.name}), {args.repeats} repeat(s), load average "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} core(s):")
    for name, values in timings.items():
        print(f"  {name:13s} median {median[name]:6.1f} s  (" + ", ".join(f"{v:.1f}" for v in values) + ")")
    warm = [h / s for h, s in zip(timings["harness warm"], timings["shell loop"])]
    cold = [c / w for c, w in zip(timings["harness cold"], timings["harness warm"])]
    print(f"  warm / shell loop: {statistics.median(warm):.2f}x (per repeat: "
          + ", ".join(f"{r:.2f}" for r in warm) + "; target <= 0.35)")
    print(f"  cold / warm:       {statistics.median(cold):.2f}x (per repeat: "
          + ", ".join(f"{r:.2f}" for r in cold) + "; target <= 1.5)")


if __name__ == "__main__":
    main()
