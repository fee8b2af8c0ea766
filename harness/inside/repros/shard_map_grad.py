"""The seed's repro: jit(grad(f)) where f sums a shard_map'd psum over a named mesh.

From JAX 0.4.27 to 0.4.28 the residual's mesh axis names come from a Python set, so the lowered
StableHLO (and the persistent-cache key) changes with the interpreter's hash seed.

Runs unmodified on every release from 0.4.26 on. The persistent cache is configured by the harness
through JAX_COMPILATION_CACHE_DIR and friends; this script only absorbs API drift. It prints the
lowered module (the evidence) on stdout, between markers the harness can find.
"""

from __future__ import annotations

import argparse
import os
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

try:  # jax >= 0.6
    from jax import shard_map
except ImportError:  # the seed's import
    from jax.experimental.shard_map import shard_map

HLO_BEGIN = "----- BEGIN LOWERED -----"
HLO_END = "----- END LOWERED -----"


def _configure_cache_from_env() -> None:
    # Releases that ignore JAX_COMPILATION_CACHE_DIR in the environment still have the old setter.
    cache_dir = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if not cache_dir:
        return
    try:
        if jax.config.jax_compilation_cache_dir:
            return
    except AttributeError:
        pass
    # Only the releases that need it have this module (newer ones may drop it): imported when needed.
    from jax.experimental.compilation_cache import compilation_cache  # noqa: PLC0415

    compilation_cache.set_cache_dir(cache_dir)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mesh-shape", default="")
    parser.add_argument("--axis-names", default="a,b,c,d")
    args = parser.parse_args()

    _configure_cache_from_env()
    n = jax.device_count()
    shape = tuple(int(s) for s in args.mesh_shape.split(",")) if args.mesh_shape else (n, 1, 1, 1)
    axis_names = tuple(args.axis_names.split(","))
    size = int(np.prod(shape))
    devices = np.array(jax.devices()[:size]).reshape(shape)
    mesh = Mesh(devices, axis_names=axis_names)

    # Shard the first dimension over the first axis, the second over the second, as the seed does.
    first, second = axis_names[0], (axis_names[1] if len(axis_names) > 1 else None)
    rows, cols = shape[0], (shape[1] if len(shape) > 1 else 1)
    a = jnp.arange(float(rows * cols)).reshape(rows, cols)

    @partial(shard_map, mesh=mesh, in_specs=(P(first, second),), out_specs=P(None, None))
    def g(a_block: Any) -> Any:
        return jax.lax.psum(jnp.sin(a_block), tuple(n for n in (first, second) if n))

    def f(x: Any) -> Any:
        return jnp.sum(g(x))

    step = jax.jit(jax.grad(f))  # its module is still jit_f: named after the function it wraps
    step(a).block_until_ready()
    print(HLO_BEGIN)
    print(step.lower(a).as_text())
    print(HLO_END)


if __name__ == "__main__":
    main()
