"""A program whose key follows the hash seed: its dropout key is folded with `hash()` of a string, which Python
salts per process (PYTHONHASHSEED), so each fresh process traces another constant into the jitted step and computes
another cache key: a check of it is reproduced.

Check it with:  harness check examples/hash_folded_key.py --versions 0.10.2
"""

import jax
import jax.numpy as jnp

SALT = hash("dropout") % 2**31  # differs from process to process


@jax.jit
def step(x):
    key = jax.random.fold_in(jax.random.PRNGKey(0), SALT)
    keep = jax.random.bernoulli(key, 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0.0).sum()


print(step(jnp.ones((8, 8))))
