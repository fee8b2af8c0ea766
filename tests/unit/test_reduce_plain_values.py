"""Values a library made, written as plain JAX by the probe (issue 63 item 1): shardings from their mesh and spec,
a mesh from its devices' shape and its names, pytrees of them as dict and tuple literals, a tuple of names two
seeds' runs ordered differently (a mesh's axis names made from a set) as a set. The probe runs inside the program
with JAX there; here its duck typing is given stand-ins of JAX's classes (same names, same attributes)."""

import ast
import json

from harness.reduce.passes import PROBE_VARIABLE, broken, normalise, plain_jax, probe_program, probed_values
from harness.reduce.passes.probe import _PROBE_HELPER


class _Devices:
    def __init__(self, *shape):
        self.shape = shape


class Mesh:
    def __init__(self, shape, axis_names):
        self.devices, self.axis_names = _Devices(*shape), axis_names


class PartitionSpec(tuple):
    def __new__(cls, *parts):
        return super().__new__(cls, parts)


class NamedSharding:
    def __init__(self, mesh, spec):
        self.mesh, self.spec = mesh, spec


class PositionalSharding:
    def __init__(self, *shape):
        self.shape = shape


class ShapeDtypeStruct:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _probed(value, monkeypatch, tmp_path, **program_globals):
    """What the probe writes of `value` in a program whose globals are `program_globals`."""
    out = tmp_path / "values.jsonl"
    out.unlink(missing_ok=True)
    monkeypatch.setenv(PROBE_VARIABLE, str(out))
    namespace = dict(program_globals)
    exec(_PROBE_HELPER, namespace)  # as probe_program puts it at the program's top
    namespace["__harness_value__"]("key", value)
    return json.loads(out.read_text())[1]


def test_a_named_sharding_is_written_from_its_mesh_and_spec(monkeypatch, tmp_path):
    mesh = Mesh((2, 4), ("data", "model"))
    said = _probed(NamedSharding(mesh, PartitionSpec(None, ("data", "model"))), monkeypatch, tmp_path)
    assert said == ("jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape((2, 4)), "
                    "('data', 'model')), jax.sharding.PartitionSpec(None, ('data', 'model')))")


def test_a_sharding_s_mesh_is_the_program_s_own_by_name_where_a_global_holds_it(monkeypatch, tmp_path):
    mesh = Mesh((8,), ("model",))
    said = _probed(NamedSharding(mesh, PartitionSpec("model")), monkeypatch, tmp_path, mesh=mesh, _hidden=mesh)
    assert said == "jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec('model'))"


def test_a_mesh_is_written_from_its_devices_shape_and_names_in_the_program_s_order(monkeypatch, tmp_path):
    mesh = Mesh((4, 2), ("model", "data"))
    # Its own assignment's name is not used (`mesh = make_mesh()` would read `mesh = mesh`).
    said = _probed(mesh, monkeypatch, tmp_path, mesh=mesh)
    assert said == "jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape((4, 2)), ('model', 'data'))"


def test_a_positional_sharding_becomes_a_named_sharding_over_axes_of_its_own(monkeypatch, tmp_path):
    said = _probed(PositionalSharding(4, 1), monkeypatch, tmp_path)
    assert said == ("jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()[:4]).reshape((4, 1)), "
                    "('p0', 'p1')), jax.sharding.PartitionSpec('p0', 'p1'))")


def test_a_pytree_of_shardings_and_abstract_arrays_is_a_dict_and_tuple_literal(monkeypatch, tmp_path):
    mesh = Mesh((8,), ("model",))
    tree = {"params": {"W1": NamedSharding(mesh, PartitionSpec(None, "model")),
                       "b": (NamedSharding(mesh, PartitionSpec()), ShapeDtypeStruct((3,), "bfloat16"))}}
    said = _probed(tree, monkeypatch, tmp_path, mesh=mesh)
    assert said == ("{'params': {'W1': jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, 'model')), "
                    "'b': (jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()), "
                    "jax.ShapeDtypeStruct((3,), jnp.bfloat16))}}")


def test_what_cannot_be_written_is_not_guessed(monkeypatch, tmp_path):
    assert _probed(Mesh((2,), (0, 1)), monkeypatch, tmp_path) is None  # names that are no strings
    assert _probed(NamedSharding(Mesh((2,), ("a",)), PartitionSpec(object())), monkeypatch, tmp_path) is None


def test_names_two_seeds_ordered_differently_are_a_set_and_other_differences_drop_the_value():
    mesh = "jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape((2, 4)), {})"
    lines = "\n".join(json.dumps(["make_mesh()", mesh.format(names)]) for names in ("('data', 'model')",
                                                                                  "('model', 'data')"))
    lines += "\n" + "\n".join(json.dumps(["other()", text]) for text in ("jnp.ones((2,))", "jnp.ones((3,))"))
    lines += "\n" + "\n".join(json.dumps(["spec()", text]) for text in ("('a', 'b', 1)", "('b', 'a', 2)"))
    assert probed_values(lines) == {"make_mesh()": mesh.format("tuple({'data', 'model'})")}


SHARDED = normalise("""
import jax
import jax.numpy as jnp
from flax import linen as nn

mesh = jax.sharding.Mesh(jax.devices(), ('model',))
model = nn.Dense(4)
abstract = jax.eval_shape(model.init, jax.random.PRNGKey(0), jnp.ones((2, 3)))
shardings = nn.get_sharding(abstract, mesh)
f = jax.jit(lambda x: x * 2, out_shardings=shardings['params']['kernel'])
f(jnp.ones((3, 4)))
""")


def test_plain_jax_puts_a_library_s_shardings_in_its_place_and_the_program_imports_jax_only():
    probe = probe_program(SHARDED)
    assert probe is not None and "__harness_value__('nn.get_sharding(abstract, mesh)', shardings)" in probe
    values = {"nn.get_sharding(abstract, mesh)":
              "{'params': {'kernel': jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(None, 'model'))}}"}
    (place, first), *_ = list(plain_jax(SHARDED, None, values))
    assert place == (0, 0) and broken(first) is None, first
    imported = {a.name for n in ast.walk(ast.parse(first)) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"jax", "jax.numpy"} and "flax" not in first, first
    assert "shardings = {'params': {'kernel': jax.sharding.NamedSharding(mesh, " in first, first


# ---- what the report says of plain JAX (issue 63 item 3) ----------------------------------------------------------

def test_the_reduction_records_which_pass_took_each_library_out_and_which_calls_remain():
    from harness.reduce.plain_said import plain_jax_said
    from harness.results.reduce_results import Plain
    original = "import jax\nimport flax.linen as nn\nimport optax\nm = nn.Dense(4)\ny = m.apply(1, 2)\no = optax.sgd(1)\n"
    reduced = "import jax\nimport flax.linen as nn\nm = nn.Dense(4)\ny = m.apply(1, 2)\nz = jax.numpy.ones(2)\n"
    said = plain_jax_said(original, reduced, {"optax": "down to plain JAX", "flax": "statements removed"})
    assert said == Plain(("flax", "optax"), {"optax": "down to plain JAX"}, ("nn.Dense", "m.apply"), ("flax",))
    assert plain_jax_said("import jax\nx = 1\n", "import jax\n", {}) is None  # plain from the start


def test_the_report_says_how_the_program_got_plain_and_why_a_library_call_stayed():
    from harness.core.records import convert
    from harness.report.render import _minimal_reproducer
    from harness.results.reduce_results import Reduced
    section = {"original": {"path": "train.py", "lines": 50, "bytes": 2000},
               "reduced": {"path": "reduced.py", "lines": 2, "bytes": 30, "source": "import jax\nprint(1)\n"},
               "signature": {"module": "jit_f"}, "bad": "0.4.31",
               "plain": {"libraries": ["flax", "optax"], "taken_out_by": {"optax": "down to plain JAX"}}}
    text = " ".join(_minimal_reproducer({"reduce": convert(section, Reduced)}))
    assert ("The original imported `flax`, `optax` beyond JAX, NumPy and Python's own; taken out: `flax` before a "
            "`--resume`, `optax` by *down to plain JAX*. It imports JAX, NumPy and Python's own library only.") in text
    # The claim that a call needs the library is made only where a candidate that replaced that function's library
    # calls alone by their traced JAX lost the signature; otherwise the report says what the traced pass could not
    # write, and that nothing says the library's own code is needed.
    section["plain"] = {"libraries": ["flax"], "calls": ["nn.Dense"], "still": ["flax"],
                        "not_spelled": {"init_fn": "the `erf_inv` primitive"}}
    text = " ".join(_minimal_reproducer({"reduce": convert(section, Reduced)}))
    assert "It still uses `flax`: calls `nn.Dense`. The traced pass could not write `init_fn` as the JAX it traced " \
        "to: the `erf_inv` primitive. No candidate that replaced such a call alone" in text, text
    assert "needs the library's own code there" not in text
    section["plain"]["lost_alone"] = {"init_fn": "another module moved (jit_g, not jit_f)"}
    text = " ".join(_minimal_reproducer({"reduce": convert(section, Reduced)}))
    assert "A candidate that replaced `init_fn`'s library calls alone by the JAX they traced to lost the signature " \
        "(another module moved (jit_g, not jit_f)): the miss needs the library's own code there." in text, text
    assert "could not write" not in text and "No candidate" not in text


def test_the_report_s_claims_are_of_functions_the_reduced_program_still_defines():
    from harness.reduce.plain_said import plain_jax_said
    original = "import jax\nimport flax.linen as nn\n@jax.jit\ndef f(x):\n    return nn.relu(x)\n"
    said = plain_jax_said(original, original, {}, {"f": "the `xyz` primitive", "gone": "a large constant"},
                          {"gone": "clean on 0.4.31"})
    assert said is not None and said.not_spelled == {"f": "the `xyz` primitive"} and said.lost_alone == {}


# ---- reduced.py's PEP 723 block names only what it still imports (issue 63 item 3) --------------------------------

def test_a_dependency_whose_module_is_named_otherwise_goes_where_the_environment_says_what_it_installs():
    from harness.reduce.metadata import metadata_block
    script = ('# /// script\n# dependencies = ["scikit-learn", "jax==0.4.31", "my-plugin"]\n# ///\n'
              'import sklearn\nimport jax\n')
    modules = {"scikit-learn": frozenset({"sklearn"}), "jax": frozenset({"jax"})}
    block = metadata_block(script, "import jax\n", modules)
    assert "scikit-learn" not in block and "jax==0.4.31" in block, block
    assert "my-plugin" in block  # the environment does not say what it installs: kept
    assert "scikit-learn" in metadata_block(script, "import sklearn\nimport jax\n", modules)


def test_what_an_environment_installs_is_read_from_its_interpreter():
    import sys
    from types import SimpleNamespace

    from harness.reduce.metadata import installed_python_modules
    found = installed_python_modules(SimpleNamespace(environment=SimpleNamespace(python=sys.executable)))
    assert "packaging" in found["packaging"] and "msgspec" in found["msgspec"]
    assert installed_python_modules(SimpleNamespace(environment=object())) == {}  # a container's: nothing to ask
    assert installed_python_modules(None) == {}


def test_the_search_remembers_the_pass_whose_kept_candidate_took_a_library_s_last_import_out(tmp_path):
    from types import SimpleNamespace

    from harness.core.kinds import Cause
    from harness.reduce.passes import PassName
    from harness.reduce.progress_lines import SearchProgress
    from harness.reduce.reduction import _Searching
    from harness.reduce.search import Tried
    from harness.reduce.reduce_state import ReduceState
    from harness.results.reduce_results import Signature
    original = "import jax\nimport flax\nimport optax\nx = flax.a(optax.b())\n"
    state = ReduceState("train.py", "d" * 64, "0.4.28", None, Signature("jit_f", ("computation",), Cause.ORDER),
                        [1, 2], 24.0, original)
    searching = _Searching(state, SearchProgress(lambda said: None, 4, 0.0), tmp_path)
    searching.search = search = SimpleNamespace(best=original, memo={}, making=PassName.REMOVALS)
    search.best = "import jax\nimport flax\nx = flax.a(1)\n"
    searching.tried(search.best, Tried(True, "kept"), search.best)
    # A batch measured side by side: the progress hears of its answers once the kept one is the best, a rejected
    # one first.
    search.making, search.best = PassName.PLAIN_JAX, "import jax\nx = 1\n"
    searching.tried("import jax\nx = 2\n", Tried(False, "clean"), search.best)
    searching.tried(search.best, Tried(True, "kept"), search.best)
    # The good release's checkpoint goes back to a program that imports flax: nothing is taken out by it.
    search.making, search.best = PassName.GOOD, "import jax\nimport flax\nx = flax.a(1)\n"
    searching.tried("import jax\nx = 1\n", Tried(False, "reproduced on the good release"), search.best)
    assert searching.taken_out_by == {"optax": "statements removed", "flax": "down to plain JAX"}
