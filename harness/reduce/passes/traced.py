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
from collections.abc import Iterator

from harness.reduce.passes.library import _library_names, _library_values, _mentions, library_packages
from harness.reduce.passes.probe import _values_put
from harness.reduce.passes.probe import probe_program as _probe_program
from harness.reduce.passes.syntax import Place, _blocks, _docstring, _drop_unused, _emit, _located_pass, _skipped

TRACED_KEY = "def "  # a probed body's key: `def NAME`
_TRACED = "__harness_traced__"
_TRACED_HELPER = f'''
def {_TRACED}(name, _path=__import__("os").environ.get("HARNESS_REDUCE_VALUES"), _globals=globals()):
    import functools

    def spelled(fn, args):
        import inspect
        import jax
        import numpy as np
        params = list(inspect.signature(fn).parameters.values())
        if len(params) != len(args) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                           for p in params):
            raise TypeError("not a function of its positional arguments")
        closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
        lines, names, count = [], {{}}, [0]

        def fresh():
            count[0] += 1
            return f"v{{count[0]}}"

        def dtype(d):
            return "jnp." + np.dtype(d).name

        def value(v):
            if v is None or isinstance(v, (bool, int, float, str)):
                return repr(v)
            if isinstance(v, (tuple, list)):
                inner = ", ".join(map(value, v))
                return f"({{inner}}{{',' if len(v) == 1 else ''}})" if isinstance(v, tuple) else f"[{{inner}}]"
            if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
                return dtype(v)
            if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0):
                return f"np.{{np.dtype(v.dtype).name}}({{v.item()!r}})"
            kind = type(v).__name__
            if kind == "NamedSharding":
                return f"jax.sharding.NamedSharding({{mesh(v.mesh)}}, {{spec(v.spec)}})"
            raise TypeError(kind)

        def mesh(m):
            for n, bound in list(_globals.items()):
                if bound is m and not n.startswith("_"):
                    return n
            shape = tuple(m.devices.shape)
            size = int(np.prod(shape))
            return f"jax.sharding.Mesh(np.array(jax.devices()[:{{size}}]).reshape({{shape!r}}), {{tuple(m.axis_names)!r}})"

        def spec(s):
            return "jax.sharding.PartitionSpec(" + ", ".join(value(tuple(p) if isinstance(p, list) else p)
                                                              for p in tuple(s)) + ")"

        def operand(v):
            if type(v).__name__ == "Literal":
                return value(np.asarray(v.val, dtype=v.aval.dtype)[()])
            return names[v]

        INLINED = {{"pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
                    "custom_jvp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
                    "custom_vjp_call": "call_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}}
        REDUCED = {{"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min",
                    "reduce_prod": "jnp.prod", "reduce_and": "jnp.all", "reduce_or": "jnp.any"}}
        RENAMED = {{"and": "bitwise_and", "or": "bitwise_or", "not": "bitwise_not", "xor": "bitwise_xor"}}

        def call(eqn, args):
            prim, p = eqn.primitive.name, dict(eqn.params)
            if prim in REDUCED:
                return f"{{REDUCED[prim]}}({{args[0]}}, axis={{value(tuple(p['axes']))}})"
            if prim == "convert_element_type":
                return f"jax.lax.convert_element_type({{args[0]}}, {{dtype(p['new_dtype'])}})"
            if prim == "sharding_constraint":
                return f"jax.lax.with_sharding_constraint({{args[0]}}, {{value(p['sharding'])}})"
            if prim == "copy" or prim == "copy_p":
                return args[0]
            if prim == "iota":
                return (f"jax.lax.broadcasted_iota({{dtype(p['dtype'])}}, {{value(tuple(p['shape']))}}, "
                        f"{{p['dimension']}})")
            name = RENAMED.get(prim, prim)
            function = getattr(jax.lax, name, None)
            if not callable(function):
                raise TypeError(prim)
            accepted = inspect.signature(function).parameters
            extra = [k for k, v in p.items() if k not in accepted and v is not None]
            if extra:
                raise TypeError(f"{{prim}}: {{extra}}")
            keywords = "".join(f", {{k}}={{value(v)}}" for k, v in p.items()
                               if k in accepted and not (v is None and accepted[k].default is None))
            return f"jax.lax.{{name}}({{', '.join(args)}}{{keywords}})"

        def write(jaxpr, consts, inputs):
            for var, const in zip(jaxpr.constvars, consts):
                const = np.asarray(const)
                if const.size > 16:
                    raise TypeError("a large constant")
                names[var] = fresh()
                lines.append(f"{{names[var]}} = jnp.asarray(np.array({{const.tolist()!r}}, np.{{const.dtype.name}}))")
            for var, name in zip(jaxpr.invars, inputs):
                names[var] = name
            for eqn in jaxpr.eqns:
                args = [operand(v) for v in eqn.invars]
                inner = INLINED.get(eqn.primitive.name)
                if inner is not None and inner in eqn.params:
                    sub = eqn.params[inner]
                    outs = write(getattr(sub, "jaxpr", sub), getattr(sub, "consts", ()), args)
                    for var, out in zip(eqn.outvars, outs):
                        names[var] = out
                    continue
                text = call(eqn, args)
                targets = [fresh() for _ in eqn.outvars]
                for var, target in zip(eqn.outvars, targets):
                    names[var] = target
                many = eqn.primitive.multiple_results
                lines.append(f"{{', '.join(targets)}}{{',' if many and len(targets) == 1 else ''}} = {{text}}")
            return [operand(v) for v in jaxpr.outvars]

        inputs = [fresh() for _ in closed.jaxpr.invars]
        leaves = "(" + ", ".join(p.name for p in params) + ("," if len(params) == 1 else "") + ")"
        head = [f"{{', '.join(inputs)}}{{',' if len(inputs) == 1 else ''}} = jax.tree_util.tree_leaves({{leaves}})"]
        outs = iter(write(closed.jaxpr, closed.consts, inputs))

        def result(s):
            if hasattr(s, "shape") and hasattr(s, "dtype"):
                return next(outs)
            if type(s) is dict:
                return "{{" + ", ".join(f"{{k!r}}: {{result(x)}}" for k, x in s.items()) + "}}"
            if type(s) in (tuple, list):
                inner = ", ".join(map(result, s))
                return f"({{inner}}{{',' if len(s) == 1 else ''}})" if type(s) is tuple else f"[{{inner}}]"
            raise TypeError(type(s))

        body = "\\n".join(head + lines + ["return " + result(shape)])
        scope = {{**_globals, "jax": jax, "jnp": jax.numpy, "np": np}}
        exec("def __harness_spelled__(" + ", ".join(p.name for p in params) + "):\\n"
             + "\\n".join("    " + line for line in body.splitlines()), scope)
        mine = jax.eval_shape(scope["__harness_spelled__"], *args)
        if jax.tree_util.tree_structure(mine) != jax.tree_util.tree_structure(shape) or [
                (x.shape, x.dtype) for x in jax.tree_util.tree_leaves(mine)] != [
                (x.shape, x.dtype) for x in jax.tree_util.tree_leaves(shape)]:
            raise TypeError("the written body gives other results")
        return body

    def wrap(fn):
        done = []

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if not done:
                done.append(True)
                try:
                    said = None if kwargs else spelled(fn, args)
                except Exception:
                    said = None
                if _path:
                    import json
                    with open(_path, "a") as out:
                        out.write(json.dumps(["{TRACED_KEY}" + name, said]) + "\\n")
            return fn(*args, **kwargs)
        return traced
    return wrap
'''


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


def _bodies_put(tree: ast.Module, values: dict[str, str], only: int | None = None) -> int:
    """Each jitted function with a traced body among `values` gets it (`only`: the one with that number alone). The
    number of such functions."""
    count = 0
    for fn in _jitted(tree):
        body = values.get(TRACED_KEY + fn.name)
        if body is None:
            continue
        count += 1
        if only is None or only == count - 1:
            fn.body = ast.parse(body).body
    return count


def _plain_imports(tree: ast.Module) -> None:
    """`import jax`, `import jax.numpy as jnp`, `import numpy as np` where a written body needs them."""
    bound = {(a.asname or a.name) for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    start = 0
    while start < len(tree.body) and (_docstring(tree.body[start]) or (isinstance(stmt := tree.body[start], ast.ImportFrom)
                                                                       and stmt.module == "__future__")):
        start += 1
    for name, statement in (("np", "import numpy as np"), ("jnp", "import jax.numpy as jnp"), ("jax", "import jax")):
        if name not in bound:
            tree.body.insert(start, ast.parse(statement).body[0])


def _calls(expression: str, functions: set[str]) -> bool:
    """Whether an expression (a probed value's key) calls one of `functions` by name."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions
               for n in ast.walk(tree))


def traced_bodies(source: str, resume_at: Place | None = None,
                  values: dict[str, str] | None = None) -> Iterator[tuple[Place, str]]:
    """Candidates, largest first: every traced body put with every value read, what that leaves unused dropped, then
    whatever still uses a library removed; the same without the values; each body alone."""
    if not values or not any(key.startswith(TRACED_KEY) for key in values):
        return
    seen = {source}
    bodies = {key.removeprefix(TRACED_KEY) for key in values if key.startswith(TRACED_KEY)}
    unused = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)

    def candidate(only: int | None, with_values: bool, without_library: bool) -> str | None:
        tree = ast.parse(source)
        if not _bodies_put(tree, values or {}, only):
            return None
        if with_values:  # but what a call of a function given its body computed: the call is what is kept
            _values_put(tree, {key: value for key, value in (values or {}).items() if not key.startswith(TRACED_KEY)
                               and not _calls(key, bodies)})
        _plain_imports(tree)
        _drop_unused(tree, lambda stmt: isinstance(stmt, unused))
        if without_library:
            libraries = set(_library_names(tree))
            tainted = _library_values(tree, libraries) if libraries else set()
            for block in _blocks(tree):
                block[:] = [s for s in block if not _mentions(s, tainted)] or [_located_pass()]
            _drop_unused(tree, lambda stmt: isinstance(stmt, unused))
        return _emit(tree)

    places: list[tuple[Place, int | None, bool, bool]] = [((0, 0), None, True, False), ((0, 1), None, True, True),
                                                          ((0, 2), None, False, False)]
    places += [((1, n), n, False, False) for n in range(_bodies_put(ast.parse(source), values))]
    for place, only, with_values, without_library in places:
        if _skipped(place, resume_at):
            continue
        text = candidate(only, with_values, without_library)
        if text is not None and len(text) >= len(source) and library_packages(text) == library_packages(source):
            continue  # longer and no library less (MAY_GROW: the search tries this pass's longer candidates)
        if text is not None and text not in seen:
            seen.add(text)
            yield place, text
