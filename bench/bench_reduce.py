"""What `harness reduce` costs on the acceptance's training script, against one `harness check` of it.

1. One full `harness check` of the original on the bad release (its wall time: the unit of cost).
2. `harness reduce` of it on the bad release, clean on the good one: candidates run, candidates decided
   (memo and pyflakes included), wall time, before/after lines, and the ratio of its time to (1).

3. With `--save FILE` its figures are kept; with `--against FILE` (an earlier run's, e.g. before a change, on
   the same machine) the ratios to it are printed: wall time, fresh processes' candidates, lines.

`--options` gives both commands more options: `--vary cache-path --runs 2` or `--processes 2 --runs 4` measure
those paths (tests/fixtures/reduce/vary_cache_path.py on 0.5.0 / 0.4.31, pvary_job.py on 0.8.1 / 0.8.2);
`--reduce-options` the reduction only (`--max-candidates 100`: `harness check` has no such option).

    python bench/bench_reduce.py [--script examples/train_shard_map_grad.py] [--bad 0.4.28] [--good 0.4.29]
                                 [--options "--vary cache-path"] [--reduce-options "--max-candidates 100"]
                                 [--target 4] [--save before.json]
                                 [--against before.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], expected: int = 0) -> tuple[float, str]:
    """Seconds `harness ARGV` took, and what it said on stderr; it must exit `expected` (a check that reproduces
    exits 1: a regression)."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != expected:
        sys.exit(f"harness {' '.join(argv)}: exit {done.returncode}, not {expected}\n{done.stderr[-2000:]}")
    return time.monotonic() - start, done.stderr


def said(pattern: str, text: str) -> int | None:
    """A count the reduction's progress said (None: it said none, as a harness from before the tally)."""
    found = re.search(pattern, text)
    return int(found.group(1)) if found else None


def _children_cpu() -> float:
    """CPU seconds of this process's ended children and what they waited for (the harness and its fresh runs; a
    fork server's children only where the server was waited for: the reduction says theirs itself)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default="examples/train_shard_map_grad.py")
    parser.add_argument("--bad", default="0.4.28")
    parser.add_argument("--good", default="0.4.29")
    parser.add_argument("--options", default="", help="more options for check and reduce (split on spaces)")
    parser.add_argument("--reduce-options", default="", help="more options for reduce only (`--max-candidates N`)")
    parser.add_argument("--target", type=float, default=4.0, help="the speed-up asked for, said beside the ratio")
    parser.add_argument("--keep", type=Path, help="keep the check's and the reduction's folders here")
    parser.add_argument("--save", type=Path, help="write this run's figures here (JSON)")
    parser.add_argument("--against", type=Path, help="an earlier run's --save: print the ratios to it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        options = args.options.split()
        check_s, _ = timed(["check", args.script, "--versions", args.bad, "--out", f"{tmp}/check", "--quiet",
                            *options], expected=1)
        started_load, started_cpu = os.getloadavg()[0], _children_cpu()
        reduce_s, progress = timed(["reduce", args.script, "--versions", args.bad, "--good", args.good,
                                    "--out", f"{tmp}/reduce", *options, *args.reduce_options.split()])
        load, reduce_cpu = (started_load, os.getloadavg()[0]), _children_cpu() - started_cpu
        (folder,) = Path(tmp, "reduce").iterdir()
        reduced = (folder / "reduced.py").read_text()
        state = json.loads((folder / "reduce.json").read_text())
        section = json.loads((folder / "results.json").read_text())["reduce"]
    print(f"harness reduce {args.script} --versions {args.bad} --good {args.good} {args.options} {args.reduce_options}:")
    print(f"  {section['original']['lines']} -> {section['reduced']['lines']} lines; {state['measured']} candidates "
          f"run, {section['candidates_decided']} decided (memo, pyflakes and runs)")
    print("the reduced program:\n" + reduced)
    whys = [t.get("why", "") for t in state["memo"].values()]
    provisional = sum(1 for w in whys if w.startswith("kept provisionally"))
    screened = sum(1 for w in whys if ("a forked run" in w or "forked runs of seed" in w)
                   and not w.startswith("kept provisionally"))
    undone = sum(1 for w in whys if w.startswith("not confirmed by fresh processes"))
    print(f"  wall time {reduce_s:.0f} s (search {state['seconds']:.0f} s); one full check of the original on "
          f"{args.bad}: {check_s:.1f} s; ratio reduce/check {reduce_s / check_s:.0f}x; "
          f"{screened} candidates rejected by forked children, {provisional} kept provisionally by them ({undone} "
          f"undone at a checkpoint: not confirmed by fresh processes), the others run fresh")
    # "candidates' processes: 14 fresh, 832 forked children (and 211 on jax 0.4.29)"
    fresh = said(r"candidates' processes: (\d+) fresh", progress)
    forked, on_good = said(r"(\d+) forked children", progress), said(r"\(and (\d+) on jax", progress)
    children = None if forked is None else forked + (on_good or 0)
    children_cpu = said(r"the children used (\d+) CPU s", progress)
    harness_cpu = said(r"the harness's own process (\d+) CPU s", progress)
    print(f"  {children} forked children and {fresh} fresh processes measured candidates (None: not said by this "
          f"harness); the children used {children_cpu} CPU s; the harness's own process {harness_cpu} CPU s; the "
          f"reduction's own processes (the harness and the processes it waited for) {reduce_cpu:.0f} CPU s; "
          f"load average {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    figures = {"wall_s": round(reduce_s, 1), "search_s": round(state["seconds"], 1), "check_s": round(check_s, 1),
               "lines": section["reduced"]["lines"], "measured": state["measured"], "screened": screened,
               "provisional": provisional, "undone": undone, "forked_children": children, "fresh_processes": fresh,
               "children_cpu_s": children_cpu, "harness_cpu_s": harness_cpu, "reduce_cpu_s": round(reduce_cpu, 1),
               "load": [round(x, 1) for x in load]}
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1) + "\n")
    if args.against:
        before = json.loads(args.against.read_text())
        print(f"  against {args.against}: wall time {before['wall_s']:.0f} s -> {reduce_s:.0f} s "
              f"({before['wall_s'] / reduce_s:.2f}x faster; the target is {args.target:g}x); reduce/check "
              f"{before['wall_s'] / before['check_s']:.0f}x -> {reduce_s / check_s:.0f}x; "
              f"{before['lines']} -> {figures['lines']} lines; candidates run {before['measured']} -> "
              f"{figures['measured']} ({before['measured'] / max(1, figures['measured']):.2f}x fewer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
