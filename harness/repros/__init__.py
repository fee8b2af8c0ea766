"""Built-in repro programs (core, the bottom layer). Each is a standalone script run by the environment's
interpreter: it imports nothing from the harness."""

from pathlib import Path

_HERE = Path(__file__).parent

BUILTIN = {"shard_map_grad": _HERE / "shard_map_grad.py"}


def builtin_path(name: str) -> Path | None:
    return BUILTIN.get(name)
