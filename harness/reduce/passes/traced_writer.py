"""The writer the traced pass puts into a program (harness/reduce/passes/traced.py): run inside the program, with its
own JAX, at a library-calling jitted function's first trace it writes the body that function's jaxpr spells as
public JAX calls, keyed `def NAME`, or why it could not (`why def NAME`). Plain text, kept apart from the pass's
pure logic."""

from __future__ import annotations

TRACED_KEY = "def "  # a probed body's key: `def NAME`
UNSPELLED_KEY = "why def "  # what the writer could not spell in a body: `why def NAME`
_TRACED = "__harness_traced__"
# The writer, run inside the program (its own JAX). Plain text with two names put in (not an f-string: its braces are
# Python's). What a library's code commonly traces to is written back as the public call that makes it: a key's
# random bits as `jax.random` calls (a sampler JAX jits by name, `_truncated_normal`, as the sampler itself), a loop or
# a branch as `jax.lax.scan`/`while_loop`/`cond` of a nested function, a `shard_map` and a nested `jit` with shardings
# as themselves; a nested `jit` without shardings and a `custom_jvp`/`custom_vjp` are inlined; equations whose results
# nothing uses are left out.
TRACED_HELPER = r'''
def __TRACED__(name, _path=__import__("os").environ.get("HARNESS_REDUCE_VALUES"), _globals=globals()):
    import functools

    class Unspelled(Exception):
        pass

    def spelled(fn, args):
        import inspect
        import jax
        import numpy as np
        try:
            import jax.extend.random
        except ImportError:
            pass
        params = list(inspect.signature(fn).parameters.values())
        if len(params) != len(args) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                           for p in params):
            raise Unspelled("a function of more than its positional arguments")
        closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
        names, count = {}, [0]

        def fresh(prefix="v"):
            count[0] += 1
            return f"{prefix}{count[0]}"

        def dtype(d):
            return "jnp." + np.dtype(d).name

        def literal(v):
            return type(v).__name__ == "Literal"

        def value(v):
            if v is None or isinstance(v, (bool, int, float, str)):
                return repr(v)
            if isinstance(v, (tuple, list)):
                inner = ", ".join(map(value, v))
                return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
            if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
                return dtype(v)
            if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0):
                return f"np.{np.dtype(v.dtype).name}({v.item()!r})"
            kind = type(v).__name__
            if kind == "NamedSharding":
                return f"jax.sharding.NamedSharding({mesh(v.mesh)}, {spec(v.spec)})"
            if kind == "PartitionSpec":
                return spec(v)
            raise Unspelled(f"a `{kind}` parameter")

        def mesh(m):
            for n, bound in list(_globals.items()):
                if n.startswith("_") or type(bound).__name__ != "Mesh":
                    continue
                if bound is m or bound == m or getattr(bound, "abstract_mesh", None) == m:
                    return n
            if type(m).__name__ != "Mesh":
                raise Unspelled("a mesh no global of the program holds")
            shape = tuple(m.devices.shape)
            size = int(np.prod(shape))
            return f"jax.sharding.Mesh(np.array(jax.devices()[:{size}]).reshape({shape!r}), {tuple(m.axis_names)!r})"

        def spec(s):
            parts = [value(tuple(p) if isinstance(p, list) else p) for p in tuple(s)]
            while parts and parts[-1] == "None":
                parts.pop()
            return "jax.sharding.PartitionSpec(" + ", ".join(parts) + ")"

        def operand(v):
            if literal(v):
                item = np.asarray(v.val, dtype=v.aval.dtype)[()]
                if getattr(v.aval, "weak_type", False) and isinstance(item.item(), (bool, int, float)):
                    return repr(item.item())
                return value(item)
            return names[v]

        def tup(items):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

        def targets(items):
            return ", ".join(items) + ("," if len(items) == 1 else "") if items else "[]"

        def constant(const):
            if jax.dtypes.issubdtype(getattr(const, "dtype", np.float32), jax.dtypes.prng_key):
                return f"jax.random.wrap_key_data({constant(jax.random.key_data(const))})"
            const = np.asarray(const)
            if const.size > 16:
                raise Unspelled("a constant of more than 16 numbers")
            return f"jnp.asarray(np.array({const.tolist()!r}, np.{const.dtype.name}))"

        def live(jaxpr):
            needed = {v for v in jaxpr.outvars if not literal(v)}
            kept = []
            for eqn in reversed(jaxpr.eqns):
                if eqn.effects or any(v in needed for v in eqn.outvars if not literal(v)):
                    kept.append(eqn)
                    needed |= {v for v in eqn.invars if not literal(v)}
            return kept[::-1]

        def nested(closed, inputs, head, lines, result, name=None):
            """A nested function of the equations of `closed`, its invars named `inputs` (outer names for what it
            closes over); `head`: its parameters, then lines that unpack them; `result`: its return's text."""
            fname = name if name and name.isidentifier() and name not in _globals and not name.startswith("_") \
                else fresh("f")
            body = []
            outs = write(getattr(closed, "jaxpr", closed), getattr(closed, "consts", ()), inputs, body)
            lines.append(f"def {fname}({head[0]}):")
            lines.extend("    " + line for line in head[1:] + body)
            lines.append("    return " + result(outs))
            return fname

        def unspecified(s):
            return s is None or type(s).__name__ in ("UnspecifiedValue", "AUTO")

        def key_typed(v):
            return jax.dtypes.issubdtype(getattr(v.aval, "dtype", np.float32), jax.dtypes.prng_key)

        def impl(p):
            named = getattr(p.get("impl"), "name", None)
            if named is None:
                raise Unspelled("a key of an implementation with no name")
            return "" if named == jax.config.jax_default_prng_impl else f", impl={named!r}"

        RANDOM = {"random_wrap": lambda a, p: f"jax.random.wrap_key_data({a[0]}{impl(p)})",
                  "random_unwrap": lambda a, p: f"jax.random.key_data({a[0]})",
                  "random_bits": lambda a, p: f"jax.random.bits({a[0]}, {value(tuple(p['shape']))}, "
                                              f"jnp.uint{p['bit_width']})",
                  "random_split": lambda a, p: f"jax.random.split({a[0]}, {value(tuple(p['shape']))})",
                  "random_fold_in": lambda a, p: f"jax.random.fold_in({a[0]}, {a[1]})",
                  "random_seed": lambda a, p: f"jax.random.key({a[0]}{impl(p)})",
                  "random_clone": lambda a, p: f"jax.random.clone({a[0]})",
                  "threefry2x32": lambda a, p: f"jax.extend.random.threefry2x32_p.bind({', '.join(a)})"}
        # JAX's samplers, each a `jit` of its own named so: (its operands beside the key, the call given the key, those
        # operands, the result's shape and dtype)
        SAMPLERS = {"_normal": (0, lambda k, a, s, d: f"jax.random.normal({k}, {s}, {d})"),
                    "_uniform": (2, lambda k, a, s, d: f"jax.random.uniform({k}, {s}, {d}, {a[0]}, {a[1]})"),
                    "_truncated_normal": (2, lambda k, a, s, d: f"jax.random.truncated_normal({k}, {a[0]}, {a[1]}, "
                                                                 f"{s}, {d})"),
                    "_bernoulli": (1, lambda k, a, s, d: f"jax.random.bernoulli({k}, {a[0]}, {s})"),
                    "_randint": (2, lambda k, a, s, d: f"jax.random.randint({k}, {s}, {a[0]}, {a[1]}, {d})")}
        COLLECTIVE = {"psum": "psum", "psum2": "psum", "psum_invariant": "psum", "pmax": "pmax", "pmin": "pmin"}
        REDUCED = {"reduce_sum": "jnp.sum", "reduce_max": "jnp.max", "reduce_min": "jnp.min",
                   "reduce_prod": "jnp.prod", "reduce_and": "jnp.all", "reduce_or": "jnp.any"}
        RENAMED = {"and": "bitwise_and", "or": "bitwise_or", "not": "bitwise_not", "xor": "bitwise_xor"}
        INLINED = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
                   "custom_jvp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
                   "custom_vjp_call": "call_jaxpr", "remat": "jaxpr", "checkpoint": "jaxpr"}
        IDENTITY = ("copy", "copy_p", "pbroadcast", "pvary", "optimization_barrier")

        def names_spec(names, ndim):
            parts = [None if not names.get(d) else names[d][0] if len(names[d]) == 1 else tuple(names[d])
                     for d in range(ndim)]
            return spec(parts)

        def structured(eqn, args, lines):
            """An equation that holds functions of its own, or a sampler or key operation: (its call, how its results
            group: each group is one tuple of the call's result; None: as the primitive's, False: one array), None
            where it is none of those."""
            prim, p = eqn.primitive.name, dict(eqn.params)
            n = len(eqn.outvars)
            if prim in ("pjit", "jit") and p.get("name") in SAMPLERS and n == 1 and eqn.invars \
                    and key_typed(eqn.invars[0]) and len(eqn.invars) == SAMPLERS[p["name"]][0] + 1:
                aval = eqn.outvars[0].aval
                call = SAMPLERS[p["name"]][1](args[0], args[1:], value(tuple(aval.shape)), dtype(aval.dtype))
                return call, False  # one array, though a `jit` has a list of results
            if prim in RANDOM:
                return RANDOM[prim](args, p), None
            if prim in ("pjit", "jit") and not all(unspecified(s) for s in (*p.get("in_shardings", ()),
                                                                             *p.get("out_shardings", ()))):
                if any(layout is not None for layout in (*p.get("in_layouts", ()), *p.get("out_layouts", ()))):
                    raise Unspelled("a nested `jit` with layouts")
                inputs = [fresh() for _ in args]
                f = nested(p["jaxpr"], inputs, [", ".join(inputs)], lines, tup, p.get("name"))
                keywords = ""
                for which in ("in_shardings", "out_shardings"):
                    given = tuple(p.get(which, ()))
                    if all(unspecified(s) for s in given):
                        continue
                    if any(unspecified(s) for s in given):
                        raise Unspelled(f"a nested `jit` with some of its {which} unspecified")
                    keywords += f", {which}={tup([value(s) for s in given])}"
                donated = [i for i, d in enumerate(p.get("donated_invars", ())) if d]
                if donated:
                    keywords += f", donate_argnums={tup([str(i) for i in donated])}"
                return f"jax.jit({f}{keywords})({', '.join(args)})", [n]
            if prim == "scan":
                nc, nk = p["num_consts"], p["num_carry"]
                consts, carry, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
                c, x = [fresh() for _ in carry], [fresh() for _ in xs]
                head = ["c, x"] + ([f"{targets(c)} = c"] if c else []) + ([f"{targets(x)} = x"] if x else [])
                f = nested(p["jaxpr"], consts + c + x, head, lines, lambda o: f"{tup(o[:nk])}, {tup(o[nk:])}")
                unroll = p.get("unroll", 1)
                keywords = (", reverse=True" if p.get("reverse") else "") + \
                    (f", unroll={unroll!r}" if unroll not in (1, False, True) else "")
                return f"jax.lax.scan({f}, {tup(carry)}, {tup(xs)}, length={p['length']}{keywords})", [nk, n - nk]
            if prim == "while":
                cn, bn = p["cond_nconsts"], p["body_nconsts"]
                cc, bc, init = args[:cn], args[cn:cn + bn], args[cn + bn:]
                c = [fresh() for _ in init]
                cond = nested(p["cond_jaxpr"], cc + c, ["c", f"{targets(c)} = c"], lines, lambda o: o[0])
                b = [fresh() for _ in init]
                body = nested(p["body_jaxpr"], bc + b, ["c", f"{targets(b)} = c"], lines, tup)
                return f"jax.lax.while_loop({cond}, {body}, {tup(init)})", [n]
            if prim == "cond":
                index, ops = args[0], args[1:]
                branches = []
                for branch in p["branches"]:
                    inputs = [fresh() for _ in ops]
                    branches.append(nested(branch, inputs, [", ".join(inputs)], lines, tup))
                rest = "".join(", " + o for o in ops)
                if len(branches) == 2:
                    return f"jax.lax.cond({index}, {branches[1]}, {branches[0]}{rest})", [n]
                return f"jax.lax.switch({index}, {tup(branches)}{rest})", [n]
            if prim == "shard_map":
                manual = p.get("manual_axes")
                if p.get("auto") or (manual is not None and set(manual) != set(getattr(p["mesh"], "axis_names", ()))):
                    raise Unspelled("a `shard_map` over some of its mesh's axes")
                if "in_specs" in p:
                    ins, outs = [spec(s) for s in p["in_specs"]], [spec(s) for s in p["out_specs"]]
                else:
                    ins = [names_spec(m, v.aval.ndim) for m, v in zip(p["in_names"], eqn.invars)]
                    outs = [names_spec(m, v.aval.ndim) for m, v in zip(p["out_names"], eqn.outvars)]
                inputs = [fresh() for _ in args]
                f = nested(p["jaxpr"], inputs, [", ".join(inputs)], lines, tup)
                if hasattr(jax, "shard_map"):
                    call, check = "jax.shard_map", f"check_vma={bool(p.get('check_vma', True))}"
                else:
                    call, check = "jax.experimental.shard_map.shard_map", f"check_rep={bool(p.get('check_rep'))}"
                return (f"{call}({f}, mesh={mesh(p['mesh'])}, in_specs={tup(ins)}, out_specs={tup(outs)}, "
                        f"{check})({', '.join(args)})"), [n]
            if prim in COLLECTIVE:
                if p.get("axis_index_groups") is not None:
                    raise Unspelled(f"a `{prim}` over groups of devices")
                axes = tuple(p["axes"])
                return f"jax.lax.{COLLECTIVE[prim]}({tup(args)}, {value(axes[0] if len(axes) == 1 else axes)})", [n]
            if prim in ("all_gather", "all_gather_invariant"):
                return (f"jax.lax.all_gather({args[0]}, {value(p['axis_name'])}, axis={p['all_gather_dimension']}, "
                        f"tiled={bool(p['tiled'])})"), None
            if prim == "ppermute":
                return f"jax.lax.ppermute({args[0]}, {value(p['axis_name'])}, {value(tuple(map(tuple, p['perm'])))})", \
                    None
            if prim == "axis_index":
                return f"jax.lax.axis_index({value(p['axis_name'])})", None
            return None

        def call(eqn, args):
            prim, p = eqn.primitive.name, dict(eqn.params)
            if prim in REDUCED:
                return f"{REDUCED[prim]}({args[0]}, axis={value(tuple(p['axes']))})"
            if prim == "convert_element_type":
                return f"jax.lax.convert_element_type({args[0]}, {dtype(p['new_dtype'])})"
            if prim == "sharding_constraint":
                return f"jax.lax.with_sharding_constraint({args[0]}, {value(p['sharding'])})"
            if prim == "dynamic_slice":  # its start indices are operands of their own, a sequence to the function
                return f"jax.lax.dynamic_slice({args[0]}, {tup(args[1:])}, {value(tuple(p['slice_sizes']))})"
            if prim == "dynamic_update_slice":
                return f"jax.lax.dynamic_update_slice({args[0]}, {args[1]}, {tup(args[2:])})"
            if prim == "concatenate":
                return f"jax.lax.concatenate([{', '.join(args)}], {p['dimension']})"
            if prim in ("argmax", "argmin"):
                return f"jax.lax.{prim}({args[0]}, {tuple(p['axes'])[0]}, {dtype(p['index_dtype'])})"
            if prim == "iota":
                return (f"jax.lax.broadcasted_iota({dtype(p['dtype'])}, {value(tuple(p['shape']))}, "
                        f"{p['dimension']})")
            name = RENAMED.get(prim, prim)
            function = getattr(jax.lax, name, None)
            if not callable(function):
                raise Unspelled(f"the `{prim}` primitive")
            accepted = inspect.signature(function).parameters
            extra = [k for k, v in p.items() if k not in accepted and v is not None]
            if extra:
                raise Unspelled(f"the `{prim}` primitive's {', '.join(extra)}")
            keywords = "".join(f", {k}={value(v)}" for k, v in p.items()
                               if k in accepted and not (v is None and accepted[k].default is None))
            return f"jax.lax.{name}({', '.join(args)}{keywords})"

        folded = {}  # a var computed from literals alone -> its value (a scalar), written where it is read
        # a key's data <-> the key it was wrapped from or unwrapped to: wrapping its unwrapped data again is the key
        wrapped, unwrapped = {}, {}

        def fold(eqn):
            """The scalar results of an equation of literals and folded values alone, computed now; None where it has
            others (or is not a plain primitive)."""
            if eqn.effects or not all(literal(v) or v in folded for v in eqn.invars) or not eqn.outvars \
                    or any(tuple(v.aval.shape) != () or key_typed(v) for v in eqn.outvars) \
                    or any(not literal(v) and key_typed(v) for v in eqn.invars):
                return None
            if any(type(x).__name__ in ("Jaxpr", "ClosedJaxpr") for x in eqn.params.values()):
                return None
            given = [np.asarray(v.val, dtype=v.aval.dtype) if literal(v) else folded[v] for v in eqn.invars]
            try:
                with jax.ensure_compile_time_eval():
                    out = eqn.primitive.bind(*given, **eqn.params)
            except Exception:
                return None
            outs = out if eqn.primitive.multiple_results else [out]
            return [np.asarray(o, dtype=v.aval.dtype) for o, v in zip(outs, eqn.outvars)]

        def write(jaxpr, consts, inputs, lines):
            for var, const in zip(jaxpr.constvars, consts):
                names[var] = fresh()
                lines.append(f"{names[var]} = {constant(const)}")
            for var, name in zip(jaxpr.invars, inputs):
                names[var] = name
            same = {}  # a call's text -> what it was written to in this function: the same call is not written twice
            for eqn in live(jaxpr):
                args = [operand(v) for v in eqn.invars]
                prim = eqn.primitive.name
                if prim in IDENTITY and len(args) == len(eqn.outvars) and not any(literal(v) for v in eqn.invars):
                    for var, arg in zip(eqn.outvars, args):
                        names[var] = arg
                    continue
                values = fold(eqn)
                if values is not None:
                    for var, v in zip(eqn.outvars, values):
                        folded[var], names[var] = v, value(v[()])
                    continue
                if prim == "random_wrap" and args[0] in unwrapped and not impl(eqn.params):
                    names[eqn.outvars[0]] = unwrapped[args[0]]
                    continue
                if prim == "random_unwrap" and args[0] in wrapped:
                    names[eqn.outvars[0]] = wrapped[args[0]]
                    continue
                done = structured(eqn, args, lines)
                inner = INLINED.get(prim)
                if done is None and inner is not None and inner in eqn.params:
                    sub = eqn.params[inner]
                    outs = write(getattr(sub, "jaxpr", sub), getattr(sub, "consts", ()), args, lines)
                    for var, out in zip(eqn.outvars, outs):
                        names[var] = out
                    continue
                text, groups = done if done is not None else (call(eqn, args), None)
                if len(eqn.outvars) == 1 and text in same:
                    names[eqn.outvars[0]] = same[text]
                    continue
                made = [fresh() for _ in eqn.outvars]
                for var, target in zip(eqn.outvars, made):
                    names[var] = target
                if len(made) == 1 and "def " not in text:
                    same[text] = made[0]
                if prim == "random_wrap":
                    wrapped[made[0]] = args[0]
                elif prim == "random_unwrap":
                    unwrapped[made[0]] = args[0]
                if groups and len(groups) > 1:
                    spans, at = [], 0
                    for g in groups:
                        spans.append("(" + targets(made[at:at + g]) + ")" if g else "[]")
                        at += g
                    lines.append(f"{', '.join(spans)} = {text}")
                else:
                    many = groups is not False and (eqn.primitive.multiple_results or groups is not None)
                    lines.append(f"{targets(made) if many else made[0]} = {text}")
            return [operand(v) for v in jaxpr.outvars]

        # each parameter that is one array is read by its own name; one that holds several, by its leaves
        inputs, head = [], []
        for param, arg in zip(params, args):
            held = len(jax.tree_util.tree_leaves(arg))
            if held == 1 and not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(arg)):
                inputs.append(fresh())
                head.append(f"{inputs[-1]}, = jax.tree_util.tree_leaves({param.name})")
            elif held == 1:
                inputs.append(param.name)
            elif held:
                mine = [fresh() for _ in range(held)]
                inputs += mine
                head.append(f"{', '.join(mine)} = jax.tree_util.tree_leaves({param.name})")
        if len(inputs) != len(closed.jaxpr.invars):
            raise Unspelled("arguments whose leaves are not the traced function's inputs")
        lines = []
        outs = iter(write(closed.jaxpr, closed.consts, inputs, lines))

        def result(s):
            if hasattr(s, "shape") and hasattr(s, "dtype"):
                return next(outs)
            if s is None:
                return "None"
            if type(s) is dict:  # in the order JAX flattens a dict: its keys sorted
                return "{" + ", ".join(f"{k!r}: {result(x)}" for k, x in sorted(s.items())) + "}"
            if type(s) in (tuple, list):
                inner = ", ".join(map(result, s))
                return f"({inner}{',' if len(s) == 1 else ''})" if type(s) is tuple else f"[{inner}]"
            # a library's box of arrays (Flax's `Partitioned`, a module of Equinox's): its arrays, as JAX flattens it
            inside = jax.tree_util.tree_leaves(s)
            if len(inside) == 1:
                return result(inside[0])
            return "(" + ", ".join(map(result, inside)) + ("," if len(inside) == 1 else "") + ")"

        returned = "return " + result(shape)
        import re
        written = head + lines + [returned]
        while True:  # a name nothing reads (a key's data once its key is read again instead) is not written
            text = "\n".join(written)
            unread = [i for i, line in enumerate(written) if (m := re.match(r"\s*(v\d+) = ", line))
                      and len(re.findall(rf"\b{m.group(1)}\b", text)) == 1]
            if not unread:
                break
            written = [line for i, line in enumerate(written) if i not in unread]
        body = "\n".join(written)
        scope = {**_globals, "jax": jax, "jnp": jax.numpy, "np": np}
        exec("def __harness_spelled__(" + ", ".join(p.name for p in params) + "):\n"
             + "\n".join("    " + line for line in body.splitlines()), scope)
        mine = jax.eval_shape(scope["__harness_spelled__"], *args)
        if [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(mine)] != [
                (x.shape, x.dtype) for x in jax.tree_util.tree_leaves(shape)]:
            raise Unspelled("a body whose results differ from the function's")
        return body

    def wrap(fn):
        done = []

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if not done:
                done.append(True)
                why = None
                try:
                    if kwargs:
                        raise Unspelled("a call with keyword arguments")
                    said = spelled(fn, args)
                except Unspelled as e:
                    said, why = None, str(e)
                except Exception as e:
                    said, why = None, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                if _path:
                    import json
                    with open(_path, "a") as out:
                        out.write(json.dumps(["__KEY__" + name, said]) + "\n")
                        if why is not None:
                            out.write(json.dumps(["__WHY__" + name, why]) + "\n")
            return fn(*args, **kwargs)
        return traced
    return wrap
'''.replace("__TRACED__", _TRACED).replace("__KEY__", TRACED_KEY).replace("__WHY__", UNSPELLED_KEY)
