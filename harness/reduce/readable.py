"""A reduced program pasted into a JAX issue must read like a program (pure).

pysource-minimize shrinks literals as far as its checker lets it: an axis name becomes the int `0` (JAX
takes any hashable as an axis name), a shape `(8, 4)` becomes `(0, 0)`, a name becomes `unique_name_3`,
a float halves into `0.0244140625`. Two guards:

- `less_readable(best, candidate)`: the reasons a pysource-minimize candidate is refused without running
  it. A name-like string (an axis name, a mesh axis, a PartitionSpec entry, a dict key) stays as it is (a
  shorter one makes no line shorter, and each step was a kept candidate); a positive int stays positive and one of 2 or more stays at least 2 (shapes,
  mesh sizes, counts stay plausible: 8 -> 4 -> 2); a float never gets a longer spelling; no identifier is
  renamed to pysource-minimize's `unique_name_N`.
- A path is never shortened: a string literal used as a path (an argument to `open`, `Path`, or a
  function of `os`, `os.path`, `shutil`, `pathlib`; or one holding a `/` or ending in a file extension)
  stays as it is wherever a candidate keeps the expression around it. A shortened path writes elsewhere:
  `'/tmp/x/canary/out/cfg_'` made `'/tmp/x/canary'` wrote beside the user's folder, `'logs/train.log'`
  made `'g'` truncates a file in the project.
- `restorations(source)`: candidates that put readable values back where a program has unreadable ones
  anyway (a reduction resumed from before these guards, or values the coarse passes left): ints used as
  axis names become short names ('x', 'y', ...), zero sizes in shapes become 2, 4 or 8. Each is kept only
  when it keeps the signature, like any candidate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator

from harness.reduce.passes.syntax import Place, _emit, _skipped

RENAMED_PREFIX = "unique_name_"  # pysource-minimize's MinimizeUniqueName
SIZES = (2, 4, 8)  # the sizes a zero in a shape is restored to, in order
AXIS_LETTERS = ("x", "y", "z", "w", "u", "v")

# Where JAX takes axis names: these calls' arguments (every one for a PartitionSpec; for a collective the
# one after the operand) and these keywords.
_SPEC_CALLS = frozenset({"P", "PartitionSpec"})
_COLLECTIVES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "psum_scatter",
                          "all_to_all", "pvary", "pbroadcast", "pshuffle", "pswapaxes"})
_AXIS_INDEX = frozenset({"axis_index", "axis_size"})
_MESHES = frozenset({"make_mesh", "Mesh"})
_AXIS_KEYWORDS = frozenset({"axis_name", "axis_names", "axes"})
# Calls whose first argument is a shape.
_SHAPED = frozenset({"ones", "zeros", "empty", "full", "arange", "reshape", "normal", "uniform", "randint",
                     "ShapeDtypeStruct", "broadcast_to", "make_mesh", "iota"})


# Calls whose string arguments are paths, by the called name, and modules all of whose functions take paths.
_PATH_CALLS = frozenset({"open", "Path", "PurePath", "PosixPath", "FileIO", "mkdir", "makedirs", "remove",
                         "unlink", "rmdir", "rmtree", "rename", "replace", "write_text", "write_bytes", "touch",
                         "copy", "copyfile", "copytree", "move", "symlink", "chdir", "savez", "save", "load",
                         "loadtxt", "savetxt", "NamedTemporaryFile", "mkdtemp", "mkstemp", "TemporaryDirectory"})
_PATH_PYTHON_MODULES = frozenset({"os", "path", "shutil", "pathlib", "tempfile", "glob"})
# A file extension: a dot and up to 8 letters or digits at the end (`train.log`, `cfg.yaml`, `out.npz`).
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")


def _looks_like_path(value: object) -> bool:
    return isinstance(value, str) and ("/" in value or "\\" in value or bool(_EXTENSION.search(value)))


def _path_literals(tree: ast.AST) -> set[int]:
    """The ids of the string constants of `tree` that are paths: path-like text, or any string argument of
    a call that takes paths (also inside an f-string or a `+` there)."""
    found = {id(n) for n in ast.walk(tree) if isinstance(n, ast.Constant) and _looks_like_path(n.value)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        python_module = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else \
            func.value.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) else ""
        if _called(node) in _PATH_CALLS or python_module in _PATH_PYTHON_MODULES:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                found |= {id(n) for n in ast.walk(argument) if isinstance(n, ast.Constant)
                          and isinstance(n.value, str)}
    return found


def _path_changed(old: ast.AST, new: ast.AST, paths: set[int]) -> str | None:
    """Why the change from `old` to `new` shortens a path: one of `old`'s path literals is not in `new`
    as it was (the change keeps the expression, so the program would use another path)."""
    kept = [n.value for n in ast.walk(new) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    for node in ast.walk(old):
        if id(node) in paths and isinstance(node, ast.Constant) and node.value not in kept:  # a path: a Constant
            made = new.value if isinstance(new, ast.Constant) else ast.unparse(new)
            return f"the path {node.value!r} made {str(made)[:60]!r}"
    return None


def _is_name(value: object) -> bool:
    return isinstance(value, str) and value.isidentifier()


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


def _literal_leaves(node: ast.AST) -> list[ast.Constant] | None:
    """The constants of a literal made only of constants, tuples, lists and sets; None for anything else."""
    if isinstance(node, ast.Constant):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        leaves = []
        for element in node.elts:
            found = _literal_leaves(element)
            if found is None:
                return None
            leaves += found
        return leaves
    return None


def _changes(before: ast.AST, after: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """The outermost pairs of nodes where `after` differs from `before`, walked in step. Where a list of
    children changed length (something was removed), nothing is compared: removing is not made unreadable."""
    if type(before) is not type(after):
        yield before, after
        return
    if isinstance(before, ast.Constant) and isinstance(after, ast.Constant):  # after: of before's type
        if type(before.value) is not type(after.value) or before.value != after.value:
            yield before, after
        return
    for name in before._fields:
        old, new = getattr(before, name, None), getattr(after, name, None)
        if isinstance(old, ast.AST) and isinstance(new, ast.AST):
            yield from _changes(old, new)
        elif isinstance(old, list) and isinstance(new, list):
            if len(old) != len(new):
                continue
            for a, b in zip(old, new):
                if isinstance(a, ast.AST) and isinstance(b, ast.AST):
                    yield from _changes(a, b)
                elif a != b:
                    yield before, after
                    return
        elif isinstance(old, ast.AST) or isinstance(new, ast.AST):
            continue  # an optional part dropped (a default, an annotation): a removal
        elif name not in ("ctx", "kind", "type_comment") and old != new:
            yield before, after  # a name, an attribute, an operator's spelling
            return


def _why(old: ast.AST, new: ast.AST) -> str | None:
    renamed = [n.id for n in ast.walk(new) if isinstance(n, ast.Name) and n.id.startswith(RENAMED_PREFIX)]
    if renamed:
        return f"a name renamed to {renamed[0]}"
    leaves = _literal_leaves(old)
    if leaves is None:
        return None
    names = [c.value for c in leaves if _is_name(c.value)]
    new_value = new.value if isinstance(new, ast.Constant) else None
    if names and isinstance(new, ast.Constant) and not (isinstance(new_value, str) and new_value):
        return f"the name {names[0]!r} made {new_value!r}"
    if names and isinstance(new_value, str) and len(leaves) == 1:
        # Shortened ('data' -> 'da' -> 'd'): the same lines, a name that says less, and a kept candidate per step
        # (the training script's four axis names took 18, a tenth of the search's time).
        return f"the name {names[0]!r} shortened to {new_value!r}"
    old_int, new_int = _int(old), _int(new)
    if old_int is not None and new_int is not None and old_int >= 1 and new_int < min(old_int, 2):
        return f"the size {old_int} made {new_int}"
    sizes = [size for c in leaves if (size := _int(c)) is not None]
    if len(leaves) > 1 and sizes and all(s >= 1 for s in sizes) and len(sizes) == len(leaves) \
            and new_int is not None and new_int < 1:
        return f"the shape {ast.unparse(old)} made {new_int}"
    if isinstance(old, ast.Constant) and isinstance(old.value, float) and isinstance(new_value, float) \
            and new_value != 0.0 and len(repr(new_value)) > len(repr(old.value)):
        return f"the number {old.value!r} made {new_value!r}"
    return None


def less_readable(best: str, candidate: str) -> str | None:
    """Why `candidate` (pysource-minimize's change to `best`) reads worse than a program should; None: it
    may be tried."""
    try:
        before, after = ast.parse(best), ast.parse(candidate)
    except SyntaxError:
        return None  # the usual screening says so
    paths = _path_literals(before)
    for old, new in _changes(before, after):
        why = _path_changed(old, new, paths) or _why(old, new)
        if why:
            return why
    return None


# ---- restoring readable values ---------------------------------------------------------------------

def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _axis_positions(tree: ast.AST) -> list[ast.Constant]:
    """Int constants where JAX takes an axis name."""
    found: list[ast.Constant] = []

    def take(node: ast.AST | None) -> None:
        for leaf in (_literal_leaves(node) or []) if node is not None else []:
            if _int(leaf) is not None:
                found.append(leaf)

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        if name in _SPEC_CALLS:
            for arg in node.args:
                take(arg)
        elif name in _COLLECTIVES and len(node.args) >= 2:
            take(node.args[1])
        elif name in _AXIS_INDEX and node.args:
            take(node.args[0])
        elif name in _MESHES and len(node.args) >= 2:
            take(node.args[1])
        for keyword in node.keywords:
            if keyword.arg in _AXIS_KEYWORDS:
                take(keyword.value)
    return found


def _zero_sizes(tree: ast.AST) -> list[ast.Constant]:
    """Zero sizes in a shape: in a tuple or list of ints, or a shaped call's one argument (`ones(0)`)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        groups = []
        if isinstance(node, (ast.Tuple, ast.List)) and node.elts and all(_int(e) is not None for e in node.elts):
            groups.append(node.elts)
        if isinstance(node, ast.Call) and _called(node) in _SHAPED and len(node.args) == 1:
            groups.append(node.args)
        for group in groups:
            for element in group:
                if isinstance(element, ast.Constant) and _int(element) == 0 and element not in found:
                    found.append(element)
    return found


def _with(source: str, finder: Callable[[ast.AST], list[ast.Constant]],
          value_of: Callable[[int, ast.Constant], str | int | None]) -> str | None:
    """`source` with each node `finder` finds given `value_of(index, node)` (None: left as it is)."""
    tree = ast.parse(source)
    nodes = finder(tree)
    changed = False
    for index, node in enumerate(nodes):
        value = value_of(index, node)
        if value is not None:
            node.value = value
            changed = True
    return _emit(tree) if changed else None


def restorations(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
    """Candidates with readable values put back: every int axis name as a short name at once, then each
    alone; every zero size as 2 (then 4, 8) at once, then each alone."""
    tree = ast.parse(source)
    taken = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    axes = _axis_positions(tree)
    letters = [a for a in AXIS_LETTERS if a not in taken] + [f"axis{i}" for i in range(len(axes))]
    named: dict[int | None, str] = {}  # axes are int constants: _int is never None
    for node in axes:
        named.setdefault(_int(node), letters[len(named)])

    def axis_value(only: int | None) -> Callable[[int, ast.Constant], str | None]:
        return lambda index, node: named[_int(node)] if only is None or index == only else None

    def size_value(only: int | None, size: int) -> Callable[[int, ast.Constant], int | None]:
        return lambda index, node: size if only is None or index == only else None

    for only in [None, *range(len(axes))] if axes else []:
        if _skipped((0, -1 if only is None else only), resume_at):
            continue
        text = _with(source, _axis_positions, axis_value(only))
        if text and text != source:
            yield (0, -1 if only is None else only), text
    zeros = _zero_sizes(tree)
    for rank, size in enumerate(SIZES):
        for only in [None, *range(len(zeros))] if zeros else []:
            if _skipped((1, rank, -1 if only is None else only), resume_at):
                continue
            text = _with(source, _zero_sizes, size_value(only, size))
            if text and text != source:
                yield (1, rank, -1 if only is None else only), text
