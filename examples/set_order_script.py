"""A user's script with its own set-order bug: the jitted function's constants follow the
iteration order of a set of strings, so each fresh process can lower to a different module.

Check it with:  harness check examples/set_order_script.py --versions 0.4.31
"""

import jax
import jax.numpy as jnp

STAGES = list({"embed", "attend", "mix", "project"})  # order changes with PYTHONHASHSEED


@jax.jit
def f(x):
    for i, name in enumerate(STAGES):
        x = x * (i + 1) + len(name)
    return x


print(f(jnp.ones(4)))
