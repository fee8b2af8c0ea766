"""One function compiled at two shapes, where only the 4x4 one iterates a set of strings into its
computation: that shape's module (so its key) follows PYTHONHASHSEED, the 8x3 one does not. A real
miss in one shape: `harness check` says reproduced, and the report's diff is the 4x4 module of a later
run against the first run's 4x4 module.

Check it with:  harness check examples/two_shapes_one_moves.py --versions 0.4.31
"""

import jax
import jax.numpy as jnp

STAGES = list({"embed", "attend", "mix", "project"})  # order changes with PYTHONHASHSEED


@jax.jit
def f(x):
    if x.shape == (4, 4):  # shapes are static: only this shape's lowering sees the set's order
        for i, name in enumerate(STAGES):
            x = x * (i + 1) + len(name)
        return x
    return jnp.tanh(x) * 2


print(f(jnp.ones((8, 3))).sum(), f(jnp.ones((4, 4))).sum())
