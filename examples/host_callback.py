"""A jitted function that calls back into Python (`jax.pure_callback`): before JAX 0.11, JAX compiles it
but never writes it to the persistent cache ("... because it uses host callbacks"), so every process
compiles it again. The listing alone cannot see that; JAX's log can: `harness check` says it is not clean.

Check it with:  harness check examples/host_callback.py --versions 0.4.31
"""

import jax
import jax.numpy as jnp
import numpy as np


def host_sin(x):
    return np.sin(x)


@jax.jit
def f(x):
    return jax.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2


print(f(jnp.ones(4)))
