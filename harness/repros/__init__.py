"""Built-in repro programs. Each is a standalone script run by the environment's interpreter."""

from pathlib import Path

_HERE = Path(__file__).parent

BUILTIN = {"shard_map_grad": _HERE / "shard_map_grad.py"}


def builtin_path(name: str) -> Path | None:
    return BUILTIN.get(name)
