# /// script
# dependencies = ["flax", "optax"]
# ///
"""A ten-line Flax MLP and one Optax update step, with its dependencies inline (PEP 723).

Check it with:  harness check examples/flax_mlp_step.py --versions 0.4.31 0.10.2
"""

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(16)(x)))


model, tx = MLP(), optax.sgd(0.1)
x, y = jnp.ones((8, 4)), jnp.zeros((8, 1))
params = model.init(jax.random.PRNGKey(0), x)
opt_state = tx.init(params)


@jax.jit
def step(params, opt_state):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
    updates, opt_state = tx.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state, loss


print(step(params, opt_state)[2])
