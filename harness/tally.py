"""A cell's runs as they finish (pure): the verdict so far, whether to stop now, and the cell at the end.

The runner's scheduler (serial or parallel, Ctrl-C) feeds it records; everything it decides is here,
tested without processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.analysis import judge
from harness.model import CellResult, CellSpec, RunRecord, Verdict


@dataclass
class Tally:
    planned: int  # runs the cell's seed plan has
    stop_when_reproduced: bool = False  # a later run with a new key settles the cell: stop its runs there
    records: list[RunRecord] = field(default_factory=list)

    def add(self, record: RunRecord) -> None:
        self.records.append(record)

    def stop_now(self) -> bool:
        return self.stop_when_reproduced and judge(self.records).verdict == Verdict.REPRODUCED

    def cell(self, spec: CellSpec, listing: list[str], environment: dict[str, Any],
             interrupted: bool = False) -> CellResult:
        """The cell from the runs made: all of them, fewer when it stopped early, or those that finished
        before Ctrl-C (`interrupted`: then a cell that had not reproduced says how far it got)."""
        records = sorted(self.records, key=lambda r: r.index)
        stopped_early = not interrupted and self.stop_now() and len(records) < self.planned
        judgement = judge(records, expected_runs=None if stopped_early else self.planned)
        reason = judgement.reason
        if interrupted and judgement.verdict != Verdict.REPRODUCED:
            reason = f"interrupted after {len(records)} of {self.planned} runs"
        return CellResult(spec=spec, verdict=judgement.verdict, keys=judgement.keys, runs=records, reason=reason,
                          listing=listing, environment=environment, interrupted=interrupted,
                          attribution=judgement.attribution,
                          attribution_unavailable=judgement.attribution_unavailable,
                          inconsistencies=judgement.inconsistencies)
