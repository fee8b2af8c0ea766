"""What a library made (pure): the names a program imports from a library that is not plain JAX, the values
it binds from them, and the calls of them replaced by an argument."""

from __future__ import annotations

import ast
import copy
import sys
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from harness.reduce.passes.syntax import _blocks, _drop_unused, _emit, _located_pass

# What a plain-JAX reproducer may import: JAX, NumPy, what JAX itself depends on, and Python's own library.
PLAIN_PACKAGES = frozenset({"jax", "jaxlib", "numpy", "ml_dtypes", "opt_einsum", "scipy", "__future__",
                            *sys.stdlib_module_names})


def _library_names(tree: ast.Module) -> dict[str, str]:
    """The names the program binds by importing a package that is not plain JAX (flax, optax, a model library
    of the user's), and each one's package."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                package = alias.name.split(".")[0]
                if package not in PLAIN_PACKAGES:
                    names[(alias.asname or alias.name).split(".")[0]] = package
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            package = node.module.split(".")[0]
            if package not in PLAIN_PACKAGES:
                names.update({alias.asname or alias.name: package for alias in node.names if alias.name != "*"})
    return names


def library_packages(source: str) -> set[str]:
    """The packages beyond plain JAX (PLAIN_PACKAGES) the program imports."""
    return set(_library_names(ast.parse(source)).values())


def library_calls(source: str) -> list[str]:
    """The calls of a library's names the program still makes, each once in the program's order, as the callee is
    written (`nn.Dense`, `model.apply` where `model` a library made)."""
    tree = ast.parse(source)
    names = _library_names(tree)
    made = _library_values(tree, set(names)) if names else set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _root(node.func) in made:
            callee = ast.unparse(node.func)
            if callee not in found:
                found.append(callee)
    return found


# Set on a Name node: a local of its function that no library's value is bound to there (`data, model =
# mesh.axis_names` in a helper, while `model = MLP()` elsewhere): the names a library made are names, not
# scopes, and this keeps a helper's own `model` or `x` from being taken for the library's.
_PLAIN = "_harness_plain"


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain or a call's function starts at (`nn.Dense(4)` -> nn)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) and not getattr(node, _PLAIN, False) else None


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names and not getattr(n, _PLAIN, False) for n in ast.walk(node))


def _mark_plain_locals(tree: ast.AST, tainted: set[str], libraries: AbstractSet[str],
                       producers: AbstractSet[str] = frozenset()) -> None:
    """Mark (_PLAIN) every use, in a function, of a name of `tainted` (but the `libraries`' own) that the
    function binds itself (by an assignment or a loop) only to values that mention none of `tainted`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and hasattr(node, _PLAIN):
            delattr(node, _PLAIN)
    marks = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        plain: set[str] = set()
        made: set[str] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                targets, value = [node.target], node.iter
            else:
                continue
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)} & tainted - libraries
            (made if _draws(value, tainted, producers) else plain).update(bound)
        local = plain - made
        if local:
            marks += [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in local]
    for name in marks:
        setattr(name, _PLAIN, True)


def _library_values(tree: ast.Module, names: set[str]) -> set[str]:
    """`names` and what the program binds from them, transitively (`model = MLP()` where `class MLP(nn.Module)`,
    `tx = optax.sgd(0.1)`, `params = model.init(...)`): the values a library made. Marks the tree's uses of
    a function's own plain locals of those names (`_mark_plain_locals`)."""
    tainted = set(names)
    # The program's own functions that return a value a library made (`def create_state(...): ... return
    # TrainState.create(...)`): what a call of one gives is the library's (`state = create_state(config)`),
    # but the call stays a call (its body is where the library's calls are replaced).
    producers: set[str] = set()
    for _ in range(8):
        _mark_plain_locals(tree, tainted, names, producers)
        more, more_producers = set(tainted), set(producers)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None \
                    and _draws(node.value, tainted, producers):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                more |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)
                         and not getattr(n, _PLAIN, False)}
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and _mentions(_made_by(node), tainted):
                more.add(node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in tainted \
                    and any(isinstance(r, ast.Return) and r.value is not None and _draws(r.value, tainted, producers)
                            for r in _own_nodes(node)):
                more_producers.add(node.name)
        if more == tainted and more_producers == producers:
            break
        tainted, producers = more, more_producers
    _mark_plain_locals(tree, tainted, names, producers)
    return tainted


def _draws(value: ast.AST, tainted: set[str], producers: AbstractSet[str]) -> bool:
    """Whether `value` holds a value a library made: it mentions one, or calls a function that returns one."""
    return _mentions(value, tainted) or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                            and n.func.id in producers for n in ast.walk(value))


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body but those of the functions, classes and lambdas nested in it."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _made_by(definition: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Module:
    """What makes a definition a library's value: a class's bases, keywords and decorators, a function's
    decorators. Not a function's annotations nor its defaults (`def create_state(...) -> TrainState`,
    `def f(x, act=nn.relu)`): the user's function stays the user's, its library calls inside replaced."""
    parts = [*definition.decorator_list, *((*definition.bases, *(k.value for k in definition.keywords))
                                           if isinstance(definition, ast.ClassDef) else ())]
    return ast.Module(body=[ast.Expr(p) for p in parts], type_ignores=[])


def _header(stmt: ast.stmt) -> ast.stmt:
    """A compound statement without its inner statements (its decorators, bases, `with` items, iterable)."""
    header = copy.copy(stmt)
    for name in ("body", "orelse", "finalbody", "handlers"):
        if hasattr(header, name):
            setattr(header, name, [])
    return header


def _without_library(tree: ast.Module, names: set[str]) -> str | None:
    """The program without every statement that mentions one of `names` or a value made from them (the
    innermost one that does: a function keeps its other statements), then without what that leaves unused."""
    tainted = _library_values(tree, names)
    for block in _blocks(tree):
        block[:] = [s for s in block if not (_mentions(s, tainted) and not _holds_statements_mentioning(s, tainted))]
        if not block:
            block.append(_located_pass())
    _drop_unused(tree, lambda stmt: isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                                                      ast.ImportFrom)))
    return _emit(tree)


def _holds_statements_mentioning(stmt: ast.stmt, names: set[str]) -> bool:
    """A compound statement whose mention of `names` is only in its inner statements (those go instead), not
    in its own header (a decorator, a base class, a `with` item, a loop's iterable)."""
    inner = [s for name in ("body", "orelse", "finalbody") for s in getattr(stmt, name, []) or []
             if isinstance(s, ast.stmt)]
    inner += [s for handler in getattr(stmt, "handlers", []) or [] for s in handler.body]
    return bool(inner) and not _mentions(_header(stmt), names)


class _CallsReplaced(ast.NodeTransformer):
    """Each call of a library's function or of a value it made (`nn.relu(x)`, `nn.Dense(4)(x)`,
    `model.apply(params, x)`, `optax.apply_updates(params, updates)`) replaced by one of its arguments, where it
    has some: what flows through a layer or an optimizer step, without it. `only`: the call with that number
    (in the walk's order) alone; `last`: its last positional argument instead of its first."""

    def __init__(self, names: set[str], only: int | None = None, last: bool | None = False,
                 modules: frozenset[str] = frozenset(), fields: bool = False) -> None:
        self.names, self.only, self.last, self.seen, self.modules = names, only, last, 0, modules
        self.fields = fields  # `state.params` -> `state` too

    def visit_Call(self, node: ast.Call) -> ast.AST:
        root = _root(node.func)
        if root in self.names and node.args and not any(isinstance(a, ast.Starred) for a in node.args):
            self.seen += 1
            if self.only is None or self.only == self.seen - 1:
                # None: a library's own function by its first argument (`optax.apply_updates(params, ...)`), a
                # method of a value it made by its last (`model.apply(params, x)`, `model.init(key, x)`).
                last = self.last if self.last is not None else (root not in self.modules
                                                                and isinstance(node.func, ast.Attribute))
                argument: ast.AST = self.visit(node.args[-1 if last else 0])
                return argument
        elif root in self.names and not node.args and node.keywords:
            # Keywords only (`state.apply_gradients(grads=grads)`, `TrainState.create(apply_fn=..., params=p,
            # tx=tx)`): the first (or last) keyword's value that is a name, or made of no library's value
            # (`params`, not `model.apply`, a method).
            plain = [k.value for k in node.keywords if k.arg and (isinstance(k.value, ast.Name)
                                                                  or not _mentions(k.value, self.names))]
            if plain:
                self.seen += 1
                if self.only is None or self.only == self.seen - 1:
                    keyword: ast.AST = self.visit(plain[-1 if self.last else 0])
                    return keyword
        if not isinstance(node.func, ast.Attribute):
            node.func = self.visit(node.func)
        else:  # a method called, not a field read: `state.f(...)` stays a call of `state.f`
            node.func.value = self.visit(node.func.value)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        # With every call replaced (`only` None): a field of a value a library made, read, by the value
        # (`state.params` -> `state`, once `state` is what was made from: `params`).
        if self.only is None and self.fields and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.value.id in self.names and node.value.id not in self.modules:
            return node.value
        self.generic_visit(node)
        return node


def _replaced(source: str, libraries: set[str], only: int | None, last: bool | None,
              modules: frozenset[str] = frozenset()) -> str | None:
    tree = ast.parse(source)
    tree = _CallsReplaced(_library_values(tree, libraries), only, last, modules).visit(tree)
    _drop_unused(tree, lambda stmt: isinstance(stmt, (ast.Import, ast.ImportFrom)))
    return _emit(tree)
