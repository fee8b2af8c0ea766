"""What a lowered module's entry point returns, and which of a run's dumps is which key (pure but for
`dumped_results`, which reads a run's dump folder within bounds).

A function specialised on a static argument (a size drawn at random, `static_argnums`) is compiled at the same
argument types with other results: JAX's `Compiling f with global shapes and types` message names only the
arguments, so its key reads as moved where the program computed something new. The result types of `@main`, read
from the module JAX dumped for each key, tell the two apart (harness/evidence/keys.py: `new input`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Sequence
from pathlib import Path

import msgspec

from harness.core.bounded_read import read_bounded
from harness.core.jaxlog import LoggedKey

_MAIN = "func.func public @main("
HEAD_BYTES = 64 << 10  # a dump's head read for its entry point's line (its signature; the body's constants follow)
MAX_DUMPS = 1000  # a module's dumps read per run (past it: none paired, as the counts then differ)
_DUMP_RE = re.compile(r"^jax_ir(?P<n>\d+)_(?P<module>.+)_compile\.mlir$")


def dump_name(module: str) -> str:
    """A module's name as JAX writes it into its dump's file name (characters a file name cannot hold dropped)."""
    return re.sub(r"[^\w.)( -]", "", module)


def dumped_results(folder: Path, modules: Collection[str]) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """A run's dump folder: for each of `modules` (as `dump_name` spells them: the ones a key needs), its dumps in
    the order JAX wrote them, each as (a digest of its head, the result types its head says). Only that is kept of a
    head (never its text: 20,000 dumps' heads held 2.2 GB), at most MAX_DUMPS + 1 per module, and a dump of a
    module no key names is not opened. A file that is not a regular one (a pipe, a link) is left out, so its module
    pairs with nothing."""
    if folder.is_symlink() or not modules:
        return {}
    try:
        found = sorted((int(m["n"]), m["module"], p.name) for p in folder.iterdir()
                       if (m := _DUMP_RE.match(p.name)) and m["module"] in modules)
    except OSError:
        return {}
    dumps: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for _, module, name in found:
        mine = dumps.setdefault(module, [])
        if len(mine) > MAX_DUMPS:
            continue
        read = read_bounded(folder / name, HEAD_BYTES)
        head = read.text() if read.read else ""
        mine.append((hashlib.blake2b(read.data, digest_size=16).hexdigest() if read.read else "", main_results(head)))
    return dumps


def with_result_types(keys: Sequence[LoggedKey], folder: Path) -> list[LoggedKey]:
    """Each key with the result types of the module its run dumped for it (`paired_in_order`, by the modules'
    heads), where the dump and the log pair; the keys as they were otherwise."""
    dumps = dumped_results(folder, {dump_name(k.module) for k in keys})
    if not dumps:
        return list(keys)
    results: dict[str, tuple[str, ...]] = {}
    by_module: dict[str, list[str]] = {}
    for k in keys:
        by_module.setdefault(k.module, []).append(k.key)
    for module, names in by_module.items():
        mine = dumps.get(dump_name(module), [])
        types = dict(mine)  # a head's digest -> its result types
        for key, digest in paired_in_order(names, [digest for digest, _ in mine]).items():
            results[key] = types[digest]
    return [msgspec.structs.replace(k, result_types=results[k.key]) if results.get(k.key) else k for k in keys]


def main_results(head: str) -> tuple[str, ...]:
    """The result types of a lowered module's `@main` (`("tensor<3xf32>",)`), from its signature line; () where the
    head holds no whole signature. Each `tensor<...>` found with `str.find`: one pass."""
    start = head.find(_MAIN)
    if start < 0:
        return ()
    end = head.find("\n", start)
    if end < 0:
        return ()
    _, arrow, results = head[start:end].rpartition(") ->")
    found: list[str] = []
    i = 0
    while arrow and (i := results.find("tensor<", i)) >= 0:
        depth, j = 0, i + len("tensor")
        while j < len(results):  # tensor<2xcomplex<f32>>: the closing bracket that balances
            depth += {"<": 1, ">": -1}.get(results[j], 0)
            j += 1
            if depth == 0:
                break
        found.append(results[i:j])
        i = j
    return tuple(found)


def paired_in_order(keys: Sequence[str], texts: Sequence[str]) -> dict[str, str]:
    """key -> text, for a run's keys of one module (in the order its log first named them) and the modules JAX dumped
    for them (in the order it dumped them): JAX dumps each compilation as it computes its key, so the two pair in
    order. A key compiled again (an in-memory cache cleared between tests) dumps the same text again, so repeated
    texts are dropped where the counts differ; {} where they still differ: nothing is paired, never a guess."""
    if not keys:
        return {}
    if len(texts) != len(keys):
        texts = list(dict.fromkeys(texts))
    return dict(zip(keys, texts)) if len(texts) == len(keys) else {}
