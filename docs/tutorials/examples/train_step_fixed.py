"""One data- and model-parallel training step of a small MLP, with JAX's persistent cache on.

The fixed copy of train_step.py: the mesh's axis names are sorted, so every fresh process
builds the same mesh, lowers the same module and finds it in the persistent cache.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.config.update("jax_compilation_cache_dir", os.path.expanduser("~/.cache/train_step-jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # cache even quick compiles

PARALLELISM = {"data": 4, "model": 2, "pipeline": 1}
AXES = tuple(sorted({name for name, size in PARALLELISM.items() if size > 1}))  # fixed: sorted
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
