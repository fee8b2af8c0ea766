"""`substitutions`: a module-level constant, and a function that only returns an expression, written where they
are read (pure).

pysource-minimize cannot put a value where a name reads it, and `inlinings` takes a function called once only,
at a statement, as statements (`shape = (4,); w = jax.ShapeDtypeStruct(shape, ...)`). So a reduction kept
`FEATURES = 4` and `def spec(shape): return jax.ShapeDtypeStruct(shape, jnp.float32)` called twice, three lines a
JAX developer reads past (tests/fixtures/reduce/pvary_job.py: 15 lines after the coarse passes, 14 after 190 of
pysource-minimize's candidates, 12 after 680). Here, where that means the same:

- a name bound once in the whole program, by a module-level assignment of a literal (`FEATURES = 4`, `AXES =
  ('data', 'model')`, `-1`) or of an imported module's attribute (`DTYPE = jnp.float32`), is read as that value
  everywhere, and its assignment goes: all such names at once, then each;
- a top-level function whose body is `return e` (a docstring before it allowed), bound once, with plain
  parameters, and used only by calls that give each parameter (or leave a default that calls nothing), is
  replaced at each call by `e` with the call's arguments for its parameters, and its definition goes: one
  candidate per function.

The name's single binding is what makes it the same everywhere: no scope can shadow it (`raises.bindings` sees
every scope); a name `e` reads must be bound once and not by a function, lambda, class or comprehension, where a
call written inside would read that one's own. A program that binds names out of sight (`globals()`, `exec`,
`import *`) gets no candidate.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from harness.reduce.passes.field_values import _immutable_literal
from harness.reduce.passes.syntax import Place, _docstring, _emit, _skipped
from harness.reduce.raises import bindings, out_of_sight


def _imported_attribute(node: ast.expr, binders: dict[str, list[ast.AST]]) -> bool:
    """`jnp.float32`, `jax.numpy`: an attribute chain read from a name every binding of which is an import."""
    if not isinstance(node, ast.Attribute):
        return False
    base: ast.expr = node
    while isinstance(base, ast.Attribute):
        base = base.value
    return isinstance(base, ast.Name) and bool(binders.get(base.id)) \
        and all(isinstance(b, (ast.Import, ast.ImportFrom)) for b in binders[base.id])


def _constants(tree: ast.Module, binders: dict[str, list[ast.AST]]) -> dict[int, tuple[str, ast.expr]]:
    """Module-level `NAME = value` statements (by index) whose name is bound there only and read somewhere."""
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    found: dict[int, tuple[str, ast.expr]] = {}
    for index, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and stmt.simple:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and len(binders[target.id]) == 1 and target.id in read \
                and (_immutable_literal(value) or _imported_attribute(value, binders)):
            found[index] = (target.id, value)
    return found


class _Substituted(ast.NodeTransformer):
    """Reads of the names in `values` replaced by a copy of their value."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(copy.deepcopy(self.values[node.id]), node)
        return node


def _without(tree: ast.Module, indices: set[int], values: dict[str, ast.expr]) -> str | None:
    copied = copy.deepcopy(tree)
    copied.body = [s for i, s in enumerate(copied.body) if i not in indices]
    _Substituted(values).visit(copied)
    return _emit(copied) if copied.body else None


def _free_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _inner_scopes_bind(tree: ast.AST) -> set[str]:
    """The names a function, lambda, class or comprehension binds as its own (a parameter, a local, a loop's
    target): a call written inside it would read those, not the module's."""
    names: set[str] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = [node.args, *node.body]
        elif isinstance(node, ast.Lambda):
            parts = [node.args, node.body]
        elif isinstance(node, ast.ClassDef):
            parts = list(node.body)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            parts = [generator.target for generator in node.generators]
        else:
            continue
        for part in parts:
            names |= set(bindings(part))
    return names


def _one_expression(fn: ast.stmt, binders: dict[str, list[ast.AST]], shadowed: set[str]) -> ast.expr | None:
    """What a top-level function returns, where it is one that may be written at its calls: `def f(p, q=1):
    return e`, bound once, no decorator, plain parameters with defaults that call nothing, and `e` binding none of
    its parameters' names again nor reading a name bound twice or by another scope (`shadowed`)."""
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or len(binders[fn.name]) != 1:
        return None
    body = fn.body[1:] if len(fn.body) == 2 and _docstring(fn.body[0]) else fn.body
    a = fn.args
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None \
            or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg \
            or any(isinstance(n, ast.Call) for d in a.defaults for n in ast.walk(d)):
        return None
    returned = body[0].value
    params = {p.arg for p in a.args}
    read = _free_names(returned)
    if fn.name in read:
        return None  # recursive
    inner = set(bindings(returned))  # a lambda's or comprehension's own names
    if params & inner or any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
                             for n in ast.walk(returned)):
        return None
    free = read - params - inner
    if free & shadowed or any(len(binders.get(name, [])) > 1 for name in free):
        return None  # read at a call inside another function, such a name may mean that function's own
    return returned


def _arguments(fn: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    """Each parameter's value at this call (its argument, else its default); None: a call that cannot be read so."""
    params = [p.arg for p in fn.args.args]
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args) \
            or any(k.arg is None or k.arg not in params for k in call.keywords):
        return None
    given = dict(zip(params, call.args)) | {k.arg: k.value for k in call.keywords if k.arg is not None}
    if len(given) != len(call.args) + len(call.keywords):
        return None  # a parameter given twice: a TypeError the candidate would hide
    defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
    values = {p: given.get(p, defaults.get(p)) for p in params}
    return None if any(v is None for v in values.values()) else values  # type: ignore[return-value]


class _CallsWritten(ast.NodeTransformer):
    """Each call of `fn` replaced by `returned` with its arguments for the parameters; `failed` where a use of
    `fn` is not such a call."""

    def __init__(self, fn: ast.FunctionDef, returned: ast.expr) -> None:
        self.fn, self.returned, self.failed, self.calls = fn, returned, False, 0
        self.captured = set(bindings(returned))  # a lambda's or comprehension's own names inside `returned`

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if not (isinstance(node.func, ast.Name) and node.func.id == self.fn.name):
            self.generic_visit(node)
            return node
        for keyword in node.keywords:  # calls in its arguments first: f(f(x))
            keyword.value = self.visit(keyword.value)
        node.args = [self.visit(argument) for argument in node.args]
        values = _arguments(self.fn, node)
        if values is None or any(_free_names(v) & self.captured for v in values.values()):
            self.failed = True  # (an argument's names would be a lambda's own inside `e`)
            return node
        self.calls += 1
        written: ast.AST = _Substituted(values).visit(copy.deepcopy(self.returned))
        return ast.copy_location(written, node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.fn.name and isinstance(node.ctx, ast.Load):
            self.failed = True  # handed on as a value (`jax.jit(f)`), or a call's function not reached by a Call
        return node


def substitutions(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """Module-level constants read as their values (all at once, then each) and one-expression functions written
    at their calls (each), their bindings dropped."""
    tree = ast.parse(source)
    if out_of_sight(tree):
        return
    binders = bindings(tree)
    constants = _constants(tree, binders)
    if len(constants) > 1 and not _skipped((0,), resume_at):
        text = _without(tree, set(constants), dict(constants.values()))
        if text and text != source:
            yield (0,), text
    for index, (name, value) in constants.items():
        if not _skipped((1, index), resume_at):
            text = _without(tree, {index}, {name: value})
            if text and text != source:
                yield (1, index), text
    shadowed = _inner_scopes_bind(tree)
    for index, fn in enumerate(tree.body):
        returned = _one_expression(fn, binders, shadowed)
        if returned is None or _skipped((2, index), resume_at):
            continue
        assert isinstance(fn, ast.FunctionDef)  # (_one_expression)
        copied = copy.deepcopy(tree)
        del copied.body[index]
        writer = _CallsWritten(fn, returned)
        writer.visit(copied)
        if writer.failed or not writer.calls or not copied.body:
            continue
        text = _emit(copied)
        if text and text != source:
            yield (2, index), text
