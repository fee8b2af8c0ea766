"""A two-name mesh whose axis order is a set's: `{name for name in SIZES}` follows the hash seed, and for the
seeds that put both names in one slot of the set's table (seeds 1, 9, 24 and 32 of 1-32 on CPython 3.11), the
order they were inserted in. The harness's seed probe builds its sets in sorted order, so for those seeds it
predicts the other order: what each run lowered, not the prediction, says which orders were covered.

Check it with:  harness check examples/two_name_mesh.py --versions 0.4.31 --runs 4
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

try:  # jax >= 0.6
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

SIZES = {"model": 4, "fsdp": 2}
AXES = tuple({name for name in SIZES})  # the set's order: the mesh, and so the key, follow it
mesh = Mesh(np.array(jax.devices()[:8]).reshape([SIZES[a] for a in AXES]), AXES)


@jax.jit
@partial(shard_map, mesh=mesh, in_specs=P(AXES), out_specs=P(AXES))
def scaled(x):
    return x * 2 + jax.lax.axis_index(AXES[0])


print(AXES, scaled(jnp.arange(16.0)).sum())
