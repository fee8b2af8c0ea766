"""How fast results.json's cells are encoded and decoded: the harness's own code (read_cell and
cell_json of harness/results/document.py: an older cell upgraded, then msgspec's strict conversion to the Structs,
and back) against msgspec and pydantic over stand-in types of the cells'
shapes (a run, a mesh, a seed plan), on a fixture folder's cells repeated N times. docs/architecture.md
(Serialisation) quotes its ratios. pydantic is optional (`pip install pydantic` to compare it).

    .venv/bin/python bench/bench_serialisation.py [tests/fixtures/v1-release-run/results.json] [N] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable
from typing import Any

import msgspec

from harness.results.document import cell_json, read_cell



@dataclass
class Mesh:
    shape: list[int]
    axis_names: list[str]


@dataclass
class Run:
    index: int
    seed: int
    exit_code: int | None
    duration_s: float
    new_entries: list[str]
    timed_out: bool
    reason: str
    log: str


@dataclass
class Cover:
    names: list[str]
    orderings_run: list[str]
    orderings_seen_in_candidates: int
    pairs_in_both_orders: bool


@dataclass
class Seeds:
    strategy: str
    seeds: list[int]
    chosen: list[int]
    random: list[int]
    python: str
    candidates_probed: int
    covers: list[Cover]
    miss_bound: float | None
    assumes: str
    target: float
    miss_bound_other_mechanisms: float | None = None
    assumes_other_mechanisms: str | None = None


@dataclass
class Cell:
    jax_version: str
    platform: str
    device_count: int
    mesh: Mesh | None
    verdict: str
    reason: str
    keys: dict[str, list[str]]
    runs: list[Run]
    listing: list[str]
    environment: dict[str, Any]
    seeds: Seeds | None = None
    miss_bound: float | None = None
    miss_bound_other_mechanisms: float | None = None


def best(work: Callable[[], object], reps: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()  # this process's CPU time: what other work on a shared machine leaves alone
        for _ in range(reps):
            work()
        times.append((time.process_time() - start) / reps)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", type=Path, default=Path("tests/fixtures/v1-release-run/results.json"))
    parser.add_argument("times", nargs="?", type=int, default=1, help="the fixture's cells repeated this many times")
    parser.add_argument("--repeats", type=int, default=5, help="each timing taken this many times, the best kept")
    args = parser.parse_args()
    cells = json.loads(args.source.read_text())["cells"] * args.times
    text = json.dumps(cells, indent=2)
    reps = max(1, 400 // len(cells))
    harness = best(lambda: json.dumps([cell_json(read_cell(c)) for c in json.loads(text)], indent=2), reps,
                   args.repeats)
    print(f"{len(cells)} cells, {len(text)} bytes: the harness {harness * 1e3:.2f} ms")
    decoder = msgspec.json.Decoder(list[Cell])
    ms = best(lambda: msgspec.json.format(msgspec.json.encode(decoder.decode(text)), indent=2), reps, args.repeats)
    print(f"  msgspec: {ms * 1e3:.2f} ms, {harness / ms:.1f}x faster")
    try:
        import pydantic
    except ImportError:
        print("  pydantic: not installed")
        return
    adapter = pydantic.TypeAdapter(list[Cell])
    pd = best(lambda: adapter.dump_json(adapter.validate_json(text), indent=2), reps, args.repeats)
    print(f"  pydantic: {pd * 1e3:.2f} ms, {harness / pd:.1f}x faster")


if __name__ == "__main__":
    main()
