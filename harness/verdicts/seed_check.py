"""Does a cell's failure follow the hash seed? (pure: runs in, the seeds to re-run and a sentence out)

When some runs of a cell fail and others pass, the first failing seed and the first passing seed are
each run twice more, in fresh cache folders (the runner does it): a failure that comes and goes at
random, one run in two, would pass a single re-run of each as seed-bound one time in four, twice one
time in sixteen. When the failing seed fails every time again and the passing one passes every time,
the failure follows the hash seed: the program is nondeterministic (a
`set` iterated into a computation, as in Shardy's verifier on 0.5.3), and the cell says so and names
both seeds. Otherwise the failure is not the seed's: flaky, or depending on the cache's state.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.records import replace
from harness.core.model import CellResult
from harness.core.runs import RunRecord
from harness.core.findings import SeedCheck

FAILING, PASSING = "failing", "passing"
# The seed check's re-runs, in the order they are started: each side once, then each side again.
RERUNS = (FAILING, PASSING, FAILING + "-again", PASSING + "-again")


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
    times = len(check.again) // 2 + 1
    again = "and again when re-run" if times == 1 else f"and again in {times} re-runs"
    if check.follows_seed:
        return (f"fails for some hash seeds (a nondeterministic program): seed {fail.seed} fails "
                f"(run {fail.run}, {again}), seed {ok.seed} passes (run {ok.run}, {again.replace(' when re-run', '')})")
    found = []
    if any(r.rerun_ok for r in (fail, *check.again) if r.seed == fail.seed):
        found.append(f"seed {fail.seed} failed in run {fail.run} but passed when re-run")
    broke = next((r for r in (ok, *check.again) if r.seed == ok.seed and not r.rerun_ok), None)
    if broke is not None:
        found.append(f"seed {ok.seed} passed in run {ok.run} but failed when re-run"
                     + (f" ({broke.rerun_detail})" if broke.rerun_detail else ""))
    return "the failure does not follow the hash seed: " + "; ".join(found)


def with_seed_check(cell: CellResult, check: SeedCheck) -> CellResult:
    """The cell with its seed check recorded; its reason leads with what the check found."""
    return replace(cell, seed_check=check, reason=f"{phrase(check)}; {cell.reason}")
