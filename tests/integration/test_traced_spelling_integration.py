"""The traced pass's writer (harness/reduce/passes/traced.py) on real JAX releases: what library code commonly traces
to (a key's random bits and JAX's samplers, scan/while/cond, shard_map, a nested jit with shardings, a sharding
constraint, collectives) is written back as public JAX calls, and the written body, run in a fresh interpreter,
computes what the function computed (the same values, not only the same shapes). One process per release."""

import json
import subprocess

import pytest

from harness.core.kinds import Platform
from harness.environments import dated_venv_backend
from harness.reduce.passes.traced import _TRACED_HELPER

pytestmark = pytest.mark.integration

PROGRAM = '''
import json, os, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
shard_map = getattr(jax, "shard_map", None)
if shard_map is None:
    from jax.experimental.shard_map import shard_map

HELPER

@__harness_traced__("randoms")
def randoms(k):
    a = jax.random.truncated_normal(jax.random.fold_in(k, 3), -2.0, 2.0, (4, 2)) * 0.5
    return (a, jax.random.normal(k, (3,)), jax.random.uniform(jax.random.PRNGKey(1), (2,), minval=-1.0, maxval=1.0),
            jax.random.bernoulli(jax.random.key(2), 0.3, (2,)), jax.random.randint(jax.random.key(3), (2,), 0, 10),
            jax.random.key_data(jax.random.split(jax.random.key(4), 3)), jax.random.bits(jax.random.key(5), (2,)))

@__harness_traced__("loops")
def loops(x):
    c, ys = jax.lax.scan(lambda c, xi: (c + jnp.sum(xi), xi * c), 0.0, x)
    w = jax.lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 2), (0, c))
    return w, jax.lax.cond(c > 0, lambda a: a + 1, lambda a: a - 1, ys), jax.lax.switch(1, [jnp.sin, jnp.cos, jnp.tan], c)

@__harness_traced__("sharded")
def sharded(x):
    f = shard_map(lambda a: jax.lax.psum(a, "data") * jax.lax.axis_index("model"), mesh=MESH,
                  in_specs=P("data", "model"), out_specs=P(None, "model"))
    g = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(MESH, P(None, "model")))
    return jax.lax.with_sharding_constraint(g(f(x)), NamedSharding(MESH, P("model")))

cases = {"randoms": (jax.random.PRNGKey(0),), "loops": (jnp.arange(8.0).reshape(4, 2),), "sharded": (jnp.ones((8, 8)),)}
out = {}
for name, args in cases.items():
    expected = jax.jit(globals()[name])(*args)
    said = dict(json.loads(line) for line in open(os.environ["HARNESS_REDUCE_VALUES"]))
    body = said.get("def " + name)
    if body is None:
        out[name] = {"why": said.get("why def " + name)}
        continue
    scope = {"jax": jax, "jnp": jnp, "np": np, "MESH": MESH}
    exec("def spelled(" + ("k" if name == "randoms" else "x") + "):\\n" + "\\n".join("    " + l for l in body.splitlines()), scope)
    mine = jax.jit(scope["spelled"])(*args)
    same = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in
               zip(jax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(expected)))
    out[name] = {"body": body, "same": bool(same)}
print(json.dumps(out))
'''


@pytest.mark.parametrize("version", ["0.4.31", "0.10.2"])
def test_what_library_code_traces_to_is_written_as_public_jax_that_computes_the_same(tmp_path, version):
    environment = dated_venv_backend().prepare(version, Platform.CPU)
    script = tmp_path / "spell.py"
    script.write_text(PROGRAM.replace("HELPER", _TRACED_HELPER))
    done = subprocess.run([str(environment.python), str(script)], capture_output=True, text=True, timeout=300,
                          env={"HARNESS_REDUCE_VALUES": str(tmp_path / "values.jsonl"), "JAX_PLATFORMS": "cpu",
                               "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    for name, found in said.items():
        assert found.get("same") is True, (name, found)
    randoms, loops, sharded = said["randoms"]["body"], said["loops"]["body"], said["sharded"]["body"]
    for call in ("jax.random.truncated_normal(", "jax.random.normal(", "jax.random.uniform(", "jax.random.bernoulli(",
                 "jax.random.randint(", "jax.random.split(", "jax.random.bits(", "jax.random.fold_in(",
                 "jax.random.key_data(", "jax.random.wrap_key_data(k)"):
        assert call in randoms, (call, randoms)
    assert "np.float32(0.5)" in randoms  # a scalar of constants alone written as its value
    for call in ("jax.lax.scan(", "jax.lax.while_loop(", "jax.lax.cond(", "jax.lax.switch("):
        assert call in loops, (call, loops)
    assert "shard_map(" in sharded and "mesh=MESH" in sharded and "jax.lax.psum(" in sharded, sharded
    assert "jax.jit(" in sharded and "out_shardings=(jax.sharding.NamedSharding(MESH, " in sharded, sharded
    assert "jax.lax.with_sharding_constraint(" in sharded, sharded
