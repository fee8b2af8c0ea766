"""What the reducer itself costs per candidate, against what one candidate's JAX process costs.

`harness reduce` spends nearly all its time in candidates' fresh JAX processes; this measures the rest: the
search's own CPU (the coarse passes, then pysource-minimize), on the acceptance's training script, with a
stand-in test in place of the runs (a candidate "keeps the signature" while it still builds a mesh and takes the
gradient of a shard_map'd function), so no JAX process is started and the figure is the reducer's alone.

Printed: candidates decided and measured, the search's CPU per measured candidate, and its ratio to the CPU of one
`import jax` in the bad release's environment (the harness's venv of it, made if missing), the least a candidate's
run costs. Well below 1 means the reducer's time is its candidates' processes, not its own.

    python bench/bench_reduce_search.py [--script examples/train_shard_map_grad.py] [--bad 0.4.28]

`--replay reduce.json [...]` instead answers each candidate as a real reduction of the script did (its folder's
reduce.json: the memo by digest; a candidate none of them measured counts as unknown, rejected), two slots
side by side, a kept one taking twice a rejected one's time: the candidates a change of the passes or of their
scheduling would run, pass by pass, and how many were measured ahead of a kept one for nothing, in seconds and
without a JAX process (load does not move the counts; the timing of the slots moves the last a little).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from harness.core.kinds import Platform
from harness.environments import dated_venv_backend
from harness.reduce.passes import digest, size
from harness.reduce.search import Search, Tried

ROOT = Path(__file__).resolve().parents[1]

# What the stand-in test asks of a candidate: the pieces the training script's signature needs.
NEEDED = ("shard_map", "grad(", "Mesh(", "axis_names", "jit(")


def stand_in(sources: list[str]) -> list[Tried]:
    return [Tried(True, "kept") if all(piece in s for piece in NEEDED) else Tried(False, "a piece is gone")
            for s in sources]


def searched(source: str, fine: bool) -> tuple[Search, str, float]:
    search = Search(source, stand_in)
    start = time.process_time()
    best = search.run(fine=fine)
    return search, best, time.process_time() - start


def replayed(source: str, states: list[Path]) -> None:
    answers: dict[str, bool] = {}
    for path in states:
        for key, answer in json.loads(path.read_text())["memo"].items():
            answers.setdefault(key, bool(answer.get("kept", False)))
    unknown: list[str] = []
    tallies: dict[str, list[int]] = {}

    def measure(sources: list[str]) -> list[Tried]:
        kept = [answers.get(digest(s)) for s in sources]
        unknown.extend(s for s, k in zip(sources, kept) if k is None)
        time.sleep(0.01 * sum(2 if k else 1 for k in kept))  # a kept candidate takes about twice as long
        return [Tried(bool(k), "replayed") for k in kept]

    search = Search(source, measure, at_once=2)

    def told(candidate: str, answer: Tried, best: str) -> None:
        if answer.measured:
            tally = tallies.setdefault(search.making.value, [0, 0])
            tally[0] += 1
            tally[1] += answer.kept

    search.on_tried = told
    best = search.run()
    print(f"replayed: {size(source)} -> {size(best)} lines, {search.measured} measured ({len(unknown)} unknown to "
          f"the replayed reductions), {search.ahead_wasted} measured ahead of a kept one for nothing; "
          + "; ".join(f"{name}: {tried} tried, {kept} kept" for name, (tried, kept) in tallies.items()))


def import_jax_cpu(bad: str) -> float:
    """CPU seconds (user + sys) of `python -c "import jax"` in the bad release's CPU environment, best of 3."""
    python = dated_venv_backend().prepare(bad, Platform.CPU, say=lambda m: print(m, file=sys.stderr)).python
    spent = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([str(python), "-c", "import jax"], check=True, env={"JAX_PLATFORMS": "cpu"})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return min(spent)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", default="examples/train_shard_map_grad.py")
    parser.add_argument("--bad", default="0.4.28")
    parser.add_argument("--replay", type=Path, nargs="+", help="reduce.json files of real reductions of the script")
    args = parser.parse_args()
    source = (ROOT / args.script).read_text()
    if args.replay:
        replayed(source, args.replay)
        return 0
    import_s = import_jax_cpu(args.bad)
    for label, fine in (("coarse passes", False), ("coarse + pysource-minimize", True)):
        search, best, cpu_s = searched(source, fine)
        per = cpu_s / max(1, search.measured)
        print(f"{label}: {size(source)} -> {size(best)} lines, {search.decided} decided, {search.measured} measured, "
              f"{cpu_s:.1f} s CPU, {per * 1000:.0f} ms a measured candidate = "
              f"{per / import_s:.3f}x one `import jax` ({import_s:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
