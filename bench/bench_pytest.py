"""What `harness check --pytest` costs against the suite's own time (issue 51, item 7).

A small suite (three test files, one jitted function each) is run bare (`python -m pytest -q` in the release's
environment, no cache folder: as its author runs it) and through a default `harness check --pytest` (its runs,
the moved folder's run, the environment reused: made once before timing). Printed: the bare time T (median of
three), the check's wall time, and the ratio (issue 51's target: at most 3 T when clean).

    python bench/bench_pytest.py [--version 0.4.31] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SUITE = {
    "test_add.py": "import jax, jax.numpy as jnp\n\n\ndef test_add():\n"
                   "    assert float(jax.jit(lambda x: x + 1)(jnp.ones(2)).sum()) == 4.0\n",
    "test_scale.py": "import jax, jax.numpy as jnp\n\n\ndef scale(x):\n    return x * 3\n\n\n"
                     "def test_scale():\n    assert float(jax.jit(scale)(jnp.ones(4)).sum()) == 12.0\n",
    "test_norm.py": "import jax, jax.numpy as jnp\n\n\n@jax.jit\ndef norm(x):\n    return jnp.sqrt((x * x).sum())\n\n\n"
                    "def test_norm():\n    assert float(norm(jnp.ones(9))) == 3.0\n",
}


def check(version: str, suite: Path, out: Path, runs: int | None) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "harness", "check", "--pytest", "--versions", version, "--quiet",
            "--cwd", str(suite), "--out", str(out), *(["--runs", str(runs)] if runs else []), "--", "-q", "tests"]
    start = time.monotonic()
    subprocess.run(argv, cwd=ROOT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    (folder,) = sorted(p for p in out.iterdir() if p.is_dir())[-1:]
    (cell,) = json.loads((folder / "results.json").read_text())["cells"]
    return seconds, cell


def bare(python: str, suite: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "HARNESS_"))}
    env["JAX_PLATFORMS"] = "cpu"
    start = time.monotonic()
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=suite, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="0.4.31")
    parser.add_argument("--runs", type=int, default=None, help="check's --runs (default: check's own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "suite"
        for name, text in SUITE.items():
            (suite / "tests").mkdir(parents=True, exist_ok=True)
            (suite / "tests" / name).write_text(text)
        _, cell = check(args.version, suite, Path(tmp) / "warm", 2)  # makes the environment, untimed
        python = str(Path(cell["environment"]["path"]) / "bin" / "python")
        t = statistics.median(bare(python, suite) for _ in range(3))
        seconds, cell = check(args.version, suite, Path(tmp) / "timed", args.runs)
        runs = len(cell["runs"]) + (1 if cell.get("moved_folder") else 0)
        print(f"check --pytest of a 3-test suite on jax {args.version}: verdict {cell['verdict']}, {runs} runs "
              f"(run 1 once: {sum(1 for r in cell['runs'] if r['index'] == 1)})")
        print(f"  bare pytest T = {t:.2f} s (median of 3); check = {seconds:.1f} s; ratio {seconds / t:.1f} T "
              f"(issue 51's target when clean: 3 T); per run {seconds / runs:.2f} s = {seconds / runs / t:.2f} T")
    return 0


if __name__ == "__main__":
    sys.exit(main())
