"""A reproduced cell's failure signature, and whether a candidate's cells keep it (pure).

The signature is what a JAX developer reads in the report: which module's key moved, which components of
the key moved (JAX's own log), and the likely cause read from the two lowered modules' diff. A reduced
program must keep all three on the bad release, and stay clean on the good one, so that it still shows the
regression and not a new bug of its own. Three kinds, by how the original's cell reproduced:

- seeds: a later fresh process computed a key the first did not (the plain cell);
- a factor (`--vary F`): the run under factor F missed keys the reference run (same seed) had: the
  signature names F, and a candidate keeps it only if F still misses, through the same module, with the
  same moved components;
- ranks (`--processes N`): two processes of one run computed different keys for one module (they lowered
  different programs): the signature names the two ranks, and a candidate keeps it only if the same ranks
  still disagree on the same module in the same components (the devices' own component aside), with the
  same cause.
"""

from __future__ import annotations



from harness.evidence.keys import cell_comparison
from harness.core.factors import Factor
from harness.core.model import CellResult
from harness.core.findings import FactorResult
from harness.core.comparison import Moved
from harness.core.kinds import Verdict
from harness.results.reduce_results import Signature
from harness.evidence.ranks import HOST_COMPONENTS


def _factor_result(cell: CellResult, factor: Factor) -> FactorResult | None:
    if cell.variation is None:
        return None
    return next((f for f in cell.variation.factors if f.factor == factor), None)


def _factor_module(found: FactorResult, own: frozenset[str]) -> str:
    """The module a factor's miss is tracked by: one of the script's own functions (`own`) where one
    missed (a factor such as cache-path moves every module's key, jnp's own too), else jit_f, else the first."""
    mine = sorted(m for m in found.modules if m in own)
    if mine:
        return mine[0]
    return "jit_f" if "jit_f" in found.modules else min(found.modules)


def _program_components(components: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """A rank split's components but the devices' own description (it differs between processes always)."""
    return tuple(sorted(c for c in components if c not in HOST_COMPONENTS))


def signature_of(cell: CellResult, vary: tuple[Factor, ...] = (), own: frozenset[str] = frozenset()) -> Signature | None:
    """The signature of a reproduced cell; None for any other verdict. `vary`: the factors the cell was
    measured under: then the first of them that missed is the signature (None when none did), tracked by one
    of `own`'s modules where one missed (the script's own functions)."""
    if cell.verdict != Verdict.REPRODUCED:
        return None
    if vary:
        for factor in vary:
            found = _factor_result(cell, factor)
            if found is not None and found.missed and found.modules:
                return Signature(_factor_module(found, own), tuple(sorted(found.components)), None, factor=factor)
        return None
    if cell.rank_split is not None:
        split = cell.rank_split
        return Signature(split.module, _program_components(split.components), cell.cause,
                         ranks=(split.ranks[0], split.ranks[1]))
    comparison = cell_comparison(cell)
    module = comparison.moved_module()
    if module is None:
        return None
    components = tuple(sorted(cell.attribution.components)) if cell.attribution else ()
    decision = comparison.decision(module)
    moved = decision.moved if decision is not None and decision.moved != Moved.UNDECIDED else None
    return Signature(module, components, cell.cause, moved=moved)


def _not_reproduced(cell: CellResult) -> str:
    return f"{cell.verdict} on {cell.spec.jax_version}" + (f" ({cell.reason})" if cell.reason else "")


def _why_not_factor(target: Signature, bad: CellResult) -> str | None:
    assert target.factor is not None
    found = _factor_result(bad, target.factor)
    if found is None:  # the reference run failed, or compiled nothing: the cell says why
        return _not_reproduced(bad) + f"; {target.factor} not run"
    if bad.verdict != Verdict.REPRODUCED or not found.missed:
        return f"{bad.verdict} on {bad.spec.jax_version}: {target.factor} {found.outcome}" + \
            (f" ({found.reason})" if found.reason else "")
    if target.module not in found.modules:
        return f"another module missed under {target.factor} ({', '.join(found.modules)}, not {target.module})"
    if target.components and tuple(sorted(found.components)) != target.components:
        return f"other key components moved under {target.factor} ({', '.join(found.components) or 'unknown'})"
    return None


def _why_not_ranks(target: Signature, bad: CellResult) -> str | None:
    assert target.ranks is not None  # a job's signature (the caller's test)
    split = bad.rank_split
    if bad.verdict != Verdict.REPRODUCED or split is None:
        return _not_reproduced(bad) if bad.verdict != Verdict.REPRODUCED else \
            f"reproduced on {bad.spec.jax_version}, but not by a disagreement between processes ({bad.reason})"
    run = next((r for r in bad.runs if r.index == split.run), None)
    if run is not None and any(rank.joined is False for rank in run.ranks):
        # Separate programs with their own seeds differ as well: without the job, the good release cannot be
        # asked the same question (its cell is `unsupported`).
        return "its processes never called jax.distributed.initialize(): separate programs, not one job"
    if split.module != target.module:
        return f"processes disagree on another module ({split.module}, not {target.module})"
    if tuple(split.ranks) != target.ranks:
        return f"other processes disagree ({split.ranks[0]} and {split.ranks[1]}, not {target.ranks[0]} and " \
               f"{target.ranks[1]})"
    components = _program_components(split.components)
    if target.components and components != target.components:
        return f"the processes' keys differ in other components ({', '.join(components) or 'the devices only'})"
    if target.cause is not None and bad.cause != target.cause:
        return f"another cause ({bad.cause or 'unknown'}, not {target.cause})"
    return None


def _why_not_seeds(target: Signature, bad: CellResult) -> str | None:
    found = signature_of(bad)
    if found is None:
        return _not_reproduced(bad)
    if found.ranks is not None:
        return "reproduced by a disagreement between processes, not by a later run"
    if found.module != target.module:
        return f"another module moved ({found.module}, not {target.module})"
    if target.components and found.components != target.components:
        return f"other key components moved ({', '.join(found.components) or 'unknown'})"
    if target.cause is not None and found.cause != target.cause:
        return f"another cause ({found.cause or 'unknown'}, not {target.cause})"
    if target.moved is not None and found.moved is not None and found.moved != target.moved:
        # (two misses of one module, the hash seed's and the program's own randomness': not the original's)
        return f"another cause: the cause controls say {found.moved} moved {found.module}'s key, not {target.moved}"
    return None


def why_not_kept(target: Signature, bad: CellResult, good: CellResult | None = None) -> str | None:
    """Why a candidate's cells do not keep `target` (None: they keep it). `bad`: the candidate on the bad
    release (under the signature's factor, or as a job of as many processes); `good`: on the good release,
    measured the same way, when one is given (it must be clean)."""
    if target.factor is not None:
        why = _why_not_factor(target, bad)
    elif target.ranks is not None:
        why = _why_not_ranks(target, bad)
    else:
        why = _why_not_seeds(target, bad)
    if why is None and good is not None and good.verdict != Verdict.CLEAN:
        why = f"{good.verdict} on {good.spec.jax_version}, the good release" + \
            (f" ({good.reason})" if good.reason else "")
    return why
