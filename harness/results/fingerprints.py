"""Fingerprints (pure): each module's cache key and its components, per release, as small JSON a user can
paste from two machines; and their diff: which modules' keys differ and which components moved (what
Bazel users do with two execution logs).

`harness fingerprint` takes one from one run per release (a fixed hash seed, so two machines compare the
same thing), or from a results folder (each cell's first run); `harness diff A B` compares two.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from typing import Any

from harness.core.records import convert
from harness.results.header import HostFacts, host_flat, host_shape
from harness.core.model import CellResult
from harness.core.kinds import Platform

FORMAT = 1
# A fingerprint is small (a few KiB per release): past this a file is not one (the results reader's
# rule, harness.core.files.read_json_bounded, with a fingerprint's bound).
MAX_FINGERPRINT_BYTES = 32 << 20
# Every text a diff prints is at most this long: a module or key is a file name (NAME_MAX), a host fact
# a path at most; a fingerprint cannot make `harness diff` print megabytes.
MAX_NAME = 255
MAX_FACT = 4096
MAX_SEED = 2**32 - 1  # PYTHONHASHSEED's range
# Facts of the two machines worth naming when keys differ (the rest of a host's facts are noise).
CACHE_DIR = "cache_dir"  # a fingerprint's host fact: the one cache folder its runs used
HOST_FACTS = ("hostname", "os", "python", "cpu_count", "machine", "gpus", "driver_version", "backend", CACHE_DIR)


class FingerprintCell(msgspec.Struct, omit_defaults=True):
    jax_version: str
    platform: str = ""
    device_count: int = 0
    seed: int | None = None
    modules: dict[str, dict[str, dict[str, str]]] = {}  # module -> key -> components
    facts: dict[str, Any] = {}  # jaxlib, the environment's python, ...
    note: str = ""  # why no key is known (the run failed, its log named none)

    @property
    def label(self) -> str:
        return f"jax {self.jax_version} ({self.platform} x{self.device_count})"


def _shown(value: Any) -> str:
    return repr(value)[:40]


def _bad_text(value: Any, limit: int) -> str:
    """Why `value` is no text of at most `limit` characters without control characters, or ""."""
    if not isinstance(value, str):
        return f"must be text, not {type(value).__name__} {_shown(value)}"
    if len(value) > limit:
        return f"must be at most {limit} characters, not {len(value)}"
    if not value.isprintable():
        return f"must be printable text, not {_shown(value)}"
    return ""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def cell_problem(data: Any) -> str | None:
    """What makes `data` no fingerprint cell (one line: the field and what it must be), or None."""
    if not isinstance(data, dict):
        return f"must be a mapping, not {type(data).__name__}"
    if "jax_version" not in data:
        return "jax_version: missing"
    why = _bad_text(data["jax_version"], 100)
    if why:
        return f"jax_version: {why}"
    if "platform" in data and not (isinstance(data["platform"], str) and data["platform"] in tuple(Platform)):
        return f"platform: must be one of {', '.join(Platform)}, not {_shown(data['platform'])}"
    if "device_count" in data and not (_whole(data["device_count"]) and 0 <= data["device_count"] <= 1 << 20):
        return f"device_count: must be a whole number of devices, not {_shown(data['device_count'])}"
    seed = data.get("seed")
    if seed is not None and not (_whole(seed) and 0 <= seed <= MAX_SEED):
        return f"seed: must be a hash seed from 0 to {MAX_SEED} or null, not {_shown(seed)}"
    modules = data.get("modules") or {}
    if not isinstance(modules, dict):
        return f"modules: must be a mapping of modules to keys, not {type(modules).__name__}"
    for module, keys in modules.items():
        where = f"modules.{module[:40]}"
        why = _bad_text(module, MAX_NAME)
        if why:
            return f"modules: a module name {why}"
        if not isinstance(keys, dict):
            return f"{where}: must be a mapping of keys to components, not {type(keys).__name__}"
        for key, components in keys.items():
            why = _bad_text(key, MAX_NAME)
            if why:
                return f"{where}: a key {why}"
            if not isinstance(components, dict):
                return f"{where}.{key[:40]}: must be a mapping of components to hashes, not {type(components).__name__}"
            for name, value in components.items():
                why = _bad_text(name, MAX_NAME) or _bad_text(value, MAX_NAME)
                if why:
                    return f"{where}.{key[:40]}: a component or its hash {why}"
    if not isinstance(data.get("facts") or {}, dict):
        return f"facts: must be a mapping, not {type(data['facts']).__name__}"
    if "note" in data and not isinstance(data["note"], str):
        return f"note: must be text, not {type(data['note']).__name__}"
    return None


class Fingerprint(msgspec.Struct, tag_field="fingerprint", tag=FORMAT):
    """A fingerprint's file: its format (the tag), the host and each release's cell."""

    host: HostFacts
    cells: list[FingerprintCell]
    source: str = ""  # the script, or the results folder it was taken from


def fingerprint_of(data: Any, where: str) -> Fingerprint:
    """ValueError (one line naming `where` and the field) for anything that is no fingerprint."""
    def refused(why: str) -> ValueError:
        return ValueError(f"{where}: not a fingerprint ({why})")

    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise refused("no cells")
    version = data.get("fingerprint")
    if not (_whole(version) and version == FORMAT):
        raise refused(f"fingerprint: must be {FORMAT}, the format this release reads, not {_shown(version)}")
    why = _bad_text(data.get("source", ""), MAX_FACT)
    if why:
        raise refused(f"source: {why}")
    host = data.get("host") or {}
    if not isinstance(host, dict):
        raise refused(f"host: must be a mapping, not {type(host).__name__}")
    host = host_shape({k: v for k, v in host.items() if v is not None})  # a backend's facts under `facts`
    facts = host.get("facts") or {}
    for name in HOST_FACTS:  # what a diff prints of the hosts
        value = host.get(name, facts.get(name))
        why = "" if value is None or _whole(value) else _bad_text(
            value if not isinstance(value, list) else " ".join(map(str, value)), MAX_FACT)
        if why:
            raise refused(f"host.{name}: {why}")
    for i, cell in enumerate(data["cells"]):
        problem = cell_problem(cell)
        if problem:
            raise refused(f"cells[{i}].{problem}" if isinstance(cell, dict) else f"cells[{i}]: {problem}")
    cells = [{k: v for k, v in c.items() if v is not None or k == "seed"} for c in data["cells"]]  # null: empty
    try:
        return convert({**data, "host": host, "cells": cells}, Fingerprint)
    except ValueError as exc:
        raise refused(str(exc)) from None


def cell_fingerprint(cell: CellResult, cache_dir: str = "") -> FingerprintCell:
    """A cell's first successful run: its keys and their components, from JAX's log."""
    facts: dict[str, Any] = {k: cell.environment_facts[k] for k in ("jaxlib", "python", "backend") if k in cell.environment_facts}
    if cache_dir:
        facts[CACHE_DIR] = cache_dir
    out = FingerprintCell(cell.spec.jax_version, str(cell.spec.platform), cell.spec.device_count, None, facts=facts)
    run = next((r for r in sorted(cell.runs, key=lambda r: r.index) if r.ok), None)
    if run is None:
        out.note = "no run succeeded: " + (cell.reason or "nothing measured")
        return out
    out.seed = run.seed
    if run.keys is None:
        out.note = run.log_note or "its log named no key"
        return out
    for key in run.keys.keys:
        out.modules.setdefault(key.module, {})[key.key] = dict(key.components)
    return out


@dataclass
class ModuleDiff:
    module: str
    only_a: list[str]  # keys A computed that B did not
    only_b: list[str]
    components: list[str]  # what moved between each key of B and its closest key of A (JAX's order)


@dataclass
class CellDiff:
    label: str
    modules: list[ModuleDiff]
    same: int  # modules whose keys are the same on both
    missing: str = ""  # the cell is in one fingerprint only
    seeds: tuple[int | None, int | None] = (None, None)

    @property
    def differs(self) -> bool:
        return bool(self.modules or self.missing)


def _moved(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The components whose hashes differ between two keys, in JAX's order."""
    names = list(a) + [n for n in b if n not in a]
    return [n for n in names if a.get(n) != b.get(n)]


def _closest(components: dict[str, str], others: dict[str, dict[str, str]]) -> list[str]:
    """What moved between a key and the closest of `others` (the one differing in fewest components)."""
    if not others:
        return []
    best = min(others.items(), key=lambda kv: (len(_moved(kv[1], components)), kv[0]))
    return _moved(best[1], components)


def diff_cells(a: FingerprintCell, b: FingerprintCell) -> CellDiff:
    modules, same = [], 0
    for module in sorted(set(a.modules) | set(b.modules)):
        keys_a, keys_b = a.modules.get(module, {}), b.modules.get(module, {})
        only_a, only_b = sorted(set(keys_a) - set(keys_b)), sorted(set(keys_b) - set(keys_a))
        if not only_a and not only_b:
            same += 1
            continue
        moved: list[str] = []
        for key in only_b:
            for name in _closest(keys_b[key], {k: keys_a[k] for k in only_a} or keys_a):
                if name not in moved:
                    moved.append(name)
        modules.append(ModuleDiff(module, only_a, only_b, moved))
    return CellDiff(a.label, modules, same, seeds=(a.seed, b.seed))


def diff(a: Fingerprint, b: Fingerprint) -> list[CellDiff]:
    """Each release in either fingerprint: which modules' keys differ, which components moved."""
    def key(c: FingerprintCell) -> tuple[str, str, int]:
        return (c.jax_version, c.platform, c.device_count)
    theirs = {key(c): c for c in b.cells}
    out = []
    for cell in a.cells:
        other = theirs.pop(key(cell), None)
        out.append(diff_cells(cell, other) if other else CellDiff(cell.label, [], 0, missing="only in A"))
    out += [CellDiff(c.label, [], 0, missing="only in B") for c in theirs.values()]
    return out


def host_differences(a: Fingerprint, b: Fingerprint) -> list[str]:
    ours, theirs = host_flat(a.host), host_flat(b.host)  # compared fact by fact, by the names a reader sees
    return [f"{name}: {ours.get(name, '-')} vs {theirs.get(name, '-')}" for name in HOST_FACTS
            if ours.get(name) != theirs.get(name)]


def render_diff(a: Fingerprint, b: Fingerprint, found: list[CellDiff]) -> str:
    lines = []
    for cell in found:
        if cell.missing:
            lines.append(f"{cell.label}: {cell.missing}")
            continue
        total = cell.same + len(cell.modules)
        if not cell.modules:
            lines.append(f"{cell.label}: the same keys ({total} module{'' if total == 1 else 's'})")
            continue
        moved = sorted({c for m in cell.modules for c in m.components},
                       key=lambda c: min(m.components.index(c) for m in cell.modules if c in m.components))
        lines.append(f"{cell.label}: {len(cell.modules)} of {total} modules' keys differ; moved: "
                     f"{', '.join(moved) or 'unknown (no components logged)'}")
        for m in cell.modules:
            what = ", ".join(m.components) or ("only in A" if not m.only_b else "only in B" if not m.only_a else "?")
            lines.append(f"  {m.module}: {what}")
        if cell.seeds[0] != cell.seeds[1]:
            lines.append(f"  (hash seeds differ: {cell.seeds[0]} vs {cell.seeds[1]}; a set-ordered program's keys "
                         "follow the seed, not the machine)")
    hosts = host_differences(a, b)
    if hosts:
        lines.append("the two differ in: " + "; ".join(hosts))
    return "\n".join(lines)
