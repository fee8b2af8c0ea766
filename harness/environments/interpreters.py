"""Find the CPython interpreters this machine can run, where Pythons live on real machines.

Looked for, in order of preference for a version: the harness's own interpreter, the paths the
user gives (`--python-search`), `python3.N` on PATH, uv's managed Pythons, and pyenv's versions
folder. Every candidate is asked for its version by running it: a pyenv shim for a version that
is not enabled (as `python3.12` is on these machines) is on PATH but fails, and is left out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Callable, Iterable, Sequence

from harness.environments.venv import find_uv
from harness.core.errors import EnvironmentUnavailable
from harness.inputs.pythons import Found, Interpreter, PythonVersion

_MINORS = range(6, 40)
_PROBE = "import sys; print(sys.implementation.name, sys.version_info[0], sys.version_info[1])"
PROBE_TIMEOUT_S = 30.0

# (path, version) of a candidate, or None when it does not run as a CPython 3.
Probe = Callable[[str], "PythonVersion | None"]


def probe(path: str) -> PythonVersion | None:
    """The CPython version `path` runs as; None when it does not run or is another Python."""
    try:
        proc = subprocess.run([path, "-c", _PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    words = proc.stdout.split()
    if proc.returncode != 0 or len(words) != 3 or words[0] != "cpython" or words[1] != "3":
        return None
    return PythonVersion(3, int(words[2]))


def own_interpreter() -> Interpreter:
    return Interpreter(PythonVersion(sys.version_info.major, sys.version_info.minor), sys.executable,
                       Found.HARNESS)


def path_candidates(path_env: str | None = None) -> list[str]:
    path_env = os.environ.get("PATH", "") if path_env is None else path_env
    found = [shutil.which(f"python3.{minor}", path=path_env) for minor in _MINORS]
    return [p for p in [*found, shutil.which("python3", path=path_env)] if p]


def pyenv_candidates(root: Path | None = None) -> list[str]:
    root = root or Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    return _in_folders(sorted((root / "versions").glob("*")))


def search_candidates(paths: Iterable[Path]) -> list[str]:
    """An interpreter file as given; a folder: its python3.N / python3 (or bin/...), or those of its
    subfolders (a versions folder like pyenv's)."""
    out: list[str] = []
    for path in paths:
        path = Path(path).expanduser()
        if path.is_file():
            out.append(str(path))
        elif path.is_dir():
            out += _in_folders([path]) or _in_folders(sorted(p for p in path.iterdir() if p.is_dir()))
    return out


def _in_folders(folders: Iterable[Path]) -> list[str]:
    out = []
    for folder in folders:
        for bin_dir in (folder / "bin", folder):
            names = [f"python3.{minor}" for minor in _MINORS] + ["python3"]
            hits = [bin_dir / n for n in names if (bin_dir / n).is_file() and os.access(bin_dir / n, os.X_OK)]
            if hits:
                out.append(str(hits[0]))
                break
    return out


def uv_candidates() -> list[str]:
    """uv's managed Pythons (`uv python list --only-installed`); none when uv is missing or fails."""
    try:
        uv = find_uv()
    except EnvironmentUnavailable:
        return []
    try:
        proc = subprocess.run([uv, "python", "list", "--only-installed", "--python-preference",
                               "only-managed", "--output-format", "json"], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, check=False)
        entries = json.loads(proc.stdout) if proc.returncode == 0 else []
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError):
        return []
    return [e["path"] for e in entries if isinstance(e, dict) and e.get("path")
            and e.get("implementation", "cpython") == "cpython"]


Sources = dict[Found, Callable[[], list[str]]]


def machine_sources(search: Sequence[Path] = ()) -> Sources:
    """Where this machine's Pythons are looked for, in order of preference."""
    return {Found.SEARCH: lambda: search_candidates(search), Found.PATH: path_candidates,
            Found.UV: uv_candidates, Found.PYENV: pyenv_candidates}


def discover(search: Sequence[Path] = (), *, sources: Sources | None = None, run: Probe = probe) -> list[Interpreter]:
    """Every distinct CPython 3 here, in order of preference (see Found); the harness's own first."""
    sources = sources if sources is not None else machine_sources(search)
    own = own_interpreter()
    seen = {os.path.realpath(own.path)}
    candidates: list[tuple[str, Found]] = []
    for found, list_them in sources.items():
        for path in list_them():
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                candidates.append((path, found))
    with ThreadPoolExecutor(max_workers=8) as pool:
        versions = list(pool.map(run, [path for path, _ in candidates]))
    return [own] + [Interpreter(version, path, found)
                    for (path, found), version in zip(candidates, versions) if version is not None]


def install_with_uv(version: PythonVersion) -> Interpreter | None:
    """`uv python install X.Y` (only when the user opts in: it downloads), then its path."""
    try:
        uv = find_uv()
        subprocess.run([uv, "python", "install", str(version)], check=True, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc = subprocess.run([uv, "python", "find", "--python-preference", "only-managed", str(version)],
                              capture_output=True, text=True, timeout=60, check=True)
    except (EnvironmentUnavailable, OSError, subprocess.SubprocessError):
        return None
    path = proc.stdout.strip()
    return Interpreter(version, path, Found.UV) if path and probe(path) == version else None
