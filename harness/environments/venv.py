"""The venv backend: a uv virtualenv per JAX version, reused across sweeps."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any
from collections.abc import Callable

from harness.inputs.dependencies import Requirements, Sources
from harness.inputs.index_urls import redacted
from harness.environments.base import Backend, Say, _quiet
from harness.environments.locking import held
from harness.environments.factor_runs import CannotVary
from harness.environments.process import (InterpreterEnvironment, clean_environment, list_distributions,
                                           log_tail, probe_interpreter)
from harness.environments.gpus import driver_cuda_for
from harness.environments.requirements import exclude_newer, find_links_for, jax_requirements, resolver_reason
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.factors import Factor
from harness.core.kinds import Platform
from harness.core.platforms import describe
from harness.inputs.pythons import NoPython, PythonChoice, PythonChooser, PythonVersion
from harness.inside.startup import environments_root

# Written last, after a successful install and import check: a folder without it is half-made.
READY_MARKER = "harness-ready.json"
# --vary prefix: the venv's copy at another path, beside it.
PREFIX_COPY_SUFFIX = "-elsewhere"

DEFAULT_ROOT = environments_root()


# A sweep prepares environments on several threads; uv's finder reads sysconfig, whose first
# initialisation is not thread-safe (a concurrent first call sees a half-filled table).
_FIND_UV_LOCK = threading.Lock()


def find_uv() -> str:
    """uv ships as a Python package (a dependency of the harness); fall back to one on PATH."""
    with _FIND_UV_LOCK:
        return _find_uv()


def _find_uv() -> str:
    try:
        # Imported here, not at the top: without the uv package the harness still works with uv on PATH.
        from uv import find_uv_bin  # noqa: PLC0415

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if not found:
            raise EnvironmentUnavailable("uv is not installed (pip install uv)") from None
        return found


class VenvEnvironment(InterpreterEnvironment):
    def __init__(self, path: Path, jax_version: str, facts: dict[str, Any]):
        self.path, self.jax_version, self.facts = path, jax_version, facts
        self.python: Path = path / "bin" / "python"

    def describe(self) -> dict[str, Any]:
        return {"backend": "venv", "path": str(self.path), **self.facts}

    def cannot_vary(self, factor: Factor) -> str:
        return "" if factor == Factor.PREFIX else super().cannot_vary(factor)

    def prefix_copy(self) -> Path:
        """This venv copied (hard links where it can) to another path, made once and reused: the same
        packages at another prefix. Its interpreter."""
        copy = self.path.with_name(self.path.name + PREFIX_COPY_SUFFIX)
        made_from = (self.path / READY_MARKER).read_text()  # a rebuilt venv makes a new copy
        stamp = copy / ".copied-from"
        with held(copy.parent / f".{copy.name}.lock", f"the copy {copy.name}", _quiet):
            if not stamp.exists() or stamp.read_text() != made_from:
                tmp = copy.with_name(copy.name + ".tmp")
                for leftover in (tmp, copy):
                    shutil.rmtree(leftover, ignore_errors=True)
                try:
                    shutil.copytree(self.path, tmp, symlinks=True, copy_function=os.link)
                except OSError:  # another file system: copies
                    shutil.rmtree(tmp, ignore_errors=True)
                    shutil.copytree(self.path, tmp, symlinks=True)
                (tmp / stamp.name).write_text(made_from)
                tmp.rename(copy)
        return copy / "bin" / "python"

    def compression_folder(self, work: Path) -> tuple[Path, str]:
        return compression_folder(self.python, work)


def compression_folder(python: Path | str, work: Path) -> tuple[Path, str]:
    """A folder that, first on PYTHONPATH, flips whether zstandard imports for `python`: a stand-in
    that refuses to import when it has zstandard, else zstandard installed there (uv, from the index)."""
    folder = work / "compression"
    folder.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run([str(python), "-c", "import zstandard"], capture_output=True,
                           env=clean_environment({}), cwd=folder, timeout=120, check=False)
    if probe.returncode == 0:
        (folder / "zstandard").mkdir(exist_ok=True)
        (folder / "zstandard" / "__init__.py").write_text(
            'raise ImportError("zstandard hidden by the harness (--vary compression)")\n')
        return folder, "zstandard hidden (the environment has it)"
    log = work / "compression-install.log"
    try:
        uv = find_uv()
    except EnvironmentUnavailable as exc:
        raise CannotVary(f"zstandard cannot be installed: {exc}") from None
    with open(log, "w") as out:
        done = subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), "--target", str(folder),
                               "zstandard"], stdout=out, stderr=subprocess.STDOUT, env=clean_environment({}), check=False)
    if done.returncode != 0:
        raise CannotVary(f"zstandard could not be installed for {python} ({log_tail(log, 300).strip()})")
    return folder, "zstandard importable (installed beside the environment, which has none)"


def own_python_only() -> PythonChooser:
    """The harness's own interpreter for every release (no index consulted): tests and benchmarks."""
    return PythonChooser(PythonVersion(sys.version_info.major, sys.version_info.minor), lambda _version: None,
                         own_interpreter=sys.executable)


class VenvBackend(Backend):
    """`uv venv` + `uv pip install jax==V jaxlib==V [the script's requirements]`, everything but jax
    and jaxlib resolved as of V's release date, in the Python chosen for V (see harness/inputs/pythons.py)."""

    name = "venv"

    def __init__(self, root: Path = DEFAULT_ROOT, pythons: PythonChooser | None = None,
                 release_date: Callable[[str], datetime | None] | None = None, rebuild: bool = False,
                 requirements: Requirements = Requirements(), sources: Sources = Sources()):
        self.root, self.rebuild = Path(root), rebuild
        self.sources = sources
        self.pythons: PythonChooser = pythons or own_python_only()
        self._release_date = release_date
        self.requirements = requirements

    def env_path(self, jax_version: str, platform: Platform, python: PythonVersion) -> Path:
        """Keyed by version, flavour, Python and the script's requirement set: the name venvs had
        before the choice existed, plus `-req<digest>` when there are requirements (another set is
        another environment; none keeps the plain name and its reuse), plus `-src<digest>` when packages
        come from another index or the user's own folders (--index-url, --with-editable)."""
        flavour = describe(platform).install.flavour
        extra = f"-req{self.requirements.digest}" if self.requirements else ""
        extra += f"-src{self.sources.digest}" if self.sources else ""
        return self.root / f"jax-{jax_version}-{flavour}-py{python}{extra}"

    def _cutoff(self, jax_version: str) -> str | None:
        """uv's --exclude-newer for the release (None: no release date known)."""
        return exclude_newer(self._release_date(jax_version)) if self._release_date else None

    def _known_cutoff(self, jax_version: str) -> str | None:
        """The cutoff a ready venv is checked against: None where the index cannot say (offline, no copy of its
        page): a venv that is there is then reused as it is, as before the check."""
        try:
            return self._cutoff(jax_version)
        except UserError:
            return None

    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> VenvEnvironment:
        try:
            choice = self.pythons.choose(jax_version)
        except NoPython as exc:
            raise EnvironmentUnavailable(str(exc)) from None
        say(f"jax {jax_version}: {choice}")
        try:
            return self._prepare(jax_version, platform, choice, say)
        except OSError as exc:  # an unwritable HARNESS_ENV_DIR, a full disk: this cell is `error`
            raise EnvironmentUnavailable(f"cannot make the venv for jax {jax_version}: {exc}") from None

    def _prepare(self, jax_version: str, platform: Platform, choice: PythonChoice, say: Say) -> VenvEnvironment:
        path = self.env_path(jax_version, platform, choice.version)
        # Another sweep making this venv right now: wait for it, then reuse what it made.
        with held(path.parent / f".{path.name}.lock", f"the venv {path.name}", say):
            return self._prepare_locked(path, jax_version, platform, choice, say)

    def _reusable(self, path: Path, jax_version: str) -> tuple[dict[str, Any] | None, str]:
        """The facts of the venv at `path` when it can be reused as it is; else None and what is wrong with it."""
        marker = path / READY_MARKER
        if not marker.exists() or self.rebuild:
            return None, "half-made"
        damage = damaged(path)
        if damage:
            return None, damage
        try:
            facts = json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError):
            return None, "unreadable marker"
        damage = resolved_otherwise(facts, self._known_cutoff(jax_version))
        if damage:
            return None, damage
        if "distributions" not in facts:  # made before environments listed their contents
            facts["distributions"] = list_distributions(path / "bin" / "python", clean_environment({}))
            _write_marker(marker, facts)
        return facts, ""

    def _prepare_locked(self, path: Path, jax_version: str, platform: Platform, choice: PythonChoice,
                        say: Say) -> VenvEnvironment:
        marker = path / READY_MARKER
        chosen = {"python_choice": choice.recorded()}
        facts, damage = self._reusable(path, jax_version)
        if facts is not None:
            return VenvEnvironment(path, jax_version, {**facts, **chosen, "reused": True})
        if path.exists():
            say(f"rebuilding {path.name} ({'--rebuild' if self.rebuild else damage})")
            shutil.rmtree(path)
        say(f"creating venv for jax {jax_version} ({path})")
        path.parent.mkdir(parents=True, exist_ok=True)  # first: an unwritable folder fails fast
        uv = find_uv()
        log = path.parent / f"{path.name}.install.log"
        cmd_env = clean_environment({})
        # The interpreter found for the chosen version: uv alone would not find pyenv's Pythons,
        # and would try to download one where it cannot.
        steps = [[uv, "venv", "--quiet", "--no-python-downloads", "--python",
                  choice.interpreter or str(choice.version), str(path)]]
        # The script's requirements go in the same resolution as jax: each release gets the Flax
        # (Optax, ...) of its time that works with it, or uv says why none does. So does the user's own
        # package (--with-editable): its dependencies as of the release, its pins held against jax's.
        install = [uv, "pip", "install", "--quiet", "--python", str(path / "bin" / "python"),
                   *jax_requirements(jax_version, platform, driver_cuda_for(platform)), *self.requirements.items,
                   *self.sources.editable_args(), *self.sources.index_args()]
        for link in find_links_for(jax_version, platform):  # cuda12_pip wheels live off the index
            install += ["--find-links", link]
        newest = self._cutoff(jax_version)
        if newest:
            install += ["--exclude-newer", newest, *self.sources.undated_args()]
        steps.append(install)
        with open(log, "w") as out:
            for cmd in steps:
                out.write("$ " + " ".join(redacted(word) for word in cmd) + "\n")  # no index's token
                out.flush()
                proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=cmd_env, check=False)
                if proc.returncode != 0:
                    why = resolver_reason(log_tail(log, chars=20_000))
                    besides = [*self.requirements.items, *self.sources.editables]
                    what = f"jax {jax_version}" + (f" with {', '.join(besides)}" if besides else "")
                    raise EnvironmentUnavailable(f"could not install {what}: {why or 'see the log'} ({log})",
                                                 log_tail=log_tail(log))
        facts = probe_interpreter(path / "bin" / "python", cmd_env)
        if facts.get("jax") != jax_version:
            raise EnvironmentUnavailable(f"venv has jax {facts.get('jax')}, expected {jax_version}")
        problem = release_origin_problem(path, cmd_env)
        if problem:
            raise EnvironmentUnavailable(f"venv for jax {jax_version}: {problem}")
        facts["exclude_newer"] = newest
        if self.requirements:
            facts["requirements"] = list(self.requirements.items)
        if self.sources.index_url or self.sources.extra_index_urls:
            facts["index_urls"] = [redacted(u) for u in (self.sources.index_url, *self.sources.extra_index_urls) if u]
        if self.sources.editables:
            facts["editables"] = list(self.sources.editables)
        _write_marker(marker, facts)
        return VenvEnvironment(path, jax_version, {**facts, **chosen, "reused": False})


# Where jax and jaxlib import from, found without importing them (an editable package's finder answers too).
_ORIGINS = ("import importlib.util, json; "
            "print(json.dumps({n: getattr(importlib.util.find_spec(n), 'origin', None) for n in ('jax', 'jaxlib')}))")


def release_origin_problem(path: Path, env: dict[str, str]) -> str | None:
    """Why the venv at `path` does not import the jax and jaxlib it installed from the index (another
    package, installed editable, stands in for them: its __version__ may even say the release's), or None."""
    try:
        proc = subprocess.run([str(path / "bin" / "python"), "-c", _ORIGINS], capture_output=True, text=True,
                              env=env, timeout=120, cwd=path, check=False)
        origins = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, IndexError, ValueError) as exc:
        return f"cannot tell where jax imports from ({exc})"
    site = [p.resolve() for p in path.glob("lib/python*/site-packages")]
    for name, origin in origins.items():
        if not isinstance(origin, str) or not any(Path(origin).resolve().is_relative_to(s) for s in site):
            return f"{name} imports from {origin}, not from the release installed in the venv"
    return None


def resolved_otherwise(facts: dict[str, Any], newest: str | None) -> str:
    """Why a ready venv is not the one wanted now: its dependencies were resolved as of another date (or of none:
    made by a caller that knew no release date, with whatever numpy was newest then) than `newest`, the cutoff
    wanted now; "" when they agree, or when no date is known now (offline: what is there is the best guess)."""
    made = facts.get("exclude_newer")
    if newest is None or made == newest:
        return ""
    return (f"its dependencies were resolved {'as of ' + made if made else 'with no release date'}, "
            f"not as of {newest}")


def damaged(path: Path) -> str:
    """Why a venv that says it is ready cannot run (its interpreter gone, jax deleted), or "".
    Cheap (no process): it runs before every reuse."""
    python = path / "bin" / "python"
    if not python.exists():  # follows the link: a dangling bin/python does not exist
        return "damaged: bin/python is missing or a dangling link"
    if not os.access(python, os.X_OK):
        return "damaged: bin/python is not executable"
    if not any(path.glob("lib/python*/site-packages/jax/__init__.py")):
        return "damaged: the jax package is missing"
    return ""


def _write_marker(marker: Path, facts: dict[str, Any]) -> None:
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(facts))
    tmp.replace(marker)  # atomic: a reader never sees half a marker
