"""The rules between options, in one place (as pip's `cmdoptions.check_*`): an option allowed only with
another, or not with it, or only in a range another sets. Each `check_*` raises the UserError that names
the flags, before anything is resolved, prepared or written. What one option's value alone must be is
the parser's (harness/inputs/options.py); what an option must be against the config is measurement.py's."""

from __future__ import annotations

from pathlib import Path

from harness.core.errors import UserError
from harness.core.kinds import BackendName, Verdict
from harness.core.runs import ProgramKind
from harness.inputs.option_set import SCRIPT_ARGS
from harness.inputs.options import PROGRAM, Given, options_for
from harness.service.command_options import BisectOptions, ReduceOptions, SubmitOptions
from harness.slurm.jobs import check_time, directive_problem


def check_script_or_python_module(command: str, script: Path | None, python_module: str | None) -> None:
    """check: SCRIPT or -m MODULE, one of them."""
    if (script is None) == (python_module is None):
        raise UserError(f"{command}: name a script or -m MODULE (one of them)")


# A program named where a command takes a config or a program (bisect): a Python file, or -m MODULE.
PROGRAM_SUFFIXES = (".py",)


def names_a_program(config: Path | None, python_module: str | None) -> bool:
    """bisect: whether its CONFIG|SCRIPT argument is the user's program (a `.py` file, or -m MODULE), run as
    `harness check` runs it, rather than a config (a YAML file or a shipped config's name). One of them must
    be given, not both."""
    if (config is None) == (python_module is None):
        raise UserError("bisect: name a config, a script or -m MODULE (one of them)")
    return python_module is not None or (config is not None and config.suffix in PROGRAM_SUFFIXES)


def check_program_options_need_a_program(given: Given) -> None:
    """bisect CONFIG: the program options (--with, --env, --cwd, `-- ARGS`, ...: harness/inputs/options.py's
    PROGRAM) are a script's; a config says the same with its own keys (requirements:, env:, args:, cwd:)."""
    for opt in options_for(given.command):
        if opt.dest in PROGRAM and opt.words(given.get(opt.dest, opt.default)):
            flag = "-- ARGS" if opt.dest == SCRIPT_ARGS else max(opt.flags, key=len)
            raise UserError(f"{flag}: a script's option (harness {given.command} train.py {flag} ...); a config "
                            "says it with its own keys (requirements:, env:, args:, cwd:, device_count:, ...: "
                            "docs/config.md)")


def check_pytest(pytest: bool, module: str | None) -> None:
    """check --pytest is `-m pytest`: not with another -m."""
    if pytest and ProgramKind.of(module) is ProgramKind.MODULE:
        raise UserError(f"--pytest runs `-m pytest`: not with -m {module}")


def check_fingerprint_source(script: Path | None, module: str | None) -> None:
    """fingerprint: SCRIPT, -m MODULE or a results folder (given as SCRIPT), one of them."""
    if (script is None) == (module is None):
        raise UserError("fingerprint: name a script, -m MODULE or a results folder (one of them)")


def check_ci_outputs_need_wait(wait: bool, junit_xml: Path | None, fail_on: frozenset[Verdict]) -> None:
    """submit: --junit-xml and --fail-on are of the merged cells, read only with --wait."""
    if not wait and (junit_xml is not None or fail_on):
        flag = "--junit-xml" if junit_xml is not None else "--fail-on"
        raise UserError(f"{flag}: only with --wait (the merged cells are read only when waiting for them)")


def check_bisect(options: BisectOptions) -> None:
    if options.backend == BackendName.LOCAL:
        raise UserError("--backend local has one JAX version; bisection needs venv or docker")
    if options.jax_repo is not None and options.backend != BackendName.VENV:
        # A commit's jax/ goes on PYTHONPATH as a host path, which a container cannot see.
        raise UserError("--jax-repo: commit bisection runs with --backend venv")
    if options.shard:
        raise UserError("--shard: a bisection cannot be split; each step depends on the last")


def check_submit(options: SubmitOptions) -> None:
    if options.shard is not None:
        raise UserError("--shard: submit cuts the sweep itself; use --shards N (and --only-shards I to re-submit)")
    if options.rebuild:
        raise UserError("--rebuild: not with submit (every task would rebuild the environments it shares with "
                        "the others); remake them with `make clean-envs` or `harness run --rebuild` on one node")
    if options.time is not None and (problem := check_time(options.time)):
        raise UserError(f"--time: {problem}")
    outside = [i for i in options.only_shards if not 1 <= i <= options.shards]
    if outside:
        raise UserError(f"--only-shards {outside[0]}: shards are numbered 1 to {options.shards}")
    if options.partition is not None and not options.partition.strip():
        raise UserError("--partition: empty name")
    # Each of these becomes an #SBATCH line (or part of one) of both job scripts.
    for flag, text in [("--sbatch-arg", arg) for arg in options.sbatch_args] + [
            ("--partition", options.partition or ""), ("--out", str(options.out))]:
        if problem := directive_problem(text):
            raise UserError(f"{flag} {text!r}: {problem}")


def check_reduce(options: ReduceOptions) -> None:
    """reduce: --versions names the one release where the script reproduces; --resume a folder."""
    if not options.versions or len(options.versions) != 1:
        raise UserError("--versions: give the one release where the script reproduces (e.g. --versions 0.4.28)")
    if options.resume is not None and not options.resume.is_dir():
        raise UserError(f"--resume {options.resume}: no such folder")
