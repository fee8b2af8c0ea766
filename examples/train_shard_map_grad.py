"""A small training script (config, data, model, optimizer, logging, checkpointing) with the seed's
shard_map-grad cache bug hidden in one helper, `sharded_smoothness_grad`: `harness reduce`'s example.

On JAX 0.4.27-0.4.28 the gradient of the shard_map'd penalty lowers to a module whose residual's mesh axis
names follow a Python set's order, so its persistent-cache key moves with PYTHONHASHSEED.
"""

import argparse
import dataclasses
import json
import logging
import os
import tempfile
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

try:  # jax >= 0.6
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

log = logging.getLogger("train")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    features: int = 16
    hidden: int = 32
    batch_size: int = 64
    steps: int = 6
    learning_rate: float = 0.05
    momentum: float = 0.9
    penalty: float = 1e-3
    seed: int = 0
    log_every: int = 2
    axis_names: tuple = ("data", "fsdp", "tensor", "seq")


def parse_config() -> TrainConfig:
    parser = argparse.ArgumentParser(description="train a two-layer MLP on synthetic data")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps)
    parser.add_argument("--checkpoint-dir", default="")
    args = parser.parse_args()
    return dataclasses.replace(TrainConfig(), steps=args.steps), args.checkpoint_dir


def make_mesh(config: TrainConfig) -> Mesh:
    devices = np.array(jax.devices())
    shape = (devices.size, 1, 1, 1)
    return Mesh(devices.reshape(shape), axis_names=config.axis_names)


def synthetic_batches(config: TrainConfig):
    rng = np.random.default_rng(config.seed)
    true_w = rng.normal(size=(config.features, 1))
    while True:
        x = rng.normal(size=(config.batch_size, config.features)).astype(np.float32)
        noise = 0.1 * rng.normal(size=(config.batch_size, 1))
        y = (x @ true_w + noise).astype(np.float32)
        yield x, y


def init_params(config: TrainConfig):
    key = jax.random.PRNGKey(config.seed)
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (config.features, config.hidden)) / np.sqrt(config.features),
        "b1": jnp.zeros((config.hidden,)),
        "w2": jax.random.normal(k2, (config.hidden, 1)) / np.sqrt(config.hidden),
        "b2": jnp.zeros((1,)),
    }


def forward(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def mse_loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def sharded_smoothness_grad(mesh: Mesh):
    """The gradient of a smoothness penalty on a weight matrix, computed block by block over the mesh."""
    first, second = mesh.axis_names[0], mesh.axis_names[1]

    @partial(shard_map, mesh=mesh, in_specs=(P(first, second),), out_specs=P(None, None))
    def per_block(block):
        return jax.lax.psum(jnp.sin(block), (first, second))

    def smoothness(w):
        return jnp.sum(per_block(w))

    return jax.jit(jax.grad(smoothness))


def sgd_momentum(config: TrainConfig):
    def init(params):
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(grads, velocity, params):
        velocity = jax.tree_util.tree_map(lambda v, g: config.momentum * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - config.learning_rate * v, params, velocity)
        return params, velocity

    return init, update


def make_train_step(config: TrainConfig, update):
    @jax.jit
    def train_step(params, velocity, x, y):
        loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
        params, velocity = update(grads, velocity, params)
        return params, velocity, loss

    return train_step


def save_checkpoint(directory: str, step: int, params, metrics: dict) -> str:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"step-{step:05d}.npz")
    np.savez(path, **{name: np.asarray(value) for name, value in params.items()})
    with open(os.path.join(directory, "metrics.json"), "w") as out:
        json.dump(metrics, out)
    return path


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config, checkpoint_dir = parse_config()
    checkpoint_dir = checkpoint_dir or tempfile.mkdtemp(prefix="train-ckpt-")
    mesh = make_mesh(config)
    log.info("mesh %s over %d devices", dict(mesh.shape), mesh.devices.size)
    params = init_params(config)
    opt_init, opt_update = sgd_momentum(config)
    velocity = opt_init(params)
    train_step = make_train_step(config, opt_update)
    penalty_grad = sharded_smoothness_grad(mesh)
    sharding = NamedSharding(mesh, P(mesh.axis_names[0], mesh.axis_names[1]))
    batches = synthetic_batches(config)
    started = time.perf_counter()
    metrics = {}
    for step in range(1, config.steps + 1):
        x, y = next(batches)
        params, velocity, loss = train_step(params, velocity, x, y)
        w = jax.device_put(jnp.ones((mesh.devices.size, config.hidden)), sharding)
        smooth = penalty_grad(w)
        params["w1"] = params["w1"] - config.penalty * jnp.mean(smooth)
        metrics = {"step": step, "loss": float(loss), "seconds": time.perf_counter() - started}
        if step % config.log_every == 0:
            log.info("step %d loss %.4f", step, metrics["loss"])
    path = save_checkpoint(checkpoint_dir, config.steps, params, metrics)
    log.info("saved %s", path)


if __name__ == "__main__":
    main()
