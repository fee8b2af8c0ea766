"""`harness`: parses arguments and wires objects together; the work happens elsewhere.

Exit codes: 0 the work completed (whatever it found), 2 bad input, 1 a failure of the harness,
130 interrupted (partial results are kept).
"""

from __future__ import annotations

import argparse
import math
import re
import shlex
import sys
import traceback
from pathlib import Path

from harness.config import MAX_DEVICES, MAX_RUNS, Config, load_config, parse_config
from harness.environments import NAMES, BackendOptions, make_backend
from harness.errors import UserError
from harness.progress import ConsoleProgress
from harness.report.load import cells_of_document
from harness.results import (ResultsWriter, host_facts, load_results, new_run_dir, results_file,
                             results_folder, utc_now)
from harness.resume import check_same_sweep, finished_cells, still_to_measure
from harness.seeds import SeedPlanner, SeedStrategy, runs_for_target
from harness.shards.select import parse_shard
from harness.sweep import Sweep, plan_cells
from harness.table import render, summary_line
from harness.versions import LATEST, PyPIIndex, check_syntax, matches, resolve

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_RESULTS = Path("results")


def _positive(minimum: int, maximum: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}")
        return value
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("must be a positive, finite number of seconds")
    return value


def _add_sweep_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=NAMES, default="venv",
                   help="where each JAX version runs (default: venv; auto = docker if a daemon answers)")
    p.add_argument("--versions", nargs="+", metavar="V",
                   help="versions or specifiers replacing the config's jax_versions")
    p.add_argument("--runs", type=_positive(2, MAX_RUNS), help="most runs per cell (at least 2)")
    p.add_argument("--jobs", type=_positive(1, 256), default=1, help="runs of a cell in parallel (default 1)")
    p.add_argument("--out", type=Path, default=DEFAULT_RESULTS, help="results folder (default: results/)")
    p.add_argument("--rebuild", action="store_true", help="rebuild environments/images even if ready")
    p.add_argument("--python", help="--backend local: the interpreter that has JAX (default: this one)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("--seeds", choices=[s.value for s in SeedStrategy], default=SeedStrategy.CHOSEN.value,
                   help="chosen: probe the interpreter for hash seeds showing every order of the mesh's "
                        "axis names, then random ones up to --runs (default); random: random seeds only")
    p.add_argument("--shard", type=parse_shard, metavar="I/N",
                   help="measure only shard I of N of the cells (join them with harness merge)")


def _add_all_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-runs", action="store_true",
                   help="make every run even after a cell has reproduced (more keys for the report)")
    p.add_argument("--resume", type=Path, metavar="RESULTS_DIR",
                   help="finish an interrupted sweep in its own folder: measure only the cells it lacks")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness", description="Reproduce JAX persistent-compilation-cache regressions version by version.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="sweep the versions and meshes of a config")
    run.add_argument("config", type=Path)
    _add_sweep_options(run)
    _add_all_runs(run)
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="run your own script version by version, no config needed")
    check.add_argument("script", type=Path)
    check.add_argument("--device-count", type=_positive(1, MAX_DEVICES), default=8)
    check.add_argument("--platform", choices=["cpu", "cuda", "auto"], default="cpu")
    check.add_argument("--timeout", type=_seconds, default=300.0, help="seconds per run (default 300)")
    _add_sweep_options(check)
    _add_all_runs(check)
    check.set_defaults(handler=cmd_check)

    versions = sub.add_parser("versions", help="print the JAX releases a config names, one per line")
    versions.add_argument("config", type=Path)
    versions.add_argument("--versions", nargs="+", metavar="V", help="resolve these instead")
    versions.add_argument("--python-version", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                          help="only releases with wheels for this Python (default: this interpreter's)")
    versions.set_defaults(handler=cmd_versions)

    # Commands that live in their own modules add their parsers here (one line each).
    for register in _command_modules():
        register(sub, _add_sweep_options)
    return parser


def _command_modules():
    """`register(subparsers, add_sweep_options)` functions of the commands kept in other modules."""
    from harness.bisect.cli import register as register_bisect
    from harness.nightly.command import register_compare, register_nightly
    from harness.report.command import register as register_report
    from harness.shards.command import register as register_merge

    return [register_report, register_nightly, register_compare, register_merge, register_bisect]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except UserError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\nharness: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # a bug of the harness, not bad input: the traceback is what a fix needs
        traceback.print_exc()
        print("harness: internal error (a bug in the harness; the traceback above says where)",
              file=sys.stderr)
        return EXIT_FAILURE


def cmd_run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    return _sweep(config, args)


def cmd_check(args: argparse.Namespace) -> int:
    if not args.script.is_file():
        raise UserError(f"{args.script}: no such script")
    data = {"name": _name_for(args.script), "repro": str(args.script.resolve()),
            "jax_versions": args.versions or [LATEST], "platform": args.platform,
            # A script's name sets are unknown, so its seeds are random: enough for the 1e-3 target.
            "device_count": args.device_count, "runs": args.runs or runs_for_target(),
            "timeout_s": args.timeout}
    config = parse_config(data, source="harness check", base_dir=Path.cwd())
    return _sweep(config, args)


def cmd_versions(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    entries, source = version_entries(config, args.versions)
    for version in resolve(entries, PyPIIndex(), source=source, python=args.python_version):
        print(version)
    return EXIT_OK


def _name_for(script: Path) -> str:
    return "check-" + (re.sub(r"[^A-Za-z0-9._-]", "_", script.stem) or "script")


def version_entries(config: Config, versions: list[str] | None) -> tuple[tuple[str, ...], str]:
    """The version entries to resolve (--versions over the config's) and where they came from."""
    if not versions:
        return config.jax_versions, f"{config.source}: jax_versions"
    for entry in versions:
        problem = check_syntax(entry)
        if problem:
            raise UserError(f"--versions: {problem}")
    return tuple(versions), "--versions"


def _resume_argv(run_dir: Path) -> list[str]:
    """This command again, continuing in `run_dir` (an earlier --resume replaced, --out dropped)."""
    argv, skip = [], False
    for word in sys.argv[1:]:
        if skip:
            skip = False
        elif word in ("--resume", "--out"):
            skip = True
        elif not word.startswith(("--resume=", "--out=")):
            argv.append(word)
    return ["harness", *argv, "--resume", str(run_dir)]


def _versions(config: Config, args: argparse.Namespace, backend, index: PyPIIndex) -> list[str]:
    entries, source = version_entries(config, args.versions)
    if backend.name == "local":
        installed = backend.installed_version()
        if any(matches(e, installed) for e in entries):
            return [installed]
        raise UserError(f"{source}: the local interpreter has jax {installed}, which "
                        f"{', '.join(entries)} does not include (pass --versions {installed})")
    return resolve(entries, index, source=source, python=backend.target_python)


def _sweep(config: Config, args: argparse.Namespace) -> int:
    progress = ConsoleProgress(quiet=args.quiet)
    index = PyPIIndex()  # asks the network only when a version is resolved or dated
    choice = make_backend(args.backend, BackendOptions(rebuild=args.rebuild, python=args.python,
                                                       docker=config.docker, release_date=index.release_date))
    progress.say(f"backend: {choice.backend.name} ({choice.why})")
    versions = _versions(config, args, choice.backend, index)
    runs = args.runs or config.runs
    all_runs = getattr(args, "all_runs", False)  # nightly has no such option: it stops early
    planned = plan_cells(config, versions)
    shard = getattr(args, "shard", None)
    cells = shard.select(planned) if shard else planned
    if shard:
        progress.say(f"shard {shard}: {len(cells)} of {len(planned)} cell(s)")
    progress.say(f"{len(versions)} JAX version(s): {', '.join(versions)}; {len(cells)} cell(s), "
                 f"up to {runs} runs each")

    choice.backend.check(config.platform, progress.say)
    header = {
        "command": shlex.join(["harness", *sys.argv[1:]]),
        "config": config.to_json(),
        "versions": versions,
        "options": {"runs": runs, "jobs": args.jobs, "seeds": args.seeds, "all_runs": all_runs,
                    "backend": choice.backend.name,
                    "backend_reason": choice.why},
        "host": host_facts(choice.backend.describe()),
        **({"shard": shard.to_json([c.key for c in planned], [c.key for c in cells])} if shard else {}),
    }
    resume = getattr(args, "resume", None)
    if resume is not None:
        previous = load_results(resume)
        check_same_sweep(previous, header, str(resume))
        kept = finished_cells(cells_of_document(previous, results_file(resume)))
        cells = still_to_measure(cells, kept)
        progress.say(f"resuming {resume}: {len(kept)} cell(s) kept, {len(cells)} to measure")
        run_dir = results_folder(results_file(resume))
        header.update(created=previous.get("created"), resumed=[*previous.get("resumed", []), utc_now()])
        writer = ResultsWriter(run_dir, header, cells=kept)
    else:
        run_dir = new_run_dir(args.out, config.name)
        writer = ResultsWriter(run_dir, header)
    args.results_dir = run_dir  # for commands that read the results back (nightly)
    progress.say(f"results: {writer.path}")
    sweep = Sweep(config, choice.backend, writer, progress, jobs=args.jobs,
                  planner=SeedPlanner(SeedStrategy(args.seeds), runs=runs),
                  stop_when_reproduced=not all_runs)
    try:
        sweep.run(cells)
    except KeyboardInterrupt:
        writer.finish("interrupted")
        print(f"\ninterrupted: {len(writer.cells)} cell(s) kept in {writer.path}\n"
              f"resume with: {shlex.join(_resume_argv(writer.dir))}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseException:
        writer.finish("failed")  # what was measured stays; the status says the sweep did not end well
        raise
    writer.finish("complete")
    print(f"results: {writer.path} (report: {writer.dir / 'report.md'})", file=sys.stderr)
    print(render(writer.cells))
    print()
    print(summary_line(writer.cells))  # last, so `| tail -1` gives the answer
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
