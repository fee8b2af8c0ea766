"""`traced_bodies`: a jitted function whose body calls a library (`model.apply(variables, x)` inside `jax.jit`)
replaced by the JAX it traced to, written out equation by equation as `jax.lax`/`jax.numpy` calls (pure: the
writer is probe code, run by the reducer's quick screen with the other probes of harness/reduce/passes/probe.py).

A library's layer is a function of arrays once traced: its jaxpr. A run of the program with `_TRACED` as the
innermost decorator of such a function writes, at the function's first trace, the body that jaxpr spells (its
arguments' leaves read with `jax.tree_util.tree_leaves`, one statement per equation, a nested `jit`, `custom_jvp`
or `custom_vjp` inlined), keyed `def NAME`; the writer checks its own text (run on the same arguments, it must give
the same result shapes) and writes nothing where it cannot spell an equation (random bits, a loop, a `shard_map`)
or a result (a library's box of arrays). The pass then puts that body in the function's place, with the values
the other probes read, and what that leaves unused goes: where the miss is in the traced computation, the
library's import goes too. The signature it keeps is the reducer's check: where the miss needs the library's own
code, the candidate is rejected and the program keeps the call.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator

from harness.reduce.passes.library import _library_names, _library_values, _mentions, library_packages
from harness.reduce.passes.probe import _values_put
from harness.reduce.passes.probe import probe_program as _probe_program
from harness.reduce.passes.syntax import Place, _blocks, _docstring, _drop_unused, _emit, _located_pass, _skipped
from harness.reduce.passes.traced_writer import _TRACED, TRACED_KEY, UNSPELLED_KEY
from harness.reduce.passes.traced_writer import TRACED_HELPER as _TRACED_HELPER


def _jitted(tree: ast.Module) -> list[ast.FunctionDef]:
    """The functions whose body mentions a value a library made and that are traced by `jit` (a decorator that
    names it, or passed to a call of it), taking positional parameters only."""
    libraries = _library_names(tree)
    if not libraries:
        return []
    tainted = _library_values(tree, set(libraries))
    passed = {a.id for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("jit")
              for a in n.args[:1] if isinstance(a, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or not any(_mentions(s, tainted) for s in node.body):
            continue
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or not (a.posonlyargs or a.args):
            continue
        if node.name in passed or any("jit" in ast.unparse(d) for d in node.decorator_list):
            found.append(node)
    return found


def _traced_probes(tree: ast.Module) -> str:
    """Put the writer of each jitted library-calling function's traced body (`_TRACED`) on it, innermost; the
    writer's definition, "" where there is no such function."""
    found = _jitted(tree)
    for fn in found:
        fn.decorator_list.append(ast.parse(f"{_TRACED}({fn.name!r})", mode="eval").body)
    return _TRACED_HELPER if found else ""


def probe_program(source: str) -> str | None:
    """The program with the probes of the values a library made (harness/reduce/passes/probe.py) and of the bodies
    its jitted functions traced to; None where there is neither."""
    return _probe_program(source, _traced_probes)


def _bodies_put(tree: ast.Module, values: dict[str, str], only: int | None = None,
                named: set[str] | None = None) -> int:
    """Each jitted function with a traced body among `values` gets it (`only`: the one with that number alone;
    `named`: the functions of these names, as found before values were put). The number of such functions."""
    count = 0
    found = _jitted(tree) if named is None else [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                                                 and n.name in named]
    for fn in found:
        body = values.get(TRACED_KEY + fn.name)
        if body is None:
            continue
        count += 1
        if only is None or only == count - 1:
            fn.body = ast.parse(body).body
    return count


# Submodules of JAX a written body may name that `import jax` does not load (a shard_map before `jax.shard_map`, the
# threefry primitive).
_SUBMODULES = ("jax.experimental.shard_map", "jax.extend.random")


def _plain_imports(tree: ast.Module) -> None:
    """`import jax`, `import jax.numpy as jnp`, `import numpy as np` where a written body needs them, and the
    submodules of JAX it names."""
    imported = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    bound = {(a.asname or a.name) for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    start = 0
    while start < len(tree.body) and (_docstring(tree.body[start]) or (isinstance(stmt := tree.body[start], ast.ImportFrom)
                                                                       and stmt.module == "__future__")):
        start += 1
    named = {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for module in _SUBMODULES:
        if module not in imported and any(n.startswith(module + ".") for n in named):
            tree.body.insert(start, ast.parse(f"import {module}").body[0])
    for name, statement in (("np", "import numpy as np"), ("jnp", "import jax.numpy as jnp"), ("jax", "import jax")):
        if name not in bound:
            tree.body.insert(start, ast.parse(statement).body[0])


def unspelled(lines: str, values: dict[str, str]) -> dict[str, str]:
    """What the probe's runs (their lines, as `probed_values` read them into `values`) say of each jitted function
    whose body has no written text: the function -> what its writer could not spell (`the `xyz` primitive`), or that
    the two runs traced it to different JAX."""
    why: dict[str, str] = {}
    probed: set[str] = set()
    for line in lines.splitlines():
        try:
            key, said = json.loads(line)
        except (ValueError, TypeError):
            continue
        if isinstance(key, str) and key.startswith(UNSPELLED_KEY) and isinstance(said, str):
            why.setdefault(key.removeprefix(UNSPELLED_KEY), said)
        elif isinstance(key, str) and key.startswith(TRACED_KEY):
            probed.add(key.removeprefix(TRACED_KEY))
    for name in sorted(probed - why.keys()):
        if TRACED_KEY + name not in values:
            why[name] = "its runs under two hash seeds traced it to different JAX (its Python code, a library's " \
                        "included, follows the hash seed)"
    return why


def _calls(expression: str, functions: set[str]) -> bool:
    """Whether an expression (a probed value's key) calls one of `functions`: names it (`init_fn(k, x)`, or
    `jax.jit(init_fn, out_shardings=...)(k, x)`)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Name) and n.id in functions for n in ast.walk(tree))


def _candidates(source: str, values: dict[str, str]) -> Iterator[tuple[Place, str, str | None]]:
    """Every candidate of the pass, unfiltered: its place, its text, and the function whose body it put alone (None for
    those that put every body)."""
    bodies = {key.removeprefix(TRACED_KEY) for key in values if key.startswith(TRACED_KEY)}
    unused = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)

    def candidate(only: int | None, with_values: bool, without_library: bool, computed: str | None = None) -> str | None:
        tree = ast.parse(source)
        # what a call of a function given its body computed is put only for `computed`'s calls, before the bodies (an
        # assignment is found by the library it reads, which its body no longer does once written)
        put = {key: value for key, value in values.items() if not key.startswith(TRACED_KEY)
               and not _calls(key, bodies - {computed})} if with_values else {}
        if computed is not None:
            _values_put(tree, put)
        if not _bodies_put(tree, values, only, set(alone) if computed is not None else None):
            return None
        if with_values and computed is None:
            _values_put(tree, put)
        _plain_imports(tree)
        _drop_unused(tree, lambda stmt: isinstance(stmt, unused))
        if without_library:
            libraries = set(_library_names(tree))
            tainted = _library_values(tree, libraries) if libraries else set()
            for block in _blocks(tree):
                block[:] = [s for s in block if not _mentions(s, tainted)] or [_located_pass()]
            _drop_unused(tree, lambda stmt: isinstance(stmt, unused))
        return _emit(tree)

    tree = ast.parse(source)
    alone = [fn.name for fn in _jitted(tree) if TRACED_KEY + fn.name in values]
    # First, for each rewritten function, every value put, those its calls computed too, and what still uses a library
    # removed: the smallest, where the miss is in another function that only reads such a value (a model's apply, not
    # its init).
    places: list[tuple[Place, int | None, bool, bool, str | None]] = [
        ((-1, n), None, True, True, name) for n, name in enumerate(alone)]
    places += [((0, 0), None, True, False, None), ((0, 1), None, True, True, None), ((0, 2), None, False, False, None)]
    places += [((1, n), n, False, False, None) for n in range(len(alone))]
    for place, only, with_values, without_library, computed in places:
        text = candidate(only, with_values, without_library, computed)
        if text is not None:
            yield place, text, None if only is None else alone[only]


def alone_candidates(source: str, values: dict[str, str]) -> dict[str, str]:
    """The candidates of `source` that put one function's traced body alone: their text -> the function."""
    return {text: name for _place, text, name in _candidates(source, values) if name is not None}


def traced_bodies(source: str, resume_at: Place | None = None,
                  values: dict[str, str] | None = None) -> Iterator[tuple[Place, str]]:
    """Candidates, largest first: every traced body put with every value read, what that leaves unused dropped, then
    whatever still uses a library removed; the same without the values; each body alone (whatever its length: it
    takes that function's library calls out, and what it gives is what the report says of the call)."""
    if not values or not any(key.startswith(TRACED_KEY) for key in values):
        return
    seen = {source}
    for place, text, alone in _candidates(source, values):
        if _skipped(place, resume_at):
            continue
        if alone is None and len(text) >= len(source) and library_packages(text) == library_packages(source):
            continue  # longer and no library less (MAY_GROW: the search tries this pass's longer candidates)
        if text not in seen:
            seen.add(text)
            yield place, text
