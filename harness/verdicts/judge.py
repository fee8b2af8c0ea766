"""A cell's runs as they finish (pure): the verdict so far, whether to stop now, and the cell at the end.

The runner's scheduler (serial or parallel, Ctrl-C) feeds it records; everything it decides is here,
tested without processes.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from harness.evidence.beside_keys import compared_phrase
from harness.evidence.keys import controls_keys, nothing_cached, run_keys
from harness.verdicts.verdict import group_facts, judge
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.core.kinds import Verdict


# Runs that must all cache nothing before a cell stops as `unsupported`: the first, and one with another seed.
NOTHING_CACHED_AFTER = 2
# Runs that must fail the same way (the same reason) before a cell stops as `error`: an ImportError, a
# collection error, an API that moved do not change with the hash seed, and nine more crashes tell nothing.
SAME_FAILURE_AFTER = 2
# ...and only for failures that come before the program's own computation: a module that cannot be imported, a
# syntax error, a name or an attribute that is not there, a call that no longer fits (an API that changed), a test
# suite's collection error. A failure raised while JAX lowers or compiles can follow the hash seed (Shardy's
# verifier on 0.5.3, a ValueError, failed for seeds 0, 2, 4 and passed for 1, 3, 5-8: FACTS.md), as can XLA's
# runtime errors: there the later runs may pass, and that is the finding.
SEED_INDEPENDENT_FAILURE = re.compile(r"\b(ImportError|ModuleNotFoundError|SyntaxError|IndentationError|NameError|"
                                      r"AttributeError|TypeError):|errors? during collection|ERROR collecting")


def _logs_read(records: list[RunRecord]) -> bool:
    return all(run_keys(r).computed is not None for r in records)


class Stop(enum.Enum):
    REPRODUCED = "a later run computed a new key"
    NOTHING_CACHED = "nothing was cached"
    GAVE_UP = "the caller's give_up said the runs cannot give what it looks for"
    FAILED_ALIKE = "the first runs failed the same way"


@dataclass
class Tally:
    planned: int  # runs the cell's seed plan has
    # Stop early: at a later run with a new key (the cell reproduced), or once nothing can change
    # (`nothing_to_measure`); off, every planned run is made (--all-runs).
    stop_when_reproduced: bool = False
    records: list[RunRecord] = field(default_factory=list)
    # Stop as soon as this says the runs so far cannot give what the caller looks for (`harness reduce`
    # rejects a candidate at its first crash, or a first run without the module it tracks).
    give_up: Callable[[list[RunRecord]], bool] | None = None
    # The cause controls, as they are made (harness/measure/open_cell.py): a cell that stopped at a new key goes on
    # with its planned runs where the controls say the program drew it (new input), so that the runs that could
    # show a key the hash seed moves are made.
    controls: list[RunRecord] = field(default_factory=list)
    _stopped: Stop | None = None

    def add(self, record: RunRecord) -> None:
        self.records.append(record)

    def stop_now(self) -> bool:
        """Once true, stays true (runs still going when it turned are added, but it was decided), but for a stop at a
        key the cause controls, made since, say is new input (`controls`): then the planned runs go on."""
        if self._stopped == Stop.REPRODUCED and self.controls and not self._reproduced():
            self._stopped = None
        if self._stopped is None:
            if self.give_up is not None and self.give_up(self.records):
                self._stopped = Stop.GAVE_UP
            elif self.stop_when_reproduced and self._reproduced():
                self._stopped = Stop.REPRODUCED
            elif self.stop_when_reproduced and self.nothing_to_measure():
                self._stopped = Stop.NOTHING_CACHED
            elif self.stop_when_reproduced and self.failed_alike():
                self._stopped = Stop.FAILED_ALIKE
        return self._stopped is not None

    def _reproduced(self) -> bool:
        return judge(self.records, controls=controls_keys(self.controls)).verdict == Verdict.REPRODUCED

    @property
    def gave_up(self) -> bool:
        return self._stopped == Stop.GAVE_UP

    def nothing_to_measure(self) -> bool:
        """The first run and one more (another hash seed) cached nothing at all: the program or the release
        does not use the persistent cache, and no later run can make the cell anything but `unsupported`.
        (A crash, or a run that wrote or computed a key, keeps the cell going as planned.)"""
        return len(self.records) >= NOTHING_CACHED_AFTER and nothing_cached(self.records)

    def failed_alike(self) -> bool:
        """The first SAME_FAILURE_AFTER runs (by index: two hash seeds) failed, with one reason, of a kind that
        cannot follow the seed (SEED_INDEPENDENT_FAILURE): later runs could only fail so again."""
        first = sorted(self.records, key=lambda r: r.index)[:SAME_FAILURE_AFTER]
        return (len(first) == SAME_FAILURE_AFTER and [r.index for r in first] == list(range(1, SAME_FAILURE_AFTER + 1))
                and all(not r.ok and not r.timed_out for r in first) and len({r.reason for r in first}) == 1
                and SEED_INDEPENDENT_FAILURE.search(first[0].reason) is not None)

    def cell(self, spec: CellSpec, listing: list[str], environment_facts: dict[str, Any],
             interrupted: bool = False, controls: list[RunRecord] | None = None) -> CellResult:
        """The cell from the runs made: all of them, fewer when it stopped early, or those that finished
        before Ctrl-C (`interrupted`: then a cell that had not reproduced says how far it got). `controls`: the cause
        controls (the tally's own by default), which say what moved each key that changed."""
        records = sorted(self.records, key=lambda r: r.index)
        stopped_early = not interrupted and self.stop_now() and len(records) < self.planned
        if self._stopped == Stop.NOTHING_CACHED and not nothing_cached(records):
            stopped_early = False  # a run still going then cached something after all: the cell is short
        judgement = judge(records, expected_runs=None if stopped_early else self.planned,
                          controls=controls_keys(self.controls if controls is None else controls))
        reason = judgement.reason
        if stopped_early and self._stopped == Stop.NOTHING_CACHED:
            reason += (f"; stopped after {len(records)} of {self.planned} runs: none wrote an entry"
                       + (" or computed a key (JAX's log)" if _logs_read(records) else "")
                       + ", so later runs could not change the verdict")
        if stopped_early and self._stopped == Stop.FAILED_ALIKE and judgement.verdict == Verdict.ERROR:
            reason += (f"; stopped after {len(records)} of {self.planned} runs: runs 1 and 2 failed the same way, "
                       "so later runs could not change the verdict")
        compared = compared_phrase(records)
        if compared and judgement.verdict.compared:
            reason += f"; {compared}"  # a hit by key is not a served one: said wherever run 2 counts
        if interrupted and judgement.verdict != Verdict.REPRODUCED:
            reason = f"interrupted after {len(records)} of {self.planned} runs"
        cell = CellResult(spec=spec, verdict=judgement.verdict, keys=judgement.keys, runs=records, reason=reason,
                          listing=listing, environment_facts=environment_facts, interrupted=interrupted,
                          attribution=judgement.attribution,
                          attribution_unavailable=judgement.attribution_unavailable,
                          inconsistencies=judgement.inconsistencies, rank_split=judgement.rank_split,
                          job=group_facts(records, spec.processes, None if stopped_early else self.planned)
                          if spec.is_multiprocess else None)
        cell.comparison = judgement.comparison
        return cell
