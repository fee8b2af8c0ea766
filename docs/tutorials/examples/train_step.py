"""One data- and model-parallel training step of a small MLP, with JAX's persistent cache on.

The mesh's axis names come from a set, so their order (and with it the mesh's shape, the
shardings and the compiled module) follows Python's string hash seed, which differs in every
fresh process: each start compiles again. The fix is one word: see train_step_fixed.py.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_compilation_cache_dir", os.path.expanduser("~/.cache/train_step-jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # cache even quick compiles

PARALLELISM = {"data": 4, "model": 2, "pipeline": 1}
AXES = tuple({name for name, size in PARALLELISM.items() if size > 1})  # the bug: a set's order
mesh = Mesh(np.array(jax.devices()[:8]).reshape([PARALLELISM[a] for a in AXES]), AXES)


def loss_fn(params, x, y):
    hidden = jnp.tanh(x @ params["w1"])
    return jnp.mean((hidden @ params["w2"] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss


rng = np.random.default_rng(0)
params = {
    "w1": jax.device_put(rng.normal(size=(16, 32)).astype(np.float32), NamedSharding(mesh, P(None, "model"))),
    "w2": jax.device_put(rng.normal(size=(32, 1)).astype(np.float32), NamedSharding(mesh, P("model", None))),
}
batch = NamedSharding(mesh, P("data", None))
x = jax.device_put(rng.normal(size=(64, 16)).astype(np.float32), batch)
y = jax.device_put(rng.normal(size=(64, 1)).astype(np.float32), batch)
for step in range(3):
    params, loss = train_step(params, x, y)
    print(f"step {step} loss {float(loss):.4f}")
