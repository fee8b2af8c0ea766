"""What each command produced (the CLI shows it): a folder of results, its status, the line that resumes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.results.bisect_results import BisectSection
from harness.core.model import CellResult
from harness.nightly.compare import CellChange
from harness.results.document import RESULTS_FILE, SweepStatus
from harness.slurm.jobs import SweepJobs
from harness.slurm.submission import MergedSweep, Submitted
from harness.verdicts.boundaries import Boundaries

BISECT_REPORT_FILE = "bisect.md"

@dataclass(frozen=True)
class InFolder:
    """What a command produced in a results folder."""

    folder: Path

    @property
    def results_file(self) -> Path:
        return self.folder / RESULTS_FILE


@dataclass(frozen=True)
class SweepOutcome(InFolder):
    cells: list[CellResult]
    status: SweepStatus
    resume_command: str | None = None  # when interrupted: the command that finishes it
    summary: str = ""  # the boundaries' line as the results header knows it (releases between, the narrowing command)
    # The releases' boundaries that line is made from: --json, the job summary and JUnit say them from it too.
    boundaries: Boundaries | None = None


@dataclass(frozen=True)
class BisectOutcome(InFolder):
    status: SweepStatus
    command: str  # reproduces, and resumes, this bisection
    state_path: Path
    points: int  # points recorded in the state
    outcome: BisectSection | None = None  # None when interrupted
    text: str = ""  # bisect.md

    @property
    def report_file(self) -> Path:
        return self.folder / BISECT_REPORT_FILE


@dataclass(frozen=True)
class NightlyOutcome:
    sweep: SweepOutcome
    changes: list[CellChange] = field(default_factory=list)  # empty unless the sweep completed


@dataclass(frozen=True)
class SubmitOutcome:
    jobs: SweepJobs  # the scripts (a dry run's are for a folder not yet made)
    submitted: Submitted | None  # None: a dry run
    merged_before: frozenset[str] = frozenset()  # merged folders already there (a re-submission's)


@dataclass(frozen=True)
class SubmitWaitOutcome:
    merged: MergedSweep | None  # None: the merge job left no results
    resubmit_command: str | None = None  # when shards are missing or did not finish


@dataclass(frozen=True)
class MergeOutcome(InFolder):
    cells: list[CellResult]
    status: str = str(SweepStatus.COMPLETE)  # results.json's, e.g. "incomplete: shard 3 missing"
    name: str = ""  # the sweep's (its config's name): the merged JUnit suite is the unsharded sweep's
    summary: str = ""  # the boundaries' line with the merged header's releases, as its table.md says it

    @property
    def complete(self) -> bool:
        return self.status == SweepStatus.COMPLETE
