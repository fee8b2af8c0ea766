"""The team's program the nightly watches: one step of a model whose smoothness penalty is computed
block by block with shard_map, and its gradient, with JAX's persistent cache on.

Nothing here is wrong; on JAX 0.4.27 and 0.4.28 the gradient of a shard_map lowers to a module whose
residual's mesh axis names follow a Python set's order, so each fresh process computes another key.
"""

import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

try:  # jax >= 0.6
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

jax.config.update("jax_compilation_cache_dir", os.path.expanduser("~/.cache/model_step-jax"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

mesh = Mesh(np.array(jax.devices()).reshape(jax.device_count(), 1, 1, 1), ("data", "fsdp", "tensor", "seq"))


@partial(shard_map, mesh=mesh, in_specs=(P("data", "fsdp"),), out_specs=P(None, None))
def block_penalty(block):
    return jax.lax.psum(jnp.sin(block), ("data", "fsdp"))


def loss(w):
    return jnp.sum(block_penalty(w))


step = jax.jit(jax.grad(loss))
w = jnp.arange(float(jax.device_count())).reshape(jax.device_count(), 1)
print("grad norm", float(jnp.linalg.norm(step(w))))
