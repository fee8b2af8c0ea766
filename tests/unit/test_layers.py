"""The layering of harness/ (docs/architecture.md), checked by import-linter against the contracts in
pyproject.toml, and no harness import hidden inside a function (ruff's PLC0415)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}  # this tree's harness, not the installed one
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True)


def test_imports_only_go_down_the_layers():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The contract is not vacuous: the core importing the CLI fails it, naming the import."""
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "harness" / "core" / "model.py", "a") as f:
        f.write("\nfrom harness.cli.commands import main  # noqa: E402, F401\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "harness.core.model -> harness.cli.commands" in proc.stdout


def test_no_import_inside_a_function():
    """An import inside a function hides a cycle from the contract; a third-party one may stay lazy
    with a comment saying why (and `# noqa: PLC0415`)."""
    proc = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "--select", "PLC0415",
                           "--output-format", "concise", "harness"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_module_of_the_package_has_a_layer():
    """A module the contract does not name is not checked at all: each new one must take its place."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    named = {m.strip() for layer in contract["layers"] for m in re.split(r"[|:]", layer)}
    modules = {f"harness.{p.stem}" for p in (ROOT / "harness").glob("*.py") if p.stem not in ("__init__", "__main__")}
    packages = {f"harness.{p.parent.name}" for p in (ROOT / "harness").glob("*/__init__.py")}
    assert modules | packages <= named, f"not in any layer: {sorted((modules | packages) - named)}"


def test_every_module_of_the_service_has_a_layer():
    """The same for the service's own contract (service/option_checks.py was left out of it once)."""
    contract = next(c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
                    if c.get("containers") == ["harness.service"])
    named = {m.strip() for layer in contract["layers"] for m in layer.split("|")}
    modules = {p.stem for p in (ROOT / "harness" / "service").glob("*.py") if p.stem != "__init__"}
    assert modules <= named, f"not in any layer of the service: {sorted(modules - named)}"


def test_the_programs_run_inside_an_environment_import_nothing_from_the_harness():
    """harness/inside/ runs on the environment's interpreter, alone: a harness import there would fail in
    a container or an old Python, and is refused here first."""
    found = []
    for path in sorted((ROOT / "harness" / "inside").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n == "harness" or n.startswith("harness.")]
    assert not found, found


# The oldest Python the start-up files run on: JAX 0.4.26's, the oldest release the harness measures.
OLDEST_PYTHON = (3, 9)


def old_python_problems(source: str) -> list[str]:
    """What keeps `source` from running on OLDEST_PYTHON: syntax newer than it, or annotations (mypy reads them as
    3.11's: `X | None`) that the interpreter would evaluate, with no `from __future__ import annotations`."""
    try:
        tree = ast.parse(source, feature_version=OLDEST_PYTHON)
    except SyntaxError as exc:
        return [f"syntax newer than Python {OLDEST_PYTHON[0]}.{OLDEST_PYTHON[1]}: {exc}"]
    postponed = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                    and any(alias.name == "annotations" for alias in node.names) for node in tree.body)
    annotated = [node.lineno for node in ast.walk(tree)
                 if isinstance(node, ast.AnnAssign) or (isinstance(node, ast.arg) and node.annotation)
                 or (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns)]
    if annotated and not postponed:
        return [f"annotations evaluated at run time (line {annotated[0]}): no `from __future__ import annotations`"]
    return []


def test_the_programs_run_inside_an_environment_run_on_the_oldest_python_a_jax_release_supports():
    """harness/inside/ (the start-up hook and pytest plugin, the fork server, the seed probe, the supervisor, the
    built-in repros) runs on the environment's interpreter, which may be Python 3.9 for an old release (each package's
    __init__ aside: the harness's own): mypy checks it as Python 3.11, so what 3.9 cannot run is refused here."""
    found = []
    for path in sorted((ROOT / "harness" / "inside").rglob("*.py")):
        if path.name != "__init__.py":
            found += [f"{path.relative_to(ROOT)}: {p}" for p in old_python_problems(path.read_text())]
    assert not found, found


def test_newer_syntax_and_evaluated_annotations_are_old_python_problems():
    assert old_python_problems("match x:\n    case 1:\n        pass\n")
    assert old_python_problems("def f(x: int | None) -> None:\n    pass\n")
    assert old_python_problems("x: int | None = None\n")
    assert not old_python_problems("from __future__ import annotations\n\n\ndef f(x: int | None) -> None:\n    pass\n")
    assert not old_python_problems("def f(x):\n    return x\n")


def test_an_import_of_a_command_module_by_the_measurement_breaks_the_service_contract(tmp_path):
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / "harness" / "service" / "measurement.py", "a") as f:
        f.write("\nfrom harness.service.bisecting import bisect  # noqa: E402, F401\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "harness.service.measurement is not allowed to import harness.service.bisecting" in proc.stdout
