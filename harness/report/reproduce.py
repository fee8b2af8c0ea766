"""The "Reproduce with" section (pure): shell commands a JAX developer can paste, no harness needed.

The environment variables come from `process_variables.process_env`, the very function that set up each run,
so the commands cannot drift from what the harness measured.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any
from collections.abc import Callable

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.verdicts.boundaries import Boundaries, release_boundaries
from harness.evidence.program_packages import ProgramPackages, line_with_packages
from harness.inputs.config import CHECK_SOURCE, Repro, control_character
from harness.environments.requirements import jax_requirements
from harness.results.header import RecordedConfig, RecordedOptions, ResultsHeader
from harness.core.jaxlog import LOG_ENV
from harness.core.factors import Factor
from harness.core.model import NO_MESH, CellResult
from harness.core.kinds import FolderMode
from harness.inputs.option_set import SCRIPT_ARGS
from harness.inputs.options import Given, options_for
from harness.inside.repros import builtin_path
from harness.report.evidence import Seeds, key_seeds, moved_module
from harness.inputs.process_variables import process_env, repro_args

# Variables set per run (the seed) or only for the harness's own bookkeeping (JAX's debug log, which
# the harness reads for each run's keys: pasted, it would bury the listing under JAX's chatter).
_PER_RUN = ("PYTHONHASHSEED", "PYTHONUNBUFFERED", *LOG_ENV)
MAX_SEEDS = 8


def repro_for(config: RecordedConfig) -> tuple[Repro, str]:
    """The repro the config names and how to call its script in a command (repo-relative if built in)."""
    name = config.repro or ""
    builtin = builtin_path(name)
    if builtin is not None:
        return Repro(name, builtin, builtin=True), f"harness/inside/repros/{builtin.name}"
    path = Path(name)
    return Repro(path.stem, path, builtin=False), name


def shell_commands(cell: CellResult, config: RecordedConfig, distinct: Seeds | None = None,
                   options: RecordedOptions | None = None) -> str:
    """A bash block that reruns `cell` by hand with the first run's hash seed and those that brought new
    keys (`distinct`, by default read from the runs' keys); every run's seed when none are known."""
    module = moved_module(cell)
    if distinct is None and module:
        distinct = key_seeds(cell, module)
    seeds = distinct.values[:MAX_SEEDS] if distinct else []
    if not seeds:
        seeds = [r.seed for r in cell.runs][:MAX_SEEDS]
    setup, python, script, args = _setup(cell, config, seeds[0] if seeds else 1, options)
    own = script_folder(cell)
    listed = shlex.quote(own[0]) if own else '"$JAX_COMPILATION_CACHE_DIR"'
    lines = [
        *setup,
        "# a fresh process per seed: the hash seed is fixed when the interpreter starts",
        f"for seed in {' '.join(map(str, seeds))}; do",
        (f"  PYTHONHASHSEED=$seed {python} {script if script == '-m' else shlex.quote(script)}"
         f"{' ' + args if args else ''} > /dev/null"),
        "done",
        *([shell_comment(f"the script sets its own cache folder ({own[1]}): its entries go to {own[0]}, "
                         "which should be empty before the first run")] if own else []),
        f"ls -1 {listed}",
    ]
    if module and distinct and distinct.values:
        lines.append(shell_comment(f"expected: each seed after the first adds a {module}-* file "
                                   f"({len(seeds) - 1} new); when fixed, only the first seed writes any"))
    elif module:
        lines.append(shell_comment(f"expected: a seed after the first adds a {module}-* file; when fixed, "
                                   "only the first writes any"))
    return "\n".join(lines)


def seed_commands(cell: CellResult, config: RecordedConfig, options: RecordedOptions | None = None) -> str:
    """A bash block that runs the seed check's two seeds by hand: the failing one, then the passing one."""
    check = cell.seed_check
    assert check is not None
    setup, python, script, args = _setup(cell, config, check.failing.seed, options)
    call = f"{python} {script if script == '-m' else shlex.quote(script)}{' ' + args if args else ''}"
    return "\n".join([
        *setup,
        shell_comment(f"fails (run {check.failing.run} and its re-run)"),
        f"PYTHONHASHSEED={check.failing.seed} {call}",
        shell_comment(f"passes (run {check.passing.run} and its re-run)"),
        f"PYTHONHASHSEED={check.passing.seed} {call}",
    ])


def run_setup(cell: CellResult, config: RecordedConfig, seed: int,
              options: RecordedOptions | None = None) -> tuple[list[str], str, str]:
    """The lines before a run by hand, the run itself (`"$python" SCRIPT ARGS`, after `PYTHONHASHSEED=...`)
    and the cache folder to list: what --vary's commands are made of."""
    setup, python, script, args = _setup(cell, config, seed, options)
    own = script_folder(cell)
    listed = shlex.quote(own[0]) if own else '"$JAX_COMPILATION_CACHE_DIR"'
    return setup, f"{python} {script if script == '-m' else shlex.quote(script)}{' ' + args if args else ''}", listed


def _setup(cell: CellResult, config: RecordedConfig, seed: int,
           options: RecordedOptions | None = None) -> tuple[list[str], str, str, str]:
    """The lines before a cell's runs (its environment, its variables, its folder), and how a run is
    called: (lines, python, script, arguments). `options` (results.json's): the index the packages came
    from and the user's own packages (installed editable, as the harness did)."""
    repro, script = repro_for(config)
    spec = cell.spec
    env = {k: v for k, v in process_env(spec, seed, config.thresholds).items() if k not in _PER_RUN}
    commit = cell.commit.info if cell.commit else None
    jaxlib = cell.commit.jaxlib if cell.commit else None
    # A commit ran as its `jax/` folder (git archive) on the path of the jaxlib release's environment.
    venv = shlex.quote(f"jax-{commit.sha[:12]}" if commit else f"jax-{spec.jax_version}")
    requirements = jax_requirements(jaxlib or spec.jax_version, spec.platform)
    if cell.environment_facts.get("numpy"):
        # pip would take today's numpy, which an old jax may not import: pin the one that was measured.
        requirements.append(f"numpy=={cell.environment_facts['numpy']}")
    requirements += _script_requirements(cell, config)
    args = " ".join(shlex.quote(a) for a in repro_args(repro, spec))
    python = f"{venv}/bin/python"
    command = cell.command
    setup: list[str] = []
    if command is not None:
        # As the author runs it: their variables (XLA_FLAGS as merged), their folder, their arguments.
        # A folder the user gave (--env) is replaced by a fresh one, as the runs had it: a folder with
        # entries in it would serve them, and a miss would read as a hit.
        env.update((k, v) for k, v in command.env.items() if k != "JAX_COMPILATION_CACHE_DIR")
        python, setup = '"$python"', [f'python="$PWD/{venv}/bin/python"', f"cd {shlex.quote(command.cwd)}"]
        script, args = command.argv[0], " ".join(shlex.quote(a) for a in command.argv[1:])
        if command.argv[0] == "-m":
            script, args = "-m", " ".join(shlex.quote(a) for a in command.argv[1:])
    # A script that sets its own folder ran without one in its environment: so does the command.
    folder = [] if cell.cache_folder == FolderMode.HOOK else ['export JAX_COMPILATION_CACHE_DIR="$(mktemp -d)"']
    lines = [
        shell_comment(f"{cell.label if cell.commit else 'jax ' + spec.jax_version}, "
                      f"{spec.mesh.label if spec.mesh else f'user {NO_MESH}'}, "
                      f"{spec.platform} x{spec.device_count}"),
        f"python3 -m venv {venv} && {venv}/bin/pip install -q "
        + " ".join([*_index_words(options), *(shlex.quote(r) for r in requirements), *_editable_words(options)]),
        *([(f"mkdir -p {venv}/src/jax && git -C /path/to/jax archive --format=tar {shlex.quote(commit.sha + ':jax')}"
            f" | tar -x -C {venv}/src/jax"), f'export PYTHONPATH="$PWD/{venv}/src"'] if commit else []),
        *folder,
        *(f"export {shlex.quote(k)}={shlex.quote(v)}" for k, v in env.items()),  # names checked on read, quoted too
        *setup,
    ]
    return lines, python, script, args


def _index_words(options: RecordedOptions | None) -> list[str]:
    """pip's words for the index the sweep installed from (none: PyPI)."""
    if options is None:
        return []
    first = ["--index-url", shlex.quote(options.index_url)] if options.index_url else []
    return first + [w for url in options.extra_index_urls or () for w in ("--extra-index-url", shlex.quote(url))]


def _editable_words(options: RecordedOptions | None) -> list[str]:
    """pip's words for the user's own packages, installed editable with the release (as --with-editable)."""
    return [w for path in (options.editables if options else None) or () for w in ("-e", shlex.quote(path))]


def script_folder(cell: CellResult) -> tuple[str, str] | None:
    """The cache folder a user's script set for itself, and how (by hand, its entries go there)."""
    return cell.script_cache.folders[-1] if cell.script_cache and cell.script_cache.folders else None


def _script_requirements(cell: CellResult, config: RecordedConfig) -> list[str]:
    """The script's requirements pinned to the versions this cell had (as they were resolved for its
    release); the requirement as written where the cell did not record its packages."""
    installed = {canonicalize_name(n): v for n, v in (cell.environment_facts.get("distributions") or {}).items()}
    pinned = []
    for text in config.requirements or ():
        name = canonicalize_name(Requirement(text).name)
        pinned.append(f"{name}=={installed[name]}" if name in installed else text)
    return pinned


def installed_from(header: ResultsHeader, command: str) -> dict[str, Any]:
    """The options that changed what was installed (results.json's options: --index-url,
    --extra-index-url, --with-editable), as `command` takes them: a pasted line measures the same
    packages. Empty for a folder measured from PyPI alone (or written before they were recorded)."""
    options = header.options
    values: dict[str, Any] = {"index_url": options.index_url,
                              "extra_index_urls": tuple(options.extra_index_urls or ()),
                              "with_editable": tuple(Path(p) for p in options.editables or ())}
    takes = {o.dest for o in options_for(command)}
    return {k: v for k, v in values.items() if k in takes and v}


def harness_command(header: ResultsHeader, cell: CellResult, vary: tuple[Factor, ...] = ()) -> str:
    """The harness command that measures just this cell again (with these --vary factors), spelled by the
    options registry as every other command line the harness prints (harness/inputs/options.py)."""
    config = header.config
    source = config.source or "CONFIG"
    group = {"processes": cell.spec.processes} if cell.spec.is_multiprocess else {}
    varied = {"vary": vary} if vary else {}
    if cell.commit:
        return Given("nightly", {"config": Path(source), "baseline": Path("BASELINE"), "jax_repo": Path("/path/to/jax"),
                                 "ref": cell.commit.info.sha, **varied, **installed_from(header, "nightly")}).line()
    if source == CHECK_SOURCE:
        given = Given("check", {
            "script": None if config.module else Path(config.repro or "SCRIPT"), "module": config.module,
            "versions": (cell.spec.jax_version,), "device_count": cell.spec.device_count,
            "platform": cell.spec.platform, "cache_thresholds": config.cache_thresholds, **varied,
            "env": tuple(f"{name}={value}" for name, value in (config.env or {}).items()),
            "cwd": Path(config.cwd) if config.cwd else None, "with_requirements": config.requirements or (),
            SCRIPT_ARGS: config.args or (), **group, **installed_from(header, "check")})
        return given.line(always=("versions", "device_count", "platform"))
    return Given("run", {"config": Path(source), "versions": (cell.spec.jax_version,), **varied, **group,
                         **installed_from(header, "run")}).line()


def narrowing(header: ResultsHeader) -> Callable[[str, str], str]:
    """(the measured release before a gap, the one after it) -> the command that measures the releases
    between: `harness bisect CONFIG --versions '>=LOW,<=HIGH'` for a config (it tests the two ends and
    narrows the boundary between them), `harness check SCRIPT --versions '>LOW,<HIGH' ...` for a script
    (bisect takes a config), both spelled by the options registry."""
    config = header.config

    def command(low: str, high: str) -> str:
        if config.source == CHECK_SOURCE:
            return Given("check", {
                "script": None if config.module else Path(config.repro or "SCRIPT"), "module": config.module,
                "versions": (f">{low},<{high}",), "device_count": config.device_count,
                "platform": config.platform, "cache_thresholds": config.cache_thresholds,
                "env": tuple(f"{name}={value}" for name, value in (config.env or {}).items()),
                "cwd": Path(config.cwd) if config.cwd else None, "with_requirements": config.requirements or (),
                SCRIPT_ARGS: config.args or (), **installed_from(header, "check")}).line(always=("versions",))
        return Given("bisect", {"config": Path(config.source or "CONFIG"), "versions": (f">={low},<={high}",),
                                **installed_from(header, "bisect")}).line()
    return command


def summary_of(header: ResultsHeader, cells: list[CellResult], boundaries: Boundaries | None = None) -> str:
    """The boundaries' line of a sweep's cells with what its header knows (table.summary_line adds the rest):
    the releases between those measured (a boundary across unmeasured ones is told as a range) and the
    command that narrows it. `boundaries`: the cells' release_boundaries with the header's releases, when
    made already."""
    found = boundaries or release_boundaries(cells, header.releases)
    packages = ProgramPackages.of(cells, header.config.requirements or ())
    return line_with_packages(lambda also: found.line(narrowing(header), also), packages)


def shell_comment(text: str) -> str:
    """A shell comment line that stays one line: a newline in a name (from a results file written
    before config text was checked, or edited by hand) would otherwise start a command when pasted."""
    return "# " + "".join("?" if control_character(ch) else ch for ch in text)
