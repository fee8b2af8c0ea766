"""What `harness reduce` adds to its results.json (its `reduce` section) as Structs shaped like the file (pure):
the original program and the reduced one, and the failure signature the reduction kept. The reducer
(harness/reduce/) makes them; the report (harness/report/render.py) reads them."""

from __future__ import annotations

from typing import Any

import msgspec

from harness.core.comparison import Moved
from harness.core.kinds import Cause
from harness.core.factors import Factor

REDUCE_SECTION = "reduce"


class Signature(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a reduction keeps: the module a later run (a factor's run; another process) computed a new key for."""

    module: str
    components: tuple[str, ...] = ()  # the key's components that moved (empty: JAX's log did not say)
    cause: Cause | None = None  # from the lowered modules' diff (None: no diff could be made)
    factor: Factor | None = None  # --vary: the factor under which the module missed
    ranks: tuple[int, int] | None = None  # --processes: the two processes whose keys disagreed
    # what the cause controls said moved the module's key in the original's cell (harness/evidence/controls.py):
    # a candidate whose own say another thing moved it missed for another cause (None: not decided there)
    moved: Moved | None = None

    def describe(self) -> str:
        moved = ", ".join(self.components) if self.components else "components unknown"
        where = ""
        if self.factor is not None:
            where = f" when varying {self.factor}"
        elif self.ranks is not None:
            where = f" between processes {self.ranks[0]} and {self.ranks[1]}"
        by = f"; moved by {self.moved}" if self.moved is not None else ""
        return f"{self.module}{where} (component {moved}; cause {self.cause or 'unknown'}{by})"


class ProgramText(msgspec.Struct, frozen=True, omit_defaults=True):
    """A program a reduction started from or ended with: where, how long, and (the reduced one's) its text."""

    path: str
    lines: int
    bytes: int
    source: str = ""


class Plain(msgspec.Struct, frozen=True, omit_defaults=True):
    """How far the reduced program got to plain JAX: the packages beyond JAX, NumPy and Python's own the original
    imported, the pass whose kept candidate took each one's last import out (absent: taken before a --resume, or
    still imported), and the library calls the reduced program still makes, with what says why each stays."""

    libraries: tuple[str, ...] = ()
    taken_out_by: dict[str, str] = {}  # package -> the pass (as the progress names it)
    calls: tuple[str, ...] = ()  # the callees, as written (`nn.Dense`, `model.apply`)
    still: tuple[str, ...] = ()  # of `libraries`, those the reduced program still imports
    # of the reduced program's jitted functions that still call a library: those the traced pass could not write as
    # the JAX they traced to -> what it could not spell; those whose written body, put alone, lost the signature -> why
    not_spelled: dict[str, str] = {}
    lost_alone: dict[str, str] = {}


class Reduced(msgspec.Struct, omit_defaults=True):
    """results.json's `reduce` section: the reduction's answer, beside the reduced program's own check."""

    original: ProgramText
    reduced: ProgramText
    signature: Signature
    bad: str
    good: str | None = None
    vary: tuple[str, ...] = ()
    processes: int = 1
    candidates_run: int = 0
    candidates_decided: int = 0
    seconds: float = 0.0
    original_check_seconds: float = 0.0
    sandbox: dict[str, Any] = {}  # how candidates were confined (harness/reduce/sandbox.py)
    plain: Plain | None = None  # None: the original imported nothing beyond plain JAX (or an older reduction)
