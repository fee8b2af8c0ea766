"""The evidence for a reproduced cell: the lowered module of two runs that got different keys, diffed.

Pure: texts in, texts out. Where the texts come from (run logs, IR dump folders) is in `sources.py`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from harness.analysis import busiest_module
from harness.listing import parse_name
from harness.model import CellResult, RunRecord, Verdict

# Printed by the built-in repro around `f.lower(x).as_text()` (harness/repros/shard_map_grad.py).
HLO_BEGIN = "----- BEGIN LOWERED -----"
HLO_END = "----- END LOWERED -----"

# `name = "value"` attributes on one MLIR line (jax.result_info, mhlo.sharding, ...).
_ATTRIBUTE_RE = re.compile(r'([A-Za-z_][\w.]*) = "((?:[^"\\]|\\.)*)"')
_LOC_DEFINITION_RE = re.compile(r"^#loc\d*\s*=")


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


def strip_locations(mlir: str) -> str:
    """Drop debug locations (`loc(...)` and `#locN = ...` lines): IR dumps carry them, and they repeat
    every difference (and name source files), which hides the one line a JAX developer needs."""
    out = []
    for line in mlir.splitlines():
        if _LOC_DEFINITION_RE.match(line.strip()):
            continue
        out.append(_drop_inline_locs(line))
    return "\n".join(out) + "\n"


def _drop_inline_locs(line: str) -> str:
    # `loc(...)` may hold quoted strings with parentheses in them: scan, don't regex.
    result, i = [], 0
    while True:
        j = line.find(" loc(", i)
        if j < 0:
            result.append(line[i:])
            return "".join(result)
        result.append(line[i:j])
        k, depth, quoted = j + len(" loc("), 1, False
        while k < len(line) and depth:
            c = line[k]
            if quoted:
                if c == "\\":
                    k += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            k += 1
        i = k


def split_module(cell: CellResult) -> str | None:
    """The module whose key changed between runs (the one with the most keys), None if none did."""
    module = busiest_module(cell.keys)
    return module if module is not None and len(cell.keys[module]) > 1 else None


def run_key(run: RunRecord, module: str) -> str | None:
    """The key `run` wrote for `module`, when it wrote exactly one (a cache hit writes none)."""
    keys = {e.key for e in map(parse_name, run.new_entries) if e and e.module == module}
    return keys.pop() if len(keys) == 1 else None


@dataclass(frozen=True)
class Seeds:
    """Hash seeds that each gave a different `module`, and what told them apart: "key" (runs one at a
    time) or "lowered module" (overlapping runs, whose keys cannot be tied to them). Empty when
    nothing told two apart."""

    values: list[int]
    basis: str


def key_seeds(cell: CellResult, module: str) -> Seeds:
    return _seeds(list(seeds_by_key(cell, module).values()), "key")


def module_seeds(distinct: list[tuple[RunRecord, str]]) -> Seeds:
    """`distinct` from `first_of_each_module`."""
    return _seeds([run.seed for run, _ in distinct], "lowered module")


def _seeds(values: list[int], basis: str) -> Seeds:
    return Seeds(values if len(values) > 1 else [], basis)  # one seed differs from nothing


def first_of_each_module(texts: list[tuple[RunRecord, str]]) -> list[tuple[RunRecord, str]]:
    """The first run of each distinct lowered module (debug locations aside), in run order: with
    overlapping runs this, not `new_entries`, says which runs differ."""
    seen: dict[str, tuple[RunRecord, str]] = {}
    for run, text in texts:
        seen.setdefault(strip_locations(text), (run, text))
    return list(seen.values())


def seeds_by_key(cell: CellResult, module: str) -> dict[str, int]:
    """Each distinct key of `module` and the hash seed of the first run that wrote it."""
    out: dict[str, int] = {}
    for run in cell.runs:
        key = run_key(run, module) if run.ok else None
        if key and key not in out:
            out[key] = run.seed
    return out


def pick_pair(cell: CellResult, module: str) -> tuple[RunRecord, RunRecord] | None:
    """The first two successful runs that wrote different keys for `module`."""
    first: tuple[RunRecord, str] | None = None
    for run in cell.runs:
        key = run_key(run, module) if run.ok else None
        if key is None:
            continue
        if first is None:
            first = (run, key)
        elif key != first[1]:
            return first[0], run
    return None


def changed_attributes(diff_lines: list[str]) -> list[tuple[str, str, str]]:
    """(attribute, before, after) for quoted attributes whose value differs between the removed and
    the added lines of a diff: the one-line explanation (for the seed, `jax.result_info`)."""
    removed = [line[1:] for line in diff_lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff_lines if line.startswith("+") and not line.startswith("+++")]
    found: list[tuple[str, str, str]] = []
    for old, new in zip(removed, added):
        before, after = _ATTRIBUTE_RE.findall(old), _ATTRIBUTE_RE.findall(new)
        if len(before) != len(after):
            continue
        for (name_a, value_a), (name_b, value_b) in zip(before, after):
            change = (name_a, value_a, value_b)
            if name_a == name_b and value_a != value_b and change not in found:
                found.append(change)
    return found


@dataclass(frozen=True)
class Evidence:
    """Two runs of one reproduced cell that got different keys, and what differs in their modules."""

    module: str
    run_a: RunRecord
    run_b: RunRecord
    key_a: str | None  # None when the runs overlapped: their new_entries may hold a neighbour's key
    key_b: str | None
    diff: list[str]  # unified diff lines (no trailing newlines); empty when the modules are identical
    attributes: list[tuple[str, str, str]]
    note: str = ""  # why there is no diff, when there is none

    @property
    def identical(self) -> bool:
        return not self.diff


@dataclass(frozen=True)
class MissingEvidence:
    """A reproduced cell whose modules could not be compared, and why (said in the report)."""

    module: str | None
    why: str


def compare_runs(module: str, run_a: RunRecord, run_b: RunRecord, text_a: str, text_b: str,
                 keyed: bool = True) -> Evidence:
    """`keyed`: the runs ran one at a time, so each run's new_entries are its own keys."""
    a, b = strip_locations(text_a).splitlines(), strip_locations(text_b).splitlines()
    key_a, key_b = (run_key(run_a, module) or "?", run_key(run_b, module) or "?") if keyed else (None, None)

    def label(run: RunRecord, key: str | None) -> str:
        return f"run {run.index} (PYTHONHASHSEED={run.seed}" + (f", {short_key(key)})" if key else ")")
    # No context lines: the changed lines alone are the evidence; the rest is the same module.
    diff = list(difflib.unified_diff(a, b, label(run_a, key_a), label(run_b, key_b), n=0, lineterm=""))
    note = "" if diff else ("the lowered modules are identical: the key difference comes from "
                            "something else hashed into the key (compile options, devices, backend)")
    return Evidence(module, run_a, run_b, key_a, key_b, diff, changed_attributes(diff), note)


def short_key(key: str, digits: int = 12) -> str:
    """`jit_f-<first digits>…` for prose and headings; full keys stay in the listings."""
    module, _, digest = key.rpartition("-")
    return f"{module}-{digest[:digits]}…" if module and len(digest) > digits else key


def needs_evidence(cell: CellResult) -> bool:
    return cell.verdict == Verdict.REPRODUCED
