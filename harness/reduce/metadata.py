"""The script's inline metadata (PEP 723) block, put back on the reduced program less what it no longer needs
(pure)."""

from __future__ import annotations

import ast
import re

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from harness.inputs.dependencies import JAX_OWN
from harness.reduce.passes import imported_packages

# PEP 723's own regular expression for an inline metadata block.
_METADATA_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def metadata_block(source: str, reduced: str | None = None) -> str:
    """The script's inline metadata (PEP 723) block, to put back on the reduced program; with `reduced`, less
    the dependencies the reduced program no longer imports (unused)."""
    match = next((m for m in _METADATA_RE.finditer(source) if m.group("type") == "script"), None)
    if match is None:
        return ""
    return (match.group(0) if reduced is None else _without_unused(match, source, reduced)) + "\n"


def _top_imports(source: str) -> set[str]:
    """The canonical names of the top-level modules `source` imports (not relative ones)."""
    return {canonicalize_name(n) for n in imported_packages(ast.walk(ast.parse(source)))}


def _without_unused(block: re.Match[str], source: str, reduced: str) -> str:
    """The block with a dependency left out where its name is a module the original imports and the reduced
    program does not (`flax==0.8.3` once no `import flax` is left). What no import of the original names (a
    distribution whose module is named otherwise, a plugin) and JAX's own pin stay: a dependency kept for
    nothing costs an install, one dropped wrongly breaks `uv run reduced.py`."""
    unused = _top_imports(source) - _top_imports(reduced) - JAX_OWN
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
