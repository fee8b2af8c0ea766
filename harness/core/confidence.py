"""How sure a `clean` verdict is (pure): the seed plan a cell ran with, and the miss bounds it gives.

The bug class this harness hunts makes a cache key follow a Python `set`'s iteration order, which
follows the per-process string-hash seed. With two equally likely orderings, n random runs all agree
with probability 2^(1-n). Seeds chosen to show every pair of the mesh's axis names in both orders
(`harness.measure.seeds`) make a set-order regression certain to show; every distinct seed, chosen or random,
bounds any other hash-order dependence. A clean cell records both bounds (`MissBounds`) and the plan behind them.
"""

from __future__ import annotations

import enum
import math

import msgspec

from harness.core.kinds import Platform
from harness.core.platforms import describe

TARGET_MISS = 1e-3
# Above this a clean verdict is weak: 3 random runs miss a two-order regression one time in 4, 4 runs one in
# 8 (0.125); 6 runs (0.031) are the fewest that are not weak.
WEAK_BOUND = 0.05
WORST_CASE_ORDERINGS = 2  # the hard case: a set of two names, two equally likely orderings
# The chance that the probe predicts a seed's order of two names wrongly: both share a slot of the set's
# 8-slot table, and the order then follows insertion, which the probe cannot know (measured: 2 seeds in 16
# for {data, model}, 4 in 32 for {fsdp, model}; FACTS.md, fifth round).
MISPREDICTED = 1 / 8

ASSUMES_CHOSEN = ("the regression makes the cache key follow the iteration order of a set of the mesh's "
                  "axis names (the shard_map bug: a tuple built from set(mesh.axis_names) - names), and "
                  "any change in the relative order of two names changes the key; the chosen seeds show "
                  "every pair of names of every probed set in both orders")
ASSUMES_RANDOM = ("seeds drawn at random; the regression splits runs into two equally likely orderings "
                  "(the worst case for a set-order bug whose orderings are equally likely)")
ASSUMES_OTHER = ("for a regression outside the probed sets every distinct seed run counts, chosen or random "
                 "(a seed is chosen for the probed sets' order, which says nothing of another mechanism's), each "
                 "matching the first run's ordering with probability 1/2")


class SeedStrategy(enum.StrEnum):
    CHOSEN = "chosen"  # probe the environment's interpreter, cover every pair order
    RANDOM = "random"  # enough random seeds for the target under the worst case


def miss_probability_random(runs: int, orderings: int = WORST_CASE_ORDERINGS) -> float:
    """Chance that `runs` random seeds all land in one of `orderings` equally likely orderings."""
    if runs < 1:
        return 1.0
    return float(orderings) ** (1 - runs)


def runs_for_target(target: float = TARGET_MISS, orderings: int = WORST_CASE_ORDERINGS) -> int:
    """Fewest random runs (at least 2) whose miss probability is at most `target`."""
    runs = max(2, 1 + math.ceil(-math.log(target) / math.log(orderings)))
    while miss_probability_random(runs, orderings) > target:  # guard against float rounding
        runs += 1
    while runs > 2 and miss_probability_random(runs - 1, orderings) <= target:
        runs -= 1
    return runs


def bound_label(bound: float | None, other: float | None) -> str:
    """Chosen seeds give two bounds (set order, anything else): show both; random seeds give one."""
    if bound is None:
        return "-"
    if other is None:
        return f"{bound:.2g}"
    return f"{bound:.2g} (set order), {other:.2g} (other)"


class MissBounds(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """A clean cell's confidence: the chance that a real regression was missed. `set_order` holds if the
    key follows the order of a set of the mesh's axis names; `other`, for chosen seeds, for any other
    hash-order dependence (None for random seeds, whose one bound already covers every mechanism)."""

    set_order: float = msgspec.field(name="miss_bound")
    other: float | None = msgspec.field(default=None, name="miss_bound_other_mechanisms")

    def label(self) -> str:
        return bound_label(self.set_order, self.other)

    @property
    def worst(self) -> float:
        """The larger of the two: what a clean cell's reader can rely on whatever the mechanism."""
        return max(self.set_order, self.other or 0.0)


class SetCover(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """What a plan's seeds cover of one probed set of names (harness/measure/seeds.py, set_orders.py): the orders
    its runs lowered (or the probe predicted, `lowered` false), and whether every pair was seen both ways. Typed, so
    that a results file's cover of another shape is refused on reading, not met by a reader's KeyError."""

    names: list[str]
    pairs_in_both_orders: bool
    orderings_run: list[str] = []
    orderings_predicted: list[str] = []
    orderings_seen_in_candidates: int = 0
    lowered: bool = False  # read back from the runs' modules (absent before they were)
    # the pair orders never seen, and for the worst pair how many runs were predicted to lower it otherwise
    pair_orders_not_seen: list[str] = []
    seeds_predicted_otherwise: int = 0


class SeedPlan(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """The seeds of one cell, how they were chosen, what they cover and the miss bound they give."""

    strategy: SeedStrategy
    seeds: list[int] = []
    chosen: list[int] = []
    random: list[int] = []
    python: str | None = None
    candidates: int = msgspec.field(default=0, name="candidates_probed")
    covers: list[SetCover] = []
    note: str = ""
    # A multi-process cell: each launch's seeds by rank (`seeds` are rank 0's); empty for one process.
    ranks: list[list[int]] = []
    ranks_how: str = ""

    def launches(self) -> list[int | tuple[int, ...]]:
        """What each run starts with: a seed, or a job's seeds by rank."""
        return [tuple(r) for r in self.ranks] if self.ranks else list(self.seeds)

    @property
    def miss_bound(self) -> float:
        """Bound on P(a real regression reads clean), under `assumes`."""
        if self.strategy == SeedStrategy.CHOSEN:
            complete = all(c.pairs_in_both_orders for c in self.covers)
            if complete:
                return 0.0
            # Orders read back from the modules (issue 47): a pair never lowered both ways at one place could not
            # have moved a key that follows it; so either the set's order does not reach the module, or every
            # seed predicted to give the other order put both names in one slot of the set's table.
            unseen = [c for c in self.covers if c.lowered and not c.pairs_in_both_orders]
            if unseen:
                return max(MISPREDICTED ** c.seeds_predicted_otherwise for c in unseen)
            return miss_probability_random(len(self.random) + 1)
        # A job's processes each draw a seed, and any two that differ show (ranks of one run disagree, or a
        # later run brings a new key): every process counts.
        return miss_probability_random(len(self.seeds) * self.processes)

    def unseen_orders(self) -> list[str]:
        """`{data, model} as data,model`: for each set whose orders were read back from the runs' modules, the
        pair orders never lowered (empty where every pair was seen both ways, or nothing was read back)."""
        out = []
        for c in self.covers:
            if c.lowered and not c.pairs_in_both_orders:
                names = "{" + ", ".join(c.names) + "}"
                for order in c.pair_orders_not_seen:
                    a, _, b = order.partition("/")
                    out.append(f"{names} as {order}" if not b else
                               f"{names} with {a} and {b.split()[0]} in another order at any one place")
        return out

    @property
    def processes(self) -> int:
        return len(self.ranks[0]) if self.ranks else 1

    @property
    def assumes(self) -> str:
        return ASSUMES_CHOSEN if self.strategy == SeedStrategy.CHOSEN else ASSUMES_RANDOM

    @property
    def target(self) -> float:
        """The bound a plan aims for (written for readers of the file)."""
        return TARGET_MISS

    @property
    def miss_bound_other(self) -> float | None:
        """Chosen seeds: the bound for a mechanism the probe did not look at. Every distinct seed counts: a seed
        chosen for the order it gives the probed sets is, to any other hash-order dependence, as good as a random
        one (Python expands each seed into its own hash secret), so 8 runs give 2^-7 whatever their kind."""
        if self.strategy != SeedStrategy.CHOSEN:
            return None
        return miss_probability_random(len(set(self.seeds)))

    @property
    def assumes_other_mechanisms(self) -> str:
        return ASSUMES_OTHER

    @property
    def bounds(self) -> MissBounds:
        """What this plan says of a clean cell."""
        return MissBounds(self.miss_bound, self.miss_bound_other)

    def summary(self) -> str:
        """One line for progress output."""
        if self.strategy == SeedStrategy.RANDOM:
            return (f"{len(self.seeds)} random seeds" + (f" ({self.note})" if self.note else "")
                    + self._ranks_summary())
        complete = all(c.pairs_in_both_orders for c in self.covers)
        lowered = any(c.lowered for c in self.covers)
        if lowered:  # read back from the runs' modules
            cover = ("every pair of names lowered in both orders" if complete else
                     "not lowered yet: " + _orders(self.unseen_orders()) if self.unseen_orders() else "not every pair order")
        else:
            cover = "every pair of axis names in both orders" if complete else "not every pair order"
        extra = f" + {len(self.random)} random" if self.random else ""
        note = f"; {self.note}" if self.note else ""
        return f"chosen seeds {', '.join(map(str, self.chosen))} ({cover}){extra}{note}" + self._ranks_summary()

    def _ranks_summary(self) -> str:
        if not self.ranks:
            return ""
        return "; by process: " + ", ".join("(" + ", ".join(map(str, r)) + ")" for r in self.ranks)


def runs_for_strong(plan: SeedPlan) -> int:
    """Runs per cell (--runs) that bring the plan's set-order bound to WEAK_BOUND or below."""
    return runs_for_bound(plan, WEAK_BOUND)


def runs_for_bound(plan: SeedPlan, target: float) -> int:
    """Runs per cell (--runs) that bring the plan's set-order bound to `target` or below: random seeds,
    enough for it (a job's processes each count); chosen seeds that could not cover every pair order,
    the chosen ones with enough random runs after them."""
    random_runs = runs_for_target(target)
    if plan.strategy == SeedStrategy.CHOSEN and plan.unseen_orders():
        # Orders read back: each two more runs give each order of a pair one more seed predicted for it, and
        # the bound falls by MISPREDICTED per seed of the rarer one (two such seeds are below WEAK_BOUND).
        needed = math.ceil(math.log(target) / math.log(MISPREDICTED) - 1e-9)
        return len(plan.seeds) + 2 * max(0, needed - min(c.seeds_predicted_otherwise
                                                         for c in plan.covers
                                                         if c.lowered and not c.pairs_in_both_orders))
    if plan.strategy == SeedStrategy.CHOSEN:
        return len(plan.chosen) + random_runs - 1
    return math.ceil(random_runs / plan.processes)


# A test suite (`check --pytest`, `-m MODULE`) makes a run per its whole session, so by default it makes the
# fewest runs that are not weak (6: 0.031) rather than the 1e-3 target's 11; --runs 11 gives 1e-3.
SUITE_RUNS = runs_for_target(WEAK_BOUND)
# A config file's runs where it has no `runs:` key (harness run, nightly, bisect CONFIG).
CONFIG_RUNS = 8


def default_runs(given: int | None = None, *, config: int | None = None, suite: bool = False,
                 platform: Platform = Platform.CPU) -> int:
    """The most runs a cell makes, and so the size of its seed plan: the one place this is decided, which every
    command calls. --runs (`given`) when given; else a config's `runs:` (`config`: CONFIG_RUNS where the file
    has no such key); else a program's (check SCRIPT, bisect SCRIPT, reduce, init: no config of its own). A
    script's name sets are unknown, so its seeds are random: enough for the 1e-3 target. A test suite (`suite`:
    --pytest, -m MODULE, whose every run is its whole session), or any program on an accelerator (each run
    opens the device: seconds before its first line of JAX work): the fewest that are not weak; its clean
    verdict says the bound and that --runs 11 gives 1e-3."""
    if given:
        return given
    if config is not None:
        return config
    return SUITE_RUNS if suite or describe(platform).accelerator else runs_for_target()


SHOWN_ORDERS = 3  # a table cell names a few of the orders never lowered, and counts the rest


def _orders(unseen: list[str]) -> str:
    """The orders never lowered, for one line: the first few, and how many more (a four-name mesh has 24)."""
    shown = "; ".join(unseen[:SHOWN_ORDERS])
    more = len(unseen) - SHOWN_ORDERS
    return f"{shown} and {more} more order{'s' if more > 1 else ''} of the same sets" if more > 0 else shown


def weak_bound_phrase(bounds: MissBounds | None, plan: SeedPlan | None) -> str:
    """What a clean cell says when its miss bound is weak, with the runs that would make it strong;
    "" when it is not weak (or not known: a results file without its plan)."""
    if bounds is None or plan is None or bounds.set_order <= WEAK_BOUND:
        return ""
    unseen = plan.unseen_orders()
    if unseen:  # read back from the modules: say what was never lowered, and why the bound is what it is
        return (f"weak: the runs never lowered {_orders(unseen)}: a regression that follows that order would "
                f"read clean with chance up to {bounds.set_order:.2g} (the seeds predicted to give it all put "
                f"both names in one slot of the set's table, about 1 in 8 each); --runs {runs_for_strong(plan)} "
                f"would make it at most {MISPREDICTED ** 2:.2g}")
    runs = runs_for_strong(plan)
    return (f"weak: a regression would read clean with chance up to {bounds.set_order:.2g} (above {WEAK_BOUND}); "
            f"--runs {runs} would make it at most {miss_probability_random(runs_for_target(WEAK_BOUND)):.2g}")


def runs_to_target(bounds: MissBounds, plan: SeedPlan) -> int:
    """Runs per cell (--runs) that bring a clean cell's bounds to the 1e-3 target: the set-order bound's, or
    where that is met, the other mechanisms' (every distinct seed counts there, as a random one)."""
    return runs_for_bound(plan, TARGET_MISS) if bounds.set_order > TARGET_MISS else runs_for_target()


def target_bound_phrase(bounds: MissBounds | None, plan: SeedPlan | None) -> str:
    """A clean cell whose miss bound is not weak but above the 1e-3 target (a test suite's default runs): the
    bound, with the runs that reach the target ("" otherwise; a weak one says it in weak_bound_phrase, one
    whose runs never lowered an order in unseen_orders_phrase)."""
    if bounds is None or plan is None or plan.unseen_orders():
        return ""
    if TARGET_MISS < bounds.set_order <= WEAK_BOUND:
        return (f"a regression would read clean with chance up to {bounds.set_order:.2g}; --runs "
                f"{runs_to_target(bounds, plan)} would make it at most "
                f"{miss_probability_random(runs_for_target()):.2g}")
    if bounds.other is not None and TARGET_MISS < bounds.other and bounds.set_order <= TARGET_MISS:
        # Chosen seeds showed every order of the probed sets (a mesh's names), so that bound is met; any
        # other hash-order dependence is bounded by the distinct seeds alone, as random seeds are.
        return (f"a regression through another hash order than the mesh's names would read clean with chance up "
                f"to {bounds.other:.2g}; --runs {runs_to_target(bounds, plan)} would make it at most "
                f"{miss_probability_random(runs_for_target()):.2g}")
    return ""


def unseen_orders_phrase(bounds: MissBounds | None, plan: SeedPlan | None) -> str:
    """A clean cell whose runs ran out before every pair order was lowered, its bound not weak: which orders
    were not seen ("" otherwise; a weak one says it in weak_bound_phrase)."""
    if bounds is None or plan is None or bounds.set_order > WEAK_BOUND or not plan.unseen_orders():
        return ""
    return (f"the runs never lowered {_orders(plan.unseen_orders())} (set-order bound {bounds.set_order:.2g}: "
            "the seeds predicted to give it would all have had to put both names in one slot)")
