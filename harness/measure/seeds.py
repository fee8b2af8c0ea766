"""Which PYTHONHASHSEED values a cell runs with (the plan and its bounds: `harness.core.confidence`).

The bug class this harness hunts is a Python `set` iterated into a cache key: the key then follows the
per-process string-hash seed. Random seeds find it only by luck: with two equally likely orderings,
n runs all agree with probability 2^(1-n), so a 1e-3 miss bound costs 11 runs per clean cell.
Chosen seeds do better: the environment's own interpreter is asked (cheaply, see `seeds_probe.py`)
how candidate seeds order the name sets involved, and a few seeds are picked so that every pair of
names in every set is seen in both orders. A key that depends on such an order then differs between
two of the runs with certainty, and a cell stops as soon as it does.

A user's script names no mesh: its first run's seed is random, and the sets come from the module it
lowered (`harness.core.ir_names`: names quoted together, e.g. a shard_map's mesh axis names); the runs after it
get seeds chosen so that, with the first run's, every pair of names of each set is seen in both orders
(`SeedPlanner.reseeder`, called by the runner once run 1 is done).

Pure, except `SeedPlanner.probe`, `run_probe` and `names_in_dump`, which run the probe script in an
Environment and read a run's IR dump.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.core.confidence import SeedPlan, SeedStrategy, runs_for_target
from harness.environments.base import Environment
from harness.environments.process import InterpreterEnvironment
from harness.core.files import package_path
from harness.core.ir_names import name_groups
from harness.core.model import CellResult, CellSpec, Program, Verdict

DEFAULT_CANDIDATES = 32  # seeds 1..K probed; 0 is not a seed (it switches randomisation off)
MAX_NAMES_FOR_ALL_SUBSETS = 8
MAX_DUMP_BYTES = 4 << 20  # a module's text read for names: its start holds the signatures and locations
SCRIPT_RANDOM = "a user script: the name sets it iterates are unknown, so its seeds are random"
PROBE_SCRIPT = package_path("harness.inside", "seeds_probe.py")  # run by the environment's interpreter

def random_seeds(count: int, rng: random.Random | None = None) -> list[int]:
    """Distinct seeds in PYTHONHASHSEED's range (0 disables hashing randomisation, so never 0)."""
    rng = rng or random.SystemRandom()
    seeds: list[int] = []
    while len(seeds) < count:
        s = rng.randint(1, 2**32 - 1)
        if s not in seeds:
            seeds.append(s)
    return seeds


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


def choose_seeds(probe: Probe, minimum: int = 2, given: tuple[int, ...] = ()) -> list[int]:
    """Greedy cover of every observed pair order, most new pairs first (ties: the smaller seed), after
    the `given` seeds (already run: a user script's first run), which the list starts with.

    Ordered so that the second seed already differs from the first as much as possible: a cell stops
    at the first later run with a new key, so a reproducing cell usually costs two runs.
    """
    candidates = sorted(probe.orderings)
    features = {s: _pair_orders(probe, s) for s in candidates}
    universe = frozenset().union(*features.values()) if features else frozenset()
    chosen: list[int] = [s for s in given if s in features]
    covered: set = set().union(*(features[s] for s in chosen))
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


def names_in_dump(folder: Path) -> list[tuple[str, ...]]:
    """The name sets of the modules a run dumped (JAX_DUMP_IR_TO): see `harness.core.ir_names`."""
    texts = []
    for path in sorted(folder.glob("*.mlir")) if folder.is_dir() else []:
        with path.open(errors="replace") as module:
            texts.append(module.read(MAX_DUMP_BYTES))
    return name_groups(texts)


def script_plan(probe: Probe, first: int, runs: int, groups: list[tuple[str, ...]]) -> SeedPlan:
    """A user script's plan once its first run (seed `first`) is done: chosen seeds that, with `first`,
    show every pair of each group's names in both orders, then random ones up to `runs` in all (a
    ceiling: when the cover needs more, only `runs` run and the plan says so)."""
    chosen = choose_seeds(probe, given=(first,))
    found = "; ".join(", ".join(g) for g in groups)
    note = f"names from run 1's lowered module: {found}"
    if len(chosen) > runs:
        note += (f"; covering every pair order needs {len(chosen)} seeds, more than runs: {runs}; only {runs} "
                 f"run (set runs to {len(chosen)} for a zero set-order bound)")
        chosen = chosen[:runs]
    extra = [s for s in random_seeds(runs + len(chosen)) if s not in chosen][:runs - len(chosen)]
    return SeedPlan(SeedStrategy.CHOSEN, chosen + extra, chosen=chosen, random=extra, python=probe.python,
                    candidates=len(probe.orderings), covers=covers(probe, chosen), note=note)


# A user script's later seeds, once its first run is done: (the first run's seed, its IR dump folder) ->
# the seeds of the runs after it.
Reseed = Callable[[int, Path], list[int]]


def record_plan(cell: CellResult, plan: SeedPlan) -> None:
    """Put the seeds and the miss bounds into the cell. The bounds speak only for a clean verdict:
    a reproduced cell is certain, an error or unsupported cell says nothing."""
    cell.seeds = plan
    cell.miss_bounds = plan.bounds if cell.verdict == Verdict.CLEAN else None


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


def chosen_plan(probe: Probe, extra_random: int = 0, limit: int | None = None) -> SeedPlan:
    """Chosen seeds, then `extra_random` random ones; at most `limit` seeds in all (`runs` is a
    ceiling: when covering every pair order needs more, the plan says so and its bound is weaker)."""
    chosen = choose_seeds(probe)
    note = ""
    if limit is not None and len(chosen) > limit:
        note = (f"covering every pair order needs {len(chosen)} chosen seeds, more than runs: {limit}; "
                f"only {limit} run (set runs to {len(chosen)} for a zero set-order bound)")
        chosen, extra_random = chosen[:limit], 0
    extra = random_seeds(extra_random + len(chosen))
    extra = [s for s in extra if s not in chosen][:extra_random]
    return SeedPlan(SeedStrategy.CHOSEN, chosen + extra, chosen=chosen, random=extra,
                    python=probe.python, candidates=len(probe.orderings), covers=covers(probe, chosen),
                    note=note)


RANKS_CHOSEN = ("process 0 takes the plan's seed; each other process the candidate seed that orders the probed "
                "axis-name sets most differently from the processes before it in the launch, so two processes "
                "of one launch iterate those sets differently wherever a seed can")
RANKS_RANDOM = ("a distinct random seed per process: two processes of one launch order a set of two names "
                "differently with probability 1/2, and every launch draws again")


def rank_seeds(first: int, processes: int, probe: Probe | None, taken: set[int],
               rng: random.Random | None = None) -> tuple[int, ...]:
    """A launch's seeds by rank, rank 0's being `first`. With a probe, each next rank is the candidate
    whose pair orders differ most from those of the ranks before it (ties: the smaller seed); without,
    random seeds. No seed twice in one launch, and none of `taken` (the plan's own)."""
    seeds = [first]
    if probe is not None and first in probe.orderings:
        features = {c: _pair_orders(probe, c) for c in sorted(probe.orderings)}
        while len(seeds) < processes:
            seen = frozenset().union(*(features.get(s, frozenset()) for s in seeds))
            free = [c for c in features if c not in seeds and c not in taken]
            if not free:
                break
            seeds.append(max(free, key=lambda c: (len(features[c] - seen), -c)))
    while len(seeds) < processes:
        extra = random_seeds(1, rng)[0]
        if extra not in seeds and extra not in taken:
            seeds.append(extra)
    return tuple(seeds)


def with_ranks(plan: SeedPlan, processes: int, probe: Probe | None = None,
               rng: random.Random | None = None) -> SeedPlan:
    """The plan for a multi-process cell: each launch's seeds by rank (`rank_seeds`), said how."""
    if processes < 2:
        return plan
    taken = set(plan.seeds)
    plan.ranks = [list(rank_seeds(seed, processes, probe, taken, rng)) for seed in plan.seeds]
    plan.ranks_how = RANKS_CHOSEN if probe is not None else RANKS_RANDOM
    return plan


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
        if not spec.is_multiprocess:
            return self._plan(spec, environment, log_dir)[0]
        plan, probe = self._plan(spec, environment, log_dir)
        return with_ranks(plan, spec.processes, probe)

    def _plan(self, spec: CellSpec, environment: Environment, log_dir: Path) -> tuple[SeedPlan, Probe | None]:
        plan = self._plan_of(spec, environment, log_dir)
        probe = None
        if plan.strategy == SeedStrategy.CHOSEN and spec.mesh is not None:
            probe = self._probes.get((interpreter_key(environment), tuple(name_sets(spec.mesh.axis_names))))
        return plan, probe

    def _plan_of(self, spec: CellSpec, environment: Environment, log_dir: Path) -> SeedPlan:
        if self.strategy == SeedStrategy.RANDOM:
            return random_plan(self.runs)
        if spec.mesh is None:
            return random_plan(self.runs, note=SCRIPT_RANDOM)
        sets = name_sets(spec.mesh.axis_names)
        try:
            probe = self.probe(environment, sets, log_dir)
        except ProbeFailed as exc:
            return random_plan(self.runs, note=f"seed probe failed ({exc}); random seeds instead")
        plan = chosen_plan(probe, extra_random=max(0, (self.runs or 0) - len(choose_seeds(probe))),
                           limit=self.runs)
        if not sets:
            plan.note = "fewer than two axis names: no set order to cover"
        return plan

    def probe(self, environment: Environment, sets: list[tuple[str, ...]], log_dir: Path) -> Probe:
        """Probed once per interpreter and name sets: a sweep's cells share the answer."""
        key = (interpreter_key(environment), tuple(sets))
        if key not in self._probes:
            self._probes[key] = run_probe(environment, sets, self.candidates, log_dir, self.timeout_s)
        return self._probes[key]

    def reseeder(self, spec: CellSpec, plan: SeedPlan, environment: Environment, log_dir: Path) -> Reseed | None:
        """For a user script's single-process cell planned with chosen seeds (`plan` still random: its
        names were unknown), what picks its later seeds after run 1, rewriting `plan` to say so; None for
        any other cell. A job's ranks keep their random seeds."""
        if self.strategy != SeedStrategy.CHOSEN or spec.mesh is not None or spec.is_multiprocess:
            return None

        def reseed(first: int, dump: Path) -> list[int]:
            groups = names_in_dump(dump)
            if not groups:
                plan.note = (f"{SCRIPT_RANDOM}: run 1's lowered module carries no set of two or more short "
                             "names")
                return plan.seeds[1:]
            sets = [s for g in groups for s in name_sets(g)]
            seeds = sorted({first, *range(1, self.candidates + 1)})
            try:
                probe = run_probe(environment, sets, self.candidates, log_dir, self.timeout_s, groups=groups,
                                  seeds=seeds)
            except ProbeFailed as exc:
                plan.note = f"seed probe failed ({exc}); random seeds instead"
                return plan.seeds[1:]
            chosen = script_plan(probe, first, len(plan.seeds), groups)
            for name in ("strategy", "seeds", "chosen", "random", "python", "candidates", "covers", "note"):
                setattr(plan, name, getattr(chosen, name))
            return plan.seeds[1:]
        return reseed


def interpreter_key(environment: Environment) -> tuple:
    """What a set's iteration order depends on: the interpreter (its build: the string hash and the set
    implementation) and its version. A venv's `bin/python` resolves to the interpreter it was made
    from, so the venvs of one Python share a key; a container's interpreter is its image's."""
    facts = environment.describe()
    version = facts.get("python")
    if isinstance(environment, InterpreterEnvironment):
        return ("host", os.path.realpath(environment.python), version)
    where = facts.get("image") or facts.get("interpreter")
    if version and where:
        return (facts.get("backend"), where, version)
    return ("environment", id(environment))  # nothing says which interpreter: this environment's own


class ProbeFailed(Exception):
    pass


def run_probe(environment: Environment, sets: list[tuple[str, ...]], candidates: int, log_dir: Path,
              timeout_s: float, groups: list[tuple[str, ...]] | None = None,
              seeds: list[int] | None = None) -> Probe:
    """Run `seeds_probe.py` with the environment's interpreter; its last stdout line is the answer.
    `sets`: the name sets of one mesh (its names first), or, with `groups`, of each group in turn (each
    group's `name_sets`); `seeds`: those to probe (default 1..candidates)."""
    seeds = seeds or list(range(1, candidates + 1))
    if groups is None:
        names = list(sets[0]) if sets else []
        request = json.dumps({"names": names, "subsets": [list(s) for s in sets], "seeds": seeds})
    else:
        request = json.dumps({"groups": [[list(g), [list(s) for s in name_sets(g)]] for g in groups],
                              "seeds": seeds})
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "seed-probe.log"
    with tempfile.TemporaryDirectory(prefix="seed-probe-cache-") as cache:
        outcome = environment.run(Program(PROBE_SCRIPT, (request,)), {}, Path(cache), log, timeout_s)
    text = log.read_text(errors="replace") if log.exists() else ""
    if not outcome.ok:
        raise ProbeFailed(outcome.reason or f"exit code {outcome.exit_code}")
    try:
        return Probe.from_output(sets, json.loads(text.strip().splitlines()[-1]))
    except (IndexError, KeyError, ValueError) as exc:
        raise ProbeFailed(f"unreadable probe output: {exc}") from None
