"""`harness nightly CONFIG --baseline RESULTS` and `harness compare RESULTS --baseline RESULTS`.

Exit 1 when a cell went from clean to reproduced or error (the alarm), 0 otherwise, 2 for bad input.
`compare` is the second half alone, for a merge job that joins shards measured on many machines.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.model import CellResult
from harness.nightly.compare import compare, exit_code, render_changes
from harness.report.load import load
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


def repro_of(document: dict[str, Any]) -> str | None:
    """The repro's name: a built-in's, or a script's file name (its folder differs between machines)."""
    repro = (document.get("config") or {}).get("repro")
    return Path(repro).name if repro else None


def check_same_repro(path: Path, repro: str | None, baseline_path: Path, baseline_repro: str | None) -> None:
    """Cells are matched by version and mesh alone, and a user's script has no mesh: results of two
    different programs would be compared cell by cell as if they were one."""
    if repro and baseline_repro and repro != baseline_repro:
        raise UserError(f"{path} measures repro {repro!r} but the baseline {baseline_path} measured "
                        f"{baseline_repro!r}: compare results of the same repro")


def report_changes(current: list[CellResult], baseline: list[CellResult], baseline_path: Path) -> int:
    changes = compare(current, baseline)
    print(f"compared with {baseline_path}:")
    print(render_changes(changes))
    return exit_code(changes)


def cmd_compare(args: argparse.Namespace) -> int:
    base_doc, baseline = load(args.baseline)
    document, cells = load(args.results)
    check_same_repro(args.results, repro_of(document), args.baseline, repro_of(base_doc))
    return report_changes(cells, baseline, args.baseline)


def cmd_nightly(args: argparse.Namespace) -> int:
    from harness.cli import EXIT_OK, _sweep
    from harness.config import load_config

    base_doc, baseline = load(args.baseline)  # a bad baseline fails before an hour of sweeping
    config = load_config(args.config)
    check_same_repro(args.config, config.to_json()["repro"], args.baseline, repro_of(base_doc))
    if not args.versions and not args.config_versions:
        args.versions = [LATEST]
    code = _sweep(config, args)
    if code != EXIT_OK:
        return code
    print()
    return report_changes(load(args.results_dir)[1], baseline, args.baseline)
