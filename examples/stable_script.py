"""A user's script with no such bug: one cache key however many fresh processes run it."""

import jax
import jax.numpy as jnp

STAGES = sorted({"embed", "attend", "mix", "project"})  # sorted: the same in every process


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x


print(f(jnp.ones(4)))
