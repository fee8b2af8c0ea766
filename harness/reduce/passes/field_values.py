"""`field_values`: a plain value holder's fields read as their values (pure)."""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Iterator

from harness.reduce.passes.syntax import Place, _docstring, _drop_unused, _emit, _skipped
from harness.reduce.raises import bindings, out_of_sight

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


