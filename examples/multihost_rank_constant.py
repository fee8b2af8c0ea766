"""A multi-host program whose processes lower different programs on every release: each puts its own
process index into the function as a constant. Their collectives match (the job runs), but the processes
compute different keys for `jit_total`, so none but process 0 ever hits the cache.

`harness check examples/multihost_rank_constant.py --processes 2 --versions 0.10.2` reads `reproduced`, and
report.md says the processes' modules differ only in a constant (docs/multi-process.md).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize()

mesh = jax.make_mesh((jax.device_count(),), ("batch",))
values = np.arange(2.0 * jax.device_count(), dtype=np.float32)
x = jax.make_array_from_callback(values.shape, NamedSharding(mesh, P("batch")), lambda index: values[index])
scale = 1.0 + jax.process_index()  # a Python float: traced into each process's program as a constant


@jax.jit
def total(x):
    return jnp.sum(jnp.sin(x) * scale)  # a sum over every process's devices: a cross-process collective


print(jax.process_index(), float(total(x)))
