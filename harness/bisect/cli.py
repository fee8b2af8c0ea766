"""`harness bisect CONFIG [--good V] [--bad V] [--jax-repo PATH]`: argument parsing and wiring only."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from harness.bisect import report
from harness.bisect.bisection import Bisection
from harness.bisect.commits import GitRepo
from harness.bisect.state import BisectState, identity_key
from harness.cli import version_entries
from harness.config import load_config
from harness.environments import BackendOptions, make_backend
from harness.errors import UserError
from harness.progress import ConsoleProgress
from harness.results import ResultsWriter, host_facts, write_atomic
from harness.seeds import SeedPlanner, SeedStrategy
from harness.versions import PyPIIndex, check_syntax, resolve

EXIT_OK, EXIT_BAD_ENDPOINT, EXIT_INTERRUPTED = 0, 2, 130
REPORT_FILE = "bisect.md"


def register(subparsers, add_sweep_options) -> None:
    p = subparsers.add_parser("bisect", help="find the releases (and commits) where a regression appears "
                                             "and where it is fixed")
    p.add_argument("config", type=Path)
    p.add_argument("--good", metavar="V", help="a release known clean (default: the range's first)")
    p.add_argument("--bad", metavar="V", help="a release known to reproduce (default: found by search)")
    p.add_argument("--jax-repo", type=Path, metavar="PATH",
                   help="a git clone of jax (bare is fine): continue to the commit inside each boundary")
    p.add_argument("--fresh", action="store_true", help="forget a recorded bisection and start over")
    add_sweep_options(p)
    p.set_defaults(handler=cmd_bisect)


def resume_command(args: argparse.Namespace) -> str:
    """The command that reproduces (and resumes) this bisection, every choice spelled out."""
    words = ["harness", "bisect", str(args.config)]
    for flag, value in (("--good", args.good), ("--bad", args.bad), ("--jax-repo", args.jax_repo),
                        ("--seeds", args.seeds), ("--runs", args.runs), ("--backend", args.backend),
                        ("--out", args.out)):
        if value is not None:
            words += [flag, str(value)]
    if args.versions:
        words += ["--versions", *args.versions]
    return shlex.join(words)


def _release_range(config, args, index, python: str | None = None) -> list[str]:
    entries, source = version_entries(config, args.versions)
    entries = list(entries)
    for flag in ("--good", "--bad"):
        attr = flag[2:]
        value = getattr(args, attr)
        if value is None:
            continue
        if check_syntax(value) or any(c in value for c in "<>=!~,"):
            raise UserError(f"{flag}: {value!r} must be one release, e.g. 0.4.26")
        # Resolved on its own so that an unknown release is blamed on the flag, not on the config;
        # kept as the index spells it (0.4.26, not 0.4.26.0).
        release = resolve((value,), index, source=flag, python=python)[0]
        setattr(args, attr, release)
        entries.append(release)
    versions = resolve(tuple(entries), index, source=source, python=python)
    if args.good and args.bad and versions.index(args.good) >= versions.index(args.bad):
        raise UserError(f"--good {args.good} must be an earlier release than --bad {args.bad}")
    return versions


def cmd_bisect(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if args.backend == "local":
        raise UserError("--backend local has one JAX version; bisection needs venv or docker")
    if args.jax_repo is not None and args.backend not in ("venv",):
        # A commit's jax/ goes on PYTHONPATH as a host path, which a container cannot see.
        raise UserError("--jax-repo: commit bisection runs with --backend venv")
    if getattr(args, "shard", None):
        raise UserError("--shard: a bisection cannot be split; each step depends on the last")
    # Checked now, not after the release bisection has been measured and written.
    repo = GitRepo(args.jax_repo) if args.jax_repo is not None else None
    progress = ConsoleProgress(quiet=args.quiet)
    index = PyPIIndex()
    choice = make_backend(args.backend, BackendOptions(rebuild=args.rebuild, python=args.python,
                                                       docker=config.docker,
                                                       release_date=index.release_date))
    # Releases with no wheels for the environments' Python are left out, as `harness run` does.
    versions = _release_range(config, args, index, python=choice.backend.target_python)
    if repo is not None:  # a git repository, but is it jax's, with its release tags?
        repo.release_commit(args.good or versions[0])
    choice.backend.check(config.platform, progress.say)  # no Docker daemon: say so before writing
    command = resume_command(args)
    identity = {"config": config.to_json(), "versions": versions, "good": args.good, "bad": args.bad,
                "seeds": args.seeds, "runs": args.runs, "backend": choice.backend.name,
                "jax_repo": str(repo.path.resolve()) if repo else None}
    folder = args.out / f"bisect-{config.name}-{identity_key(identity)}"
    folder.mkdir(parents=True, exist_ok=True)
    state = BisectState.open(folder, identity, fresh=args.fresh)
    if state.resumed:
        progress.say(f"resuming: {len(state.points)} point(s) recorded in {state.path}")
    writer = ResultsWriter(folder, {
        "command": command, "config": config.to_json(), "versions": versions,
        "options": {"runs": args.runs, "jobs": args.jobs, "backend": choice.backend.name,
                    "backend_reason": choice.why, "seeds": args.seeds, "good": args.good, "bad": args.bad,
                    "jax_repo": identity["jax_repo"]},
        "host": host_facts(choice.backend.describe()),
    })
    progress.say(f"backend: {choice.backend.name}; releases {versions[0]}..{versions[-1]} "
                 f"({len(versions)}); seeds: {args.seeds}; results: {folder}")
    planner = SeedPlanner(SeedStrategy(args.seeds), runs=args.runs)
    bisection = Bisection(config, versions, choice.backend, planner, state, writer, progress, jobs=args.jobs,
                          good=args.good, bad=args.bad, jax_repo=repo)
    try:
        outcome = bisection.run()
        writer.finish("complete" if outcome.releases.problem is None else "problem")
        text = report.text(outcome, command)
        write_atomic(folder / REPORT_FILE, text + "\n")
    except KeyboardInterrupt:
        writer.finish("interrupted")
        print(f"\ninterrupted: {len(state.points)} point(s) recorded in {state.path}\n"
              f"resume with: {command}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:
        # Otherwise results.json says `running` forever; the CLI reports the error itself.
        writer.finish("failed")
        raise
    print(f"results: {writer.path} (report: {folder / REPORT_FILE})", file=sys.stderr)
    print(text)  # ends with the line that reproduces it, as `run` ends with its summary
    # An endpoint that contradicts its flag (--good reproduces, --bad is clean) is the user's to fix.
    return EXIT_OK if outcome.releases.problem is None else EXIT_BAD_ENDPOINT
