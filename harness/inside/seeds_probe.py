"""Standalone probe run by an environment's own interpreter: which PYTHONHASHSEED orders which set how.

Usage: python seeds_probe.py '{"names": [...], "subsets": [[...], ...], "seeds": [1, 2, ...]}'
   or: python seeds_probe.py '{"groups": [[names, subsets], ...], "seeds": [1, 2, ...]}' (several sets at once)
Prints one JSON line: {"python": ..., "orderings": {seed: [ordering of each subset, ...]}, "fragile": {seed:
[whether that ordering changes with the names' insertion order, ...]}}, the subsets of every group in turn.

String hashes (and so set iteration order) are fixed when an interpreter starts, so each seed needs
its own child interpreter; `-S` keeps them cheap. Not `-I`/`-E`: those ignore PYTHONHASHSEED.
Imports nothing from the harness: it may run inside a container with only the standard library.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# The expression the shard_map bug iterates: `set(mesh.axis_names) - names`. A subset S is reached
# by removing the other names, so the probe sees the very table layout the bug sees.
# It also builds each set with the names inserted in reverse: where two names share a slot of the set's
# table the order follows insertion, which a program may do otherwise than the probe ("fragile" seeds).
CHILD = """
import json, sys
groups = json.loads(sys.argv[1])
order = lambda full, s: list(set(full) - (set(full) - set(s)))
print(json.dumps([[order(full, s), order(full[::-1], s) != order(full, s)] for full, subsets in groups
                  for s in subsets]))
"""


def order_for(seed: int, groups: list[list[Any]]) -> list[list[Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = str(seed)
    out = subprocess.run([sys.executable, "-S", "-c", CHILD, json.dumps(groups)],
                         env=env, capture_output=True, text=True, check=True)
    orders: list[list[Any]] = json.loads(out.stdout)
    return orders


def main() -> None:
    request = json.loads(sys.argv[1])
    groups = request.get("groups") or [[request["names"], request["subsets"]]]
    seeds = request["seeds"]
    with ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda s: order_for(s, groups), seeds))
    print(json.dumps({"python": sys.version.split()[0], "implementation": sys.implementation.name,
                      "orderings": {str(s): [o for o, _ in r] for s, r in zip(seeds, results)},
                      "fragile": {str(s): [f for _, f in r] for s, r in zip(seeds, results)}}))


if __name__ == "__main__":
    main()
