"""One meaning per name in harness/ (issue 64, item 3): no two classes share a name, no two modules share a name
(a package's face, its __init__.py, aside), and no module is named like a test file (pytest's test_*.py or
*_test.py). Read from the source with ast, so a new module or class that repeats a name fails here."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def repeated_classes(root: Path) -> dict[str, list[str]]:
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                places[node.name].append(f"{path.relative_to(root)}:{node.lineno}")
    return {name: where for name, where in places.items() if len(where) > 1}


def repeated_modules(root: Path) -> dict[str, list[str]]:
    places: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py":
            places[path.stem].append(str(path.relative_to(root)))
    return {name: where for name, where in places.items() if len(where) > 1}


def test_no_two_classes_of_harness_share_a_name():
    assert repeated_classes(HARNESS) == {}


def test_no_two_modules_of_harness_share_a_name():
    assert repeated_modules(HARNESS) == {}


def test_no_module_of_harness_is_named_like_a_test():
    assert [str(p.relative_to(HARNESS)) for p in HARNESS.rglob("*.py")
            if p.name.startswith("test_") or p.stem.endswith("_test")] == []


def test_a_repeated_name_is_found(tmp_path):
    """The checks can fail: two classes Stop and two modules state.py in a small tree are both reported."""
    for package in ("a", "b"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "state.py").write_text("class Stop:\n    pass\n")
    assert repeated_classes(tmp_path) == {"Stop": ["a/state.py:1", "b/state.py:1"]}
    assert repeated_modules(tmp_path) == {"state": ["a/state.py", "b/state.py"]}
