"""`dead_code`: what nothing uses any more, all in one candidate (pure)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from harness.reduce.passes.syntax import (_DEFINITIONS, Place, _blocks, _drop_unused, _emit, _is_one_of, _located_pass,
                                          _skipped)


def dead_code(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """The program without the definitions, imports (and, in a second candidate, assignments) whose names
    nothing uses any more, repeated until none is left: what a removed use leaves behind goes in one
    candidate. Assignments come second, as their right-hand side may be needed for what it does. Then the
    parameters no function reads, and the statements that are only a constant (docstrings, `0`)."""
    for place, kinds in (((0,), (*_DEFINITIONS, ast.Assign, ast.AnnAssign)), ((1,), _DEFINITIONS)):
        if _skipped(place, resume_at):
            continue
        tree = ast.parse(source)
        _drop_unused(tree, functools.partial(_is_one_of, kinds=kinds))
        text = _emit(tree)
        if text and text != source:
            yield place, text
    # The parameters no function reads, with what every call of it passes them (pysource-minimize would take
    # each argument, then each parameter, one candidate at a time), all in one candidate.
    if not _skipped((2,), resume_at):
        tree = ast.parse(source)
        if _drop_unused_parameters(tree):
            _drop_unused(tree, functools.partial(_is_one_of, kinds=_DEFINITIONS))  # what only those arguments used
            text = _emit(tree)
            if text and text != source:
                yield (2,), text
    # Then the statements that are a constant alone (docstrings, and the `0`s pysource-minimize leaves where it
    # simplified a call), all in one candidate: they do nothing, and a removal would take them one at a time.
    if not _skipped((3,), resume_at):
        tree = ast.parse(source)
        for block in _blocks(tree):
            block[:] = [s for s in block if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))] \
                or [_located_pass()]
        text = _emit(tree)
        if text and text != source:
            yield (3,), text
    # Then the names that only copy another (`v8 = v6`, what pysource-minimize leaves of a chain of calls it replaced
    # by their arguments), each use read as the name it copies, all in one candidate.
    if not _skipped((4,), resume_at):
        tree = ast.parse(source)
        if _collapse_aliases(tree):
            text = _emit(tree)
            if text and text != source:
                yield (4,), text


def _bindings(tree: ast.AST) -> dict[str, int]:
    """How many times each name is bound anywhere in the program (assigned, a parameter, imported, defined, caught)."""
    count: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names = [node.id]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.alias):
            names = [(node.asname or node.name).split(".")[0]]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)) and node.name:
            names = [node.name]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names = [*node.names, *node.names]  # never one binding
        for name in names:
            count[name] = count.get(name, 0) + 1
    return count


def _collapse_aliases(tree: ast.Module) -> bool:
    """Each `a = b` (two names, each bound once in the whole program) dropped and `a` read as `b`: `b` was bound
    before the copy ran, and nothing binds either again. True when one went."""
    count = _bindings(tree)
    alias: dict[str, str] = {}
    for block in _blocks(tree):
        keep = []
        for stmt in block:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(target := stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Name) and count.get(target.id) == 1 \
                    and count.get(stmt.value.id) == 1 and target.id != stmt.value.id:
                alias[target.id] = stmt.value.id
                continue
            keep.append(stmt)
        block[:] = keep or [_located_pass()]
    if not alias:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            while node.id in alias:
                node.id = alias[node.id]
    return True


# Decorators that keep a function's parameters free to go: `jax.jit` as it is (`static_argnums`, `in_specs` and
# the like count the parameters).
_PLAIN_DECORATORS = frozenset({"jax.jit", "jit"})


def _drop_unused_parameters(tree: ast.Module) -> bool:
    """Drop every parameter a function never reads, and the argument each call passes it, where every use of the
    function's name is a call of it with plain arguments (no `*args`, `**kwargs`), it is no method and has no
    decorator but `jax.jit`. True when one went."""
    methods = {id(s) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for s in node.body}
    functions: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            functions.setdefault(node.name, []).append(node)
    calls: dict[str, list[ast.Call]] = {}
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append(node)
            called.add(id(node.func))
    other_uses = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}
    dropped = False
    for name, (fn, *more) in functions.items():
        a = fn.args
        if more or name in other_uses or id(fn) in methods or a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs \
                or any(ast.unparse(d) not in _PLAIN_DECORATORS for d in fn.decorator_list):
            continue
        sites = calls.get(name, [])
        if any(isinstance(x, ast.Starred) for c in sites for x in c.args) or any(k.arg is None for c in sites
                                                                               for k in c.keywords):
            continue
        read = {n.id for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        unused = [i for i, p in enumerate(a.args) if p.arg not in read]
        if not unused:
            continue
        names = {a.args[i].arg for i in unused}
        first_default = len(a.args) - len(a.defaults)
        a.defaults = [d for i, d in enumerate(a.defaults, first_default) if i not in unused]
        a.args = [p for i, p in enumerate(a.args) if i not in unused]
        for call in sites:
            call.args = [x for i, x in enumerate(call.args) if i not in unused]
            call.keywords = [k for k in call.keywords if k.arg not in names]
        dropped = True
    return dropped


