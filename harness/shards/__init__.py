"""Sweeps spread over many machines (layer 4, output): `merge` joins the shards' documents (pure); which
share of the cells a shard measures (`--shard I/N`) is harness/sharding.py, in the pure core, where the
options registry reads it. The `merge` command is wired in `harness.service`."""
