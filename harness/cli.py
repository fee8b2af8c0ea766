"""`harness` (layer 6, the top): parses arguments into options, calls the service, shows the outcome.

Nothing below this module sees an argparse Namespace. Exit codes (`errors.ExitCode`): 0 the work
completed (whatever it found), 2 bad input, 1 a failure of the harness (or, for nightly and compare,
a regression), 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (129 SIGHUP; partial results are kept).
"""

from __future__ import annotations

import argparse
import errno
import io
import math
import shlex
import sys
import traceback
from pathlib import Path

from harness import service
from harness.config import MAX_DEVICES, MAX_RUNS
from harness.environments import NAMES, BackendName
from harness.errors import ExitCode, UserError
from harness.model import Platform, ThresholdMode
from harness.nightly.compare import CellChange, exit_code, render_changes
from harness.progress import ConsoleProgress
from harness.report.render import REPORT_FILE
from harness.results import RunStatus
from harness.confidence import SeedStrategy
from harness.shards.select import parse_shard
from harness.slurm.jobs import LOG_FOLDER, MERGE_SCRIPT, SHARD_SCRIPT
from harness.stopping import interrupted_exit_code, interrupted_how, stop_signals_interrupt
from harness.table import render, summary_line

_STORAGE_FULL = (errno.ENOSPC, errno.EDQUOT)


JOBS_AUTO = "auto"


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


def _jobs(text: str) -> int | None:
    """`auto` (None: the service chooses from the cores and the platform) or a number of runs at once."""
    if text == JOBS_AUTO:
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs at once or '{JOBS_AUTO}'")
    return _positive(1, 256)(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError("must be a positive, finite number of seconds")
    return value


def _add_sweep_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=NAMES, default=BackendName.VENV.value,
                   help="where each JAX version runs (default: venv; auto = docker if a daemon answers)")
    p.add_argument("--versions", nargs="+", metavar="V",
                   help="versions or specifiers replacing the config's jax_versions")
    p.add_argument("--runs", type=_positive(2, MAX_RUNS), help="most runs per cell (at least 2)")
    p.add_argument("--jobs", type=_jobs, default=None, metavar="N|auto",
                   help="runs at once (default auto: one per core for cpu cells, 1 for cuda cells)")
    p.add_argument("--out", type=Path, default=service.DEFAULT_RESULTS, help="results folder (default: results/)")
    p.add_argument("--rebuild", action="store_true", help="rebuild environments/images even if ready")
    p.add_argument("--python", help="--backend local: the interpreter that has JAX (default: this one)")
    _add_python_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("--seeds", choices=[s.value for s in SeedStrategy], default=SeedStrategy.CHOSEN.value,
                   help="chosen: probe the interpreter for hash seeds showing every order of the mesh's "
                        "axis names, then random ones up to --runs (default); random: random seeds only")
    p.add_argument("--shard", type=parse_shard, metavar="I/N",
                   help="measure only shard I of N of the cells (join them with harness merge)")


def _add_python_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--python-search", nargs="+", action="extend", type=Path, default=[], metavar="PATH",
                   help="more Pythons for the releases that need another one than the harness's: "
                        "interpreters, or folders holding them (searched before PATH, uv and pyenv)")
    p.add_argument("--install-python", action="store_true",
                   help="where no Python here has wheels for a release, `uv python install` one (downloads)")


def _add_all_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-runs", action="store_true",
                   help="make every run even after a cell has reproduced (more keys for the report)")
    p.add_argument("--resume", type=Path, metavar="RESULTS_DIR",
                   help="finish an interrupted sweep in its own folder: measure only the cells it lacks")


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line and where to look, not the usage block (exit 2, as argparse does)."""

    def error(self, message: str):
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def _add_script_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-thresholds", choices=[m.value for m in ThresholdMode],
                   help="the persistent cache's minimum compile time / entry size: zeros, so every module "
                        "is cached and measured (harness, the default), or as the script runs: its own, "
                        "else JAX's defaults (script); either way the cell says what its own would not write")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="harness", description="Reproduce JAX persistent-compilation-cache regressions version by version.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="sweep the versions and meshes of a config")
    run.add_argument("config", type=Path)
    _add_sweep_options(run)
    _add_all_runs(run)
    _add_script_options(run)
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="run your own script version by version, no config needed")
    check.add_argument("script", type=Path, nargs="?", help="the script (or -m MODULE); after `--`, its arguments")
    check.add_argument("-m", dest="module", metavar="MODULE", help="run a module as `python -m MODULE` instead")
    check.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                       help="a variable the script needs (repeatable); the harness's own cannot be overridden")
    check.add_argument("--cwd", type=Path, help="the folder each run starts in (default: the script's folder; "
                                                "for -m, the current folder)")
    check.add_argument("--device-count", type=_positive(1, MAX_DEVICES), default=8)
    check.add_argument("--platform", choices=[p.value for p in Platform], default=Platform.CPU.value)
    check.add_argument("--timeout", type=_seconds, default=300.0, help="seconds per run (default 300)")
    check.add_argument("--with", dest="with_requirements", action="append", default=[], metavar="REQ",
                       help="a requirement the script needs besides jax (repeatable, as `uv run --with`), "
                            "installed with each release as of its date; added to the script's inline metadata")
    check.add_argument("--requirements", dest="requirements_files", action="append", default=[], type=Path,
                       metavar="FILE", help="a requirements file (as `pip -r`; repeatable)")
    _add_sweep_options(check)
    _add_all_runs(check)
    _add_script_options(check)
    check.set_defaults(handler=cmd_check)

    versions = sub.add_parser("versions", help="print the JAX releases a config names, one per line")
    versions.add_argument("config", type=Path)
    versions.add_argument("--versions", nargs="+", metavar="V", help="resolve these instead")
    versions.add_argument("--python-version", metavar="3.N",
                          help="only releases with wheels for this Python (default: the config's python:, "
                               "auto: each release in a Python this machine has)")
    _add_python_options(versions)
    versions.set_defaults(handler=cmd_versions)

    report = sub.add_parser("report", help="(re)write report.md from a results folder, ready for an issue")
    report.add_argument("results", type=Path, help="a results folder (or its results.json)")
    report.add_argument("--print", action="store_true", dest="show", help="also print the report")
    report.set_defaults(handler=cmd_report)

    nightly = sub.add_parser("nightly", help="sweep the newest releases and compare with a baseline "
                                             "(exit 1 on a regression)")
    nightly.add_argument("config", type=Path)
    nightly.add_argument("--baseline", type=Path, required=True,
                         help="results folder (or results.json) to compare with")
    nightly.add_argument("--config-versions", action="store_true",
                         help="sweep the config's jax_versions instead of the default, the latest release")
    nightly.add_argument("--jax-repo", type=Path, metavar="PATH",
                         help="a clone of jax (bare is fine): also measure the commit at --ref, fetched first "
                              "when the clone has a remote, and compare it with the baseline's newest release")
    nightly.add_argument("--ref", default="main",
                         help="--jax-repo: the branch, tag or commit to measure (default: main)")
    _add_sweep_options(nightly)
    nightly.set_defaults(handler=cmd_nightly)

    compare = sub.add_parser("compare", help="compare measured results with a baseline (exit 1 on a regression)")
    compare.add_argument("results", type=Path, help="results folder (or results.json)")
    compare.add_argument("--baseline", type=Path, required=True)
    compare.set_defaults(handler=cmd_compare)

    merge = sub.add_parser("merge", help="join shard results (harness run --shard I/N) into one")
    merge.add_argument("results", type=Path, nargs="+", help="results folders (or results.json files) of the shards")
    merge.add_argument("--out", type=Path, default=service.DEFAULT_RESULTS,
                       help="where the merged folder is made (default: results/)")
    merge.set_defaults(handler=cmd_merge)

    bisect = sub.add_parser("bisect", help="find the releases (and commits) where a regression appears "
                                           "and where it is fixed")
    bisect.add_argument("config", type=Path)
    bisect.add_argument("--good", metavar="V", help="a release known clean (default: the range's first)")
    bisect.add_argument("--bad", metavar="V", help="a release known to reproduce (default: found by search)")
    bisect.add_argument("--jax-repo", type=Path, metavar="PATH",
                        help="a git clone of jax (bare is fine): continue to the commit inside each boundary")
    bisect.add_argument("--fresh", action="store_true", help="forget a recorded bisection and start over")
    _add_sweep_options(bisect)
    bisect.set_defaults(handler=cmd_bisect)

    submit = sub.add_parser("submit", help="run a sweep on a Slurm cluster: an array job of shards, then a merge")
    submit.add_argument("config", type=Path)
    submit.add_argument("--shards", type=_positive(1), required=True, metavar="N",
                        help="array tasks, each measuring a share of the cells")
    _add_sweep_options(submit)
    submit.add_argument("--all-runs", action="store_true",
                        help="make every run even after a cell has reproduced (as for run)")
    submit.add_argument("--wait", action="store_true",
                        help="wait for the merge job, then print the merged table and summary (exit as run does)")
    submit.add_argument("--partition", metavar="P", help="the Slurm partition (default: the cluster's default)")
    submit.add_argument("--cpus-per-task", type=_positive(1), metavar="N", help="CPUs per shard task (default: --jobs)")
    submit.add_argument("--time", metavar="LIMIT",
                        help="time limit per shard task, as sbatch reads it (default 02:00:00)")
    submit.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                        help="one more #SBATCH line for both jobs, e.g. --sbatch-arg=--account=lab (repeatable)")
    submit.add_argument("--only-shards", type=_positive(1), nargs="+", default=[], metavar="I",
                        help="submit these shards again, into the sweep's folder (given by --out)")
    submit.add_argument("--dry-run", action="store_true", help="print the job scripts; submit nothing")
    submit.set_defaults(handler=cmd_submit)
    return parser


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a name from a program or an old results file never stops a print
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first `--` goes to the script untouched (harness check SCRIPT -- ARG ...).
    own, script_args = (words[:words.index("--")], words[words.index("--") + 1:]) if "--" in words else (words, [])
    parser = build_parser()
    args = parser.parse_args(own)
    if script_args and args.command != "check":
        parser.error(f"{args.command}: takes no script arguments after `--` (a config's args: does that)")
    args.script_args = script_args
    args.words = tuple(words)  # the command as typed: recorded in the results, and resumed
    try:
        with stop_signals_interrupt():
            return args.handler(args)
    except UserError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        print(f"\nharness: {interrupted_how()}", file=sys.stderr)
        return interrupted_exit_code()
    except OSError as exc:
        if exc.errno not in _STORAGE_FULL:
            return _internal_error()
        # Not a bug and not bad input: the machine's storage. What was measured was saved up to here.
        print(f"harness: error: {exc.strerror}{f' ({exc.filename})' if exc.filename else ''}; the results "
              "keep every cell saved before it", file=sys.stderr)
        return ExitCode.FAILURE
    except Exception:  # a bug of the harness, not bad input: the traceback is what a fix needs
        return _internal_error()


def _internal_error() -> int:
    traceback.print_exc()
    print("harness: internal error (a bug in the harness; the traceback above says where)", file=sys.stderr)
    return ExitCode.FAILURE


# ---- options: the Namespace stops here -----------------------------------------------------------

def _measure_options(args: argparse.Namespace) -> dict:
    return {"backend": BackendName(args.backend), "versions": tuple(args.versions) if args.versions else None,
            "runs": args.runs, "jobs": args.jobs, "out": args.out, "rebuild": args.rebuild,
            "python": args.python, "seeds": SeedStrategy(args.seeds), "shard": args.shard,
            "pythons": _python_options(args)}


def _python_options(args: argparse.Namespace) -> service.PythonOptions:
    return service.PythonOptions(search=tuple(args.python_search), install=args.install_python)


def _sweep_options(args: argparse.Namespace) -> service.SweepOptions:
    thresholds = getattr(args, "cache_thresholds", None)
    return service.SweepOptions(**_measure_options(args), all_runs=getattr(args, "all_runs", False),
                                cache_thresholds=ThresholdMode(thresholds) if thresholds else None,
                                resume=getattr(args, "resume", None), argv=args.words)


def _progress(args: argparse.Namespace) -> ConsoleProgress:
    return ConsoleProgress(quiet=args.quiet)


# ---- commands ------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    return _show_sweep(service.run(args.config, _sweep_options(args), _progress(args)))


def cmd_check(args: argparse.Namespace) -> int:
    if (args.script is None) == (args.module is None):
        raise UserError("check: name a script or -m MODULE (one of them)")
    config = service.check_config(args.script, tuple(args.versions or ()), Platform(args.platform),
                                  args.device_count, args.runs, args.timeout,
                                  service.ScriptRun(module=args.module, args=tuple(args.script_args),
                                                    env=_env_pairs(args.env), cwd=args.cwd,
                                                    with_requirements=tuple(args.with_requirements),
                                                    requirements_files=tuple(args.requirements_files)))
    return _show_sweep(service.sweep(config, _sweep_options(args), _progress(args)))


def _env_pairs(items: list[str]) -> dict[str, str]:
    """--env NAME=VALUE ... as a mapping (the config's env: validates names and values)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"--env {item!r}: expected NAME=VALUE")
        if name in out:
            raise UserError(f"--env {name}: given twice")
        out[name] = value
    return out


def cmd_versions(args: argparse.Namespace) -> int:
    """One release per line, a tab, and the Python it would run in (`cut -f1` gives the releases)."""
    resolution = service.list_versions(args.config, tuple(args.versions or ()), args.python_version,
                                       _python_options(args))
    for line in resolution.notes():
        print(f"harness: {line}", file=sys.stderr)
    for version in resolution.versions:
        print(f"{version}\t{resolution.pythons[version]}")
    return ExitCode.OK


def cmd_report(args: argparse.Namespace) -> int:
    path = service.report(args.results)
    if args.show:
        print(path.read_text(), end="")
    print(f"report: {path}")
    return ExitCode.OK


def cmd_nightly(args: argparse.Namespace) -> int:
    jax_ref = service.JaxRef(args.jax_repo, args.ref) if args.jax_repo is not None else None
    found = service.nightly(args.config, _sweep_options(args), args.baseline, args.config_versions,
                            _progress(args), jax_ref)
    code = _show_sweep(found.sweep)
    if code != ExitCode.OK:
        return code
    print()
    return _show_changes(found.changes, args.baseline)


def cmd_compare(args: argparse.Namespace) -> int:
    return _show_changes(service.compare_folders(args.results, args.baseline), args.baseline)


def cmd_merge(args: argparse.Namespace) -> int:
    merged = service.merge(args.results, args.out, shlex.join(["harness", *args.words]))
    print(render(merged.cells))
    print()
    print(summary_line(merged.cells))
    print(f"results: {merged.results_file}")
    return ExitCode.OK


def cmd_bisect(args: argparse.Namespace) -> int:
    options = service.BisectOptions(**_measure_options(args), good=args.good, bad=args.bad,
                                    jax_repo=args.jax_repo, fresh=args.fresh)
    found = service.bisect(args.config, options, _progress(args))
    if found.status == RunStatus.INTERRUPTED:
        print(f"\n{interrupted_how()}: {found.points} point(s) recorded in {found.state_path}\n"
              f"resume with: {found.command}", file=sys.stderr)
        return interrupted_exit_code()
    print(f"results: {found.results_file} (report: {found.report_file})", file=sys.stderr)
    print(found.text)  # ends with the line that reproduces it, as `run` ends with its summary
    # An endpoint that contradicts its flag (--good reproduces, --bad is clean) is the user's to fix.
    return ExitCode.OK if found.status == RunStatus.COMPLETE else ExitCode.BAD_INPUT


def cmd_submit(args: argparse.Namespace) -> int:
    options = service.SubmitOptions(**_measure_options(args), shards=args.shards, all_runs=args.all_runs,
                                    partition=args.partition, cpus_per_task=args.cpus_per_task, time=args.time,
                                    sbatch_args=tuple(args.sbatch_arg), only_shards=tuple(args.only_shards),
                                    argv=args.words)
    found = service.submit(args.config, options, dry_run=args.dry_run, progress=ConsoleProgress())
    if found.submitted is None:
        print(f"# {SHARD_SCRIPT}\n{found.jobs.shard_script()}\n# {MERGE_SCRIPT}\n{found.jobs.merge_script()}")
        print(f"(dry run: nothing submitted; the folder would be {found.jobs.sweep_dir})", file=sys.stderr)
        return ExitCode.OK
    done = found.submitted
    print(f"shards: job {done.array_job} (array tasks {','.join(map(str, done.shards))} of {args.shards})")
    print(f"merge: job {done.merge_job} (after the shards, however they end)")
    print(f"folder: {done.sweep_dir}")
    if not args.wait:
        return ExitCode.OK
    try:
        waited = service.wait_submission(found, _progress(args))
    except KeyboardInterrupt:
        print(f"\n{interrupted_how()}: stopped waiting; the jobs go on (cancel them with: "
              f"scancel {done.array_job} {done.merge_job})", file=sys.stderr)
        return interrupted_exit_code()
    if waited.merged is None:
        print(f"the merge job left no results: see {done.sweep_dir / LOG_FOLDER}", file=sys.stderr)
        return ExitCode.FAILURE
    merged = waited.merged
    print(f"results: {merged.results_file} (report: {merged.folder / REPORT_FILE})", file=sys.stderr)
    print(render(merged.cells))
    print()
    print(summary_line(merged.cells))  # last, as for run
    if merged.complete:
        return ExitCode.OK
    print(f"{merged.status}" + (f"; re-submit with: {waited.resubmit_command}" if waited.resubmit_command else ""),
          file=sys.stderr)
    return ExitCode.FAILURE


# ---- showing outcomes ----------------------------------------------------------------------------

def _show_sweep(swept: service.SweepOutcome) -> int:
    if swept.status == RunStatus.INTERRUPTED:
        print(f"\n{interrupted_how()}: {len(swept.cells)} cell(s) kept in {swept.results_file}\n"
              f"resume with: {swept.resume_command}", file=sys.stderr)
        return interrupted_exit_code()
    print(f"results: {swept.results_file} (report: {swept.folder / REPORT_FILE})", file=sys.stderr)
    print(render(swept.cells))
    print()
    print(summary_line(swept.cells))  # last, so `| tail -1` gives the answer
    return ExitCode.OK


def _show_changes(changes: list[CellChange], baseline: Path) -> int:
    print(f"compared with {baseline}:")
    print(render_changes(changes))
    return exit_code(changes)


if __name__ == "__main__":
    sys.exit(main())
