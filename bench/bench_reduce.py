"""What `harness reduce` costs on the acceptance's training script, against one `harness check` of it.

1. One full `harness check` of the original on the bad release (its wall time: the unit of cost).
2. `harness reduce` of it on the bad release, clean on the good one: candidates run, candidates decided
   (memo and pyflakes included), wall time, before/after lines, and the ratio of its time to (1).

    python bench/bench_reduce.py [--script examples/train_shard_map_grad.py] [--bad 0.4.28] [--good 0.4.29]
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


def timed(argv: list[str], expected: int = 0) -> float:
    """Seconds `harness ARGV` took; it must exit `expected` (a check that reproduces exits 1: a regression)."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != expected:
        sys.exit(f"harness {' '.join(argv)}: exit {done.returncode}, not {expected}\n{done.stderr[-2000:]}")
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default="examples/train_shard_map_grad.py")
    parser.add_argument("--bad", default="0.4.28")
    parser.add_argument("--good", default="0.4.29")
    parser.add_argument("--keep", type=Path, help="keep the check's and the reduction's folders here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        check_s = timed(["check", args.script, "--versions", args.bad, "--out", f"{tmp}/check", "--quiet"],
                        expected=1)
        reduce_s = timed(["reduce", args.script, "--versions", args.bad, "--good", args.good,
                          "--out", f"{tmp}/reduce", "--quiet"])
        (folder,) = Path(tmp, "reduce").iterdir()
        reduced = (folder / "reduced.py").read_text()
        state = json.loads((folder / "reduce.json").read_text())
        section = json.loads((folder / "results.json").read_text())["reduce"]
    print(f"harness reduce {args.script} --versions {args.bad} --good {args.good}:")
    print(f"  {section['original']['lines']} -> {section['reduced']['lines']} lines; {state['measured']} candidates "
          f"run, {section['candidates_decided']} decided (memo, pyflakes and runs)")
    print("the reduced program:\n" + reduced)
    print(f"  wall time {reduce_s:.0f} s (search {state['seconds']:.0f} s); one full check of the original on "
          f"{args.bad}: {check_s:.1f} s; ratio reduce/check {reduce_s / check_s:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
