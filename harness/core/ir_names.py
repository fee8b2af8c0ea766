"""The short names a lowered module carries (pure: MLIR text in, name sets out).

A user's script iterates sets the harness cannot see, but the names that reach its module are there to
read: mesh axis names in a shard_map's shardings and residuals (`loc("[('feats', 'batch'), None]")`,
`jax.result_info = "[('batch',), ('feats',)]"`), a Shardy mesh (`sdy.mesh @mesh = <["batch"=4, "feats"=2]>`),
pytree keys in `result_info` (`"['w1']"`). The names quoted together in one string are one group: a set
the program may have iterated into that string. Each group, and all the names together, is a set whose
orders the chosen seeds then cover (harness/measure/seeds.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Printed by the built-in repro around `f.lower(x).as_text()` (harness/inside/repros/shard_map_grad.py).
HLO_BEGIN = "----- BEGIN LOWERED -----"
HLO_END = "----- END LOWERED -----"

MAX_NAMES = 8  # a "small" set: its pair orders are covered by a few seeds
MAX_GROUPS = 12  # beyond this a module's names are not a few sets but a vocabulary
_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,31}"
# Possessive (`*+`, `++`): each part takes what it can and never gives it back, so a mesh or a string left open
# is given up in one pass, not retried in every way its spaces split (exponential on `<["a"=1   "a"=1   ...`).
_STRING_RE = re.compile(r'"((?:[^"\\\n]++|\\.)*+)"')
_QUOTED_NAME_RE = re.compile(rf"'({_NAME})'")
_SDY_MESH_RE = re.compile(r'<\[((?:\s*+"[^"\n]++"\s*+=\s*+\d++\s*+,?+)++)\]>')
_SDY_AXIS_RE = re.compile(rf'"({_NAME})"\s*=\s*\d+')


def name_groups(texts: list[str]) -> list[tuple[str, ...]]:
    """The name sets of these modules' texts: each group of two to MAX_NAMES names quoted together, and
    every name found as one more group when they are few enough; sorted, smallest first, at most
    MAX_GROUPS."""
    groups: set[tuple[str, ...]] = set()
    everything: set[str] = set()
    for text in texts:
        for mesh in _SDY_MESH_RE.finditer(text):
            groups.add(tuple(sorted(set(_SDY_AXIS_RE.findall(mesh.group(1))))))
        for string in _STRING_RE.finditer(text):
            groups.add(tuple(sorted(set(_QUOTED_NAME_RE.findall(string.group(1))))))
    for group in groups:
        everything.update(group)
    groups.add(tuple(sorted(everything)))
    small = [g for g in groups if 2 <= len(g) <= MAX_NAMES]
    return sorted(small, key=lambda g: (len(g), g))[:MAX_GROUPS]


def lowered_orders(texts: list[str], names: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """How these modules ordered a set of names: at each place where all of them are quoted together (one
    string, or a Shardy mesh), in the order the places come, the names in the order they first appear there.
    A set's order that reaches the module shows here; () where the names are never quoted together."""
    return lowered_orders_of_sets(texts, [names])[0]


def lowered_orders_of_sets(texts: list[str], sets: Sequence[tuple[str, ...]]) -> list[tuple[tuple[str, ...], ...]]:
    """`lowered_orders` of each set, the modules read once for all of them (a 4-name mesh has 11 sets)."""
    places = [found for text in texts for found in _quoted_places(text)]
    out = []
    for names in sets:
        wanted = set(names)
        out.append(tuple(tuple(n for n in dict.fromkeys(found) if n in wanted)
                         for found in places if wanted <= set(found)))
    return out


def _quoted_places(text: str) -> list[list[str]]:
    """The names quoted at each place of a module, in the order the places come."""
    places = [(m.start(), _SDY_AXIS_RE.findall(m.group(1))) for m in _SDY_MESH_RE.finditer(text)]
    places += [(m.start(), _QUOTED_NAME_RE.findall(m.group(1))) for m in _STRING_RE.finditer(text)]
    return [found for _, found in sorted(places, key=lambda p: p[0])]


def extract_lowered(log_text: str) -> str | None:
    """The module the built-in repro printed between its markers; None when it never got there."""
    start = log_text.find(HLO_BEGIN)
    if start < 0:
        return None
    start += len(HLO_BEGIN)
    end = log_text.find(HLO_END, start)
    if end < 0:
        return None
    return log_text[start:end].strip("\n") + "\n"
