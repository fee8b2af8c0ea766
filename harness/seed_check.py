"""Does a cell's failure follow the hash seed? (pure: runs in, the seeds to re-run and a sentence out)

When some runs of a cell fail and others pass, the first failing seed and the first passing seed are
each run once more, in fresh cache folders (the runner does it). When the failing seed fails again and
the passing one passes again, the failure follows the hash seed: the program is nondeterministic (a
`set` iterated into a computation, as in Shardy's verifier on 0.5.3), and the cell says so and names
both seeds. Otherwise the failure is not the seed's: flaky, or depending on the cache's state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from harness.model import CellResult, RunRecord, SeedCheck


def candidates(runs: Sequence[RunRecord]) -> tuple[RunRecord, RunRecord] | None:
    """(the first failing run, the first passing run) when the cell has both; None otherwise. Runs
    that timed out are left out: re-running one costs its timeout and says little about a seed."""
    ordered = sorted(runs, key=lambda r: r.index)
    failing = next((r for r in ordered if not r.ok and not r.timed_out), None)
    passing = next((r for r in ordered if r.ok), None)
    if failing is None or passing is None or failing.seed == passing.seed:
        return None
    return failing, passing


def phrase(check: SeedCheck) -> str:
    """What the check found, for the cell's reason."""
    fail, ok = check.failing, check.passing
    if check.follows_seed:
        return (f"fails for some hash seeds (a nondeterministic program): seed {fail.seed} fails "
                f"(run {fail.run}, and again when re-run), seed {ok.seed} passes (run {ok.run}, and again)")
    found = []
    if fail.rerun_ok:
        found.append(f"seed {fail.seed} failed in run {fail.run} but passed when re-run")
    if not ok.rerun_ok:
        found.append(f"seed {ok.seed} passed in run {ok.run} but failed when re-run"
                     + (f" ({ok.rerun_detail})" if ok.rerun_detail else ""))
    return "the failure does not follow the hash seed: " + "; ".join(found)


def with_seed_check(cell: CellResult, check: SeedCheck) -> CellResult:
    """The cell with its seed check recorded; its reason leads with what the check found."""
    return replace(cell, seed_check=check, reason=f"{phrase(check)}; {cell.reason}")
