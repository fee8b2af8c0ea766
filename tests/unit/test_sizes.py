"""Rooms a reader can hold in mind: no module of harness/ longer than pyproject.toml's
[tool.jax-cache-harness.limits] module_lines, and no function longer than function_lines (from `def` to its last
line, as ast counts it). The failure names each offender with path:line and its length."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Offenders allowed by name ("path" for a module, "path:name" for a function): none today. An entry needs its
# reason beside it, and leaves as soon as it is within the limits (test_the_allow_list_holds_only_offenders).
ALLOWED: frozenset[str] = frozenset()


def limits() -> dict[str, int]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["jax-cache-harness"]["limits"]


def offenders(root: Path, module_lines: int, function_lines: int) -> list[tuple[str, str]]:
    """(allow-list key, "path:line is N lines (limit L)") for each module and function over its limit."""
    found = []
    for path in sorted((root / "harness").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text()
        lines = len(source.splitlines())
        if lines > module_lines:
            found.append((rel, f"{rel}:1 module is {lines} lines (limit {module_lines})"))
        for node in ast.walk(ast.parse(source, filename=rel)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > function_lines:
                    found.append((f"{rel}:{node.name}",
                                  f"{rel}:{node.lineno} {node.name} is {length} lines (limit {function_lines})"))
    return found


def test_the_limits_live_in_pyproject():
    assert limits() == {"module_lines": 600, "function_lines": 60}


def test_no_module_or_function_over_its_limit():
    found = [message for key, message in offenders(ROOT, **limits()) if key not in ALLOWED]
    assert not found, "too long:\n" + "\n".join(found)


def test_the_allow_list_holds_only_offenders():
    """An entry that no longer offends must leave the list, or the list would let it grow back unseen."""
    stale = ALLOWED - {key for key, _ in offenders(ROOT, **limits())}
    assert not stale, f"no longer over the limit, remove from ALLOWED: {sorted(stale)}"


def test_a_module_or_function_past_the_limit_is_named(tmp_path):
    """The check is not vacuous: a module of 7 lines and a function of 4 fail limits of 6 and 3, each named with
    its path, line and length."""
    package = tmp_path / "harness" / "room"
    package.mkdir(parents=True)
    (package / "big.py").write_text("x = 1\n\n\ndef f():\n    a = 1\n    b = 2\n    return a + b\n")
    assert [m for _, m in offenders(tmp_path, module_lines=6, function_lines=3)] == [
        "harness/room/big.py:1 module is 7 lines (limit 6)",
        "harness/room/big.py:4 f is 4 lines (limit 3)",
    ]
    assert offenders(tmp_path, module_lines=7, function_lines=4) == []
