"""`plain_jax`: down to plain JAX, every value a library made replaced by a plain one (pure)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TypeGuard

from harness.reduce.passes.library import (_CallsReplaced, _library_names, _library_values, _mentions, _replaced, _root,
                                           _without_library)
from harness.reduce.passes.probe import _values_put
from harness.reduce.passes.syntax import Place, _blocks, _drop_unused, _emit, _located_pass, _skipped


def _without_library_annotations(tree: ast.Module, names: set[str]) -> None:
    """Annotations that name a library's type dropped (`-> train_state.TrainState`, `model: nn.Module = ...`):
    Python runs the program without them, and they alone would keep the library's import. A class body's are
    left (a dataclass's fields are its annotations)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None and arg.annotation is not None and _mentions(arg.annotation, names):
                    arg.annotation = None
            if node.returns is not None and _mentions(node.returns, names):
                node.returns = None
    for block in _blocks(tree, classes=False):
        for index, stmt in enumerate(block):
            if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and _mentions(stmt.annotation, names):
                block[index] = ast.Assign(targets=[stmt.target], value=stmt.value, lineno=stmt.lineno)


def _without_library_effects(tree: ast.Module, libraries: set[str], made: set[str]) -> None:
    """The statements that call a library only for what it does (`out.write(serialization.to_bytes(state))`,
    `wandb.log(...)`, `model.summary()`: a library's function, or a method of a value it made, in an expression
    statement) removed: replaced by an argument, such a call would hand a plain value to code that wants the
    library's (bytes, a logger's record), and nothing after it reads what it did. A call of the program's own
    function (`train_step(state, x)`) stays, whatever it is given."""
    def for_effect(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.Expr) and any(
            isinstance(n, ast.Call) and (_root(n.func) in libraries
                                         or (isinstance(n.func, ast.Attribute) and _root(n.func) in made))
            for n in ast.walk(stmt))

    for block in _blocks(tree):
        block[:] = [s for s in block if not for_effect(s)] or [_located_pass()]


def plain_jax(source: str, resume_at: Place | None = None,
              values: dict[str, str] | None = None) -> Iterator[tuple[Place, str]]:
    """Down to plain JAX (issue 48 item 3): a reproducer that still imports a model library (Flax, Optax, the
    user's own) when the miss does not need it is not minimal. Candidates, largest first: every library call
    (and call of a value a library made) replaced by its first argument, then whatever still uses a library
    removed; every library's statements removed (and what uses the values they made); one library's; each call
    alone replaced by its first argument, or its last (`model.apply(params, x)` -> `x`). Each drops what that
    leaves unused, the library's imports with it; where the miss needs the library, they are rejected and the
    program keeps it."""
    tree = ast.parse(source)
    libraries = _library_names(tree)
    if not libraries:
        return
    seen: set[str] = {source}
    # Every candidate starts without the annotations that name a library's types (they run nothing).
    _without_library_annotations(tree, set(libraries))
    source = _emit(tree) or source
    by_package: dict[str, set[str]] = {}
    for name, package in libraries.items():
        by_package.setdefault(package, set()).add(name)

    def new(text: str | None, place: Place) -> TypeGuard[str]:
        if text is None or text in seen or _skipped(place, resume_at):
            return False
        seen.add(text)
        return True

    replaced = _replaced(source, set(libraries), None, False)
    variants = [(None, True)] if values else []  # the values a run read put in first, where there are some
    for number, (last, put) in enumerate(variants + [(None, False), (False, False)]):
        text = _every_call_replaced(source, set(libraries), last, values if put else None)
        if new(text, (0, number)):
            yield (0, number), text
    groups = [set(libraries)] + ([by_package[p] for p in sorted(by_package)] if len(by_package) > 1 else [])
    for number, names in enumerate(groups):
        text = _without_library(ast.parse(source), names)
        if new(text, (1, number)):
            yield (1, number), text
    if new(replaced, (2, 0)):
        yield (2, 0), replaced
    for number in range(_values_put(ast.parse(source), values or {})):
        tree = ast.parse(source)
        _values_put(tree, values or {}, only=number)
        _drop_unused(tree, lambda stmt: isinstance(stmt, (ast.Import, ast.ImportFrom, ast.ClassDef)))
        text = _emit(tree)
        if new(text, (2, 1, number)):
            yield (2, 1, number), text
    counted = ast.parse(source)
    counter = _CallsReplaced(_library_values(counted, set(libraries)), only=-1)
    counter.visit(counted)
    for number in range(counter.seen):
        for last in (False, True):
            text = _replaced(source, set(libraries), number, last)
            if new(text, (3, number, last)):
                yield (3, number, last), text


def _every_call_replaced(source: str, libraries: set[str], last: bool | None,
                         values: dict[str, str] | None) -> str | None:
    """The program with `values` (a run's) put in, every call of a library or of a value it made replaced by an
    argument (`last`: as `_CallsReplaced` takes it), then whatever still uses a library removed."""
    tree = ast.parse(source)
    if values:
        _values_put(tree, values)
    # What is made from a library after the values are in: `params = {...}` is plain now.
    made = _library_values(tree, libraries)
    _without_library_effects(tree, libraries, made)
    tree = _CallsReplaced(made, None, last, frozenset(libraries), fields=True).visit(tree)
    _drop_unused(tree, lambda stmt: isinstance(stmt, (ast.Import, ast.ImportFrom)))
    whole = _emit(tree)
    return _without_library(ast.parse(whole), libraries) if whole else None
