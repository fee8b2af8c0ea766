"""Sweeps spread over many machines: `--shard I/N` picks a share of the cells; `merge` joins the shards."""
