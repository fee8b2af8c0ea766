"""A measurement for issue 48 item 2, not the harness's code: what a fork server per hash seed would save on a
candidate, and whether a forked child computes the same persistent-cache keys as a fresh process of that seed.

For each seed: N fresh processes (`PYTHONHASHSEED=seed python prog.py`, the cache from the environment, as
the harness runs a script), then one server started with that seed that imports jax and numpy (no backend, no
cache config) and forks a child per run; the child sets the cache options by `jax.config.update` (JAX read the
environment at import, in the server, before the cache folder was known) and runs the program with runpy.

    python bench/bench_fork.py [--python ENV/bin/python] [--seeds 1 2 3 4] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The seed's program (tests/fixtures/sm.py) without its own cache line: the cache comes from outside.
PROGRAM = """
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental import mesh_utils
from jax.experimental.shard_map import shard_map

devices = mesh_utils.create_device_mesh((jax.device_count(), 1, 1, 1))
mesh = Mesh(devices, axis_names=('a', 'b', 'c', 'd'))
a = jnp.arange(float(jax.device_count())).reshape(jax.device_count(), 1)

@partial(shard_map, mesh=mesh, in_specs=(P('a', 'b'),), out_specs=P(None, None))
def g(a_block):
  return jax.lax.psum(jnp.sin(a_block), ('a', 'b'))

def f(x):
  return jnp.sum(g(x))

f = jax.jit(jax.grad(f))
f(a)
"""

SERVER = r"""
import os, sys, runpy
import numpy, jax  # imported before any fork: what every candidate would import anyway
sys.stdout.write("ready\n"); sys.stdout.flush()
for line in sys.stdin:
    cache, program = line.rstrip("\n").split("\t")
    pid = os.fork()
    if pid == 0:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = cache
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        try:
            runpy.run_path(program, run_name="__main__")
            code = 0
        except BaseException:
            import traceback; traceback.print_exc(); code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(f"done {os.waitstatus_to_exitcode(status)}\n"); sys.stdout.flush()
"""

BASE_ENV = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


def keys(cache: Path, module: str = "jit_f") -> set[str]:
    return {p.name for p in cache.iterdir() if p.name.startswith(module + "-")} if cache.exists() else set()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=str(Path.home() / ".cache/jax-cache-harness/envs/jax-0.4.28-cpu-py3.11/bin/python"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        program = Path(scratch, "prog.py")
        program.write_text(PROGRAM)
        fresh_s, forked_s, start_s, same = [], [], [], True
        for seed in args.seeds:
            env = {**os.environ, **BASE_ENV, "PYTHONHASHSEED": str(seed)}
            fresh_keys, forked_keys = set(), set()
            for run in range(args.runs):
                cache = Path(scratch, f"fresh-{seed}-{run}")
                started = time.monotonic()
                subprocess.run([args.python, str(program)], env={**env, "JAX_COMPILATION_CACHE_DIR": str(cache)},
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                fresh_s.append(time.monotonic() - started)
                fresh_keys |= keys(cache)
            started = time.monotonic()
            server = subprocess.Popen([args.python, "-c", SERVER], env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            assert server.stdin is not None and server.stdout is not None  # both piped
            assert server.stdout.readline().strip() == "ready"
            start_s.append(time.monotonic() - started)
            for run in range(args.runs):
                cache = Path(scratch, f"forked-{seed}-{run}")
                started = time.monotonic()
                server.stdin.write(f"{cache}\t{program}\n")
                server.stdin.flush()
                while not (line := server.stdout.readline()).startswith("done"):
                    pass
                forked_s.append(time.monotonic() - started)
                assert line.split()[1] == "0", line
                forked_keys |= keys(cache)
            server.stdin.close()
            server.wait()
            print(f"seed {seed}: jit_f keys fresh {sorted(k[:14] for k in fresh_keys)}, "
                  f"forked {sorted(k[:14] for k in forked_keys)}")
            same &= fresh_keys == forked_keys and len(fresh_keys) == 1

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    print(f"fresh process: {mean(fresh_s):.2f} s a run; forked child: {mean(forked_s):.2f} s a run "
          f"({mean(fresh_s) / mean(forked_s):.1f}x); a server's start (import jax): {mean(start_s):.2f} s")
    print("the same key per seed, fresh and forked" if same else "KEYS DIFFER between fresh and forked runs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
