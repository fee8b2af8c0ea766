"""Candidate programs made from a program's syntax (pure): coarse passes of the harness's own, run before
pysource-minimize's fine ones (harness/reduce/search.py says why both).

- `removals`: delete a chunk of statements from one block (halves first, then quarters, ... single
  statements), the hierarchical delta-debugging order: a 150-line script loses its logging,
  checkpointing and training loop in a few candidates instead of one statement at a time; the
  functions and classes nothing uses any more go in the same candidate, when defining them runs nothing.
- `unwrappings`: a compound statement (if, for, while, with, try) replaced by its body.
- `dead_code`: definitions, imports and assignments nothing uses any more, all in one candidate.
- `plain_jax`: down to plain JAX: the statements that use a library other than JAX, NumPy and Python's own
  (Flax, Optax, the user's) removed, all libraries at once then each; its calls replaced by their first
  argument (a layer by its input, an optimizer's step by the parameters), all at once then each; the imports
  that leaves unused dropped.
- `inlinings`: a top-level function called once (`main()`, `mesh = make_mesh(config)`) replaced at the
  call by its body (parameters assigned, the final return as the assignment), and the
  `if __name__ == "__main__":` guard by what it guards: a reproducer reads top to bottom.
- `field_values`: a class that only holds values (`class TrainConfig: axis_names = ('a', 'b')`, what
  pysource-minimize leaves of a config) read through it or a name bound to it (`config.axis_names`) replaced by
  the value, the class and its binding dropped: pysource-minimize cannot put a value where a name reads it.

Every candidate is `ast.unparse`d, so equal programs have equal text (the memo's key), and comments go
(`harness reduce` puts a script's inline metadata block back on the result). `broken` rejects a candidate
without running it when pyflakes finds a name it uses but never defines, or when it calls, subscripts or
reads a missing attribute of a value known before it runs (harness/reduce/raises.py: `jax(f)`, `0(x)`).
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from enum import Enum
from typing import Protocol, TypeGuard

from pyflakes import checker as flakes
from pyflakes import messages

from harness.reduce.raises import bindings, certain_error, endless_loops, new_endless_loop, out_of_sight

# pyflakes' findings that make a run fail for certain once the code is reached.
_FATAL = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)

Place = tuple[int, ...]


class Pass(Protocol):
    """Candidates made from a program, each with its place in the pass's order. After a candidate is kept,
    the pass starts again from the new program at the kept one's place (`resume_at`): what came before it
    was rejected already (or the pass would have stopped there), so a pass builds no candidate placed
    before it (building one is a deep copy and an unparse of the whole program)."""

    def __call__(self, source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]: ...


def _skipped(place: Place, resume_at: Place | None) -> bool:
    return resume_at is not None and place < resume_at


def normalise(source: str) -> str:
    """The program as `ast.unparse` writes it: the form every candidate has."""
    return ast.unparse(ast.parse(source)) + "\n"


def imported_packages(statements: Iterator[ast.AST] | list[ast.stmt]) -> list[str]:
    """The top-level packages these statements import, each once in the order first imported (relative imports
    left out): `import a.b` and `from a.c import d` give `a`."""
    names: list[str] = []
    for node in statements:
        if isinstance(node, ast.Import):
            found = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = [node.module.split(".")[0]]
        else:
            continue
        names += [n for n in found if n not in names]
    return names


def digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def size(source: str) -> int:
    """Lines that hold something (blank lines and comments do not count)."""
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


@functools.lru_cache(maxsize=4)
def _endless_loops_of(source: str) -> tuple[str, ...]:
    return tuple(endless_loops(ast.parse(source)))


def broken(source: str, made_from: str | None = None) -> str | None:
    """Why a candidate cannot run (it does not compile, uses a name it never defines, or misuses a value
    known before it runs), or would run until killed (a `while True` loop that `made_from`, the program it was
    made from, could leave and it cannot: harness/reduce/raises.py); None: try it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `0()`: certain_error says so below
            tree = ast.parse(source)
            compile(tree, "<candidate>", "exec")
    except (SyntaxError, ValueError) as exc:
        return f"does not compile ({exc.__class__.__name__})"
    found = [m for m in flakes.Checker(tree).messages if isinstance(m, _FATAL)]
    if found:
        return f"pyflakes: {found[0].message % found[0].message_args}"
    error = certain_error(tree)
    if error:
        return f"raises when it runs: {error}"
    loop = new_endless_loop(_endless_loops_of(made_from), tree) if made_from is not None else None
    return f"never ends when it runs: {loop}, nothing but an exception leaves it" if loop else None


# What holds a statement list: statements, modules, except clauses and match cases (`ast.walk` visits every
# expression too, which holds none).
_HOLDS_STATEMENTS = (ast.stmt, ast.mod, ast.excepthandler, ast.match_case)


def _blocks(tree: ast.AST, classes: bool = True) -> list[list[ast.stmt]]:
    """Every statement list of the program, outermost first (the module's body, then nested ones);
    `classes=False` leaves out class bodies (their names are used as attributes, which names do not show)."""
    out: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, _HOLDS_STATEMENTS):
            _add_blocks(node, out, classes)
    return out


def _add_blocks(node: ast.AST, out: list[list[ast.stmt]], classes: bool) -> None:
    if not classes and isinstance(node, ast.ClassDef):
        return
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            out.append(block)
    for handler in getattr(node, "handlers", []) or []:
        out.append(handler.body)


def _emit(tree: ast.AST, located: bool = False) -> str | None:
    """The tree's text; `located`: every node has its location already (unparse reads a statement's line
    for its type comment), so the walk that fills missing ones is not needed."""
    try:
        return ast.unparse(tree if located else ast.fix_missing_locations(tree)) + "\n"
    except (ValueError, TypeError, AttributeError):  # a node left in a shape unparse cannot write
        return None


def _located_pass() -> ast.Pass:
    return ast.Pass(lineno=1, col_offset=0, end_lineno=1, end_col_offset=4)


def _chunk_sizes(length: int) -> list[int]:
    sizes, n = [], length
    while n >= 1:
        sizes.append(n)
        if n == 1:
            break
        n = (n + 1) // 2
    return sizes


def removals(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """The program without a chunk of one block's statements: big chunks of the outer blocks first."""
    tree = ast.parse(source)
    blocks = _blocks(tree)
    longest = max((len(b) for b in blocks), default=0)
    seen: set[str] = set()
    members = _ClassMembersRead(tree)
    # What binds names out of sight (`setattr`, a star import) can only go with a removal, never come: when the
    # program has none, no candidate of it has any, and each is not looked for again.
    hidden = out_of_sight(tree)
    for chunk in _chunk_sizes(longest):
        for number, block in enumerate(blocks):
            length = len(block)
            if chunk > length or (number == 0 and chunk == length):
                continue  # (a module without any statement measures nothing)
            # From the end of the block: a statement's uses come after it, so removing the last ones first
            # lets the earlier ones go (and pyflakes rejects, unrun, a definition whose use is still there).
            for start in reversed(range(0, length, chunk)):
                if members.still_read(block, block[start:start + chunk]):
                    continue
                text = _without(tree, blocks, number, start, chunk, hidden)
                if text and text != source and text not in seen:
                    seen.add(text)
                    # A candidate placed before `resume_at` is made all the same: its text, if met again
                    # later in the pass, is not tried (as when the pass ran from the start).
                    if not _skipped((-chunk, number, -start), resume_at):
                        yield (-chunk, number, -start), text


class _ClassMembersRead:
    """A class's fields and methods that the program reads as attributes (`config.mesh_axes`, `Config.steps`,
    `model.encode(x)`) and never sets as one (`self.size = ...`): removing one from its class body leaves an
    AttributeError where it is read, so a removal that takes one (and not every read of it) is not made (the
    training programs' config dataclasses cost a rejected candidate per field). Once what reads it goes, the
    field may go too."""

    def __init__(self, tree: ast.Module) -> None:
        self.class_bodies = {id(node.body) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        self.reads: dict[str, int] = {}
        self.set_somewhere: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                if isinstance(node.ctx, ast.Load):
                    self.reads[node.attr] = self.reads.get(node.attr, 0) + 1
                else:
                    self.set_somewhere.add(node.attr)

    def still_read(self, block: list[ast.stmt], removed: list[ast.stmt]) -> bool:
        if id(block) not in self.class_bodies:
            return False
        members = {name for stmt in removed for name in (_bound_names(stmt) or ())} - self.set_somewhere
        if not members:
            return False
        read_inside: dict[str, int] = {}
        for node in (n for stmt in removed for n in ast.walk(stmt)):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                read_inside[node.attr] = read_inside.get(node.attr, 0) + 1
        return any(self.reads.get(name, 0) > read_inside.get(name, 0) for name in members)


def _without(tree: ast.Module, blocks: list[list[ast.stmt]], number: int, start: int, chunk: int,
             hidden: bool = True) -> str | None:
    """The text of `tree` without `chunk` statements of its block `number` from `start` (and the definitions
    that leaves unused). Made in place and put back, not on a deep copy of the tree per candidate: the
    removal and `_drop_unused_definitions` change only the contents of statement lists (all in `blocks`).
    `hidden` False: the program binds nothing out of sight (`raises.out_of_sight`), so neither does the candidate."""
    saved = [block[:] for block in blocks]
    try:
        block = blocks[number]
        del block[start:start + chunk]
        if not block:
            block.append(_located_pass())
        _drop_unused_definitions(tree, hidden)
        return _emit(tree, located=True)  # the parsed tree's nodes, and `pass`es with a location
    finally:
        for block, contents in zip(blocks, saved):
            block[:] = contents


def _runs_nothing(node: ast.AST) -> bool:
    """No decorator, and no call in what Python evaluates when it defines `node`: a function's defaults and
    annotations, a class's bases and body (but the bodies of its methods, which run only when called)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        evaluated = [*node.args.defaults, *(d for d in node.args.kw_defaults if d),
                     *(a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                               node.args.vararg, node.args.kwarg) if a and a.annotation),
                     *([node.returns] if node.returns else [])]
        return not node.decorator_list and not any(map(_calls, evaluated))
    if isinstance(node, ast.ClassDef):
        if node.decorator_list or any(map(_calls, (*node.bases, *node.keywords))):
            return False
        return all(_runs_nothing(stmt) if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                   else not _calls(stmt) for stmt in node.body)
    return False


def _calls(node: ast.AST) -> bool:
    """Whether evaluating `node` calls anything (written anywhere inside it)."""
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _drop_unused_definitions(tree: ast.AST, hidden: bool = True) -> None:
    """Drop the functions and classes nothing uses any more whose definition runs nothing (no decorator,
    no call in a default, annotation, base or class body), the imports of one module of Python's own library
    nothing uses any more, and the fields of a class that only holds values that nothing reads any more, until
    none is left: a removal that takes a helper's last call takes the helper too, in the same candidate (one kept
    step instead of one per definition: reducing examples/train_shard_map_grad.py, the removals took `import os`,
    `import json`, ... and the config's `momentum`, `penalty`, ... one kept candidate each). Other imports,
    assignments and the other definitions may do something, and are left to `dead_code`. Only the contents of
    statement lists change (`_without` puts them back)."""
    _drop_unused(tree, lambda stmt: (isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                                     and _runs_nothing(stmt)) or _own_library_import(stmt))
    _drop_unread_fields(tree, hidden)


def _own_library_import(stmt: ast.stmt) -> bool:
    """An import of one name from one module of Python's own library (`import os`, `from functools import
    partial`): importing it again does nothing the program can tell (`__future__` changes how it compiles)."""
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)) or len(stmt.names) != 1 or stmt.names[0].name == "*":
        return False
    packages = imported_packages([stmt])
    return len(packages) == 1 and packages[0] in sys.stdlib_module_names and packages[0] != "__future__"


# What hands a dataclass's fields on by name or all at once (a field nothing reads by name may still be read so).
_READS_EVERY_FIELD = frozenset({"asdict", "astuple", "fields", "getattr", "hasattr", "vars", "__dict__"})


def _drop_unread_fields(tree: ast.AST, hidden: bool = True) -> None:
    """The fields of a class that only holds values (a body of assignments that call nothing) that the program
    never reads or sets as an attribute, names as a keyword or in a string, dropped, where the class is never
    made with positional arguments (which fill its fields in order)."""
    classes = _value_classes(tree)
    if not classes:
        return  # (most programs, once their config class is gone: no walk of every node per candidate)
    attributes, keywords, strings, positional = set(), set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            keywords.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
        elif isinstance(node, ast.Name) and node.id in _READS_EVERY_FIELD:
            return
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (node.args or any(
                k.arg is None for k in node.keywords)):
            positional.add(node.func.id)
    if attributes & _READS_EVERY_FIELD or (hidden and out_of_sight(tree)):
        return
    used = attributes | keywords | strings
    for cls in classes:
        if cls.name in positional:
            continue
        kept = [stmt for stmt in cls.body if _field_name(stmt) in used]
        if len(kept) < len(cls.body):
            cls.body[:] = kept or [_located_pass()]


def _value_classes(tree: ast.AST) -> list[ast.ClassDef]:
    """The classes whose body only holds values: fields that call nothing. Found through statements only (a
    class is one), not every node."""
    found: list[ast.ClassDef] = []
    holders: list[ast.AST] = [tree]
    while holders:
        node = holders.pop()
        if isinstance(node, ast.ClassDef) and all(map(_field_name, node.body)) and not any(map(_calls, node.body)):
            found.append(node)
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                holders += [n for n in value if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))]
    return found


def _field_name(stmt: ast.stmt) -> str | None:
    """The name a class body's field binds (`size: int = 3`, `size = 3`, `size: int`); None: not a field."""
    target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
        stmt.target if isinstance(stmt, ast.AnnAssign) else None
    return target.id if isinstance(target, ast.Name) else None


def _drop_unused(tree: ast.AST, droppable: Callable[[ast.stmt], bool]) -> None:
    """Drop the `droppable` statements whose names nothing uses any more (and the unused names of a
    droppable import of several), until none is left: what a dropped one used may go next."""
    while True:
        used, blocks = _used_names_and_blocks(tree)
        dropped = False
        for block in blocks:
            keep = []
            for stmt in block:
                names = _bound_names(stmt) if droppable(stmt) else None
                if names and not names & used:
                    dropped = True
                    continue
                if names and isinstance(stmt, (ast.Import, ast.ImportFrom)) and len(stmt.names) > 1:
                    stmt.names = [a for a in stmt.names if (a.asname or a.name).split(".")[0] in used]
                keep.append(stmt)
            block[:] = keep or [_located_pass()]
        if not dropped:
            return


def _bound_names(stmt: ast.stmt) -> set[str] | None:
    """The names a definition-like statement binds (None: not one that `dead_code` may drop)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"} or None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = set()
        for target in targets:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            if not all(isinstance(e, ast.Name) for e in elts):
                return None
            names |= {e.id for e in elts if isinstance(e, ast.Name)}  # all of them (checked above)
        return names
    return None


def _used_names_and_blocks(tree: ast.AST) -> tuple[set[str], list[list[ast.stmt]]]:
    """The names the program reads (`__all__ = ["f"]` and string annotations name things too), and its
    statement lists but class bodies (`_blocks(tree, classes=False)`), in one walk of the tree."""
    used: set[str] = set()
    blocks: list[list[ast.stmt]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Store):
                used.add(node.id)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and node.value.isidentifier():
                used.add(node.value)
        elif isinstance(node, _HOLDS_STATEMENTS):
            _add_blocks(node, blocks, classes=False)
    return used, blocks


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


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


def _is_one_of(stmt: ast.stmt, kinds: tuple[type[ast.stmt], ...]) -> bool:
    return isinstance(stmt, kinds)


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def unwrappings(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """The program with one compound statement replaced by its body (the else part dropped)."""
    tree = ast.parse(source)
    blocks = _blocks(tree)
    places = [(b, i) for b, block in enumerate(blocks) for i, s in enumerate(block) if isinstance(s, _COMPOUND)]
    for number, index in places:
        if _skipped((number, index), resume_at):
            continue
        copies: dict[int, object] = {}
        copied = copy.deepcopy(tree, copies)
        block = copies[id(blocks[number])]
        assert isinstance(block, list)
        block[index:index + 1] = block[index].body
        text = _emit(copied)
        if text and text != source:
            yield (number, index), text


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


# ---- a value holder's fields read as their values ------------------------------------------------------------
# pysource-minimize leaves a training script's config as `class TrainConfig: axis_names = (...)` bound by
# `config, checkpoint_dir = (TrainConfig, 0)` and read once (`axis_names=config.axis_names`): it cannot put a value
# where a name reads it, so the class, its binding and the read stay. `field_values` does, where that means the
# same: the class only holds values (immutable literals), nothing ever sets an attribute of that name, and every
# use of the class and of each name bound to it (or to an instance of it) reads one of its fields.
_DATACLASS_DECORATORS = frozenset({"dataclass", "dataclasses.dataclass"})


def _immutable_literal(node: ast.expr) -> bool:
    """A literal whose copies are the same value: a constant, a tuple of such, a signed number."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(map(_immutable_literal, node.elts))
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
        and isinstance(node.operand, ast.Constant)


def _holder_fields(cls: ast.ClassDef) -> dict[str, ast.expr] | None:
    """A plain value holder's fields and their values (a class or dataclass whose body is only fields with a
    literal value, a docstring, `pass`); None: a class that is more."""
    if cls.bases or cls.keywords or any(
            ast.unparse(d.func if isinstance(d, ast.Call) else d) not in _DATACLASS_DECORATORS
            or (isinstance(d, ast.Call) and (d.args or any(not _immutable_literal(k.value) for k in d.keywords)))
            for d in cls.decorator_list):
        return None
    fields: dict[str, ast.expr] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Pass) or _docstring(stmt):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            return None
        if not isinstance(target, ast.Name) or not _immutable_literal(value):
            return None
        fields[target.id] = value
    return fields or None


def _aliases(tree: ast.Module, holder: str) -> tuple[set[str], set[int]] | None:
    """The names bound to the holder class or to an instance of it made without arguments (`config = Config`,
    `config, path = (Config(), "")`), and the ids of the class's uses that bind them; None where another use of the
    class's name would see something else than its fields (`dataclasses.replace(Config(), steps=1)`)."""
    names: set[str] = set()
    binding_uses: set[int] = set()

    def use_of_holder(value: ast.expr) -> ast.Name | None:
        if isinstance(value, ast.Call) and not value.args and not value.keywords:
            value = value.func
        return value if isinstance(value, ast.Name) and value.id == holder else None

    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs: list[tuple[ast.expr, ast.expr]] = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                    and len(target.elts) == len(node.value.elts):
                pairs = list(zip(target.elts, node.value.elts))
            for name, value in pairs:
                used = use_of_holder(value)
                if used is not None:
                    if not isinstance(name, ast.Name) or len(node.targets) > 1:
                        return None
                    names.add(name.id)
                    binding_uses.add(id(used))
    return names, binding_uses


def _with_field_values(tree: ast.Module, cls: ast.ClassDef, fields: dict[str, ast.expr]) -> bool:
    """Every read of one of `cls`'s fields, through the class or a name bound to it, replaced by the field's value,
    in place; False (the tree untouched) where that would not mean the same."""
    if out_of_sight(tree):
        return False  # `globals()`, `exec`, `setattr`, ...: a name or field may be bound where no assignment shows
    bound = {name: len(nodes) for name, nodes in bindings(tree).items()}
    found = _aliases(tree, cls.name)
    if found is None or bound.get(cls.name) != 1:
        return False
    aliases, binding_uses = found
    if any(bound.get(name) != 1 for name in aliases):
        return False  # a name bound again elsewhere may hold something else
    readers = aliases | {cls.name}
    reads: list[ast.Attribute] = []
    read_values: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in fields and not isinstance(node.ctx, ast.Load):
                return False  # a field set (or deleted) somewhere: its value is not the literal's everywhere
            if isinstance(node.value, ast.Name) and node.value.id in readers and isinstance(node.ctx, ast.Load):
                if node.attr not in fields:
                    return False  # a method, or what the class inherits: more than a value holder
                reads.append(node)
                read_values.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in readers and isinstance(node.ctx, ast.Load) \
                and id(node) not in read_values and id(node) not in binding_uses:
            return False  # handed on whole (`train(config)`, `setattr(config, ...)`): what it does is not read here
    if not reads:
        return False
    replaced = {id(r): r for r in reads}

    class _Replaced(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            read = replaced.get(id(node))
            if read is not None:
                return ast.copy_location(copy.deepcopy(fields[read.attr]), node)
            self.generic_visit(node)
            return node

    _Replaced().visit(tree)
    return True


def _holder_or_its_binding(stmt: ast.stmt, holder: ast.ClassDef) -> bool:
    """The holder class, or an assignment whose value calls nothing but the class (`c = Config()`)."""
    return stmt is holder or (isinstance(stmt, ast.Assign) and not any(
        isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id == holder.name)
        for n in ast.walk(stmt.value)))


def field_values(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """A plain value holder's fields read as their values (`axis_names=config.axis_names` ->
    `axis_names=('a', 'b')`), the class and the assignments that bound it dropped where nothing uses them any more:
    one candidate per such class."""
    tree = ast.parse(source)
    for number, cls in enumerate(tree.body):
        if not isinstance(cls, ast.ClassDef) or _skipped((number,), resume_at):
            continue
        fields = _holder_fields(cls)
        if fields is None:
            continue
        copied = copy.deepcopy(tree)
        holder = copied.body[number]
        assert isinstance(holder, ast.ClassDef)  # the copy of `cls`
        if not _with_field_values(copied, holder, fields):
            continue
        # What bound the class (`config, checkpoint_dir = (TrainConfig, 0)`) and the class go once nothing reads
        # them: an assignment only where its value calls nothing but the class.
        _drop_unused(copied, functools.partial(_holder_or_its_binding, holder=holder))
        text = _emit(copied)
        if text and text != source:
            yield (number,), text


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


# ---- what a library computed, read from a run of the program --------------------------------------------------
# A value a library made (`params = model.init(key, x)["params"]`: a dict of arrays) cannot be reached by
# replacing a call by an argument. A run of the program with a probe after each assignment of such a value
# (`probe_program`, run by the reducer once, in a forked child of the quick screen) writes what it computed as
# plain JAX (`{"mlp": {"kernel": jnp.ones((16, 16))}}`: the arrays' shapes and dtypes, which is what the lowered
# module sees), keyed by the assignment's right-hand side as written; `plain_jax` then puts that in its place.
PROBE_VARIABLE = "HARNESS_REDUCE_VALUES"  # the file the probe writes its lines to
_PROBE = "__harness_value__"
_PROBE_LIMIT = 4000  # characters of one value's text: a real model's whole parameters are not pasted
_PROBE_HELPER = f'''
def {_PROBE}(key, value, _path=__import__("os").environ.get("{PROBE_VARIABLE}")):
    import json

    def text(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return repr(v)
        shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
        if isinstance(shape, tuple) and dtype is not None and hasattr(v, "__array__"):
            kind = "np" if type(v).__module__ == "numpy" else "jnp"
            name = str(dtype)
            return f"{{kind}}.ones({{shape!r}}" + ("" if name == "float32" else f", {{kind}}.{{name}}") + ")"
        if callable(getattr(v, "items", None)) and callable(getattr(v, "keys", None)):
            if not all(isinstance(k, (str, int)) for k in v.keys()):
                raise TypeError("a key that is no name")
            return "{{" + ", ".join(f"{{k!r}}: {{text(x)}}" for k, x in v.items()) + "}}"
        if type(v) in (list, tuple):
            inner = ", ".join(map(text, v))
            return f"[{{inner}}]" if type(v) is list else f"({{inner}}{{',' if len(v) == 1 else ''}})"
        raise TypeError(type(v))

    try:
        said = text(value)
    except Exception:
        said = None
    if _path:
        with open(_path, "a") as out:
            out.write(json.dumps([key, said if said is None or len(said) <= {_PROBE_LIMIT} else None]) + "\\n")
'''


def _probed_assignments(tree: ast.Module) -> list[tuple[list[ast.stmt], int, str, str]]:
    """Each assignment of one name from a value that mentions a library (in any block): its block, its index,
    the name, and its right-hand side as written (the key of what it computed)."""
    libraries = _library_names(tree)
    if not libraries:
        return []
    tainted = _library_values(tree, set(libraries))
    found = []
    for block in _blocks(tree, classes=False):
        for index, stmt in enumerate(block):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and _mentions(stmt.value, tainted):
                found.append((block, index, stmt.targets[0].id, ast.unparse(stmt.value)))
    return found


def probe_program(source: str) -> str | None:
    """The program with a probe after each assignment of a value a library made, which writes what it
    computed (as plain JAX) to the file named by PROBE_VARIABLE; None where there is none."""
    tree = ast.parse(source)
    found = _probed_assignments(tree)
    if not found:
        return None
    for block, index, name, key in sorted(found, key=lambda f: -f[1]):  # from the end: the indexes hold
        probe = ast.parse(f"{_PROBE}({key!r}, {name})").body[0]
        block.insert(index + 1, probe)
    start = 0
    while start < len(tree.body) and (_docstring(tree.body[start])
                                      or (isinstance(stmt := tree.body[start], ast.ImportFrom)
                                          and stmt.module == "__future__")):
        start += 1
    tree.body[start:start] = ast.parse(_PROBE_HELPER).body
    return _emit(tree)


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def probed_values(lines: str) -> dict[str, str]:
    """What the probe wrote: each right-hand side's value as plain JAX, where every run of it computed the same
    one and it could be written (a module, an optimizer, a function cannot)."""
    seen: dict[str, set[str | None]] = {}
    for line in lines.splitlines():
        try:
            key, said = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(key, str) and (said is None or isinstance(said, str)):
            seen.setdefault(key, set()).add(said)
    values = {}
    for key, said in seen.items():
        (only,) = said if len(said) == 1 else (None,)
        if only is not None:
            try:
                ast.parse(only, mode="eval")
            except SyntaxError:
                continue
            values[key] = only
    return values


_PLAIN_IMPORTS = {"jnp": ("jax.numpy", "import jax.numpy as jnp"), "np": ("numpy", "import numpy as np")}


def _values_put(tree: ast.Module, values: dict[str, str], only: int | None = None) -> int:
    """Each assignment whose right-hand side has a value read by the probe gets that value instead (`only`: the
    one with that number alone); `import jax.numpy as jnp` / `import numpy as np` added where the values need
    them and the program does not bind them so. The number of such assignments."""
    count, used = 0, set()
    for block, index, _name, key in _probed_assignments(tree):
        value = values.get(key)
        if value is None:
            continue
        count += 1
        if only is None or only == count - 1:
            assignment = block[index]
            assert isinstance(assignment, ast.Assign)  # as _probed_assignments found it
            assignment.value = ast.parse(value, mode="eval").body
            used |= {n.id for n in ast.walk(assignment.value) if isinstance(n, ast.Name)}
    for name in sorted(used & set(_PLAIN_IMPORTS)):
        module, statement = _PLAIN_IMPORTS[name]
        bound = any(isinstance(n, ast.Import) and any(a.name == module and a.asname == name for a in n.names)
                    for n in tree.body)
        if not bound:
            start = 1 if tree.body and _docstring(tree.body[0]) else 0
            tree.body.insert(start, ast.parse(statement).body[0])
    return count


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
        tree = ast.parse(source)
        if put:
            _values_put(tree, values or {})
        # What is made from a library after the values are in: `params = {...}` is plain now.
        made = _library_values(tree, set(libraries))
        _without_library_effects(tree, set(libraries), made)
        tree = _CallsReplaced(made, None, last, frozenset(libraries), fields=True).visit(tree)
        _drop_unused(tree, lambda stmt: isinstance(stmt, (ast.Import, ast.ImportFrom)))
        whole = _emit(tree)
        text = _without_library(ast.parse(whole), set(libraries)) if whole else None
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


COARSE_PASSES: tuple[Pass, ...] = (dead_code, plain_jax, removals, dead_code, inlinings, field_values, unwrappings)


def coarse_passes(values: dict[str, str]) -> tuple[Pass, ...]:
    """COARSE_PASSES with `plain_jax` given what a run of the program computed (`probed_values`)."""
    if not values:
        return COARSE_PASSES

    def with_values(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
        return plain_jax(source, resume_at, values)

    functools.update_wrapper(with_values, plain_jax)  # `__wrapped__`: named as plain_jax in the progress
    return tuple(with_values if make is plain_jax else make for make in COARSE_PASSES)


class PassName(Enum):
    """The search's passes, as a person reads them (search.py runs them in this order)."""

    DEAD_CODE = "dead code"
    PLAIN_JAX = "down to plain JAX"
    REMOVALS = "statements removed"
    INLINING = "inlining"
    FIELD_VALUES = "fields read as their values"
    UNWRAPPING = "unwrapping"
    MINIMIZE = "pysource-minimize"
    READABLE = "readable values"
    GOOD = "clean on the good release"
    OTHER = "other"  # a pass the search was given that is none of the above (tests' own)


# What each coarse pass is called in the progress lines (harness/reduce/progress.py).
PASS_NAMES: dict[Pass, PassName] = {dead_code: PassName.DEAD_CODE, plain_jax: PassName.PLAIN_JAX,
                                    removals: PassName.REMOVALS,
                                    inlinings: PassName.INLINING, field_values: PassName.FIELD_VALUES,
                                    unwrappings: PassName.UNWRAPPING}
