"""One function compiled at two shapes: two cache entries per process, and every later process hits
both. Not a cache miss: `harness check` says clean ("jit_f: 2 keys per run, the same in all N runs").

Check it with:  harness check examples/two_shapes.py --versions 0.4.31
"""

import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return jnp.tanh(x) * 2


print(f(jnp.ones((8, 3))).sum(), f(jnp.ones((4, 4))).sum())
