"""Compare a sweep with a baseline, cell by cell (pure): what changed, and whether to raise the alarm.

A nightly sweep usually measures the newest release, which the baseline (last night's results) may not
have: such a cell is compared with the baseline's newest earlier release on the same mesh and platform,
so "0.10.3 reproduces where 0.10.2 was clean" is caught the night 0.10.3 appears. A jax commit's
cell (`nightly --jax-repo`) is compared with the baseline's newest release on its mesh and platform:
the question is whether the branch broke what the last release got right.

With a threshold (`--max-lost-growth SECONDS`) a cell whose seconds lost per fresh process (harness/evidence/cost.py)
grew by more than it against its baseline cell raises the alarm too, whatever the verdicts: a miss that got
dearer, or a module that stopped being written.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version
from tabulate import tabulate

from harness.core.confidence import weak_bound_phrase
from harness.evidence.cost import cost_of
from harness.core.errors import ExitCode, UserError
from harness.results.header import RecordedConfig
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Verdict


class Change(enum.StrEnum):
    REGRESSED = "regressed"  # clean before, reproduced now: the alarm
    BROKE = "broke"  # clean before, error now: the alarm (a crash may hide the bug)
    FIXED = "fixed"  # reproduced before, clean now
    CHANGED = "changed"  # any other verdict change (unsupported -> clean, error -> clean, ...)
    SAME = "same"
    NEW = "new"  # nothing in the baseline to compare with
    COSTLIER = "costlier"  # seconds lost per start grew past the threshold: the alarm
    # clean before, new input now: the program started compiling what no earlier start compiled (a function at
    # new argument types each process), a miss in every fresh process all the same: the alarm
    NEW_INPUT = "new input"
    # clean before, not cached now: a module JAX never writes (a host callback put in, a threshold as the program
    # runs), compiled again in every fresh process: the alarm
    NOT_CACHED = "not cached"
    # clean before with a weak miss bound (harness.core.confidence.WEAK_BOUND), reproduced now: the baseline's
    # runs may have missed what is there now, so it is no regression until a strong baseline says so
    WEAK_BASELINE = "weak baseline"


ALARMS = frozenset({Change.REGRESSED, Change.BROKE, Change.COSTLIER, Change.NEW_INPUT, Change.NOT_CACHED})


@dataclass(frozen=True)
class CellChange:
    spec: CellSpec
    label: str  # the release, or jax@<sha> for a commit's cell
    before: Verdict | None
    after: Verdict
    baseline_version: str | None  # the baseline cell's version (differs when matched to an earlier release)
    change: Change
    lost_before: float | None = None  # seconds lost per fresh process (None: not known)
    lost_after: float | None = None
    baseline_weak: str = ""  # the baseline cell's weak-bound phrase ("" when its clean was not weak)

    @property
    def alarm(self) -> bool:
        return self.change in ALARMS


def _place(spec: CellSpec) -> tuple[object, ...]:
    """A cell without its version: where it runs."""
    return (spec.platform, spec.device_count, spec.mesh)


def classify(before: Verdict | None, after: Verdict) -> Change:
    if before is None:
        return Change.NEW
    if before == after:
        return Change.SAME
    if before == Verdict.CLEAN and after == Verdict.ERROR:
        return Change.BROKE
    if before == Verdict.CLEAN and after.compiles_again:  # reproduced: regressed; new input, not cached: their words
        return Change.REGRESSED if after == Verdict.REPRODUCED else Change(after.value)
    if before == Verdict.REPRODUCED and after == Verdict.CLEAN:
        return Change.FIXED
    return Change.CHANGED


def _match(cell: CellResult, baseline: list[CellResult]) -> CellResult | None:
    releases = [b for b in baseline if b.commit is None]  # last night's commit is not a reference
    if cell.commit is None:
        exact = [b for b in releases if b.spec.key == cell.spec.key]
        if exact:
            return exact[0]
    candidates = [b for b in releases if _place(b.spec) == _place(cell.spec)
                  and (cell.commit is not None or Version(b.spec.jax_version) < Version(cell.spec.jax_version))]
    return max(candidates, key=lambda b: Version(b.spec.jax_version), default=None)


def _lost(cell: CellResult | None) -> float | None:
    cost = cost_of(cell) if cell is not None else None
    return cost.lost_per_start_s if cost is not None and cost.starts else None


def grew(before: float | None, after: float | None, threshold: float | None) -> bool:
    """Whether seconds lost per start grew past `threshold`; never when either is unknown (a baseline
    written before the harness kept compile seconds says nothing of them)."""
    if threshold is None or before is None or after is None:
        return False
    return after - before > threshold


def compare(current: list[CellResult], baseline: list[CellResult],
            max_lost_growth: float | None = None) -> list[CellChange]:
    out = []
    for cell in current:
        base = _match(cell, baseline)
        before = base.verdict if base else None
        change = classify(before, cell.verdict)
        weak = weak_bound_phrase(base.miss_bounds, base.seeds) if base is not None else ""
        if change in (Change.REGRESSED, Change.NEW_INPUT) and weak:
            change = Change.WEAK_BASELINE
        lost_before, lost_after = _lost(base), _lost(cell)
        if base is not None and change not in ALARMS and grew(lost_before, lost_after, max_lost_growth):
            change = Change.COSTLIER
        out.append(CellChange(cell.spec, cell.label, before, cell.verdict,
                              base.spec.jax_version if base else None, change, lost_before, lost_after, weak))
    return out


def exit_code(changes: list[CellChange]) -> ExitCode:
    """1 when any cell went from clean to reproduced, error, new input or not cached, or lost more seconds per start than
    the threshold allows; 0 otherwise."""
    return ExitCode.REGRESSION if any(c.alarm for c in changes) else ExitCode.OK


def render_changes(changes: list[CellChange]) -> str:
    if not changes:
        return "no cells to compare"
    rows = []
    for c in changes:
        mesh = c.spec.mesh_label
        was = f"{c.before} ({c.baseline_version})" if c.before else "—"
        rows.append([c.label, mesh, f"{c.spec.platform}x{c.spec.device_count}", was, str(c.after),
                     _lost_column(c), c.change.upper() if c.alarm else str(c.change)])
    table = tabulate(rows, headers=["jax", "mesh", "platform", "baseline", "now", "lost per start", "change"],
                     tablefmt="github")
    alarms = [c for c in changes if c.alarm]
    moved = [c for c in changes if c.change not in (Change.SAME,)]
    if alarms:
        broke = [c for c in alarms if c.change != Change.COSTLIER]
        dearer = [c for c in alarms if c.change == Change.COSTLIER]
        parts = []
        if broke:
            parts.append(f"{len(broke)} cell(s) went from clean to "
                         + " or ".join(sorted({str(c.after) for c in broke})) + ": " + _labels(broke))
            if any(c.change == Change.NEW_INPUT for c in broke):
                parts.append("new input: a later run compiled something the first run never had (other argument types, or "
                             "values the program draws anew each start), a compile in every fresh process (report.md names the tests and functions)")
            if any(c.change == Change.NOT_CACHED for c in broke):
                parts.append("not cached: JAX never writes a module the runs compiled (a host callback, or a "
                             "threshold as the program runs), a compile in every fresh process (report.md names "
                             "the tests, the functions and the line)")
        if dearer:
            parts.append(f"{len(dearer)} cell(s) lose more seconds per fresh process than the threshold "
                         "allows: " + _labels(dearer))
        verdict = "ALARM: " + "; ".join(parts)
    elif moved:
        verdict = f"no regression; {len(moved)} cell(s) changed without raising the alarm"
    else:
        verdict = "no change against the baseline"
    weak = [c for c in changes if c.change == Change.WEAK_BASELINE]
    if weak:
        verdict += (f"; {len(weak)} cell(s) reproduce where the baseline read clean but its miss bound was weak, "
                    "so no regression is claimed: " + "; ".join(f"{_labels([c])} (baseline {c.baseline_version} "
                                                                 f"{c.baseline_weak})" for c in weak))
    return f"{table}\n\n{verdict}"


def _labels(changes: list[CellChange]) -> str:
    return ", ".join(c.label if c.label != c.spec.jax_version else f"jax {c.label}" for c in changes)


def _lost_column(change: CellChange) -> str:
    """`0.00 s -> 0.80 s`: seconds lost per fresh process, the baseline's then now's."""
    def shown(value: float | None) -> str:
        return "?" if value is None else f"{value:.2f} s"
    if change.lost_before is None and change.lost_after is None:
        return "-"
    return f"{shown(change.lost_before)} -> {shown(change.lost_after)}"


def repro_of(config: RecordedConfig) -> str | None:
    """The repro a config names: a built-in's name, or a script's file name (its folder differs between
    machines)."""
    return Path(config.repro).name if config.repro else None


def check_same_repro(path: Path, repro: str | None, baseline_path: Path, baseline_repro: str | None) -> None:
    """Cells are matched by version and mesh alone, and a user's script has no mesh: results of two
    different programs would be compared cell by cell as if they were one."""
    if repro and baseline_repro and repro != baseline_repro:
        raise UserError(f"{path} measures repro {repro!r} but the baseline {baseline_path} measured "
                        f"{baseline_repro!r}: compare results of the same repro")
