"""A reproduced cell's failure signature, and whether a candidate's cells keep it (pure).

The signature is what a JAX developer reads in the report: which module's key moved, which components of
the key moved (JAX's own log), and the likely cause read from the two lowered modules' diff. A reduced
program must keep all three on the bad release, and stay clean on the good one, so that it still shows the
regression and not a new bug of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis import comparison_of
from harness.model import Cause, CellResult, Verdict


@dataclass(frozen=True)
class Signature:
    module: str  # the module a later run computed a new key for
    components: tuple[str, ...]  # the key's components that moved (empty: JAX's log did not say)
    cause: Cause | None  # from the lowered modules' diff (None: no diff could be made)

    def describe(self) -> str:
        moved = ", ".join(self.components) if self.components else "components unknown"
        return f"{self.module} (component {moved}; cause {self.cause or 'unknown'})"

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "components": list(self.components),
                "cause": str(self.cause) if self.cause else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Signature:
        return cls(data["module"], tuple(data.get("components", ())),
                   Cause(data["cause"]) if data.get("cause") else None)


def signature_of(cell: CellResult) -> Signature | None:
    """The signature of a reproduced cell; None for any other verdict."""
    if cell.verdict != Verdict.REPRODUCED:
        return None
    module = comparison_of(cell.runs).moved_module()
    if module is None:
        return None
    components = tuple(sorted(cell.attribution.components)) if cell.attribution else ()
    return Signature(module, components, cell.cause)


def why_not_kept(target: Signature, bad: CellResult, good: CellResult | None = None) -> str | None:
    """Why a candidate's cells do not keep `target` (None: they keep it). `bad`: the candidate on the bad
    release; `good`: on the good release, when one is given (it must be clean)."""
    found = signature_of(bad)
    if found is None:
        return f"{bad.verdict} on {bad.spec.jax_version}" + (f" ({bad.reason})" if bad.reason else "")
    if found.module != target.module:
        return f"another module moved ({found.module}, not {target.module})"
    if target.components and found.components != target.components:
        return f"other key components moved ({', '.join(found.components) or 'unknown'})"
    if target.cause is not None and found.cause != target.cause:
        return f"another cause ({found.cause or 'unknown'}, not {target.cause})"
    if good is not None and good.verdict != Verdict.CLEAN:
        return f"{good.verdict} on {good.spec.jax_version}, the good release" + \
            (f" ({good.reason})" if good.reason else "")
    return None
