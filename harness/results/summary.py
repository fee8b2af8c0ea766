"""The summary a measuring command prints with --json (docs/results.md), as typed records (pure): written by
msgspec like results.json, and its JSON Schema (docs/schemas/summary.schema.json) generated from
them. harness/report/table.py fills them in from the cells."""

from __future__ import annotations

import msgspec

from harness.core.kinds import Verdict
from harness.results.document import SweepStatus
from harness.verdicts.boundaries import RecordedBoundaries
from harness.evidence.misses import SuiteFindings

SUMMARY_FORMAT = 1  # bumped when a key changes meaning; keys are only ever added within a format


class SummarySeconds(msgspec.Struct, frozen=True):
    """A cell's seconds: its runs' wall clock, summed; compile seconds lost to misses and saved by hits per
    fresh process, and the first run's (null where the results hold no compile times)."""

    runs: float
    lost_per_start: float | None
    saved_per_start: float | None
    first_run_compile: float | None


class SummaryCell(msgspec.Struct, frozen=True):
    """One row of the table, as data."""

    jax: str  # the table's label: the release, or jax@<sha> for a commit
    jax_version: str
    mesh: str
    platform: str
    verdict: Verdict
    reason: str
    runs: int
    runs_ok: int
    keys: str
    miss_bound: str | None
    detail: str
    seconds: SummarySeconds
    # harness check: the run through another path to the cell's folder (`hit`, `every module missed
    # (compile_options)`, `not made (...)`); null where none was planned
    moved_folder: str | None = None
    # Every function that missed (test ids, category, component, argument types), each test's result and the
    # tests that ran differently between runs (harness/evidence/misses.py); null where nothing missed in a
    # program without tests
    per_test: SuiteFindings | None = None


class Summary(msgspec.Struct, frozen=True):
    """A sweep's summary: its status, where its results are, the summary line and boundaries, how many cells
    had each verdict, and every cell in version order."""

    format: int
    status: SweepStatus
    results: str
    report: str
    summary: str
    boundaries: RecordedBoundaries
    verdicts: dict[Verdict, int]
    cells: tuple[SummaryCell, ...]
