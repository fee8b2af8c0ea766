"""harness reduce's own passes and the checks made before a candidate runs (pure: sources in, sources out)."""

import ast

from harness.reduce.passes import broken, dead_code, inlinings, normalise, removals, size, unwrappings
from harness.inputs.dependencies import script_metadata
from harness.reduce.reduction import local_imports, metadata_block

PROGRAM = normalise("""
import os
a = 1
b = 2
c = 3
def main():
    print(a)
    print(b)
if __name__ == "__main__":
    main()
""")


def sources(candidates):
    return [text for _, text in candidates]


def test_removals_try_big_chunks_of_the_outer_block_first_then_smaller_ones():
    made = list(removals(PROGRAM))
    places = [place for place, _ in made]
    assert places == sorted(places)  # the order a pass resumes in after a kept candidate
    # Half of the module's six statements go first, the last half first (uses come after definitions).
    assert made[0][1] == normalise("a = 1\nb = 2\n")  # (`os`, used by nothing, goes with them)
    assert made[1][1] == normalise("c = 3\ndef main():\n    print(a)\n    print(b)\nif __name__ == '__main__':\n"
                                   "    main()\n")
    singles = sources(removals(PROGRAM))[-8:]
    assert normalise("a = 1\nb = 2\nc = 3\ndef main():\n    print(a)\n"
                     "if __name__ == '__main__':\n    main()\n") in singles


def test_a_block_left_empty_holds_pass_so_the_candidate_still_compiles():
    for text in sources(removals(PROGRAM)):
        compile(text, "<candidate>", "exec")
    assert any("def main():\n    pass" in text for text in sources(removals(PROGRAM)))


def test_every_candidate_is_in_the_normal_form_and_none_is_the_program_itself():
    for make in (removals, unwrappings, inlinings, dead_code):
        for text in sources(make(PROGRAM)):
            assert text == normalise(text) and text != PROGRAM


def test_dead_code_goes_in_one_candidate_definitions_and_imports_first_then_assignments_too():
    program = normalise("import os, json\nimport numpy as np\nx = compute()\ndef unused():\n    return np.ones(1)\n"
                        "def used():\n    return json.dumps(1)\nclass Config:\n    size: int = 3\n"
                        "    def method(self):\n        return 1\nprint(used(), Config)\n")
    (_, everything), (_, no_assignments) = list(dead_code(program))
    # `unused` goes, and with it the numpy import only it used; the class keeps its field and method.
    assert everything == normalise("import json\ndef used():\n    return json.dumps(1)\nclass Config:\n"
                                   "    size: int = 3\n\n    def method(self):\n        return 1\n"
                                   "print(used(), Config)\n")
    assert "x = compute()" in no_assignments and "def unused" not in no_assignments


def test_dead_code_drops_every_docstring_and_constant_alone_in_one_more_candidate():
    program = normalise('"""The module."""\nimport json\ndef f():\n    """What f does."""\n    return json.dumps(1)\n'
                        'def g():\n    """Only this."""\nclass C:\n    """A class."""\n    size = 3\n0\n'
                        'print(f(), g(), C)\n')
    (_, undocumented), = list(dead_code(program))
    assert undocumented == normalise("import json\ndef f():\n    return json.dumps(1)\ndef g():\n    pass\n"
                                     "class C:\n    size = 3\nprint(f(), g(), C)\n")


def test_dead_code_drops_the_parameters_no_function_reads_with_their_arguments_in_one_candidate():
    program = normalise("import jax\nfrom functools import partial\n@jax.jit\ndef step(state, x, labels, rng=None):\n"
                        "    return state * 2\ndef helper(a, b):\n    return a\n"
                        "@partial(jax.jit, static_argnums=1)\ndef counted(a, n):\n    return a\n"
                        "def passed(a, b):\n    return a\nclass C:\n    def method(self, unused):\n        return 1\n"
                        "print(step(1, 2, labels=3), helper(1, b=2), counted(1, 2), jax.vmap(passed), C().method(1))\n")
    (_, unread), = [(p, t) for p, t in dead_code(program) if p == (2,)]
    assert "def step(state):" in unread and "step(1)" in unread
    assert "def helper(a):" in unread and "helper(1)" in unread
    # What counts the parameters (a decorator's static_argnums), a function passed on, a method: left as they are.
    assert "def counted(a, n):" in unread and "def passed(a, b):" in unread and "def method(self, unused):" in unread


def test_removals_keep_a_class_s_field_or_method_the_program_still_reads_as_an_attribute():
    # A config dataclass: removing `size` while `config.size` is read is an AttributeError, never tried; `unused`
    # and `kept` (set on the instance too: it may live there) may go, and `size` goes with its last reader.
    program = normalise("import dataclasses\n@dataclasses.dataclass\nclass Config:\n    size: int = 3\n"
                        "    unused: int = 4\n    kept: int = 5\n    def scale(self):\n        return self.size\n"
                        "config = Config()\nconfig.kept = 6\nprint(config.scale(), config.size)\n")
    made = [t for t in sources(removals(program)) if broken(t) is None]  # (the class's own removal: pyflakes)
    assert not any("size: int = 3" not in t and "config.size" in t for t in made)
    assert not any("def scale" not in t and ".scale()" in t for t in made)
    assert any("unused: int" not in t and "size: int = 3" in t for t in made)
    assert any("kept: int" not in t and "config.kept = 6" in t for t in made)
    unread = program.replace("print(config.scale(), config.size)", "print(config)")
    made = sources(removals(unread))
    # The field goes with its last reader, in the same candidate (the class holds values only once `scale` goes).
    assert not any("def scale" not in t and "size: int = 3" in t for t in made)
    assert any("def scale" not in t and "size: int" not in t and "kept: int" in t for t in made)


def test_unwrapping_replaces_a_compound_statement_by_its_body():
    program = normalise("for i in range(3):\n    x = i\n    y = 2\nwith open('f') as f:\n    z = 1\n")
    made = sources(unwrappings(program))
    assert normalise("x = i\ny = 2\nwith open('f') as f:\n    z = 1\n") in made
    assert normalise("for i in range(3):\n    x = i\n    y = 2\nz = 1\n") in made


def test_inlining_flattens_the_main_guard_and_a_function_called_once():
    made = sources(inlinings(PROGRAM))
    assert normalise("import os\na = 1\nb = 2\nc = 3\ndef main():\n    print(a)\n    print(b)\nmain()\n") in made
    flat = normalise("import os\na = 1\nb = 2\nc = 3\ndef main():\n    print(a)\n    print(b)\nmain()\n")
    assert normalise("import os\na = 1\nb = 2\nc = 3\nprint(a)\nprint(b)\n") in sources(inlinings(flat))


def test_a_function_called_twice_or_decorated_is_not_inlined():
    for program in ("def f():\n    print(1)\nf()\nf()\n", "@dec\ndef f():\n    print(1)\nf()\n",
                    "def f(x, *rest):\n    print(x)\nf(1)\n", "def f(x):\n    print(x)\nf(x=1)\n"):
        assert not [t for _, t in inlinings(normalise(program)) if "def f" not in t], program


def test_broken_rejects_what_cannot_run_without_running_it():
    assert broken("import jax\nprint(jax)\n") is None
    assert "undefined name 'mesh'" in broken("import jax\nprint(mesh)\n")
    assert "undefined name" in broken("def f():\n    return y\n")  # even in a function body
    assert broken("x = (\n").startswith("does not compile")
    assert broken("print(__file__)\n") is None  # module globals are defined


def test_size_counts_lines_that_hold_code():
    assert size("# comment\n\nimport jax\n\nx = 1  # note\n") == 2


def test_the_inline_metadata_block_is_found_as_pep_723_spells_it():
    script = '# /// script\n# dependencies = ["flax"]\n# ///\nimport jax\n'
    assert metadata_block(script) == '# /// script\n# dependencies = ["flax"]\n# ///\n'
    assert metadata_block("# /// pyproject\n# x = 1\n# ///\nimport jax\n") == ""  # not a script block
    assert metadata_block("import jax\n") == ""
    ast.parse(metadata_block(script) + normalise(script))  # put back on a reduced program, it still parses


def test_local_imports_are_modules_beside_the_script(tmp_path):
    (tmp_path / "helpers.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    assert local_imports("import helpers\n", tmp_path)
    assert local_imports("from pkg.sub import x\n", tmp_path)
    assert not local_imports("import jax\nfrom . import helpers\n", tmp_path)


def test_a_function_called_once_with_arguments_is_inlined_where_it_is_called():
    program = normalise("import jax\ndef make_mesh(config, n=2):\n    devices = jax.devices()[:n]\n"
                        "    return (devices, config)\nmesh = make_mesh(cfg)\nprint(mesh)\n")
    made = sources(inlinings(program))
    assert normalise("import jax\nconfig = cfg\nn = 2\ndevices = jax.devices()[:n]\nmesh = (devices, config)\n"
                     "print(mesh)\n") in made


def test_a_function_with_an_early_return_is_not_inlined():
    program = normalise("def f(x):\n    if x:\n        return 1\n    return 2\ny = f(3)\n")
    assert not [t for _, t in inlinings(program) if "def f" not in t]


def test_a_removal_that_takes_a_helpers_last_call_takes_the_helper_too():
    program = normalise("import json\ndef save(x):\n    return json.dumps(x)\n@register\ndef hook():\n    pass\n"
                        "def run():\n    print(1)\n    save(2)\n    hook()\nrun()\n")
    made = sources(removals(program))
    # `save(2)` gone: `save` goes with it (undecorated, used nowhere else), and `json`, which only it used (an import
    # of Python's own library, which does nothing the program can tell).
    assert normalise("@register\ndef hook():\n    pass\ndef run():\n    print(1)\n    hook()\nrun()\n") in made
    # `hook()` gone: a decorated function may have been defined for what its decorator does, so it stays.
    assert any("def hook" in t and "    hook()" not in t and "def save" in t for t in made)
    # So does one whose default calls something, and a class whose body does.
    for definition, name in (("def helper(x=make()):\n    pass\n", "helper"),
                             ("class Helper:\n    size = compute()\n", "Helper")):
        program = normalise(f"{definition}def run():\n    print(1)\n    {name}()\nrun()\n")
        (without_the_call,) = [t for t in sources(removals(program)) if "    print(1)\n" in t and f"{name}()" not in t]
        assert normalise(definition) in without_the_call, without_the_call


def test_broken_rejects_a_program_that_misuses_a_value_known_before_it_runs():
    assert "calls a module: jax(f)" in broken("import jax\ndef f(x):\n    return x\njax(f)\n")
    assert "calls int 0" in broken("def f(x):\n    return 0(x)\n")
    assert "reads .size of int 0" in broken("devices = 0\nprint(devices.size)\n")
    assert "subscripts NoneType None" in broken("x = None\nprint(x[0])\n")
    assert "reads .shape of str" in broken("print('a'.shape)\n")
    # A class of the program's own, plain or a dataclass: what its body binds, and its fields on an instance.
    config = "import dataclasses\n@dataclasses.dataclass\nclass Config:\n    steps: int\n    axes: tuple = ('a',)\n"
    assert "reads .seed of class Config" in broken(config + "print(Config.axes, Config.seed)\n")
    assert "reads .steps of class Config" in broken(config + "config, n = (Config, 0)\nprint(config.steps)\n")
    assert "reads .seed of a Config" in broken(config + "config = Config(1)\nprint(config.steps, config.seed)\n")
    # What a run could still make work is tried: a name bound twice, or anywhere else (a parameter that
    # shadows it), a value whose attribute exists, a program that binds names out of sight.
    for fine in ("devices = 0\ndevices = [1]\nprint(devices.count(1))\n", "import jax\ndef f(jax):\n    jax(1)\n",
                 "x = 0\nprint(x.real, x.bit_length())\n", "s = 'ab'\nprint(s[0])\n", "import jax\njax.jit(print)\n",
                 "x = 0\nglobals()['x'] = print\nx(1)\n", "from m import *\nimport jax\njax(1)\n",
                 "try:\n    import jax\nexcept ImportError:\n    jax = None\njax.jit(print)\n",
                 "from jax import jit\njit(print)\n",
                 # what a base class, a decorator, a __getattr__ or an assignment elsewhere may provide
                 "from m import Base, register\nclass C(Base):\n    pass\nprint(C.x)\n",
                 "from m import register\n@register\nclass C:\n    pass\nprint(C.x)\n",
                 "class C:\n    def __getattr__(self, name):\n        return 1\nprint(C().x)\n",
                 "class C:\n    def __init__(self):\n        self.x = 1\nprint(C().x, C.__name__, C.mro())\n",
                 "class C:\n    def __init__(self):\n        object.__setattr__(self, 'x', 1)\nc = C()\nprint(c.x)\n"):
        assert broken(fine) is None, fine


def test_a_candidate_that_removed_a_while_true_loop_s_only_way_out_is_rejected_unrun():
    # The training script's data generator without its `yield`: forked children of it hung until their timeout.
    generator = ("import os\nimport sys\nimport numpy as np\ndef batches():\n    rng = np.random.default_rng(0)\n    while True:\n"
                 "        x = rng.normal(size=(4,))\n        yield x\nprint(next(batches()))\n")
    without = generator.replace("        yield x\n", "")
    assert broken(without, generator) == ("never ends when it runs: while True in batches, nothing but an exception "
                                          "leaves it")
    assert broken(without) is None  # (nothing to compare with: the program a reduction starts from)
    assert broken(without, without) is None  # a loop the program it was made from had already is its own
    # Ways out: a break of this loop (not of a loop inside it), return, yield, raise, exit(); a try or with around
    # it may catch what ends it.
    for way_out in ("break", "return", "raise StopIteration", "sys.exit()", "os._exit(0)", "yield from x",
                    "for y in x:\n            pass\n        else:\n            break"):
        fine = generator.replace("yield x", way_out)
        assert broken(fine, generator) is None, fine
    inner_break = generator.replace("yield x", "for y in x:\n            break")
    assert "while True in batches" in broken(inner_break, generator)
    caught = ("def batches(it):\n    try:\n        while True:\n            print(next(it))\n"
              "    except StopIteration:\n        pass\n")
    assert broken(caught, caught.replace("print(next(it))", "yield next(it)")) is None


# The same statement twice, a helper whose last call a removal can take, a class, an except clause and a
# match case: removals whose texts coincide, from places far apart in the pass's order.
REPEATS = normalise("""
import jax
from jax.sharding import PartitionSpec as P
def helper():
    return 1
class Box:
    size = 2
def main():
    print(helper())
    print(helper())
    try:
        x = 1
    except ValueError:
        x = 2
    match x:
        case 1:
            print(x)
            print(x)
    for i in range(2):
        print(i)
    mesh = jax.make_mesh((2, 0), (0, 1))
    return P(0), mesh
if __name__ == "__main__":
    main()
""")


def test_a_pass_resumed_at_a_place_makes_exactly_the_candidates_it_made_from_there():
    """`Search.run_pass` resumes a pass after a kept candidate; the pass builds nothing placed before the
    kept one, and what it makes from there is what the whole pass made from there, duplicates left out
    as before (removals still makes the earlier texts, so a text met again later is not tried twice)."""
    from harness.reduce.readable import restorations

    for program in (PROGRAM, REPEATS):  # REPEATS' removals: 8 texts made again at a later place
        for make in (removals, unwrappings, inlinings, dead_code, restorations):
            made = list(make(program))
            for place, _ in made:
                assert list(make(program, place)) == [(p, t) for p, t in made if p >= place], (make, place)


def test_removals_give_the_same_candidates_when_made_again_from_the_same_program():
    """Each removal is made in the program's own tree and put back: nothing of one candidate is left
    in the next, however far the caller read."""
    first = list(removals(REPEATS))
    partly = removals(REPEATS)
    next(partly), next(partly)
    assert list(removals(REPEATS)) == first
    assert len({t for _, t in first}) == len(first)
    assert any(t.count("print(helper())") == 1 for _, t in first)
    assert not any("def helper" in t and "helper()" not in t for _, t in first)  # the helper goes with its calls


# ---- down to plain JAX (issue 48 item 3) ---------------------------------------------------------------------

FLAX_STEP = normalise("""
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.experimental.shard_map import shard_map

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(4)(x)
        return nn.relu(x)

model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))
tx = optax.sgd(0.1)
opt_state = tx.init(params)

@jax.jit
def step(x):
    y = model.apply(params, x)
    z = nn.relu(y)
    return jnp.sum(shard_map(lambda a: a, mesh=None, in_specs=None, out_specs=None)(z))

step(jnp.ones((2, 3)))
""")


def _imports(source):
    import ast
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module.split(".")[0])
    return found


def test_plain_jax_first_replaces_every_library_call_by_what_flows_through_it_and_drops_the_libraries():
    from harness.reduce.passes import plain_jax
    (place, first), *rest = list(plain_jax(FLAX_STEP))
    assert place == (0, 0)
    assert _imports(first) == {"jax"} and broken(first) is None
    assert "y = x" in first and "z = y" in first and "shard_map(" in first  # the module's own code stays
    assert "def step(x)" in first  # (its name is the module's)
    # Then each library's statements removed, each call alone replaced, all distinct, none of them the original.
    texts = [text for _, text in rest]
    assert len(set(texts)) == len(texts) and FLAX_STEP not in texts
    assert any(_imports(t) == {"jax", "flax"} for t in texts) and any(_imports(t) == {"jax", "optax"} for t in texts)
    assert any("y = x" in t and "flax" in _imports(t) for t in texts)  # model.apply(params, x) alone -> x


def test_plain_jax_makes_nothing_for_a_program_that_imports_only_jax_numpy_and_python_s_own():
    from harness.reduce.passes import plain_jax
    assert list(plain_jax(normalise("import os, functools\nimport numpy as np\nimport jax\nprint(np.ones(2))\n"))) == []


def test_plain_jax_is_a_coarse_pass_said_as_such():
    from harness.reduce.passes import COARSE_PASSES, PASS_NAMES, PassName, plain_jax
    from harness.reduce.progress_lines import opening
    assert plain_jax in COARSE_PASSES and PASS_NAMES[plain_jax] == PassName.PLAIN_JAX
    assert "down to plain JAX" in opening(10)


def test_a_search_with_plain_jax_ends_without_the_library_where_the_bug_does_not_need_it():
    from harness.reduce.search import Search, Tried

    def keep(sources):  # "reproduces" while the jitted step still calls shard_map on something
        return [Tried("shard_map(lambda" in s and "step(" in s and broken(s) is None) for s in sources]

    best = Search(FLAX_STEP, keep).run(fine=False)
    assert _imports(best) == {"jax"}, best


TRAIN_STATE_STEP = normalise("""
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state
from jax.experimental.shard_map import shard_map

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(x)

def penalty(mesh, kernel):
    data, model = mesh.axis_names  # a helper's own `model`: not the library's
    return jnp.sum(shard_map(lambda a: a, mesh=mesh, in_specs=None, out_specs=None)(kernel))

model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))['params']
state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.1))

@jax.jit
def train_step(state, x):
    def loss_fn(params):
        return jnp.sum(state.apply_fn({'params': params}, x)) + penalty(None, params['Dense_0']['kernel'])
    grads = jax.grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads)

train_step(state, jnp.ones((2, 3)))
""")


def test_a_probe_run_reads_what_a_library_computed_and_plain_jax_puts_it_in_the_library_s_place():
    """Issue 48 item 3 on a Flax TrainState: the parameters `model.init` made are read from a run (the probe's
    lines), put in its place as plain arrays, the state made of them is them, its fields read are it, a
    keyword-only call is its keyword's value, and a helper's own `model` stays its own."""
    from harness.reduce.passes import plain_jax, probe_program, probed_values

    probe = probe_program(TRAIN_STATE_STEP)
    assert probe is not None and broken(probe) is None
    assert "__harness_value__(\"model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))['params']\", params)" in probe
    lines = '["model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))[\'params\']", ' \
            '"{\'Dense_0\': {\'kernel\': jnp.ones((3, 4)), \'bias\': jnp.ones((4,))}}"]\n' \
            '["MLP()", null]\n["x", "jnp.ones(2)"]\n["x", "jnp.ones(3)"]\n'
    values = probed_values(lines)
    assert list(values) == ["model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))['params']"]  # one value each
    (place, first), *_ = list(plain_jax(TRAIN_STATE_STEP, None, values))
    assert place == (0, 0) and broken(first) is None
    assert _imports(first) == {"jax"}, first
    assert "params = {'Dense_0': {'kernel': jnp.ones((3, 4)), 'bias': jnp.ones((4,))}}" in first
    assert "state = params" in first and "jax.grad(loss_fn)(state)" in first and "return grads" in first
    assert "shard_map(lambda a: a" in first and "data, model = mesh.axis_names" in first


TYPED_TRAINING = normalise("""
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax import serialization
from flax.training import train_state

def create_state(rng) -> train_state.TrainState:
    model = nn.Dense(4)
    params = model.init(rng, jnp.ones((2, 3)))['params']
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.1))

@jax.jit
def train_step(state: train_state.TrainState, x):
    grads = jax.grad(lambda p: jnp.sum(state.apply_fn({'params': p}, x)))(state.params)
    return state.apply_gradients(grads=grads)

def save(state, path):
    with open(path, 'wb') as out:
        out.write(serialization.to_bytes(state.params))

state = create_state(jax.random.PRNGKey(0))
state = train_step(state, jnp.ones((2, 3)))
save(state, 'ckpt.msgpack')
""")


def test_plain_jax_goes_through_the_program_s_own_typed_functions_and_drops_a_library_s_effects():
    """A helper annotated with a library's type (`-> TrainState`) stays the program's own: its call stays, what
    it returns is the library's (its fields read are it), the annotations go with the import, and a call made
    only for what the library does (writing its bytes) goes instead of writing the parameters' dict."""
    from harness.reduce.passes import plain_jax

    values = {"model.init(rng, jnp.ones((2, 3)))['params']": "{'kernel': jnp.ones((3, 4))}"}
    (place, first), *_ = list(plain_jax(TYPED_TRAINING, None, values))
    assert place == (0, 0) and broken(first) is None
    assert _imports(first) == {"jax"}, first
    assert "state = create_state(jax.random.PRNGKey(0))" in first and "def create_state(rng):" in first
    assert "return params" in first and "jax.grad(lambda p: jnp.sum(x))(state)" in first, first
    assert "def train_step(state, x):" in first and "return grads" in first
    assert "out.write" not in first and "save(state, 'ckpt.msgpack')" in first


def test_plain_jax_runs_before_the_removals_so_a_library_program_goes_plain_in_one_step():
    from harness.reduce.passes import COARSE_PASSES, plain_jax, removals
    assert COARSE_PASSES.index(plain_jax) < COARSE_PASSES.index(removals)


def test_probed_values_leave_out_what_could_not_be_written_or_differed_between_runs():
    from harness.reduce.passes import probed_values
    assert probed_values('["a", null]\n["b", "jnp.ones(2)"]\n["b", "jnp.ones(3)"]\nnot json\n["c", "("]\n'
                         '["d", "(1, 2)"]\n') == {"d": "(1, 2)"}


def test_the_reduced_program_s_block_keeps_only_what_it_still_imports_and_jax_s_pin():
    # Issue 48: reduced.py kept the original's block verbatim, declaring flax and optax it no longer imports.
    script = ('# /// script\n# requires-python = ">=3.11"\n# dependencies = [\n#   "flax==0.8.3",  # the model\n'
              '#   "optax[extra]>=0.2; python_version >= \'3.9\'",\n#   "jax==0.4.28",\n#   "scikit-learn",\n'
              '#   "my-utils",\n# ]\n# ///\nimport jax\nimport flax.linen as nn\nfrom optax import sgd\nimport sklearn\n'
              'import my_utils\n')
    reduced = "import jax\nimport sklearn\n"
    block = metadata_block(script, reduced)
    assert block == ('# /// script\n# requires-python = ">=3.11"\n# dependencies = [\n#   "jax==0.4.28",\n'
                     '#   "scikit-learn",\n# ]\n# ///\n')
    # What no import of the original names stays (scikit-learn's module is sklearn: not known here to be unused);
    # a module still imported keeps its dependency (my_utils is my-utils).
    assert "my-utils" in metadata_block(script, reduced + "import my_utils\n")
    assert "scikit-learn" in metadata_block(script, "import jax\n")
    assert script_metadata(block) == {"requires-python": ">=3.11", "dependencies": ["jax==0.4.28", "scikit-learn"]}
    assert metadata_block(script) == script[:script.index("# ///\nimport") + 6]  # the original's, verbatim
    assert metadata_block("# /// script\n# dependencies = [\"flax\"]\n# ///\nimport flax\n", "import jax\n") == \
        "# /// script\n# dependencies = []\n# ///\n"


# What pysource-minimize leaves of the training script's config: a class that only holds values, bound to a name.
HOLDER = normalise("""
import jax
from jax.sharding import Mesh

class TrainConfig:
    axis_names = ('a', 'p', 'r', 'q')
    steps: int = -2
config, checkpoint_dir = (TrainConfig, 0)
mesh = Mesh(jax.devices(), axis_names=config.axis_names)
print(TrainConfig.steps)
""")


def test_a_value_holder_s_fields_are_read_as_their_values_and_the_holder_goes_in_one_candidate():
    from harness.reduce.passes import field_values
    (made,) = sources(field_values(HOLDER))
    assert made == normalise("import jax\nfrom jax.sharding import Mesh\n"
                             "mesh = Mesh(jax.devices(), axis_names=('a', 'p', 'r', 'q'))\nprint(-2)\n")
    assert broken(made) is None and size(made) < size(HOLDER)
    # An instance made without arguments (a dataclass's defaults) reads the same values.
    dataclass = normalise("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass C:\n    n: int = 3\n"
                          "c = C()\nprint(c.n)\n")
    assert sources(field_values(dataclass)) == [normalise("import dataclasses\nprint(3)\n")]


def test_a_binding_still_used_stays_and_the_class_with_it():
    from harness.reduce.passes import field_values
    program = normalise("class C:\n    n = 3\nc, path = (C, '/tmp')\nprint(c.n, path)\n")
    assert sources(field_values(program)) == [normalise("class C:\n    n = 3\nc, path = (C, '/tmp')\n"
                                                        "print(3, path)\n")]


def test_a_class_that_is_more_than_a_value_holder_keeps_its_reads():
    from harness.reduce.passes import field_values
    for program in (
        "class C:\n    n = 3\n    def f(self):\n        return 1\nc = C()\nprint(c.n)\n",  # a method
        "class C:\n    n = [3]\nprint(C.n)\n",  # a mutable value: its copies would be other lists
        "class C:\n    n = 3\nc = C()\nc.n = 4\nprint(c.n)\n",  # a field set
        "class C:\n    n = 3\nsetattr(C, 'n', 4)\nprint(C.n)\n",  # handed on whole
        "import dataclasses\nclass C:\n    n = 3\nc = dataclasses.replace(C(), n=4)\nprint(c.n)\n",
        "class C:\n    n = 3\nc = C\nc = 5\nprint(c.n)\n",  # the name bound again
        "class C(Base):\n    n = 3\nprint(C.n)\n",  # a base may define more
        "class C:\n    n = 3\nc = C(4)\nprint(c.n)\n",  # made with an argument
        "class C:\n    n = 3\nprint(C.m)\n",  # not one of its fields
        "@register\nclass C:\n    n = 3\nprint(C.n)\n",  # a decorator that may do anything
        "class C:\n    n = 3\nc = C\nglobals()['c'] = 4\nprint(c.n)\n",  # bound out of sight
    ):
        assert list(field_values(normalise(program))) == [], program


def test_fields_read_as_their_values_is_a_coarse_pass_after_the_inlining():
    from harness.reduce.passes import COARSE_PASSES, PASS_NAMES, PassName, field_values
    from harness.reduce.progress_lines import opening
    assert COARSE_PASSES.index(field_values) == COARSE_PASSES.index(inlinings) + 1
    assert PASS_NAMES[field_values] == PassName.FIELD_VALUES and PassName.FIELD_VALUES.value in opening(10)


def test_a_removal_takes_the_imports_of_python_s_own_modules_and_the_config_fields_it_leaves_unread():
    program = normalise("import os, sys\nimport json\nimport jax\nfrom functools import partial\n"
                        "class Config:\n    steps: int = 6\n    momentum = 0.9\n    axis_names = ('a', 'b')\n"
                        "config = Config()\nprint(json.dumps(1), partial, config.momentum * config.steps)\n"
                        "jax.jit(print)(config.axis_names)\n")
    made = sources(removals(program))
    # Without the print: `json`, `partial`, `momentum` and `steps` go with it; `jax` (it may do something when
    # imported) and the import of two modules stay, for dead_code.
    assert normalise("import os, sys\nimport jax\nclass Config:\n    axis_names = ('a', 'b')\nconfig = Config()\n"
                     "jax.jit(print)(config.axis_names)\n") in made
    # A field is kept while a keyword or a string names it, the class is made with positional arguments, or
    # something reads every field.
    for still, field in (("Config(steps=1)", "steps: int"), ("'steps'", "steps: int"), ("Config(5)", "momentum"),
                         ("getattr(config, 'steps')", "momentum"), ("dataclasses.asdict(config)", "momentum")):
        kept = program.replace("config = Config()", f"config = Config()\nprint({still})")
        # (a chunk is one block's: the field and the print gone together is the field dropped as unread)
        assert not any(field not in t and "json.dumps" not in t and "class Config" in t and still in t
                       for t in sources(removals(kept))), still
    assert any("momentum" not in t and "json.dumps" not in t and "steps: int" in t
               for t in sources(removals(program.replace("config = Config()", "config = Config(steps=1)"))))


def test_module_constants_are_read_as_their_values_all_at_once_then_each():
    from harness.reduce.passes import substitutions
    program = normalise("import jax.numpy as jnp\nFEATURES = 4\nAXES = ('data', 'model')\nDTYPE = jnp.float32\n"
                        "x = jnp.ones((FEATURES, 2), DTYPE)\nprint(x, AXES, -FEATURES)\n")
    made = sources(substitutions(program))
    assert made[0] == normalise("import jax.numpy as jnp\nx = jnp.ones((4, 2), jnp.float32)\n"
                                "print(x, ('data', 'model'), -4)\n")
    assert normalise("import jax.numpy as jnp\nAXES = ('data', 'model')\nDTYPE = jnp.float32\n"
                     "x = jnp.ones((4, 2), DTYPE)\nprint(x, AXES, -4)\n") in made[1:]
    assert len(made) == 4  # all three, then each


def test_a_name_bound_twice_or_to_what_may_change_is_not_a_constant():
    from harness.reduce.passes import substitutions
    for program in (
        "N = 4\nN = 5\nprint(N)\n",  # bound again
        "N = 4\ndef f(N):\n    print(N)\nf(1)\nprint(N)\n",  # a parameter of the same name: another scope
        "N = [4]\nN.append(1)\nprint(N)\n",  # a list: each copy would be another list
        "N = f()\nprint(N)\n",  # a call
        "N = 4\nglobals()['N'] = 5\nprint(N)\n",  # bound out of sight
        "N = 4\n",  # never read: dead code's, not this pass's
    ):
        assert not list(substitutions(normalise(program))), program


def test_a_function_that_only_returns_an_expression_is_written_at_each_of_its_calls():
    from harness.reduce.passes import substitutions
    program = normalise("import jax, jax.numpy as jnp\nmesh = jax.make_mesh((2, 4), ('a', 'b'))\n"
                        "def spec(shape, dtype=jnp.float32):\n    'A shape and dtype.'\n"
                        "    return jax.ShapeDtypeStruct(shape, dtype, sharding=mesh)\n"
                        "w = spec((4,))\nx = spec(shape=(8, 4), dtype=jnp.int32)\nprint(spec(spec(1).shape))\n")
    assert sources(substitutions(program)) == [normalise(
        "import jax, jax.numpy as jnp\nmesh = jax.make_mesh((2, 4), ('a', 'b'))\n"
        "w = jax.ShapeDtypeStruct((4,), jnp.float32, sharding=mesh)\n"
        "x = jax.ShapeDtypeStruct((8, 4), jnp.int32, sharding=mesh)\n"
        "print(jax.ShapeDtypeStruct(jax.ShapeDtypeStruct(1, jnp.float32, sharding=mesh).shape, jnp.float32, "
        "sharding=mesh))\n")]


def test_a_function_is_not_written_at_its_calls_where_that_could_mean_something_else():
    from harness.reduce.passes import substitutions
    for program in (
        "def f(x):\n    y = x\n    return y\nprint(f(1))\n",  # more than a return
        "def f(x):\n    return x\nprint(f(1), jax.jit(f))\n",  # handed on as a value
        "@jax.jit\ndef f(x):\n    return x\nprint(f(1))\n",  # decorated
        "def f(x, *rest):\n    return x\nprint(f(1))\n",  # a variable parameter
        "def f(x):\n    return x\nprint(f())\n",  # a call that misses a parameter
        "def f(x, y=g()):\n    return x + y\nprint(f(1))\n",  # a default that calls
        "def f(x):\n    return f(x - 1)\nprint(f(1))\n",  # recursive
        "def f(x):\n    return lambda y: x + y\nprint(f(y))\n",  # the argument's name is the lambda's own
        "n = 1\ndef f(x):\n    return x + n\ndef g(n):\n    return f(n)\nprint(g(2))\n",  # `n` another scope's
        "def f(x):\n    return len(x)\ndef g(len):\n    return f(len)\nprint(g([1]))\n",  # a builtin shadowed there
    ):
        assert not [t for _, t in substitutions(normalise(program)) if "def f" not in t], program


def test_substitutions_are_a_coarse_pass_before_the_inlining():
    from harness.reduce.passes import COARSE_PASSES, PASS_NAMES, PassName, substitutions
    from harness.reduce.progress_lines import opening
    assert COARSE_PASSES.index(substitutions) == COARSE_PASSES.index(inlinings) - 1
    assert PASS_NAMES[substitutions] == PassName.SUBSTITUTION and PassName.SUBSTITUTION.value in opening(10)
