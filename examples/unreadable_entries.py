"""Compiles a few functions, then overwrites every cache entry it finds with garbage: the next process
computes the same keys, finds the entries, and cannot read them back."""
import os
import pathlib

import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return jnp.sin(x) * 2 + 1


@jax.jit
def g(x):
    return jnp.cumsum(x) @ x


print(f(jnp.ones(8)).sum(), g(jnp.ones(8)))
folder = pathlib.Path(jax.config.jax_compilation_cache_dir)
for entry in folder.iterdir():
    if entry.is_file() and not entry.name.endswith("-atime"):
        entry.write_bytes(b"not an entry")
