"""A small feature library, the suite tutorial 2 checks in CI."""

import jax
import jax.numpy as jnp

WEIGHTS = {"price": 0.5, "volume": 2.0, "spread": -1.0}
REQUIRED = {"price", "volume", "spread"}


@jax.jit
def score(table):
    """A weighted sum of the required columns."""
    return sum(WEIGHTS[name] * jnp.tanh(table[name]) for name in sorted(REQUIRED))  # fixed: a sorted order


@jax.jit
def normalize(x):
    return (x - x.mean()) / (x.std() + 1e-6)
