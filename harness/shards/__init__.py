"""Sweeps spread over many machines (layer 4, output): `--shard I/N` picks a share of the cells
(`select`); `merge` joins the shards' documents (pure). The `merge` command is wired in `harness.service`."""
