"""What a library computed, read from a run of the program (pure: the probe is written here, run by the
reducer's quick screen)."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable

from harness.reduce.passes.library import _draws, _library_names, _library_values, _mentions
from harness.reduce.passes.syntax import _blocks, _docstring, _emit

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
def {_PROBE}(key, value, _path=__import__("os").environ.get("{PROBE_VARIABLE}"), _globals=globals()):
    import json

    def named(v):
        for name, bound in list(_globals.items()):
            if bound is v and not name.startswith("_"):
                return name
        return None

    def mesh(shape, names):
        count = 1
        for n in shape:
            count *= n
        if not all(isinstance(n, str) for n in names):
            raise TypeError("an axis name that is no string")
        return f"jax.sharding.Mesh(np.array(jax.devices()[:{{count}}]).reshape({{shape!r}}), {{names!r}})"

    def mesh_of(m):  # a sharding's: the program's own mesh by its name where a global holds it
        return named(m) or mesh(tuple(m.devices.shape), tuple(m.axis_names))

    def spec(s):
        for part in s:
            if not (part is None or isinstance(part, str)
                    or (type(part) is tuple and all(isinstance(p, str) for p in part))):
                raise TypeError("a partition that is no axis name")
        return "jax.sharding.PartitionSpec(" + ", ".join(map(repr, tuple(s))) + ")"

    def sharding(v):
        kind = type(v).__name__
        if kind == "Mesh" and hasattr(v, "axis_names") and hasattr(v, "devices"):
            return mesh(tuple(v.devices.shape), tuple(v.axis_names))  # (its name may be the assignment's own)
        if kind == "NamedSharding":
            return f"jax.sharding.NamedSharding({{mesh_of(v.mesh)}}, {{spec(v.spec)}})"
        if kind == "PositionalSharding":  # the same placement, written as a NamedSharding over axes of its own
            names = tuple(f"p{{i}}" for i in range(len(v.shape)))
            return f"jax.sharding.NamedSharding({{mesh(tuple(v.shape), names)}}, {{spec(names)}})"
        if kind == "PartitionSpec":
            return spec(v)
        if kind == "ShapeDtypeStruct":
            return f"jax.ShapeDtypeStruct({{tuple(v.shape)!r}}, jnp.{{v.dtype}})"
        return None

    def text(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return repr(v)
        written = sharding(v)
        if written is not None:
            return written
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
        import jax
        leaves, tree = jax.tree_util.tree_flatten(v)
        if leaves and not jax.tree_util.treedef_is_leaf(tree) and all(hasattr(x, "shape") and hasattr(x, "dtype")
                                                                      for x in leaves):
            # a library's box of arrays (Flax's `Partitioned`, an Equinox module): its arrays, as JAX flattens it
            return text(leaves[0]) if len(leaves) == 1 else "(" + ", ".join(map(text, leaves)) + ")"
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
    # the program's own functions that return what a library made (`def init_fn(k, x): return model.init(k, x)`)
    producers = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                 and any(isinstance(r, ast.Return) and r.value is not None and _mentions(r.value, tainted)
                         for r in ast.walk(f))}
    found = []
    for block in _blocks(tree, classes=False):
        for index, stmt in enumerate(block):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and _draws(stmt.value, tainted, producers):
                found.append((block, index, stmt.targets[0].id, ast.unparse(stmt.value)))
    return found


def probe_program(source: str, more: Callable[[ast.Module], str] | None = None) -> str | None:
    """The program with a probe after each assignment of a value a library made, which writes what it
    computed (as plain JAX) to the file named by PROBE_VARIABLE; None where there is none. `more`: probes of
    another kind put in the tree, giving their helper's text ("" for none: harness/reduce/passes/traced.py)."""
    tree = ast.parse(source)
    found = _probed_assignments(tree)
    helper = more(tree) if more is not None else ""
    if not found and not helper:
        return None
    for block, index, name, key in sorted(found, key=lambda f: -f[1]):  # from the end: the indexes hold
        probe = ast.parse(f"{_PROBE}({key!r}, {name})").body[0]
        block.insert(index + 1, probe)
    start = 0
    while start < len(tree.body) and (_docstring(tree.body[start])
                                      or (isinstance(stmt := tree.body[start], ast.ImportFrom)
                                          and stmt.module == "__future__")):
        start += 1
    tree.body[start:start] = ast.parse(_PROBE_HELPER + helper).body
    return _emit(tree)




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
        if key.startswith("why "):  # what the traced body's writer could not spell (passes/traced.py: unspelled)
            continue
        mode = "exec" if key.startswith("def ") else "eval"  # a traced body (passes/traced.py), or a value
        first, second = (sorted(said, key=str) * 2)[:2]
        (only,) = said if len(said) == 1 else (_orders_only(first, second, mode) if len(said) == 2 else None,)
        if only is not None:
            try:
                ast.parse(only, mode=mode)
            except SyntaxError:
                continue
            values[key] = only
    return values


def _orders_only(first: str | None, second: str | None, mode: str = "eval") -> str | None:
    """Two runs' values of one right-hand side that differ only in the order of tuples of names (a mesh's axis names
    the program made from a set, run under two hash seeds): one of them, each such tuple written as `tuple({...})`,
    so the candidate orders it as a set does, seed by seed; None where they differ otherwise."""
    if first is None or second is None:
        return None
    try:
        trees = ast.parse(first, mode=mode), ast.parse(second, mode=mode)
    except SyntaxError:
        return None
    found: list[ast.Tuple] = []
    if not _alike(*trees, found) or not found:
        return None
    sets = {id(t) for t in found}

    class _AsSets(ast.NodeTransformer):
        def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
            if id(node) in sets:
                names = sorted(node.elts, key=lambda e: str(e.value) if isinstance(e, ast.Constant) else "")
                return ast.Call(ast.Name("tuple", ast.Load()), [ast.Set(names)], [])  # (either run's: sorted)
            self.generic_visit(node)
            return node

    return ast.unparse(ast.fix_missing_locations(_AsSets().visit(trees[0])))


def _names(node: ast.AST) -> list[str] | None:
    """A tuple's names, where it is a tuple of two or more distinct strings."""
    if not isinstance(node, ast.Tuple) or len(node.elts) < 2:
        return None
    names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names if len(names) == len(node.elts) == len(set(names)) else None


def _alike(a: ast.AST, b: ast.AST, found: list[ast.Tuple]) -> bool:
    """`a` and `b` are the same but for tuples of names in another order (each of `a`'s is added to `found`)."""
    names_a, names_b = _names(a), _names(b)
    if names_a is not None and names_b is not None and names_a != names_b and sorted(names_a) == sorted(names_b):
        assert isinstance(a, ast.Tuple)  # (_names: a tuple)
        found.append(a)
        return True
    if type(a) is not type(b):
        return False
    for field in a._fields:
        x, y = getattr(a, field, None), getattr(b, field, None)
        if isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y) or not all(_alike(i, j, found) if isinstance(i, ast.AST) else i == j
                                           for i, j in zip(x, y)):
                return False
        elif isinstance(x, ast.AST) and isinstance(y, ast.AST):
            if not _alike(x, y, found):
                return False
        elif x != y:
            return False
    return True


# The modules a value's text names, and the import that binds each where the program does not.
_PLAIN_IMPORTS = {"jnp": ("jax.numpy", "import jax.numpy as jnp"), "np": ("numpy", "import numpy as np"),
                  "jax": ("jax", "import jax")}


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
        bound = any(isinstance(n, ast.Import) and any(a.name == module and (a.asname or a.name) == name
                                                      for a in n.names) for n in tree.body)
        if not bound:
            start = 1 if tree.body and _docstring(tree.body[0]) else 0
            tree.body.insert(start, ast.parse(statement).body[0])
    return count


