"""Built-in repro programs (core, the bottom layer). Each is a standalone script run by the environment's
interpreter: it imports nothing from the harness."""

from importlib.resources import files
from pathlib import Path

# Through importlib.resources, so an installed wheel finds them as a checkout does.
_HERE = Path(str(files(__name__)))

BUILTIN = {"shard_map_grad": _HERE / "shard_map_grad.py"}


def builtin_path(name: str) -> Path | None:
    return BUILTIN.get(name)
