"""Which PYTHONHASHSEED values a cell runs with, and how sure a `clean` verdict then is.

The bug class this harness hunts is a Python `set` iterated into a cache key: the key then follows the
per-process string-hash seed. Random seeds find it only by luck: with two equally likely orderings,
n runs all agree with probability 2^(1-n), so a 1e-3 miss bound costs 11 runs per clean cell.
Chosen seeds do better: the environment's own interpreter is asked (cheaply, see `seeds_probe.py`)
how candidate seeds order the name sets involved, and a few seeds are picked so that every pair of
names in every set is seen in both orders. A key that depends on such an order then differs between
two of the runs with certainty, and a cell stops as soon as it does.

Pure, except `SeedPlanner.probe`, which runs the probe script in an Environment.
"""

from __future__ import annotations

import enum
import itertools
import json
import math
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.environments.base import Environment
from harness.model import CellResult, CellSpec, Verdict

TARGET_MISS = 1e-3
WORST_CASE_ORDERINGS = 2  # the hard case: a set of two names, two equally likely orderings
DEFAULT_CANDIDATES = 32  # seeds 1..K probed; 0 is not a seed (it switches randomisation off)
MAX_NAMES_FOR_ALL_SUBSETS = 8
PROBE_SCRIPT = Path(__file__).with_name("seeds_probe.py")

ASSUMES_CHOSEN = ("the regression makes the cache key follow the iteration order of a set of the mesh's "
                  "axis names (the shard_map bug: a tuple built from set(mesh.axis_names) - names), and "
                  "any change in the relative order of two names changes the key; the chosen seeds show "
                  "every pair of names of every probed set in both orders")
ASSUMES_RANDOM = ("seeds drawn at random; the regression splits runs into two equally likely orderings "
                  "(the worst case for a set-order bug whose orderings are equally likely)")
ASSUMES_OTHER = ("for a regression outside the probed sets only the random extra runs count, each "
                 "matching the first run's ordering with probability 1/2")


class SeedStrategy(enum.StrEnum):
    CHOSEN = "chosen"  # probe the environment's interpreter, cover every pair order
    RANDOM = "random"  # enough random seeds for the target under the worst case


def random_seeds(count: int, rng: random.Random | None = None) -> list[int]:
    """Distinct seeds in PYTHONHASHSEED's range (0 disables hashing randomisation, so never 0)."""
    rng = rng or random.SystemRandom()
    seeds: list[int] = []
    while len(seeds) < count:
        s = rng.randint(1, 2**32 - 1)
        if s not in seeds:
            seeds.append(s)
    return seeds


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


def name_sets(axis_names: tuple[str, ...] | list[str]) -> list[tuple[str, ...]]:
    """The sets whose order could leak into a key: the full set first, then subsets of two or more
    (what is left after `- names` removes the axes a spec or vmap already uses)."""
    names = tuple(axis_names)
    if len(names) < 2:
        return []
    sizes = range(len(names) - 1, 1, -1) if len(names) <= MAX_NAMES_FOR_ALL_SUBSETS else [len(names) - 1]
    return [names] + [s for r in sizes for s in itertools.combinations(names, r)]


@dataclass(frozen=True)
class Probe:
    """What an interpreter said: for each candidate seed, the iteration order of each set."""

    python: str
    sets: tuple[tuple[str, ...], ...]
    orderings: dict[int, tuple[tuple[str, ...], ...]]

    @classmethod
    def from_output(cls, sets: list[tuple[str, ...]], data: dict[str, Any]) -> Probe:
        orderings = {int(seed): tuple(tuple(o) for o in per_set)
                     for seed, per_set in data["orderings"].items()}
        return cls(f"{data.get('implementation', 'cpython')} {data['python']}", tuple(sets), orderings)


def _pair_orders(probe: Probe, seed: int) -> frozenset[tuple[int, str, str]]:
    """(set index, earlier name, later name) for every pair in every set, as `seed` orders them."""
    return frozenset((i, a, b) for i, ordering in enumerate(probe.orderings[seed])
                     for a, b in itertools.combinations(ordering, 2))


def choose_seeds(probe: Probe, minimum: int = 2) -> list[int]:
    """Greedy cover of every observed pair order, most new pairs first (ties: the smaller seed).

    Ordered so that the second seed already differs from the first as much as possible: a cell stops
    at its first second key, so a reproducing cell usually costs two runs.
    """
    candidates = sorted(probe.orderings)
    features = {s: _pair_orders(probe, s) for s in candidates}
    universe = frozenset().union(*features.values()) if features else frozenset()
    chosen: list[int] = []
    covered: set = set()
    while covered != universe:
        best = max((s for s in candidates if s not in chosen),
                   key=lambda s: (len(features[s] - covered), -s))
        chosen.append(best)
        covered |= features[best]
    for seed in candidates:  # a set of one name (or none) has no order: still make two runs
        if len(chosen) >= minimum:
            break
        if seed not in chosen:
            chosen.append(seed)
    return chosen


@dataclass
class SeedPlan:
    """The seeds of one cell, how they were chosen, what they cover and the miss bound they give."""

    strategy: SeedStrategy
    seeds: list[int]
    chosen: list[int] = field(default_factory=list)
    random: list[int] = field(default_factory=list)
    python: str | None = None
    candidates: int = 0
    covers: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    @property
    def miss_bound(self) -> float:
        """Bound on P(a real regression reads clean), under `assumes`."""
        if self.strategy == SeedStrategy.CHOSEN:
            complete = all(c["pairs_in_both_orders"] for c in self.covers)
            return 0.0 if complete else miss_probability_random(len(self.random) + 1)
        return miss_probability_random(len(self.seeds))

    @property
    def assumes(self) -> str:
        return ASSUMES_CHOSEN if self.strategy == SeedStrategy.CHOSEN else ASSUMES_RANDOM

    @property
    def miss_bound_other(self) -> float | None:
        """Chosen seeds: the bound for a mechanism the probe did not look at (random extras only)."""
        if self.strategy != SeedStrategy.CHOSEN:
            return None
        return miss_probability_random(len(self.random) + 1)

    def summary(self) -> str:
        """One line for progress output."""
        if self.strategy == SeedStrategy.RANDOM:
            return f"{len(self.seeds)} random seeds" + (f" ({self.note})" if self.note else "")
        complete = all(c["pairs_in_both_orders"] for c in self.covers)
        cover = "every pair of axis names in both orders" if complete else "not every pair order"
        extra = f" + {len(self.random)} random" if self.random else ""
        return f"chosen seeds {', '.join(map(str, self.chosen))} ({cover}){extra}"

    def to_json(self) -> dict[str, Any]:
        out = {"strategy": str(self.strategy), "seeds": self.seeds, "chosen": self.chosen,
               "random": self.random, "python": self.python, "candidates_probed": self.candidates,
               "covers": self.covers, "miss_bound": self.miss_bound, "assumes": self.assumes,
               "target": TARGET_MISS}
        if self.strategy == SeedStrategy.CHOSEN:
            out["miss_bound_other_mechanisms"] = self.miss_bound_other
            out["assumes_other_mechanisms"] = ASSUMES_OTHER
        if self.note:
            out["note"] = self.note
        return out


def record_plan(cell: CellResult, plan: SeedPlan) -> None:
    """Put the seeds and the miss bounds into the cell. The bounds speak only for a clean verdict:
    a reproduced cell is certain, an error or unsupported cell says nothing."""
    cell.extra["seeds"] = plan.to_json()
    clean = cell.verdict == Verdict.CLEAN
    cell.extra["miss_bound"] = plan.miss_bound if clean else None
    cell.extra["miss_bound_other_mechanisms"] = plan.miss_bound_other if clean else None


def bound_label(bound: float | None, other: float | None) -> str:
    """Chosen seeds give two bounds (set order, anything else): show both; random seeds give one."""
    if bound is None:
        return "-"
    if other is None:
        return f"{bound:.2g}"
    return f"{bound:.2g} (set order), {other:.2g} (other)"


def covers(probe: Probe, seeds: list[int]) -> list[dict[str, Any]]:
    """Per probed set: the orderings the seeds give, how many the candidates showed, and whether every
    pair of names appears in both orders."""
    out = []
    for i, names in enumerate(probe.sets):
        seen = {probe.orderings[s][i] for s in probe.orderings}
        ran = [probe.orderings[s][i] for s in seeds if s in probe.orderings]
        pairs = {(a, b) for o in ran for a, b in itertools.combinations(o, 2)}
        both = all((a, b) in pairs and (b, a) in pairs for a, b in itertools.combinations(names, 2))
        out.append({"names": list(names), "orderings_run": [",".join(o) for o in dict.fromkeys(ran)],
                    "orderings_seen_in_candidates": len(seen), "pairs_in_both_orders": both})
    return out


def chosen_plan(probe: Probe, extra_random: int = 0) -> SeedPlan:
    chosen = choose_seeds(probe)
    extra = random_seeds(extra_random + len(chosen))
    extra = [s for s in extra if s not in chosen][:extra_random]
    return SeedPlan(SeedStrategy.CHOSEN, chosen + extra, chosen=chosen, random=extra,
                    python=probe.python, candidates=len(probe.orderings), covers=covers(probe, chosen))


def random_plan(runs: int | None = None, note: str = "") -> SeedPlan:
    runs = runs or runs_for_target()
    seeds = random_seeds(runs)
    return SeedPlan(SeedStrategy.RANDOM, seeds, random=seeds, note=note)


@dataclass
class SeedPlanner:
    """Plans each cell's seeds. `runs`: with chosen seeds, random extras fill up to it; with random
    seeds, the number of runs (default: enough for the target in the worst case)."""

    strategy: SeedStrategy = SeedStrategy.CHOSEN
    runs: int | None = None
    candidates: int = DEFAULT_CANDIDATES
    timeout_s: float = 120.0
    _probes: dict = field(default_factory=dict)

    def plan(self, spec: CellSpec, environment: Environment, log_dir: Path) -> SeedPlan:
        if self.strategy == SeedStrategy.RANDOM:
            return random_plan(self.runs)
        if spec.mesh is None:
            return random_plan(self.runs, note="a user script: the name sets it iterates are unknown, so "
                                               "its seeds are random")
        sets = name_sets(spec.mesh.axis_names)
        try:
            probe = self.probe(environment, sets, log_dir)
        except ProbeFailed as exc:
            return random_plan(self.runs, note=f"seed probe failed ({exc}); random seeds instead")
        plan = chosen_plan(probe, extra_random=max(0, (self.runs or 0) - len(choose_seeds(probe))))
        if not sets:
            plan.note = "fewer than two axis names: no set order to cover"
        return plan

    def probe(self, environment: Environment, sets: list[tuple[str, ...]], log_dir: Path) -> Probe:
        facts = environment.describe()
        # Hash order depends on the interpreter only, so environments sharing one share the probe.
        who = (facts.get("python"), facts.get("interpreter") or facts.get("image") or facts.get("backend"))
        key = (who if who[0] else id(environment), tuple(sets))
        if key not in self._probes:
            self._probes[key] = run_probe(environment, sets, self.candidates, log_dir, self.timeout_s)
        return self._probes[key]


class ProbeFailed(Exception):
    pass


def run_probe(environment: Environment, sets: list[tuple[str, ...]], candidates: int, log_dir: Path,
              timeout_s: float) -> Probe:
    """Run `seeds_probe.py` with the environment's interpreter; its last stdout line is the answer."""
    names = list(sets[0]) if sets else []
    request = json.dumps({"names": names, "subsets": [list(s) for s in sets],
                          "seeds": list(range(1, candidates + 1))})
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "seed-probe.log"
    with tempfile.TemporaryDirectory(prefix="seed-probe-cache-") as cache:
        outcome = environment.run(PROBE_SCRIPT, [request], {}, Path(cache), log, timeout_s)
    text = log.read_text(errors="replace") if log.exists() else ""
    if not outcome.ok:
        raise ProbeFailed(outcome.reason or f"exit code {outcome.exit_code}")
    try:
        return Probe.from_output(sets, json.loads(text.strip().splitlines()[-1]))
    except (IndexError, KeyError, ValueError) as exc:
        raise ProbeFailed(f"unreadable probe output: {exc}") from None
