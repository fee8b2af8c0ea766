"""`inlinings`: the `__main__` guard and a function called once replaced by their bodies (pure)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from typing import TypeGuard

from harness.reduce.passes.syntax import Place, _emit, _skipped


def _is_main_guard(stmt: ast.stmt) -> TypeGuard[ast.If]:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _inlinable(fn: ast.stmt) -> bool:
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list:
        return False
    a = fn.args
    if a.args or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg:
        return False
    # A return, global or nonlocal would change meaning at module level; nested functions may have them.
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        if isinstance(node, (ast.Return, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
    return True


def _returns_at_end_only(fn: ast.FunctionDef) -> bool:
    """The function's only `return` (outside nested functions) is its last statement, with a value."""
    def returns(nodes: list[ast.stmt]) -> int:
        count = 0
        for node in nodes:
            for child in ast.walk(node):
                if isinstance(child, ast.Return):
                    count += 1
        return count
    nested = [n for n in fn.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    plain = [n for n in fn.body[:-1] if n not in nested]
    last = fn.body[-1]
    return isinstance(last, ast.Return) and last.value is not None and returns(plain) == 0 and \
        not any(isinstance(c, ast.Return) for c in ast.walk(last.value))


def _inline_with_arguments(fn: ast.FunctionDef, call_stmt: ast.Expr | ast.Assign) -> list[ast.stmt] | None:
    """`x = f(a, b)` (or `f(a, b)`) with `def f(p, q): ...; return e` as `p = a; q = b; ...; x = e`."""
    call = call_stmt.value
    a = fn.args
    if not isinstance(call, ast.Call) or fn.decorator_list or a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs \
            or call.keywords:
        return None
    if any(isinstance(arg, ast.Starred) for arg in call.args) or len(call.args) > len(a.args):
        return None
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
            return None
    defaults = dict(zip([p.arg for p in a.args][len(a.args) - len(a.defaults):], a.defaults))
    bound: list[ast.stmt] = []
    for index, param in enumerate(a.args):
        value = call.args[index] if index < len(call.args) else defaults.get(param.arg)
        if value is None:
            return None
        if not (isinstance(value, ast.Name) and value.id == param.arg):  # `x = x` says nothing
            bound.append(ast.Assign(targets=[ast.Name(param.arg, ast.Store())], value=copy.deepcopy(value)))
    body = copy.deepcopy(fn.body)
    returned = body[-1]
    if isinstance(returned, ast.Return) and returned.value is not None:  # _returns_at_end_only: it has one
        body.pop()
        if isinstance(call_stmt, ast.Assign):
            body.append(ast.Assign(targets=call_stmt.targets, value=returned.value))
        else:
            body.append(ast.Expr(returned.value))
    elif isinstance(call_stmt, ast.Assign):
        return None
    return bound + body


def inlinings(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """The `__main__` guard replaced by its body; a top-level function called exactly once, in a top-level
    statement (`f()`, `x = f(a, b)`), replaced there by its body (its parameters assigned first, its
    final `return e` as `x = e`), and its definition dropped: a reproducer reads top to bottom."""
    tree = ast.parse(source)
    body = tree.body
    for index, stmt in enumerate(body):
        if _is_main_guard(stmt) and not stmt.orelse and not _skipped((0, index), resume_at):
            copied = copy.deepcopy(tree)
            guard = copied.body[index]
            assert isinstance(guard, ast.If)  # the copy of `stmt`
            copied.body[index:index + 1] = guard.body
            text = _emit(copied)
            if text:
                yield (0, index), text
    uses: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            uses[node.id] = uses.get(node.id, 0) + 1
    for index, fn in enumerate(body):
        if not isinstance(fn, ast.FunctionDef) or uses.get(fn.name) != 1 or _skipped((1, index), resume_at):
            continue
        calls = [i for i, s in enumerate(body) if i > index and isinstance(s, (ast.Expr, ast.Assign))
                 and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
                 and s.value.func.id == fn.name]
        if len(calls) != 1:
            continue
        call_stmt = body[calls[0]]
        assert isinstance(call_stmt, (ast.Expr, ast.Assign)) and isinstance(call_stmt.value, ast.Call)  # as found
        replacement: list[ast.stmt] | None
        if _inlinable(fn) and not call_stmt.value.args and isinstance(call_stmt, ast.Expr):
            replacement = copy.deepcopy(fn.body)
        elif _returns_at_end_only(fn) or (not any(isinstance(n, ast.Return) for n in ast.walk(fn))):
            replacement = _inline_with_arguments(fn, call_stmt)
        else:
            replacement = None
        if not replacement:
            continue
        copied = copy.deepcopy(tree)
        copied.body[calls[0]:calls[0] + 1] = replacement
        del copied.body[index]
        text = _emit(copied)
        if text:
            yield (1, index), text
