"""The script's inline metadata (PEP 723) block, put back on the reduced program less what it no longer needs (pure),
and what a release's environment installs, asked of its interpreter once (`installed_python_modules`)."""

from __future__ import annotations

import ast
import json
import re
import subprocess

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from harness.inputs.dependencies import JAX_OWN
from harness.reduce.measure_candidate import PreparedRelease
from harness.reduce.passes import imported_packages

# PEP 723's own regular expression for an inline metadata block.
_METADATA_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def metadata_block(source: str, reduced: str | None = None, modules: dict[str, frozenset[str]] | None = None) -> str:
    """The script's inline metadata (PEP 723) block, to put back on the reduced program; with `reduced`, less
    the dependencies the reduced program no longer imports (unused); `modules`: each installed distribution's
    top-level modules (canonical names), as the release's environment has them."""
    match = next((m for m in _METADATA_RE.finditer(source) if m.group("type") == "script"), None)
    if match is None:
        return ""
    return (match.group(0) if reduced is None else _without_unused(match, source, reduced, modules or {})) + "\n"


def _top_imports(source: str) -> set[str]:
    """The canonical names of the top-level modules `source` imports (not relative ones)."""
    return {canonicalize_name(n) for n in imported_packages(ast.walk(ast.parse(source)))}


def _without_unused(block: re.Match[str], source: str, reduced: str, modules: dict[str, frozenset[str]]) -> str:
    """The block with a dependency left out where its name is a module the original imports and the reduced
    program does not (`flax==0.8.3` once no `import flax` is left), or where the environment says which modules
    it installs and the reduced program imports none of them (`scikit-learn`, whose module is `sklearn`). What
    neither tells (a distribution the environment does not have) and JAX's own pin stay: a dependency kept for
    nothing costs an install, one dropped wrongly breaks `uv run reduced.py`."""
    imported = _top_imports(reduced)
    unused = _top_imports(source) - imported - JAX_OWN
    unused |= {name for name, provided in modules.items() if provided and not provided & imported} - JAX_OWN
    lines = block.group("content").splitlines()
    try:
        document = tomlkit.parse("\n".join(line[2:] if line.startswith("# ") else line[1:] for line in lines))
    except tomlkit.exceptions.ParseError:
        return block.group(0)
    dependencies = document.get("dependencies")
    if not isinstance(dependencies, list):
        return block.group(0)
    for i in reversed(range(len(dependencies))):
        try:
            name = canonicalize_name(Requirement(str(dependencies[i])).name)
        except InvalidRequirement:
            continue
        if name in unused:
            del dependencies[i]
    content = "".join(f"# {line}\n" if line else "#\n" for line in tomlkit.dumps(document).splitlines())
    return f"# /// {block.group('type')}\n{content}# ///"


# Each installed distribution's top-level modules, asked of a release's interpreter (Python 3.10+'s
# packages_distributions; an older one prints nothing).
_PYTHON_MODULES_OF = ("import importlib.metadata as m, json\nfound = {}\n"
               "for module, names in getattr(m, 'packages_distributions', dict)().items():\n"
               "    for name in names:\n        found.setdefault(name, []).append(module)\nprint(json.dumps(found))")


def installed_python_modules(release: PreparedRelease | None) -> dict[str, frozenset[str]]:
    """What `release`'s environment installs, by distribution (canonical names), where its interpreter says (a venv's;
    not a container's): which PEP 723 dependencies the reduced program no longer needs."""
    python = getattr(release.environment, "python", None) if release is not None else None
    if python is None:
        return {}
    try:
        done = subprocess.run([str(python), "-I", "-c", _PYTHON_MODULES_OF], check=False, capture_output=True,
                              text=True, timeout=60)
        found = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {canonicalize_name(str(name)): frozenset(canonicalize_name(str(m)) for m in modules)
            for name, modules in found.items() if isinstance(modules, list)}
