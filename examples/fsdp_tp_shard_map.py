"""FSDP + tensor parallelism with shard_map, as the JAX shard_map docs write it: a 2-D mesh
('batch', 'feats'), each weight sharded over both axes, all-gathered over 'batch' (FSDP) inside the body
and its partial products summed over 'feats' (TP); the loss's gradient jitted.

On JAX 0.4.27-0.4.28 the gradient's residuals get mesh axis names in a Python set's order, so the
persistent-cache key of `jit_loss` moves with PYTHONHASHSEED: two orders only, so half the fresh
processes agree with the first.

Check it with:  harness check examples/fsdp_tp_shard_map.py --versions 0.4.28 --runs 4
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:  # jax >= 0.6
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("batch", "feats"))


def init(key, layer_sizes, batch_size):
    keys = jax.random.split(key, 2 * len(layer_sizes))
    params = [(jax.random.normal(k1, (n_in, n_out)) / np.sqrt(n_in), jax.random.normal(k2, (n_out,)))
              for k1, k2, n_in, n_out in zip(keys[::2], keys[1::2], layer_sizes[:-1], layer_sizes[1:])]
    inputs = jax.random.normal(keys[-1], (batch_size, layer_sizes[0]))
    targets = jax.random.normal(keys[-2], (batch_size, layer_sizes[-1]))
    return params, (inputs, targets)


def predict(params, inputs):
    """`inputs`: this device's rows (over 'batch') and features (over 'feats')."""
    for i, (W, b) in enumerate(params):
        W = jax.lax.all_gather(W, "batch", axis=1, tiled=True)  # FSDP: gather the columns this step needs
        b = jax.lax.all_gather(b, "batch", tiled=True)
        outputs = jax.lax.psum(jnp.dot(inputs, W), "feats") + b  # TP: sum the partial products
        if i < len(params) - 1:  # the next layer takes this device's features again
            width = W.shape[0]
            inputs = jax.lax.dynamic_slice_in_dim(jax.nn.relu(outputs), jax.lax.axis_index("feats") * width,
                                                  width, axis=1)
    return outputs


LAYERS = 2
param_specs = [(P("feats", "batch"), P("batch"))] * LAYERS


@partial(shard_map, mesh=mesh, in_specs=(param_specs, (P("batch", "feats"), P("batch"))), out_specs=P())
def loss(params, batch):
    inputs, targets = batch
    predictions = predict(params, inputs)
    return jax.lax.psum(jnp.sum((predictions - targets) ** 2), "batch")


def main():
    params, batch = init(jax.random.PRNGKey(0), [16] * (LAYERS + 1), batch_size=32)
    params = jax.device_put(params, [tuple(NamedSharding(mesh, s) for s in layer) for layer in param_specs])
    batch = jax.device_put(batch, (NamedSharding(mesh, P("batch", "feats")), NamedSharding(mesh, P("batch"))))
    grads = jax.jit(jax.grad(loss))(params, batch)
    print(jax.tree_util.tree_map(lambda g: float(jnp.sum(g)), grads))


if __name__ == "__main__":
    main()
