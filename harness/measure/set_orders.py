"""The orders a cell's runs lowered its name sets in, against what the probe predicted (issue 47): `Probe`, an
interpreter's answer for candidate seeds, and `OrderObserver`, which reads back each run's module and picks the next
seeds for the orders not seen yet (harness/measure/seeds.py plans the seeds with them). Pure."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import msgspec

from harness.core.confidence import SetCover
from harness.core.ir_names import lowered_orders_of_sets


@dataclass(frozen=True)
class Probe:
    """What an interpreter said: for each candidate seed, the iteration order of each set."""

    python: str
    sets: tuple[tuple[str, ...], ...]
    orderings: dict[int, tuple[tuple[str, ...], ...]]
    # The seeds whose order of some set changes with the names' insertion order (two names in one slot): a
    # program that inserts them otherwise than the probe iterates them otherwise.
    fragile: frozenset[int] = frozenset()
    # pair_orders' answers: a seed's pairs are asked for again at every pick of every run's reseed (a 4-name
    # mesh's probe of thousands of seeds made the planner the reducer's costliest Python after pysource-minimize).
    pairs: dict[int, frozenset[tuple[int, str, str]]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_output(cls, sets: list[tuple[str, ...]], data: dict[str, Any]) -> Probe:
        orderings = {int(seed): tuple(tuple(o) for o in per_set)
                     for seed, per_set in data["orderings"].items()}
        fragile = frozenset(int(seed) for seed, per_set in data.get("fragile", {}).items() if any(per_set))
        return cls(f"{data.get('implementation', 'cpython')} {data['python']}", tuple(sets), orderings, fragile)


def pair_orders(probe: Probe, seed: int) -> frozenset[tuple[int, str, str]]:
    """(set index, earlier name, later name) for every pair in every set, as `seed` orders them."""
    pairs = probe.pairs.get(seed)
    if pairs is None:
        pairs = probe.pairs[seed] = frozenset((i, a, b) for i, ordering in enumerate(probe.orderings[seed])
                                              for a, b in itertools.combinations(ordering, 2))
    return pairs


Pair = tuple[int, str, str]  # (set index, the name lowered first, the name lowered after it)
# While a pair was never lowered both ways at one place, seeds predicted for each of its orders until each has
# this many: all of them mispredicted is then (1/8)^4 = 2.4e-4 < TARGET_MISS; random seeds after that.
SEEDS_PER_UNSEEN_ORDER = 4


def _pairs(ordering: tuple[str, ...], i: int) -> set[Pair]:
    return {(i, a, b) for a, b in itertools.combinations(ordering, 2)}


@dataclass
class OrderObserver:
    """What the runs lowered, set by set (issue 47): the probe predicts a seed's set orders from a set it
    builds itself, but a program that inserts the names in another order iterates them otherwise for the
    seeds that put two names in one slot of the set's table (about one in eight). So the orders a cell
    covered are read back from each run's module (`lowered_orders`), and the next seeds go to orders not
    seen yet. A pair of names counts as seen both ways only where one place in the module showed both
    orders across the runs: a place that never changes (a spec written in the source) shows none."""

    probe: Probe
    lowered: dict[int, tuple[tuple[tuple[str, ...], ...], ...]] = field(default_factory=dict)  # seed -> per set

    def observe(self, seed: int, texts: list[str]) -> None:
        self.lowered[seed] = tuple(lowered_orders_of_sets(texts, self.probe.sets))

    def observable(self, i: int) -> bool:
        """Whether any run's module quoted set i's names together (else its orders are only predicted)."""
        return any(per_set[i] for per_set in self.lowered.values())

    def _seen(self, i: int) -> set[Pair]:
        return {p for per_set in self.lowered.values() for o in per_set[i] for p in _pairs(o, i)}

    def _both_ways(self, i: int) -> set[tuple[str, str]]:
        """The pairs of set i seen in both orders at one place of the module, across the runs."""
        places = max((len(per_set[i]) for per_set in self.lowered.values()), default=0)
        out: set[tuple[str, str]] = set()
        for place in range(places):
            seen = {(a, b) for per_set in self.lowered.values() if place < len(per_set[i])
                    for _, a, b in _pairs(per_set[i][place], i)}
            out |= {(a, b) for a, b in seen if (b, a) in seen}
        return out

    def seen_pairs(self, seeds: list[int]) -> set[Pair]:
        """Pair orders known to have run: lowered, for a set the modules show; predicted, for one they never do."""
        out: set[Pair] = set()
        for i in range(len(self.probe.sets)):
            if self.observable(i):
                out |= self._seen(i)
            else:
                out |= {p for s in seeds if s in self.probe.orderings for p in _pairs(self.probe.orderings[s][i], i)}
        return out

    def _unsettled(self) -> set[Pair]:
        """Both orders of each pair of a set the modules show that no place has shown both ways yet."""
        out: set[Pair] = set()
        for i, names in enumerate(self.probe.sets):
            if self.observable(i):
                both = self._both_ways(i)
                out |= {p for a, b in itertools.combinations(names, 2) if (a, b) not in both
                        for p in ((i, a, b), (i, b, a))}
        return out

    def next_seeds(self, started: list[int], count: int) -> list[int]:
        """Up to `count` candidate seeds: first those predicted to bring a pair order not lowered yet (those
        still running counted as predicted); then, while a pair was never seen both ways at one place, seeds
        for the pair order no more started seeds were predicted to give (up to SEEDS_PER_UNSEEN_ORDER each) (were those predictions wrong, each
        more seed makes it less likely: see `covers`); for a set the modules never show, ones predicted to
        differ from every seed started (the probe's word alone, as before)."""
        running = [s for s in started if s not in self.lowered]
        expected = self.seen_pairs([s for s in started if s in self.lowered]) | _predicted(self.probe, running)
        predicted = _predicted(self.probe, started)
        unsettled = self._unsettled()
        counts = {p: sum(p in pair_orders(self.probe, s) for s in started if s in self.probe.orderings)
                  for p in unsettled}
        picks: list[int] = []
        while len(picks) < count:
            free = [s for s in sorted(self.probe.orderings) if s not in started and s not in picks]
            if not free:
                break

            def balance(seed: int) -> int:  # unsettled pair orders it gives that fewer seeds were predicted to
                return sum(counts[p] <= counts[(p[0], p[2], p[1])] and counts[p] < SEEDS_PER_UNSEEN_ORDER
                           for p in pair_orders(self.probe, seed) & unsettled)
            best = max(free, key=lambda s: (len(pair_orders(self.probe, s) - expected), s not in self.probe.fragile,
                                            balance(s), len(pair_orders(self.probe, s) - predicted), -s))
            features = pair_orders(self.probe, best)
            if not features - expected and not balance(best) and not features - predicted:
                break
            picks.append(best)
            expected |= features
            predicted |= features
            for p in features & unsettled:
                counts[p] += 1
        return picks

    def covers(self, seeds: list[int]) -> list[SetCover]:
        """Per probed set: the orders the runs lowered (`orderings_run`; the probe's word where the modules
        never quote the set, `lowered` false), the probe's prediction for the same seeds, whether every pair
        was seen both ways, the pair orders never seen (`pair_orders_not_seen`), and for the worst such pair how
        many runs that quoted the set were predicted to lower it otherwise than it was (`seeds_predicted_otherwise`:
        the set-order bound is (1/8)^k, `SeedPlan.miss_bound`)."""
        out = []
        predicted_pairs: dict[int, set[tuple[str, str]]] = {}  # per set: the pair orders the seeds give (once)
        for i, a, b in _predicted(self.probe, seeds):
            predicted_pairs.setdefault(i, set()).add((a, b))
        for i, names in enumerate(self.probe.sets):
            predicted = [self.probe.orderings[s][i] for s in seeds if s in self.probe.orderings]
            seen_pairs = predicted_pairs.get(i, set())
            cover: dict[str, Any] = {"names": list(names)}
            if self.observable(i):
                ran = [o for s in seeds if s in self.lowered for o in self.lowered[s][i]]
                both = self._both_ways(i)
                seen_pairs = {(a, b) for _, a, b in self._seen(i)}
                cover["lowered"] = True
            else:
                ran = predicted
                both = {(a, b) for a, b in seen_pairs if (b, a) in seen_pairs}
                cover["lowered"] = False
            missing = []
            # Per pair never seen both ways: how many runs were predicted to lower it otherwise than a place that
            # never changed showed it (a key that followed the set there would have moved unless each of those
            # seeds was mispredicted). Only the runs whose module quoted the set count.
            quoted = [self.probe.orderings[s][i] for s in seeds
                      if s in self.probe.orderings and s in self.lowered and self.lowered[s][i]]
            tests = []
            for a, b in itertools.combinations(names, 2):
                if (a, b) in both:
                    continue
                absent = [f"{x},{y}" for x, y in ((a, b), (b, a)) if (x, y) not in seen_pairs]
                missing += absent or [f"{a}/{b} (each order only at places that never changed)"]
                ahead = sum(o.index(a) < o.index(b) for o in quoted)  # predicted a before b
                otherwise = {(a, b): len(quoted) - ahead, (b, a): ahead}  # predicted other than each order
                if cover["lowered"]:
                    tests.append(min((otherwise[order] for order in ((a, b), (b, a)) if order in seen_pairs),
                                     default=0))
            if tests and cover["lowered"]:
                cover["seeds_predicted_otherwise"] = min(tests)
            cover.update({"orderings_run": [",".join(o) for o in dict.fromkeys(ran)],
                          "orderings_predicted": [",".join(o) for o in dict.fromkeys(predicted)],
                          "orderings_seen_in_candidates": len({self.probe.orderings[s][i] for s in self.probe.orderings}),
                          "pairs_in_both_orders": all((a, b) in both for a, b in itertools.combinations(names, 2))})
            if missing:
                cover["pair_orders_not_seen"] = missing
            out.append(msgspec.convert(cover, SetCover))
        return out


def _predicted(probe: Probe, seeds: list[int]) -> set[Pair]:
    return {p for s in seeds if s in probe.orderings for p in pair_orders(probe, s)}
