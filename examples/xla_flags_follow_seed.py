"""A script whose XLA flags follow PYTHONHASHSEED: after JAX has started, it sets XLA_FLAGS with a value
picked from a set of strings. XLA read its flags when it started, so the flag changes nothing compiled
(the lowered module and the compile options are the same in every process), but JAX hashes XLA_FLAGS
into each cache key as it is when the key is computed: the key moves. `harness check` says reproduced,
with the XLA flags as the component that moved and the modules identical.

Check it with:  harness check examples/xla_flags_follow_seed.py --versions 0.4.28
"""

import os

import jax
import jax.numpy as jnp

jnp.zeros(4).block_until_ready()  # the backend starts here, with the flags the process began with

level = list({"embed", "attend", "mix", "project"}).index("mix")  # 0-3: changes with PYTHONHASHSEED
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_backend_optimization_level={level}".strip()


@jax.jit
def f(x):
    return jnp.tanh(x) * 2


print(f(jnp.ones(4)))
