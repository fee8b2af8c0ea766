"""The coarse passes in the search's order, and what each is called in the progress lines: the one place a
pass is registered."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from enum import Enum

from harness.reduce.passes.dead_code import dead_code
from harness.reduce.passes.field_values import field_values
from harness.reduce.passes.inlining import inlinings
from harness.reduce.passes.plain_jax import plain_jax
from harness.reduce.passes.removals import removals
from harness.reduce.passes.substitution import substitutions
from harness.reduce.passes.syntax import Pass, Place
from harness.reduce.passes.traced import traced_bodies
from harness.reduce.passes.unwrapping import unwrappings

COARSE_PASSES: tuple[Pass, ...] = (dead_code, plain_jax, traced_bodies, removals, dead_code, substitutions, inlinings,
                                   field_values, unwrappings)


# The passes whose candidates may be longer than the program they come from: a jitted function's body written as the
# JAX it traced to is longer than the library's call it stands for, until what that leaves unused (the module's
# class, the library's import) goes. The search tries them whatever their length; each pass yields nothing once
# what it rewrites is gone, so the coarse passes still reach their fixpoint.
MAY_GROW: frozenset[Pass] = frozenset({traced_bodies})


def coarse_passes(values: dict[str, str]) -> tuple[Pass, ...]:
    """COARSE_PASSES with `plain_jax` and `traced_bodies` given what a run of the program computed
    (`probed_values`)."""
    if not values:
        return COARSE_PASSES
    return tuple(_given(make, values) if make in (plain_jax, traced_bodies) else make for make in COARSE_PASSES)


def _given(make: Pass, values: dict[str, str]) -> Pass:
    def with_values(source: str, resume_at: Place | None = None) -> Iterator[tuple[Place, str]]:
        return make(source, resume_at, values)  # type: ignore[call-arg]

    functools.update_wrapper(with_values, make)  # `__wrapped__`: named as `make` in the progress
    return with_values


class PassName(Enum):
    """The search's passes, as a person reads them (search.py runs them in this order)."""

    DEAD_CODE = "dead code"
    PLAIN_JAX = "down to plain JAX"
    TRACED = "library calls as the JAX they traced to"
    REMOVALS = "statements removed"
    SUBSTITUTION = "constants and one-line functions written where read"
    INLINING = "inlining"
    FIELD_VALUES = "fields read as their values"
    UNWRAPPING = "unwrapping"
    MINIMIZE = "pysource-minimize"
    READABLE = "readable values"
    GOOD = "clean on the good release"
    OTHER = "other"  # a pass the search was given that is none of the above (tests' own)


# What each coarse pass is called in the progress lines (harness/reduce/progress_lines.py).
PASS_NAMES: dict[Pass, PassName] = {dead_code: PassName.DEAD_CODE, plain_jax: PassName.PLAIN_JAX,
                                    traced_bodies: PassName.TRACED,
                                    removals: PassName.REMOVALS,
                                    substitutions: PassName.SUBSTITUTION, inlinings: PassName.INLINING, field_values: PassName.FIELD_VALUES,
                                    unwrappings: PassName.UNWRAPPING}
