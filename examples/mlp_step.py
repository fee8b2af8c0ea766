"""A stable program: one training step of a small MLP in plain JAX (no flax: it runs wherever JAX does, a TPU host
with nothing else installed too). Every fresh process computes the same cache keys: a check of it is clean.

Check it with:  harness check examples/mlp_step.py --versions 0.10.2
"""

import jax
import jax.numpy as jnp


def init(key, sizes=(16, 32, 4)):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (a, b)) * 0.1, jnp.zeros(b)) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def loss(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)


@jax.jit
def step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]


params = init(jax.random.PRNGKey(0))
x, y = jnp.ones((8, 16)), jnp.zeros((8, 4))
params = step(params, x, y)
print(float(loss(params, x, y)))
