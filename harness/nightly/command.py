"""`harness nightly CONFIG --baseline RESULTS` and `harness compare RESULTS --baseline RESULTS`.

Exit 1 when a cell went from clean to reproduced or error (the alarm), 0 otherwise, 2 for bad input.
`compare` is the second half alone, for a merge job that joins shards measured on many machines.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.model import CellResult
from harness.nightly.compare import compare, exit_code, render_changes
from harness.results import load_results
from harness.versions import LATEST



def register_nightly(subparsers, add_sweep_options) -> None:
    p = subparsers.add_parser("nightly", help="sweep the newest releases and compare with a baseline "
                                              "(exit 1 on a regression)")
    p.add_argument("config", type=Path)
    p.add_argument("--baseline", type=Path, required=True, help="results folder (or results.json) to compare with")
    p.add_argument("--config-versions", action="store_true",
                   help="sweep the config's jax_versions instead of the default, the latest release")
    add_sweep_options(p)
    p.set_defaults(handler=cmd_nightly)


def register_compare(subparsers, add_sweep_options) -> None:
    p = subparsers.add_parser("compare", help="compare measured results with a baseline (exit 1 on a regression)")
    p.add_argument("results", type=Path, help="results folder (or results.json)")
    p.add_argument("--baseline", type=Path, required=True)
    p.set_defaults(handler=cmd_compare)


def cells_of(path: Path) -> list[CellResult]:
    return [CellResult.from_json(c) for c in load_results(path).get("cells", [])]


def report_changes(current: list[CellResult], baseline: list[CellResult], baseline_path: Path) -> int:
    changes = compare(current, baseline)
    print(f"compared with {baseline_path}:")
    print(render_changes(changes))
    return exit_code(changes)


def cmd_compare(args: argparse.Namespace) -> int:
    baseline = cells_of(args.baseline)
    return report_changes(cells_of(args.results), baseline, args.baseline)


def cmd_nightly(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK, _sweep
    from harness.config import load_config

    baseline = cells_of(args.baseline)  # a bad baseline fails before an hour of sweeping
    config = load_config(args.config)
    if not args.versions and not args.config_versions:
        args.versions = [LATEST]
    code = _sweep(config, args)
    if code != EXIT_OK:
        return code
    print()
    return report_changes(cells_of(args.results_dir), baseline, args.baseline)
