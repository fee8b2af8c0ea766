"""Candidate programs made from a program's syntax (pure): coarse passes of the harness's own, run before
pysource-minimize's fine ones (harness/reduce/search.py says why both).

- `removals`: delete a chunk of statements from one block (halves first, then quarters, ... single
  statements), the hierarchical delta-debugging order: a 150-line script loses its logging,
  checkpointing and training loop in a few candidates instead of one statement at a time; the
  functions and classes nothing uses any more go in the same candidate, when defining them runs nothing.
- `unwrappings`: a compound statement (if, for, while, with, try) replaced by its body.
- `dead_code`: definitions, imports and assignments nothing uses any more, all in one candidate.
- `plain_jax`: down to plain JAX: the statements that use a library other than JAX, NumPy and Python's own
  (Flax, Optax, the user's) removed, all libraries at once then each; its calls replaced by their first
  argument (a layer by its input, an optimizer's step by the parameters), all at once then each; the imports
  that leaves unused dropped.
- `traced_bodies`: a jitted function whose body calls a library (`model.apply(variables, x)` in `jax.jit`) given
  the body its trace spelled as `jax.lax` calls (read by a probe, as `plain_jax`'s values are), all at once then each.
- `inlinings`: a top-level function called once (`main()`, `mesh = make_mesh(config)`) replaced at the
  call by its body (parameters assigned, the final return as the assignment), and the
  `if __name__ == "__main__":` guard by what it guards: a reproducer reads top to bottom.
- `substitutions`: a module-level name bound once to a literal or a module's attribute (`FEATURES = 4`) read as
  its value, and a function whose body is one `return e` written as `e` at each of its calls (`spec(...)`), their
  bindings dropped: what `inlinings` and pysource-minimize leave of small helpers.
- `field_values`: a class that only holds values (`class TrainConfig: axis_names = ('a', 'b')`, what
  pysource-minimize leaves of a config) read through it or a name bound to it (`config.axis_names`) replaced by
  the value, the class and its binding dropped: pysource-minimize cannot put a value where a name reads it.

Every candidate is `ast.unparse`d, so equal programs have equal text (the memo's key), and comments go
(`harness reduce` puts a script's inline metadata block back on the result). `broken` rejects a candidate
without running it when pyflakes finds a name it uses but never defines, or when it calls, subscripts or
reads a missing attribute of a value known before it runs (harness/reduce/raises.py: `jax(f)`, `0(x)`).

The package: a module per kind of pass (removals.py, dead_code.py, unwrapping.py, substitution.py, inlining.py,
field_values.py,
plain_jax.py over library.py and probe.py, traced.py: a jitted function's library calls written as the JAX they traced
to), what they all work with (syntax.py), the checks before a candidate runs
(checks.py), and the registry of the coarse passes in the search's order (registry.py). Names with an underscore
are the package's own, shared between its modules; the others are imported from here.
"""

from harness.reduce.passes.checks import broken
from harness.reduce.passes.dead_code import dead_code
from harness.reduce.passes.field_values import field_values
from harness.reduce.passes.inlining import inlinings
from harness.reduce.passes.library import PLAIN_PACKAGES, library_calls, library_packages
from harness.reduce.passes.plain_jax import plain_jax
from harness.reduce.passes.probe import PROBE_VARIABLE, probed_values
from harness.reduce.passes.registry import COARSE_PASSES, MAY_GROW, PASS_NAMES, PassName, coarse_passes
from harness.reduce.passes.removals import removals
from harness.reduce.passes.substitution import substitutions
from harness.reduce.passes.syntax import Pass, Place, digest, imported_packages, normalise, size
from harness.reduce.passes.traced import probe_program, traced_bodies
from harness.reduce.passes.unwrapping import unwrappings

__all__ = ["Pass", "Place", "digest", "imported_packages", "normalise", "size", "broken", "removals", "dead_code",
           "unwrappings", "substitutions", "inlinings", "field_values", "PLAIN_PACKAGES", "library_calls", "library_packages", "PROBE_VARIABLE", "probe_program",
           "probed_values", "plain_jax", "traced_bodies", "COARSE_PASSES", "MAY_GROW", "PASS_NAMES", "PassName", "coarse_passes"]
