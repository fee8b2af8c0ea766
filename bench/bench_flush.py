"""How long a sweep spends rewriting its results folder: ResultsWriter.add after each of N cells (results.json,
table.md and report.md rewritten every time, as a sweep does), the cells made as the runner makes them (each
with the comparison its verdict was judged from, where this release keeps it on the cell).

The cells are a real sweep's (`harness run configs/shard_map_grad.yaml`, run first into a temporary folder
unless a results folder is given), repeated under new release numbers up to N. Prints the seconds per sweep
and per add, the best of five; run it from another checkout (PYTHONPATH=that checkout) to compare releases.

    .venv/bin/python bench/bench_flush.py [RESULTS_DIR] [--cells 60]
"""

from __future__ import annotations

import argparse

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.core.model import CellResult
from harness.core.records import replace
from harness.output.results_folder import ResultsWriter
from harness.results.document import load_results
from harness.evidence.keys import comparison_of

ROOT = Path(__file__).resolve().parents[1]


def sweep_folder(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "harness", "run", str(ROOT / "configs/shard_map_grad.yaml"),
                    "--out", str(out), "-q"], check=True, stdout=subprocess.DEVNULL)
    return next(p.parent for p in out.glob("*/results.json"))


def as_measured(cell: CellResult) -> CellResult:
    """The cell as the runner hands it to the writer: with its comparison, where cells keep one."""
    cell = replace(cell)
    cell.comparison = comparison_of(cell.runs)  # kept in memory, beside the fields
    return cell


def cells_of(source: Path, count: int) -> list[CellResult]:
    measured = load_results(source).cells
    out = []
    for i in range(count):
        cell = measured[i % len(measured)]
        version = cell.spec.jax_version if i < len(measured) else f"1.{i // len(measured)}.{i % len(measured)}"
        out.append(as_measured(replace(cell, spec=replace(cell.spec, jax_version=version))))
    return out


def one_sweep(source: Path, cells: list[CellResult]) -> float:
    header = load_results(source).header
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        folder.mkdir()
        start = time.perf_counter()
        writer = ResultsWriter(folder, replace(header, created=None))
        for cell in cells:
            writer.add(cell)
        writer.finish()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", nargs="?", type=Path)
    parser.add_argument("--cells", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = args.results or sweep_folder(Path(tmp))
        best = min(one_sweep(source, cells_of(source, args.cells)) for _ in range(5))
    print(f"rewriting the folder after each of {args.cells} cells: {best:.2f} s per sweep, "
          f"{best / args.cells * 1e3:.1f} ms per cell (best of 5)")


if __name__ == "__main__":
    main()
