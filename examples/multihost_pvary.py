"""A multi-host program whose backward pass follows the hash seed (jax 0.8.1; fixed in 0.8.2 by jax
commit d8bf7ecce2, "Make sure axes are in the same order in pvary across multiple hosts").

Inside shard_map, `w * x` with `w` invariant and `x` varying over both mesh axes makes JAX insert a
`pvary` of `w` over the axes it takes from a frozenset; its transpose in the gradient is a `psum`
over those axes in that order. Two processes with different hash seeds then lower different
programs for `jit_loss`: the collective's groups do not match and the job dies or hangs.

Run it as a job: `harness check examples/multihost_pvary.py --processes 2 --versions 0.8.1 0.8.2`
(the script calls jax.distributed.initialize() as it would on a cluster; the harness fills it in).

It also computes on each process's own device, as real programs do (`jnp.ones`, a PRNG key, a `device_put`):
each process compiles those for its own device, so their keys differ between the processes by design; they
are judged per process, not as processes that disagree (docs/multi-process.md).
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize()

# On this process's own first device: compiled with this process's device assignment.
ones = jnp.ones((4,))
key = jax.random.key(0)
local = jax.device_put(np.arange(4.0, dtype=np.float32), jax.local_devices()[0]) * 2

mesh = jax.make_mesh((2, jax.device_count() // 2), ("x", "y"))


@partial(jax.shard_map, mesh=mesh, in_specs=(P(), P(("x", "y"))), out_specs=P())
def _total(w, x):
    return jax.lax.psum(jnp.sum(jnp.sin(w * x)), ("x", "y"))


def loss(w, x):
    return _total(w, x)


def global_array(values, spec):
    sharding = NamedSharding(mesh, spec)
    return jax.make_array_from_callback(values.shape, sharding, lambda index: values[index])


w = global_array(np.ones((4,), np.float32), P())
x = global_array(np.arange(4.0 * jax.device_count(), dtype=np.float32).reshape(-1, 4), P(("x", "y")))
grad = jax.jit(jax.grad(loss), out_shardings=NamedSharding(mesh, P()))(w, x)
print(jax.process_index(), np.asarray(grad.addressable_data(0)), float(ones.sum()), float(jax.random.uniform(key)),
      np.asarray(local))
