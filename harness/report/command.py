"""`harness report RESULTS_DIR`: regenerate report.md from a results folder (no JAX, no runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.report.write import write_report
from harness.results import results_folder


def register(subparsers, add_sweep_options) -> None:
    p = subparsers.add_parser("report", help="(re)write report.md from a results folder, ready for an issue")
    p.add_argument("results", type=Path, help="a results folder (or its results.json)")
    p.add_argument("--print", action="store_true", dest="show", help="also print the report")
    p.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    path = write_report(results_folder(args.results))
    if args.show:
        print(path.read_text(), end="")
    print(f"report: {path}")
    return 0
