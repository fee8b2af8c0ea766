"""The readability guards of harness reduce (pure): what pysource-minimize may not do to a reproducer's
literals, and the candidates that put readable values back."""

import ast

import pytest

from harness.reduce.passes import normalise
from harness.reduce.readable import less_readable, restorations
from harness.reduce.search import Search, Tried

MESH = normalise("""
import jax
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 4), ('batch', 'model'))
spec = P('batch', 'model')
config = {'lr': 0.1, 'steps': 8}
x = jax.numpy.ones((8, 4))
print(jax.lax.psum(x, ('batch', 'model')), spec, config, mesh)
""")


def changed(old, new):
    assert MESH.count(old) >= 1
    return less_readable(MESH, normalise(MESH.replace(old, new, 1)))


@pytest.mark.parametrize("old, new, why", [
    ("P('batch', 'model')", "P(0, 'model')", "the name 'batch' made 0"),
    ("('batch', 'model'))\nspec", "0)\nspec", "the name 'batch' made 0"),  # a mesh's axis names as a whole
    ("P('batch', 'model')", "P('', 'model')", "the name 'batch' made ''"),
    ("P('batch', 'model')", "P('b', 'model')", "the name 'batch' shortened to 'b'"),  # no line shorter
    ("{'lr'", "{0", "the name 'lr' made 0"),  # a dict key
    ("ones((8, 4))", "ones((0, 4))", "the size 8 made 0"),
    ("ones((8, 4))", "ones((1, 4))", "the size 8 made 1"),
    ("ones((8, 4))", "ones(0)", "the shape (8, 4) made 0"),
    ("'steps': 8", "'steps': 0", "the size 8 made 0"),
    ("'lr': 0.1", "'lr': 0.05", "the number 0.1 made 0.05"),
    ("spec = P", "unique_name_0 = P", "a name renamed to unique_name_0"),
])
def test_what_pysource_minimize_may_not_do_to_a_literal(old, new, why):
    assert changed(old, new) == why


@pytest.mark.parametrize("old, new", [
    ("P('batch', 'model')", "P('batch')"),  # an entry removed
    ("ones((8, 4))", "ones((4, 4))"),  # halved, still plausible
    ("ones((8, 4))", "ones((2, 4))"),
    ("(2, 4), ('batch'", "(2, 2), ('batch'"),
    ("print(jax.lax.psum(x, ('batch', 'model')), spec, config, mesh)", "print(spec)"),  # a statement shrunk
    ("'lr': 0.1", "'lr': 0"),  # the value did not matter: replaced by 0, shorter
])
def test_what_it_may_do(old, new):
    assert changed(old, new) is None


def test_int_axis_names_become_short_names_all_at_once_first():
    source = normalise("""
import jax
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 0), (0, 1))
y = jax.lax.psum(x, (0, 1)), P(0), jax.lax.axis_index(1)
""")
    candidates = [text for _, text in restorations(source)]
    first = candidates[0]
    assert "jax.make_mesh((2, 0), ('x', 'y'))" in first
    assert "jax.lax.psum(x, ('x', 'y')), P('x'), jax.lax.axis_index('y')" in first
    # then one position at a time, then the zero size as 2, 4, 8
    assert any("P('x')" in t and "psum(x, (0, 1))" in t for t in candidates)
    assert any("make_mesh((2, 2), (0, 1))" in t for t in candidates)
    assert any("make_mesh((2, 8), (0, 1))" in t for t in candidates)
    assert all(t != source for t in candidates)


def test_a_name_already_taken_is_not_reused():
    source = normalise("import jax\nspec = jax.sharding.PartitionSpec('x', 0)\n")
    first = next(restorations(source))[1]
    assert "PartitionSpec('x', 'y')" in first


def test_a_readable_program_has_nothing_to_restore():
    assert list(restorations(MESH)) == []


def calls_kept(program):
    """A fake bug that holds while the program still calls what it called, with as many arguments, whatever
    the literals are: pysource-minimize alone would make them 0."""

    def calls(source):
        return sorted((ast.unparse(n.func), len(n.args)) for n in ast.walk(ast.parse(source))
                      if isinstance(n, ast.Call) and "print" not in ast.unparse(n.func))

    wanted = calls(program)

    def bad(sources):
        return [Tried(calls(s) == wanted) for s in sources]
    return bad


def test_the_search_keeps_names_as_strings_and_shapes_plausible():
    # A fake bug that holds whatever the literals are: pysource-minimize alone would make them 0.
    program = normalise("""
import jax
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 4), ('batch', 'model'))
def f(x):
    return jax.lax.psum(x, ('batch', 'model'))
f(jax.numpy.ones((8, 4)))
print(P('batch'))
""")

    best = Search(program, calls_kept(program)).run()
    assert len(best) < len(program) - 40  # it did reduce
    calls = {ast.unparse(n.func): n.args for n in ast.walk(ast.parse(best)) if isinstance(n, ast.Call)}
    for name, position in (("jax.make_mesh", 1), ("jax.lax.psum", 1), ("P", 0)):
        leaves = [c for c in ast.walk(calls[name][position]) if isinstance(c, ast.Constant)]
        assert leaves and all(isinstance(c.value, str) and c.value.isidentifier() for c in leaves), best
    for name in ("jax.make_mesh", "jax.numpy.ones"):  # the shapes: sizes of 2 or more
        sizes = [c.value for c in ast.walk(calls[name][0]) if isinstance(c, ast.Constant)]
        assert sizes and all(isinstance(v, int) and v >= 2 for v in sizes), best
    assert list(restorations(best)) == []


def test_the_search_restores_readable_values_when_they_keep_the_signature():
    program = normalise("""
import jax
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 4), (0, 1))
def f(x):
    return jax.lax.psum(x, (0, 1))
f(jax.numpy.zeros((0, 4)))
""")

    kept = calls_kept(program)

    def bad(sources):  # a bug that needs the calls, the mesh (2, 4) and its axes named or numbered 0 and 1
        return [Tried(k.kept and "make_mesh((2, 4), (" in s and ("(0, 1)" in s or "('x', 'y')" in s))
                for s, k in zip(sources, kept(sources))]

    best = Search(program, bad).run()
    assert "make_mesh((2, 4), ('x', 'y'))" in best, best
    assert "jax.lax.psum(0, 'x')" in best, best  # the same int, the same name
    assert "zeros(2)" in best, best  # the zero size restored to 2


def test_readable_values_are_restored_even_after_the_budget_is_spent():
    program = normalise("import jax\nmesh = jax.make_mesh((2, 4), (0, 1))\nprint(mesh)\n")
    search = Search(program, calls_kept(program), max_candidates=1)
    best = search.run()
    assert "('x', 'y')" in best, best


WRITES = normalise("""
import os
from pathlib import Path
out = '/tmp/x/canary/out/cfg_' + str(1)
os.makedirs(os.path.dirname(out), exist_ok=True)
open('logs/train.log', 'w').write('step 1')
Path('results').mkdir(exist_ok=True)
with open(f'checkpoints/{out}.npz', 'wb') as f:
    f.write(b'')
label = 'plain words'
""")


@pytest.mark.parametrize("old, new, why", [
    ("'/tmp/x/canary/out/cfg_'", "'/tmp/x/canary'", "the path '/tmp/x/canary/out/cfg_' made '/tmp/x/canary'"),
    ("'/tmp/x/canary/out/cfg_' + str(1)", "'/tmp/x/canary'", "the path '/tmp/x/canary/out/cfg_' made"),
    ("'logs/train.log'", "'g'", "the path 'logs/train.log' made 'g'"),
    ("'logs/train.log'", "''", "the path 'logs/train.log' made ''"),
    ("Path('results')", "Path('r')", "the path 'results' made 'r'"),  # no '/' nor extension: Path's argument
    ("'checkpoints/", "'c", "the path 'checkpoints/' made"),  # a part of an f-string
])
def test_a_path_literal_is_never_shortened(old, new, why):
    assert WRITES.count(old) >= 1
    found = less_readable(WRITES, normalise(WRITES.replace(old, new, 1)))
    assert found is not None and found.startswith(why), found


@pytest.mark.parametrize("old, new", [
    ("open('logs/train.log', 'w').write('step 1')\n", ""),  # the whole write removed: nothing is written elsewhere
    ("'plain words'", "'p'"),  # not a path
    ("write('step 1')", "write('s')"),  # what is written, not where
])
def test_what_it_may_do_near_a_path(old, new):
    assert WRITES.count(old) >= 1
    assert less_readable(WRITES, normalise(WRITES.replace(old, new, 1))) is None
