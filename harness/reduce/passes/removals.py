"""`removals`: a chunk of one block's statements deleted, big chunks of the outer blocks first (pure)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator

from harness.reduce.passes.syntax import (Place, _blocks, _bound_names, _calls, _drop_unused, _emit, _located_pass,
                                          _skipped, imported_packages)
from harness.reduce.raises import out_of_sight


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


