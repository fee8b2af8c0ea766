"""What a reduction says as it goes, as a reducer says it (pure: the lines, handed to `Progress.say`).

At the start: the original's size, the passes in their order, and what a candidate will cost, estimated from
the original's own measured runs. During the search: each candidate run with the pass that made it, the best
size so far, that pass's candidates tried and kept, and the time spent (over all resumptions).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.reduce.passes import COARSE_PASSES, PASS_NAMES, PassName
from harness.reduce.search import Tried


# The coarse passes in the order they run (each named once), as COARSE_PASSES has them.
ORDER_SAID = (", ".join(dict.fromkeys(PASS_NAMES[make].value for make in COARSE_PASSES))
              + f" (again while they shrink it), then {PassName.MINIMIZE.value} (statements down to literals), "
              f"{PassName.READABLE.value}")


@dataclass(frozen=True)
class CandidateCost:
    """What a candidate costs, from the original's own runs on the bad release."""

    run_s: float  # the original's mean run (a fresh process: `import jax`, its own imports, compiles)
    runs_rejected: int  # runs a rejected candidate usually takes (the first failing one decides)
    runs_kept: int  # a kept one: until the new key shows (or the factor's and control runs)
    runs_most: int  # one that runs clean: every seed of the plan
    at_once: int

    def said(self) -> str:
        at_once = f"; {self.at_once} at once" if self.at_once > 1 else ""
        return (f"a candidate takes about {self.run_s * self.runs_rejected:.1f} s when rejected, "
                f"{self.run_s * self.runs_kept:.1f} s when kept, up to {self.run_s * self.runs_most:.1f} s "
                f"(the original's runs took {self.run_s:.1f} s each on average{at_once})")


def opening(original_lines: int) -> str:
    return f"the original: {original_lines} lines; passes: {ORDER_SAID}"


def duration(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `1 h 02 min`."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


@dataclass
class PassCounts:
    tried: int = 0  # candidates run (memo answers and pyflakes rejections not counted)
    kept: int = 0


@dataclass
class SearchProgress:
    """Counts candidates per pass and says a line per candidate run; `seconds_before`: spent before a resume."""

    say: Callable[[str], None]
    original_lines: int
    seconds_before: float = 0.0
    clock: Callable[[], float] = time.monotonic
    tallies: dict[PassName, PassCounts] = field(default_factory=dict)
    _started: float | None = None

    def __post_init__(self) -> None:
        self._started = self.clock()

    @property
    def seconds(self) -> float:
        return self.seconds_before + self.clock() - (self._started or 0.0)

    def candidate(self, number: int, lines: int, made_by: PassName, answer: Tried, best_lines: int) -> None:
        tally = self.tallies.setdefault(made_by, PassCounts())
        tally.tried += 1
        tally.kept += answer.kept
        verdict = "kept" if answer.kept else f"rejected: {answer.why}"
        self.say(f"  candidate {number} ({lines} lines, {made_by.value}): {verdict}; best so far {best_lines} of "
                 f"{self.original_lines} lines; {made_by.value}: {tally.tried} tried, {tally.kept} kept; "
                 f"{duration(self.seconds)}")

    def summary(self) -> str:
        """Each pass's candidates tried and kept, in the order they first ran."""
        return "; ".join(f"{name.value}: {t.tried} tried, {t.kept} kept" for name, t in self.tallies.items())
