"""What every pass works with (pure): a candidate's place in its pass's order, the program as `ast.unparse`
writes it, its statement lists, and what a change leaves unused."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterator
from typing import Protocol

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



def _calls(node: ast.AST) -> bool:
    """Whether evaluating `node` calls anything (written anywhere inside it)."""
    return any(isinstance(n, ast.Call) for n in ast.walk(node))



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



def _is_one_of(stmt: ast.stmt, kinds: tuple[type[ast.stmt], ...]) -> bool:
    return isinstance(stmt, kinds)


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)

