"""Can this JAX run a multi-process job here? Run by the harness as a small job of its own, once per
environment, before a multi-process cell's runs: each process joins the job as a user's script would
(`jax.distributed.initialize()` with no arguments, filled in by the start-up hook), then runs one
collective across every process's devices. Prints one JSON line. Standard library and jax only."""

import json

import jax

jax.distributed.initialize()
from jax.experimental import multihost_utils  # noqa: E402 - after initialize(), as a user's script does

multihost_utils.sync_global_devices("harness job probe")  # a psum over every device of every process
print(json.dumps({"process_index": jax.process_index(), "process_count": jax.process_count(),
                  "device_count": jax.device_count(), "local_device_count": jax.local_device_count()}))
