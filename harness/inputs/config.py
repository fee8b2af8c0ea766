"""Sweep configuration: YAML in, validated frozen data out. Pure: no network, no processes.

Every error names the file and the key, so a user can fix it in one go.
"""

from __future__ import annotations

import math
import sys
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from typing import Annotated, Any

import msgspec
import msgspec.structs
from msgspec import Meta

import yaml

from harness.inputs.dependencies import (Requirements, parse_requirements, read_requirements_file, requirements_file_problem,
                                  script_requirements)
from harness.core.confidence import CONFIG_RUNS
from harness.core.errors import ConfigError
from harness.core.platforms import describe
from harness.core.factors import Factor, parse_factors
from harness.core.model import Mesh
from harness.core.kinds import Platform, ThresholdMode
from harness.core.records import read_error
from harness.core.runs import variable_name_problem
from harness.core.files import CONFIG_SUFFIXES, shipped_configs
from harness.inputs.config_problems import short, struct_problem
from harness.inputs.config_yaml import MAX_TEXT, read_text, read_yaml
from harness.inputs.pythons import AUTO, PythonVersion
from harness.inside.repros import builtin_path
from harness.inputs.versions import check_syntax

DEFAULT_TIMEOUT_S = 300.0
MAX_RUNS = 10_000  # far past any useful confidence; a larger number is a typo
MAX_DEVICES = 4096
DEFAULT_DEVICES = 8  # cpu's simulated devices when none are given (an accelerator's: the host's)
MAX_PROCESSES = 64  # processes of one multi-process job on this machine
MAX_NAME = 240  # characters in a config's name; a folder made from it is shortened to fit (files.fitting_name)
# Characters that would let a config string change what a pasted "Reproduce with" command does, or
# how a terminal shows it: C0/C1 controls (newline, escape...), line/paragraph separators and the
# bidirectional overrides.
_CONTROL_CATEGORIES = {"Cc", "Zl", "Zp"}
_BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
_NOT_BLANK = r"\S"


# The config's `source` when `harness check` made it from a script (no config file).
CHECK_SOURCE = "harness check"


@dataclass(frozen=True)
class Repro:
    """A built-in repro (by name), a user's script (by path), or a user's module run as `python -m`
    (`module`; `path` is its file, found in the working folder, or the working folder itself for a module
    installed in the release's environment, such as pytest)."""

    name: str
    path: Path
    builtin: bool
    module: str | None = None

    @property
    def takes_mesh(self) -> bool:
        return self.builtin


@dataclass(frozen=True)
class Config:
    name: str
    repro: Repro
    jax_versions: tuple[str, ...]  # exact versions and/or specifiers, as written
    platform: Platform = Platform.CPU
    device_count: int = DEFAULT_DEVICES
    meshes: tuple[Mesh, ...] = ()
    runs: int = CONFIG_RUNS
    timeout_s: float = DEFAULT_TIMEOUT_S
    docker: dict[str, Any] = field(default_factory=dict)
    source: str = "<config>"
    python: PythonVersion | None = None  # None: auto, chosen per release (harness/inputs/pythons.py)
    # The harness's zero thresholds (every module cached, so measured), or the script's own / JAX's defaults.
    cache_thresholds: ThresholdMode = ThresholdMode.HARNESS
    # How the script's author runs it: its arguments, environment additions, working folder (None: the
    # script's folder).
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None
    # The script's own dependencies (inline metadata, requirements, requirements_file), installed
    # with each release's jax as of its date.
    requirements: Requirements = Requirements()
    # Each run one job of this many processes on this machine, the devices split between them.
    processes: int = 1
    # --vary: environment factors each cell also runs under (harness/core/factors.py); none by default.
    vary: tuple[Factor, ...] = ()
    # harness check: one run more through another path to each cell's folder, said beside the verdict
    # (harness/verdicts/factor_verdicts.py's moved folder). Not a config key: results.json records it in its options.
    moved_folder: bool = False
    # No device count was given (nor a mesh that says it): on an accelerator the host's devices decide it when the
    # measurement opens (with_device_count); until then device_count is the default, as on cpu.
    host_devices: bool = False

    def with_device_count(self, count: int) -> Config:
        """The config with `count` devices each run, its default mesh (a built-in repro's) resized to them."""
        meshes = default_meshes(count, self.repro) if self.host_devices else self.meshes
        return replace(self, device_count=count, meshes=meshes, host_devices=False)


# ---- the config file's keys, declared once: each its type, constraints and the one line an error says ------
# A field's `description` is what is wrong with a value that does not fit it ({value}: the value, shortened);
# an integer's bounds say themselves ("must be at least 2", with `extra={"why": ...}` after it).

class DockerSection(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The config's `docker:` section (docker backend): the base image, and its Python."""

    base_image: Annotated[str, Meta(min_length=1, description="must be a non-empty string")] | None = None
    python: Annotated[str, Meta(pattern=r"^3\.\d{1,2}$", description="must be a Python 3 version such as \"3.11\", "
                                "not {value}")] | None = None


class MeshSection(msgspec.Struct, forbid_unknown_fields=True):
    """One of the config's `meshes:` (built-in repros): its shape and its axes' names."""

    shape: Annotated[list[Annotated[int, Meta(ge=1)]], Meta(
        min_length=1, description="must be a non-empty list of positive integers")]
    axis_names: Annotated[list[Annotated[str, Meta(min_length=1)]], Meta(
        description="must be a list of non-empty strings")]


class ConfigFile(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True, kw_only=True):
    """A config file's keys (docs/config.md), in the order results.json records them (header.py's `recorded_config`).
    `parse_config` turns one into a `Config`: paths resolved, the repro found, the keys checked together."""

    name: Annotated[str, Meta(pattern=_NAME_PATTERN, max_length=MAX_NAME, extra={"why": "it names result folders"},
                              description="must be a word of letters, digits, '.', '_' or '-' (it names result "
                              "folders)")]
    repro: Annotated[str, Meta(pattern=_NOT_BLANK, description="must be the name of a built-in repro or a path to "
                               "a Python script")] | None = None
    jax_versions: Annotated[list[Any] | str, Meta(description="must be a list of versions or specifiers")]
    platform: Annotated[Platform, Meta(description=f"must be one of {', '.join(p.value for p in Platform)}, "
                                       "not {value}")] = Platform.CPU
    # None: 8 simulated devices on cpu; on an accelerator the host's (Config.host_devices)
    device_count: Annotated[int, Meta(ge=1, le=MAX_DEVICES)] | None = None
    meshes: Annotated[Annotated[list[Annotated[MeshSection, Meta(description="must be a mapping with shape and "
                                                                  "axis_names")]], Meta(min_length=1)] | None,
                      Meta(description="must be a non-empty list of {{shape, axis_names}}")] = None
    runs: Annotated[int, Meta(ge=2, le=MAX_RUNS, extra={"why": "a single run has no later run to compare"})] = CONFIG_RUNS
    timeout_s: Annotated[float, Meta(gt=0, le=sys.float_info.max,
                                     description="must be a positive, finite number of seconds")] = DEFAULT_TIMEOUT_S
    docker: Annotated[DockerSection | None, Meta(description="must be a mapping (base_image, python)")] = None
    python: Annotated[str, Meta(pattern=rf"^({AUTO}|\s*3\.\d{{1,2}}\s*)$", description="must be auto or a Python 3 "
                                "version such as \"3.12\" (quoted), not {value}")] | None = None
    requirements: Annotated[list[str], Meta(description="must be a list of requirement strings, e.g. [flax, "
                                            "\"optax>=0.2\"]")] = []
    cache_thresholds: Annotated[ThresholdMode, Meta(description=f"must be one of "
                                                    f"{', '.join(m.value for m in ThresholdMode)}, not {{value}}")
                                ] = ThresholdMode.HARNESS
    module: Annotated[str, Meta(pattern=_MODULE_PATTERN, description="must be a dotted module name such as "
                                "mypkg.train, not {value}")] | None = None
    args: Annotated[list[Annotated[str, Meta(description="an argument must be a string, not {value} (quote it)")]],
                    Meta(description="must be a list of strings (the script's command-line arguments)")] = []
    env: Annotated[dict[str, Annotated[str, Meta(description="a value must be a string, not {value} (quote it)")]],
                   Meta(description="must be a mapping of variable names to strings")] = {}
    cwd: Annotated[str, Meta(description="the working folder must be a string, not {value} (quote it)")] | None = None
    processes: Annotated[int, Meta(ge=1, le=MAX_PROCESSES)] = 1
    vary: Annotated[list[str] | str | None, Meta(description="must be a list of factor names, or all")] = None
    requirements_file: Annotated[str, Meta(pattern=_NOT_BLANK, description="must be the path of a requirements "
                                           "file")] | None = None


CONFIG_KEYS: tuple[str, ...] = ConfigFile.__struct_fields__  # every key a config file may have, in that order
KEYS = frozenset(CONFIG_KEYS)
REQUIRED = frozenset(f.name for f in msgspec.structs.fields(ConfigFile) if f.required)  # and repro or module
# The keys of results.json's `config` (harness/results/header.py's RecordedConfig), in order: the
# file's, with where it was read (`source`) after docker and requirements_file folded into requirements.
_AT_SOURCE = CONFIG_KEYS.index("python")
RECORDED_KEYS: tuple[str, ...] = (*CONFIG_KEYS[:_AT_SOURCE], "source",
                                  *(k for k in CONFIG_KEYS[_AT_SOURCE:] if k != "requirements_file"))


def read_config_file(data: Any, source: str) -> ConfigFile:
    """The YAML's mapping as a ConfigFile, or a ConfigError naming the key and what is wrong with its value."""
    try:
        return msgspec.convert(data, ConfigFile)
    except msgspec.ValidationError as exc:
        key, message = struct_problem(read_error(exc), data, ConfigFile)
        raise ConfigError(source, key, message) from None


# How a _parse_* helper names the key it rejects: parse_config's err(key, message), a ConfigError.
ErrorFor = Callable[[str, str], ConfigError]


def starter_values(repro: str, name: str, runs: int) -> dict[str, Any]:
    """The keys `harness init`'s config sets (the others are commented out), as its YAML reads."""
    return {"name": name, "repro": repro, "jax_versions": ["latest"], "platform": "cpu", "device_count": 8,
            "runs": runs, "timeout_s": DEFAULT_TIMEOUT_S}


def starter_config(repro: str, name: str, runs: int, header: str, run_line: str) -> str:
    """`harness init`'s config for a user's script (`repro`, relative to the config's folder): every key a
    script's config takes, the optional ones commented out, each with what it does (docs/config.md).
    `header` and `run_line` go into comments: a line break of theirs (YAML's NEL and U+2028 too) is a `?`."""
    return f"""\
# {_comment(header)}
# Measure it with: {_comment(run_line)}   (every key: docs/config.md)
name: {name}  # names the results folders (letters, digits, . _ -)
repro: {_yaml_text(repro)}  # the script, relative to this file (or `module: pkg.train`, run as python -m)
jax_versions: ["latest"]  # releases or PEP 440 specifiers, quoted: ["0.4.31", ">=0.6,<0.8", "latest"]
platform: cpu  # cpu (devices simulated on the CPU) | cuda | auto (whatever JAX picks)
device_count: 8  # devices each run sees
runs: {runs}  # the most fresh processes per release (at least 2): enough for a miss bound of 1e-3
timeout_s: {DEFAULT_TIMEOUT_S:g}  # seconds per run; a run past it is killed and its cell is an error
# args: ["--steps", "1"]  # the script's arguments (strings)
# env: {{MODEL_SIZE: tiny}}  # variables the script needs (not the harness's own)
# cwd: .  # the folder runs start in, relative to this file (default: the script's folder)
# requirements: [flax, "optax>=0.2"]  # what the script needs besides jax, installed as of each release's date
# requirements_file: requirements.txt  # the same from a file, relative to this file
# cache_thresholds: script  # the script's own cache thresholds (default: harness, zeros: every module cached)
# python: "3.12"  # one Python for every release (default: auto, chosen per release)
"""


def _comment(text: str) -> str:
    """`text` as the rest of one comment line: YAML ends a comment at CR, LF, NEL, U+2028 and U+2029, all
    control characters here (Cc, Zl, Zp), so a file name holding one cannot start a key of its own."""
    return "".join("?" if control_character(ch) else ch for ch in text)


def _yaml_text(text: str) -> str:
    """A string as one YAML scalar (quoted when it needs to be: a path with a space or a colon)."""
    return yaml.safe_dump(text, default_style=None, width=MAX_TEXT).removesuffix("\n...\n").strip()


def config_file(given: str | Path) -> Path:
    """The config a command names: the file at that path, or, when there is none and it is a bare name
    (`shard_map_grad`, `smoke.yaml`), the config of that name shipped with the harness (so the installed
    tool runs what the README shows, with no checkout)."""
    path = Path(given)
    if path.exists() or len(path.parts) != 1:
        return path
    return shipped_configs().get(path.stem if path.suffix in CONFIG_SUFFIXES else path.name, path)


def load_config(path: str | Path) -> Config:
    path = config_file(path)
    source = str(path)
    if not path.exists() and len(path.parts) == 1:
        raise ConfigError(source, None, "no such config file, nor a shipped config of that name (shipped: "
                                        f"{', '.join(shipped_configs())})")
    return parse_config_text(read_text(path, source), source, path.parent)


def parse_config_text(text: str, source: str, base_dir: Path) -> Config:
    """A config's text as a Config (`source` names it in errors; relative paths are from `base_dir`)."""
    return parse_config(read_yaml(text, source), source=source, base_dir=base_dir)


def parse_config(data: Any, source: str = "<config>", base_dir: Path = Path(".")) -> Config:
    """A config file's mapping as a Config: each key's type and bounds checked by ConfigFile, then the keys
    that depend on each other, the files they name and the versions' syntax. One ConfigError names the key."""
    if not isinstance(data, dict):
        raise ConfigError(source, None, "must be a YAML mapping of keys to values")
    check_text(data, source)
    given = read_config_file(data, source)
    if (given.repro is None) == (given.module is None):
        raise ConfigError(source, "repro", "name either repro (a built-in or a script) or module (run as python "
                                           "-m), not both" if given.repro is not None else "required key is missing")

    def err(key: str, message: str) -> ConfigError:
        return ConfigError(source, key, message)

    env = _parse_env(given.env, err)
    cwd = _parse_cwd(given.cwd, base_dir, err)
    if given.module is not None:
        # python -m finds a module in its working folder: by default the folder the config is read from.
        cwd = cwd or base_dir.resolve()
        repro = _parse_module(given.module, cwd, err)
    else:
        assert given.repro is not None  # one of the two (above)
        repro = _parse_repro(given.repro, base_dir, err)
    versions = _parse_versions(given.jax_versions, err)
    device_count = given.device_count
    host_devices = device_count is None and given.meshes is None
    if device_count is None:
        # An accelerator's meshes say how many devices they need; cpu's simulated devices stay 8 unless given.
        device_count = (math.prod(given.meshes[0].shape) if given.meshes and not describe(given.platform).simulated
                        else DEFAULT_DEVICES)
    meshes = _parse_meshes(given.meshes, device_count, repro, err)
    docker = {key: getattr(given.docker, key) for key in data.get("docker") or {}}
    python = None if given.python in (None, AUTO) else PythonVersion.parse(given.python)
    requirements = _parse_requirements(given, repro, base_dir, source, err)
    problem = processes_problem(given.processes, device_count, given.platform, repro)
    if problem:
        raise err("processes", problem)
    vary: tuple[Factor, ...] = ()
    if given.vary is not None:
        try:
            vary = parse_factors(given.vary)
        except ValueError as exc:
            raise err("vary", str(exc)) from None
    if vary and given.processes > 1:
        raise err("vary", VARY_WITH_PROCESSES)

    return Config(name=given.name, repro=repro, jax_versions=versions, platform=given.platform,
                  device_count=device_count, meshes=meshes, runs=given.runs, timeout_s=given.timeout_s,
                  docker=docker, source=source, python=python, cache_thresholds=given.cache_thresholds,
                  args=tuple(given.args), env=env, cwd=cwd, requirements=requirements, processes=given.processes,
                  vary=vary, host_devices=host_devices)


VARY_WITH_PROCESSES = ("cannot be combined with processes > 1 yet: a factor's run is one process (vary a "
                       "single-process cell)")


def processes_problem(processes: int, device_count: int, platform: Platform, repro: Repro) -> str | None:
    """Why a multi-process cell of this shape cannot be measured (None when it can)."""
    if processes == 1:
        return None
    if repro.builtin:
        return (f"the built-in repro {repro.name} runs in one process; a multi-process job needs a script that "
                "calls jax.distributed.initialize() (e.g. examples/multihost_pvary.py)")
    if not describe(platform).simulated:
        return "multi-process jobs run on the cpu platform only (each process its share of simulated devices)"
    if device_count % processes:
        return f"device_count {device_count} cannot be split evenly between {processes} processes"
    return None


def control_character(text: str) -> str | None:
    """The first character of `text` that must not be in a config string, as U+XXXX; else None."""
    for ch in text:
        if unicodedata.category(ch) in _CONTROL_CATEGORIES or ch in _BIDI_CONTROLS:
            return f"U+{ord(ch):04X}"
    return None


def check_text(data: Any, source: str) -> None:
    """ConfigError naming the key of the first string (key or value, at any depth) that holds a
    control character: such text reaches shell commands in reports and progress lines."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            found = control_character(value)
            if found:
                raise ConfigError(source, where or None, f"contains a control character ({found}); "
                                                         "config text must be printable")
        elif isinstance(value, dict):
            for key, item in value.items():
                path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and control_character(key):
                    raise ConfigError(source, where or None,
                                      f"a key contains a control character ({control_character(key)})")
                stack.append((path, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))


def _parse_repro(value: str, base_dir: Path, err: ErrorFor) -> Repro:
    builtin = builtin_path(value)
    if builtin is not None:
        return Repro(value, builtin, builtin=True)
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~user with no such user, or no home folder at all
        raise err("repro", f"{short(value)}: cannot expand '~' (no such user or home folder)") from None
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise err("repro", f"{short(value)} is neither a built-in repro nor an existing script ({path})")
    return Repro(path.stem, path.resolve(), builtin=False)


# The variables the harness sets for every run (process_variables.process_env, the start-up hook, the backends): a
# user's `env:` cannot override them. XLA_FLAGS and PYTHONPATH are merged instead (MERGED_VARIABLES).
# JAX_COMPILATION_CACHE_DIR is not among them: a user who sets it (`--env`) runs the program with a folder on
# purpose, and is told so; each run still gets the cell's own fresh folder in its place (the backends set it
# last), so the measurement is the same (issue 47.5).
RESERVED_VARIABLES = frozenset({
    "PYTHONHASHSEED", "PYTHONUNBUFFERED", "JAX_ENABLE_COMPILATION_CACHE",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "JAX_PLATFORMS",
    "JAX_DUMP_IR_TO", "JAX_DEBUG_LOG_MODULES", "JAX_LOGGING_LEVEL", "HARNESS_CACHE_RECORD",
    "HARNESS_CACHE_THRESHOLDS", "HARNESS_CACHE_FOLDER", "HARNESS_RECORDER", "HARNESS_CACHE_FALLBACK",
    "HARNESS_CACHE_TARGET", "HARNESS_CACHE_PUT", "HARNESS_RECORDER_KEY"})
MERGED_VARIABLES = ("XLA_FLAGS", "PYTHONPATH")
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def _parse_env(value: dict[str, str], err: ErrorFor) -> tuple[tuple[str, str], ...]:
    out = []
    for name, text in value.items():
        problem = variable_name_problem(name)
        if problem:
            raise err("env", problem)
        key = f"env.{name}"
        if name in RESERVED_VARIABLES:
            raise err(key, "is set by the harness for every run and cannot be overridden")
        if name == "XLA_FLAGS" and DEVICE_COUNT_FLAG in text:
            raise err(key, f"sets {DEVICE_COUNT_FLAG}, which the harness sets from device_count "
                           "(use device_count / --device-count); other flags are merged with it")
        out.append((name, text))
    return tuple(out)


def _parse_cwd(value: str | None, base_dir: Path, err: ErrorFor) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    path = (path if path.is_absolute() else base_dir / path).resolve()
    if not path.is_dir():
        raise err("cwd", f"{value!r} is not a folder ({path})")
    return path


def _parse_module(value: str, cwd: Path, err: ErrorFor) -> Repro:
    relative = Path(*value.split("."))
    for candidate in (cwd / relative.with_suffix(".py"), cwd / relative / "__main__.py"):
        if candidate.is_file():
            return Repro(value, candidate.resolve(), builtin=False, module=value)
    if (cwd / relative).is_dir():
        raise err("module", f"{value} in the working folder {cwd} is a package without __main__.py: python -m "
                            "cannot run it")
    # Not in the working folder: one installed in the release's environment (pytest, a package --with installs),
    # which exists only once the environment is made; a run that finds none says so (run_logs.missing_module).
    return Repro(value, cwd, builtin=False, module=value)


def _parse_requirements(given: ConfigFile, repro: Repro, base_dir: Path, source: str, err: ErrorFor) -> Requirements:
    """The config's `requirements` and `requirements_file`, and the script's inline metadata (PEP 723).
    A bad string is a UserError naming the file, the key or the script, and the string."""
    found = parse_requirements(given.requirements, f"{source}: requirements")
    file = given.requirements_file
    if file is not None:
        path = Path(file).expanduser()
        path = path if path.is_absolute() else base_dir / path
        if problem := requirements_file_problem(path):
            raise err("requirements_file", f"{problem}: {path}")
        found += read_requirements_file(path, f"{source}: requirements_file")
    if not repro.builtin and repro.module is None:  # a script's own metadata (uv reads scripts only)
        found += script_requirements(repro.path)
    return found


def _parse_versions(value: list[Any] | str, err: ErrorFor) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not value:
        raise err("jax_versions", "is empty: name at least one version or specifier")
    out = []
    for item in value:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            raise err("jax_versions", f"{short(item)} is a number: quote versions, e.g. \"0.4.30\"")
        if not isinstance(item, str) or not item.strip():
            raise err("jax_versions", f"{short(item)} is not a version or specifier")
        out.append(item.strip())
    # Syntax is checked here; matching against the index happens in versions.resolve.
    for item in out:
        problem = check_syntax(item)
        if problem:
            raise err("jax_versions", problem)
    return tuple(out)


def default_meshes(device_count: int, repro: Repro) -> tuple[Mesh, ...]:
    """A built-in repro's mesh when the config names none: every device on its first axis."""
    return (Mesh((device_count, 1, 1, 1), ("a", "b", "c", "d")),) if repro.takes_mesh else ()


def _parse_meshes(value: list[MeshSection] | None, device_count: int, repro: Repro, err: ErrorFor) -> tuple[Mesh, ...]:
    if value is None:
        return default_meshes(device_count, repro)
    meshes = []
    for i, item in enumerate(value):
        key, shape, names = f"meshes[{i}]", item.shape, item.axis_names
        product = math.prod(shape)
        if product != device_count:
            raise err(f"{key}.shape", f"{short(shape)} has {short(product)} devices but device_count "
                                      f"is {device_count}")
        if len(names) != len(shape):
            raise err(f"{key}.axis_names", f"has {len(names)} names for a shape of {len(shape)} dimensions")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise err(f"{key}.axis_names", f"duplicate axis name {short(dup)}")
        if any("," in n for n in names):
            raise err(f"{key}.axis_names", "axis names cannot contain ','")
        meshes.append(Mesh(tuple(shape), tuple(names)))
    return tuple(meshes)
