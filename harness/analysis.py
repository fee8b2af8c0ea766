"""Verdicts and boundaries (pure): runs -> a cell's verdict; cells -> where a regression appears.

A crash is never `clean`, and a cell where nothing was cached is `unsupported`, not clean:
in both cases nothing was measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from packaging.version import Version

from harness.listing import entries, keys_by_module
from harness.model import CellResult, RunRecord, Verdict


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    keys: dict[str, list[str]]
    reason: str


def busiest_module(keys: dict[str, list[str]]) -> str | None:
    """The module with the most distinct keys (the seed's, jit_f, on a tie); None when there is none.
    With two or more keys it is the module that reproduced."""
    return max(keys, key=lambda m: (len(keys[m]), m == "jit_f"), default=None)


def judge(runs: list[RunRecord], expected_runs: int | None = None) -> Judgement:
    """The verdict of one cell from its runs' new cache entries."""
    good = [r for r in runs if r.ok]
    keys = keys_by_module(entries({name for r in good for name in r.new_entries}))
    module = busiest_module(keys)
    if module is not None and len(keys[module]) > 1:
        return Judgement(Verdict.REPRODUCED, keys,
                         f"{module}: {len(keys[module])} distinct keys in {len(good)} runs")
    failed = [r for r in runs if not r.ok]
    if failed:
        first = failed[0]
        why = first.reason or ("timed out" if first.timed_out else f"exit code {first.exit_code}")
        return Judgement(Verdict.ERROR, keys, f"{len(failed)} of {len(runs)} runs failed (run {first.index}: {why})")
    if not runs or (expected_runs is not None and len(runs) < expected_runs):
        return Judgement(Verdict.ERROR, keys, f"only {len(runs)} of {expected_runs} runs were made")
    if not keys:
        return Judgement(Verdict.UNSUPPORTED, keys,
                         "runs succeeded but the cache stayed empty: nothing measured")
    return Judgement(Verdict.CLEAN, keys, f"one key per module over {len(good)} runs")


@dataclass(frozen=True)
class Boundaries:
    appears_in: str | None
    last_clean_before: str | None
    fixed_in: str | None

    def to_json(self) -> dict:
        return {"appears_in": self.appears_in, "last_clean_before": self.last_clean_before,
                "fixed_in": self.fixed_in, "line": self.line()}

    def line(self) -> str:
        if self.appears_in is None:
            return "not reproduced in this range"
        if self.last_clean_before:
            text = f"regression appears in {self.appears_in} (last clean {self.last_clean_before})"
        else:
            text = f"regression present from the first measured release, {self.appears_in} (no clean release before it)"
        text += f"; fixed in {self.fixed_in}" if self.fixed_in else "; not fixed in this range"
        return text


def version_verdicts(cells: Iterable[CellResult]) -> dict[str, Verdict]:
    """One verdict per JAX version over all its cells (meshes): reproduced if any cell reproduced,
    clean only if every cell is clean, else error (if any) or unsupported."""
    by_version: dict[str, list[Verdict]] = {}
    for cell in cells:
        by_version.setdefault(cell.spec.jax_version, []).append(cell.verdict)
    out = {}
    for version, verdicts in by_version.items():
        if Verdict.REPRODUCED in verdicts:
            out[version] = Verdict.REPRODUCED
        elif all(v == Verdict.CLEAN for v in verdicts):
            out[version] = Verdict.CLEAN
        elif Verdict.ERROR in verdicts:
            out[version] = Verdict.ERROR
        else:
            out[version] = Verdict.UNSUPPORTED
    return dict(sorted(out.items(), key=lambda kv: Version(kv[0])))


def boundaries(verdicts: dict[str, Verdict]) -> Boundaries:
    """Where the first regression appears (after its nearest clean release) and where it is fixed.

    Versions that are `error` or `unsupported` say nothing and are stepped over.
    """
    ordered = [(v, verdicts[v]) for v in sorted(verdicts, key=Version)
               if verdicts[v] in (Verdict.CLEAN, Verdict.REPRODUCED)]
    appears = last_clean = fixed = None
    for version, verdict in ordered:
        if appears is None:
            if verdict == Verdict.CLEAN:
                last_clean = version
            else:
                appears = version
        elif verdict == Verdict.CLEAN:
            fixed = version
            break
    return Boundaries(appears, last_clean if appears else None, fixed)
