"""Issue 63 item 1: a jitted function whose body calls a library is given the body its trace spelled (a probe writes it,
harness/reduce/passes/traced.py); the pure parts: which functions are probed, how the bodies read back, the candidates."""

import ast
import json
from pathlib import Path

from harness.reduce.passes import (COARSE_PASSES, MAY_GROW, PASS_NAMES, PassName, plain_jax, probe_program,
                                   probed_values, traced_bodies)
from harness.reduce.passes.library import library_packages
from harness.reduce.passes.traced import alone_candidates, unspelled

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "reduce" / "flax_traced.py").read_text()
BODY = ("v1, v2, v3 = jax.tree_util.tree_leaves((variables, x))\n"
        "v4 = jax.lax.dot_general(v3, v2, dimension_numbers=(((1,), (0,)), ((), ())))\n"
        "v5 = jax.lax.with_sharding_constraint(v4, jax.sharding.NamedSharding(MESH, jax.sharding.PartitionSpec("
        "'data', 'model')))\nreturn jax.lax.add(v5, v1)")
PARAMS = "{'params': {'up': {'bias': jnp.ones((16,)), 'kernel': jnp.ones((8, 16))}}}"


def _lines(*pairs):
    return "\n".join(json.dumps(list(p)) for p in pairs)


def test_the_probe_puts_the_writer_on_each_jitted_function_that_calls_the_library_innermost():
    probe = probe_program(FIXTURE)
    assert probe is not None
    tree = ast.parse(probe)
    decorated = {f.name: [ast.unparse(d) for d in f.decorator_list] for f in ast.walk(tree)
                 if isinstance(f, ast.FunctionDef) and f.name in ("init_fn", "apply_fn", "parse")}
    assert decorated == {"init_fn": ["functools.partial(jax.jit, out_shardings=REPLICATED)",
                                     "__harness_traced__('init_fn')"],
                         "apply_fn": ["functools.partial(jax.jit, in_shardings=REPLICATED, out_shardings=REPLICATED)",
                                      "__harness_traced__('apply_fn')"], "parse": []}
    # a value a function of the program's own made from the library is probed too (`variables = init_fn(...)`)
    assert "__harness_value__('init_fn(jax.random.PRNGKey(0), x)', variables)" in probe


def test_a_body_read_back_from_two_seeds_is_kept_and_one_that_cannot_be_spelled_is_not():
    values = probed_values(_lines(["def apply_fn", BODY], ["def init_fn", None], ["def apply_fn", BODY]))
    assert values == {"def apply_fn": BODY}


def test_its_candidates_put_the_body_and_the_values_and_drop_the_library():
    values = probed_values(_lines(["def apply_fn", BODY], ["init_fn(jax.random.PRNGKey(0), x)", PARAMS],
                                  ["apply_fn(variables, x)", "jnp.ones((8, 4))"]))
    candidates = dict(traced_bodies(FIXTURE, None, values))
    plain = candidates[(0, 1)]
    assert library_packages(plain) == set() and "def apply_fn(variables, x):" in plain, plain
    assert "jax.lax.with_sharding_constraint(v4" in plain and f"variables = {PARAMS}" in plain, plain
    assert "y = apply_fn(variables, x)" in plain  # the call of the function given its body stays a call
    assert "tuple({'data', 'model'})" in plain  # the mesh's names still a set
    # first of all, for each rewritten function, the values its calls computed put too (a miss in another function
    # that only reads them: the call goes)
    assert "y = jnp.ones((8, 4))" in candidates[(-1, 0)] and "def apply_fn" not in candidates[(-1, 0)]
    # every body without the values keeps flax, and is longer than the program: not tried (the search tries this
    # pass's candidates whatever their length, so the pass itself leaves out those that take no library out); one body
    # alone is tried all the same: what it gives is what the report says of that function's library calls
    assert (0, 2) not in candidates and "jax.lax.with_sharding_constraint(v4" in candidates[(1, 0)]
    assert alone_candidates(FIXTURE, values) == {candidates[(1, 0)]: "apply_fn"}
    assert [place for place, _ in traced_bodies(FIXTURE, (0, 1), values)] == [(0, 1), (1, 0)]  # resumed at its place
    assert list(traced_bodies(FIXTURE, None, {"x": "1"})) == []  # no body read: no candidate


def test_the_pass_is_registered_after_down_to_plain_jax_with_its_name_and_may_grow_the_program():
    assert PASS_NAMES[traced_bodies] == PassName.TRACED and traced_bodies in MAY_GROW
    assert COARSE_PASSES.index(traced_bodies) == COARSE_PASSES.index(plain_jax) + 1


def test_names_that_only_copy_another_are_read_as_it_in_one_candidate():
    """What pysource-minimize leaves of a written body (`v8 = v6`: calls replaced by their arguments) goes in one
    candidate of dead code; a name bound twice, or copied from one bound twice, stays."""
    from harness.reduce.passes import dead_code

    source = ("import jax\n\n@jax.jit\ndef f(x):\n    v1 = x\n    v2 = v1\n    v3 = jax.numpy.sin(v2)\n    v4 = v3\n"
              "    return v4\ny = 1\ny = 2\nz = y\nprint(f(z))\n")
    collapsed = dict(dead_code(source))[(4,)]
    assert collapsed == ("import jax\n\n@jax.jit\ndef f(x):\n    v3 = jax.numpy.sin(x)\n    return v3\ny = 1\ny = 2\n"
                         "z = y\nprint(f(z))\n"), collapsed


def test_what_the_writer_could_not_spell_is_read_back_for_the_report():
    """The probe writes, beside a body it could not spell, why (`why def NAME`); a body two seeds' runs spelled
    differently (not only in a tuple of names) has no text and is said so; a body written has no reason."""
    lines = _lines(["def init_fn", None], ["why def init_fn", "the `erf_inv` primitive"], ["def init_fn", None],
                   ["def apply_fn", BODY], ["def apply_fn", BODY], ["def step", "return 1"], ["def step", "return 2"])
    values = probed_values(lines)
    assert set(values) == {"def apply_fn"}  # the reasons are not values
    said = unspelled(lines, values)
    assert said == {"init_fn": "the `erf_inv` primitive",
                    "step": "its runs under two hash seeds traced it to different JAX (its Python code, a library's "
                            "included, follows the hash seed)"}


def test_a_value_computed_by_a_jit_of_a_rewritten_function_stays_a_call_but_in_the_first_candidate():
    """`variables = jax.jit(init_fn, out_shardings=...)(key, x)`: where init's out_shardings are the miss, putting its
    value there loses it; only the first candidate (every value put) does, the others keep the call."""
    init = (Path(__file__).resolve().parents[1] / "fixtures" / "reduce" / "flax_init_sharded.py").read_text()
    body = ("v1 = jax.random.wrap_key_data(k)\nv2 = jax.random.truncated_normal(v1, -2, 2, (16, 16), jnp.float32)\n"
            "return {'params': {'W1': v2, 'W2': v2}}")
    shardings = "{'params': {'W1': jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, 'model'))}}"
    values = probed_values(_lines(["def init_fn", body], ["nn.get_sharding(abstract_variables, mesh)", shardings],
                                  ["jax.jit(init_fn, out_shardings=state_sharding)(key, x)", PARAMS]))
    candidates = dict(traced_bodies(init, None, values))
    assert "variables = jax.jit(init_fn, out_shardings=state_sharding)(key, x)" in candidates[(0, 1)]
    assert f"state_sharding = {shardings}" in candidates[(0, 1)] and "flax" not in candidates[(0, 1)]
    assert f"variables = {PARAMS}" in candidates[(-1, 0)]
