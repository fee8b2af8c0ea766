"""Uses of a value that raise whenever they run, found without running the program (pure): the reducer
rejects such a candidate unrun, as it rejects one that pyflakes finds an undefined name in.

pysource-minimize replaces expressions by simpler ones: `jax.jit(f)` becomes `jax(f)` (a module called),
`np.array(jax.devices())` becomes `0` and the later `devices.size` an AttributeError, `f(x)` becomes
`0(x)`. Reducing examples/train_shard_map_grad.py, such candidates were about one run in six, each a fresh
`import jax` to learn what Python knows before the program starts.

A value is known when it is a literal (`0`, `None`, `'a'`); a name whose every binding is an `import` (a
module); a class the program defines once, with no bases, metaclass or decorator but `dataclass` (its
attributes are what its body binds); or a name whose only binding in the whole program is one
module-level assignment of one of these (`devices = 0`, `config = Config()`, `config, n = (Config, 0)`).
No other binding of the name exists anywhere, so no scope can shadow it: a use reads that value or fails
with a NameError. A program that can bind names or attributes out of sight (`globals()`, `exec`,
`import *`, `setattr`, `object.__setattr__`, `__dict__`, ...) is checked for literals only. Like pyflakes' undefined names, a use in code that never runs would
not raise; such code can go anyway, and a smaller candidate without it is tried.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from types import ModuleType

# Names and attributes that can bind a name or an attribute no assignment shows.
_BINDS_OUT_OF_SIGHT = frozenset({"globals", "locals", "vars", "exec", "eval", "setattr", "delattr", "__import__"})
_SETS_ATTRIBUTES_OUT_OF_SIGHT = frozenset({"__setattr__", "__dict__", "__class__", "__getattr__",
                                           "__getattribute__"})
_PYTHON_MODULE = ModuleType("module")  # stands for any module: not callable, not subscriptable
_UNKNOWN = object()  # a value not known before the program runs


def bindings(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """Every node that binds each name, in any scope."""
    found: dict[str, list[ast.AST]] = defaultdict(list)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found[node.id].append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name].append(node)
        elif isinstance(node, ast.arg):
            found[node.arg].append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found[(alias.asname or alias.name).split(".")[0]].append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                found[name].append(node)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found[node.name].append(node)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found[node.rest].append(node)
    return found


def out_of_sight(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Name) and node.id in _BINDS_OUT_OF_SIGHT:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _SETS_ATTRIBUTES_OUT_OF_SIGHT:
            return True
    return False


@dataclass(frozen=True)
class _Class:
    """A class the program defines, with no bases, metaclass or decorator (but `dataclass`, which adds
    only dunder names): what it can have as attributes is what its body binds."""

    name: str
    attributes: frozenset[str]  # bound in its body: values, methods, nested classes
    fields: frozenset[str]  # annotated in its body: a dataclass's instances have them


@dataclass(frozen=True)
class _Instance:
    of: _Class


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == "dataclass") or \
        (isinstance(target, ast.Attribute) and target.attr == "dataclass")


def _plain_class(node: ast.ClassDef) -> _Class | None:
    if node.bases or node.keywords or not all(_is_dataclass(d) for d in node.decorator_list):
        return None
    attributes, fields = set(), set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            attributes.add(stmt.name)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            fields.add(stmt.target.id)
            if stmt.value is not None:
                attributes.add(stmt.target.id)
        else:  # an assignment, an import, a loop's target...: whatever it binds
            for child in ast.walk(stmt):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    attributes.add(child.id)
                elif isinstance(child, (ast.Import, ast.ImportFrom)):
                    attributes |= {(a.asname or a.name).split(".")[0] for a in child.names}
    if {"__getattr__", "__getattribute__", "__new__"} & attributes:
        return None
    return _Class(node.name, frozenset(attributes), frozenset(fields))


def _known_names(tree: ast.Module) -> dict[str, object]:
    """The names whose value is known wherever they are read: a literal, a module (`_PYTHON_MODULE`), a class of
    the program's (`_Class`) or an instance of one made at module level (`_Instance`)."""
    if out_of_sight(tree):
        return {}
    bound = bindings(tree)
    known: dict[str, object] = {}
    for name, nodes in bound.items():
        if all(isinstance(n, ast.Import) for n in nodes):
            known[name] = _PYTHON_MODULE
        elif len(nodes) == 1 and isinstance(nodes[0], ast.ClassDef):
            found = _plain_class(nodes[0])
            if found is not None:
                known[name] = found

    def value(node: ast.expr) -> object:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                isinstance(cls := known.get(node.func.id), _Class):
            return _Instance(cls)
        return _value_of(node, known)

    # Module-level assignments, in order: `x = 0`, `c = Config()`, `a, b = (Config, 0)`.
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target = stmt.targets[0]
        pairs = [(target, stmt.value)]
        if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                len(target.elts) == len(stmt.value.elts) and not any(isinstance(e, ast.Starred) for e in
                                                                     target.elts + stmt.value.elts):
            pairs = list(zip(target.elts, stmt.value.elts))
        for assigned, expr in pairs:
            if isinstance(assigned, ast.Name) and bound[assigned.id] == [assigned]:
                computed = value(expr)
                if computed is not _UNKNOWN:
                    known[assigned.id] = computed
    return known


def _value_of(node: ast.expr, names: dict[str, object]) -> object:
    """A literal's value, or a known name's; `_UNKNOWN` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id, _UNKNOWN)
    return _UNKNOWN


def _what(value: object) -> str:
    if value is _PYTHON_MODULE:
        return "a module"
    if isinstance(value, _Class):
        return f"class {value.name}"
    if isinstance(value, _Instance):
        return f"a {value.of.name}"
    return f"{type(value).__name__} {value!r}"[:40]


_Empty = type("_Empty", (), {})  # what every class and instance has: `type`'s and `object`'s attributes


def _lacks(value: object, attribute: str, assigned: set[str]) -> bool:
    """Whether reading `attribute` of `value` raises AttributeError for certain."""
    if value is _PYTHON_MODULE or attribute in assigned or attribute.startswith("__"):
        return False  # a module's names, one the program sets somewhere, a dunder a decorator may add
    if isinstance(value, _Class):
        return attribute not in value.attributes and not hasattr(_Empty, attribute)
    if isinstance(value, _Instance):
        return attribute not in value.of.attributes | value.of.fields and not hasattr(_Empty(), attribute)
    return not hasattr(value, attribute)


def certain_error(tree: ast.Module) -> str | None:
    """Why the program raises wherever one of its uses of a known value runs (calling it, subscripting
    it, reading an attribute it cannot have); None when none is found."""
    names = _known_names(tree)
    # Attributes the program assigns anywhere (`self.x = ...`, `Config.x = ...`): never taken as missing.
    assigned = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)}

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            value = _value_of(node.func, names)
            if value is not _UNKNOWN and (value is _PYTHON_MODULE or (not isinstance(value, (_Class, _Instance))
                                                               and not callable(value))):
                return f"calls {_what(value)}: {ast.unparse(node)[:60]}"
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            value = _value_of(node.value, names)
            if value is not _UNKNOWN and not isinstance(value, (_Class, _Instance)) and \
                    not hasattr(type(value), "__getitem__"):
                return f"subscripts {_what(value)}: {ast.unparse(node)[:60]}"
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            value = _value_of(node.value, names)
            if value is not _UNKNOWN and _lacks(value, node.attr, assigned):
                return f"reads .{node.attr} of {_what(value)}: {ast.unparse(node)[:60]}"
    return None


# ---- loops that never end ------------------------------------------------------------------------------

_EXITS = frozenset({"exit", "quit", "_exit"})  # sys.exit(), os._exit(), exit(): they end the program, loop and all
_OWN_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)  # a body of its own


def _leaves(statements: list[ast.stmt], inner_loop: bool = False) -> bool:
    """Whether something in these statements of a loop's body can leave that loop other than by an exception:
    a `break` of it (not of a loop inside it), a `return`, a `yield` or `await` (the caller may never resume it),
    a `raise` (perhaps caught right there), or a call of `exit`."""
    for statement in statements:
        stack: list[ast.AST] = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, _OWN_SCOPE):
                continue
            if isinstance(node, ast.Break) and not inner_loop:
                return True
            if isinstance(node, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Await)):
                return True
            if isinstance(node, ast.Call) and ((isinstance(node.func, ast.Name) and node.func.id in _EXITS)
                                               or (isinstance(node.func, ast.Attribute) and node.func.attr in _EXITS)):
                return True
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                if _leaves(node.body, inner_loop=True) or _leaves(node.orelse, inner_loop):
                    return True
                stack.append(node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else node.test)
                continue
            stack.extend(ast.iter_child_nodes(node))
    return False


def endless_loops(tree: ast.AST) -> list[str]:
    """The `while True:` loops (any constant true test) that nothing in them can leave but an exception (no
    `break`, `return`, `yield`, `raise` nor `exit()`), outside any `try` or `with` of their function that could
    catch it: where one is reached, the program runs until it is killed (a generator whose `yield` was removed:
    `while True: x = rng.normal(...)`). Each as `while True` in the function holding it."""
    found: list[str] = []

    def visit(node: ast.AST, where: str, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name, False)
                continue
            if isinstance(child, ast.While) and isinstance(child.test, ast.Constant) and child.test.value \
                    and not guarded and not _leaves(child.body):
                found.append(f"while {ast.unparse(child.test)} in {where}")
            visit(child, where, guarded or isinstance(child, (ast.Try, ast.TryStar, ast.With, ast.AsyncWith)))

    visit(tree, "the module", False)
    return found


def new_endless_loop(before: tuple[str, ...], after: ast.AST) -> str | None:
    """An endless loop `after` has that a program whose endless loops were `before` did not (a candidate that
    removed a loop's only way out); None: none. The program a reduction starts from keeps its own (a loop that an
    exception caught by its caller ends): only what a candidate made is held against it."""
    had = list(before)
    for loop in endless_loops(after):
        if loop in had:
            had.remove(loop)
        else:
            return loop
    return None
