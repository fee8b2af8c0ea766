"""A multi-host program with no such bug: every process lowers the same program in every launch.

`harness check examples/multihost_stable.py --processes 2` runs it as one job of two processes per run.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize()

mesh = jax.make_mesh((jax.device_count(),), ("batch",))
sharding = NamedSharding(mesh, P("batch"))
values = np.arange(2.0 * jax.device_count(), dtype=np.float32)
x = jax.make_array_from_callback(values.shape, sharding, lambda index: values[index])


@jax.jit
def total(x):
    return jnp.sum(jnp.sin(x) * 2)  # a sum over every process's devices: a cross-process collective


print(jax.process_index(), float(total(x)))
