"""A cell's later runs against its first, as data (pure): which keys were new, which were not computed again.

It is what the verdict was judged from; harness/evidence/keys.py derives it from the runs, and a cell keeps it
(CellResult.comparison) so that the table, the report and the CI outputs read it instead of deriving it again."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Moved(enum.StrEnum):
    """What moved one function's keys in one test between fresh processes, as the cause controls decided it
    (harness/evidence/controls.py): each control repeats a run's own hash seed in a fresh folder holding that run's
    entries, and computes that function's keys in that test again."""

    # every control gave its run's keys again, for at least two different runs' keys: the hash seed decides them
    HASH_SEED = "hash seed"
    # a control with a run's own seed computed other keys there: something the seed does not fix moved them
    NOT_SEED = "not the hash seed"
    # the controls made so far allow either (too few, or none could be made): not decided to the bound
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class CauseDecision:
    """The controls' word on one function (`module`) in one test (`test`, "" for a plain script) whose keys differed
    between the cell's runs: `moved`, from `controls` controls that repeated the seeds of runs `repeated`; `bound`:
    for HASH_SEED, the largest chance that a program whose keys there follow its own randomness (not the hash seed)
    would have agreed with every control as this one did; for NOT_SEED, the control that disagreed (`disagreed`, a
    run index: certain, a seed's keys are fixed)."""

    module: str
    test: str
    moved: Moved
    controls: int = 0
    repeated: tuple[int, ...] = ()
    bound: float = 1.0
    disagreed: int | None = None


@dataclass(frozen=True)
class Comparison:
    """A cell's later runs against its first: which keys were new, which were not computed again."""

    baseline_run: int | None  # index of the first successful run; None when no run succeeded
    baseline: dict[str, list[str]]  # module -> the keys the first run computed
    later_runs: list[int]  # indices of the successful runs after it
    # later run -> module -> keys no earlier run computed
    new: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    # later run -> module -> the first run's keys it did not compute (known only from `computed`)
    fewer: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    # later run -> module -> the first run's entries (on disk) it compiled again instead of loading
    unserved: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    # later run -> module -> keys no earlier run computed, compiled at argument types the first run never
    # compiled that module at, or at its types returning other types where the seed control says the program (not the
    # hash seed) moved them: the program computed something new (random shapes, sizes), not a key that moved.
    # Kept out of `new`, so that nothing pairs them with the first run's keys of another shape.
    new_input: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    # keys of `new` the seed control says the hash seed moved (its run of the first run's seed computed the first
    # run's keys there); empty where no control was made. A headline names such a module first (issue 60.5's order).
    seed_moved: frozenset[str] = frozenset()
    # the cause controls' decisions, one per function and test whose keys differed between runs (empty: no control)
    decisions: tuple[CauseDecision, ...] = ()

    def decision(self, module: str, test: str = "") -> CauseDecision | None:
        return next((d for d in self.decisions if d.module == module and d.test == test), None)

    @property
    def reproduced(self) -> bool:
        return bool(self.new or self.unserved)

    def new_input_modules(self) -> list[str]:
        """The modules a later run compiled at argument types the first run never had, sorted."""
        return sorted({m for by_module in self.new_input.values() for m in by_module})

    def unserved_modules(self) -> list[str]:
        """The modules whose entry on disk a later run compiled again, sorted."""
        return sorted({m for by_module in self.unserved.values() for m in by_module})

    def runs_unserved(self, module: str) -> list[int]:
        return [run for run, by_module in self.unserved.items() if module in by_module]

    def new_keys(self, module: str) -> list[str]:
        """The distinct keys of `module` that later runs brought."""
        return sorted({k for by_module in self.new.values() for k in by_module.get(module, [])})

    def runs_with_new(self, module: str) -> list[int]:
        return [run for run, by_module in self.new.items() if module in by_module]

    def moved_module(self) -> str | None:
        """The module a headline names: one whose key the seed control says follows the hash seed first (the first
        screen's order), then one the first run compiled too (a key that moved, not a module only a later run
        compiled), then the user's own function over one JAX compiles for an eager operation, then the most new keys
        (the seed's, jit_f, on a tie); None when none has one."""
        modules = {m for by_module in self.new.values() for m in by_module}
        return max(sorted(modules), key=lambda m: (any(k in self.seed_moved for k in self.new_keys(m)),
                                                   m in self.baseline, not dispatch_helper(m),
                                                   len(self.new_keys(m)), m == "jit_f"), default=None)

    def widest_module(self) -> str | None:
        """The first run's module with the most keys (jit_f on a tie)."""
        return max(sorted(self.baseline), key=lambda m: (len(self.baseline[m]), m == "jit_f"), default=None)

    def main_module(self, compile_s: dict[str, float] | None = None) -> str | None:
        """The user's own function among the first run's modules: not one JAX compiles for a single operation
        run outside a jit (jit_broadcast_in_dim has the most keys only because it is compiled at every shape),
        where another exists; of those, the largest program by the longest compile JAX logged for it
        (`compile_s`), then the most keys."""
        own = [m for m in self.baseline if not dispatch_helper(m)] or list(self.baseline)
        timed = compile_s or {}
        return max(sorted(own), key=lambda m: (timed.get(m, -1.0), len(self.baseline[m]), m == "jit_f"), default=None)


# The modules JAX compiles for one jax.numpy/lax operation run eagerly (outside any jit): `jit_` and the
# primitive's name. They are JAX's, never the user's function (seen in the recorded logs: iota, reshape,
# _multi_slice, broadcast_in_dim, convert_element_type; the rest are primitives a script commonly runs eagerly).
_DISPATCH_PRIMITIVES = frozenset((
    "broadcast_in_dim", "convert_element_type", "iota", "reshape", "_multi_slice", "concatenate", "squeeze",
    "transpose", "select_n", "dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter-add",
    "slice", "pad", "add", "sub", "mul", "div", "neg", "integer_pow", "pow", "exp", "log", "tanh",
    "reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin", "dot_general", "clamp", "max", "min",
    "eq", "ne", "lt", "gt", "le", "ge", "and", "or", "not", "copy", "expand_dims", "_where", "_reduce_sum",
    "_mean", "_var", "sqrt", "rsqrt", "abs", "sign", "floor", "ceil", "round", "cumsum", "sort", "rng_bit_generator",
    "random_bits", "random_wrap", "random_unwrap", "random_seed", "threefry2x32", "_threefry_split",
    "_uniform", "_normal", "_normal_real", "_truncated_normal", "_randint", "_bernoulli", "_gamma",
    # jax.numpy's own jitted functions an eager `x @ w`, `jnp.mean(x)` or `jnp.einsum` compiles (a tutorial's
    # headline once named jit_matmul over the training step)
    "matmul", "dot", "vdot", "einsum", "_einsum", "tensordot", "inner", "outer", "clip", "_clip", "where",
    "mean", "var", "std", "sum", "prod", "_reduce_max", "_reduce_min", "_reduce_prod", "cumprod", "_cumulative_reduction",
    "square", "true_divide", "floor_divide", "remainder", "power", "multiply", "subtract", "divide", "negative",
    "ones_like", "zeros_like", "full_like", "_roll_static", "_roll_dynamic", "take", "_take", "_rewriting_take",
    "_gather", "_split", "split", "stack", "_stack", "atleast_1d", "atleast_2d", "ravel", "linspace", "_linspace",
    "arange", "tril", "triu", "diag", "trace", "argsort", "norm", "logsumexp", "softmax", "_softmax", "log_softmax",
))


def dispatch_helper(module: str) -> bool:
    """A module JAX compiled for one operation run eagerly (`jit_broadcast_in_dim`), not a user's function."""
    return module.startswith("jit_") and module[len("jit_"):] in _DISPATCH_PRIMITIVES
