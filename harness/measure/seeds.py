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
(`SeedPlanner.reseeder`, called by the runner once run 1 is done). Whatever the probe predicted, the orders a
cell claims to have covered are those its runs lowered, read back after each run (a script's IR dump, the
module the built-in repro prints in its log: `OrderObserver`), and the next seeds go to orders not seen yet,
each run's from the runs a fixed number of places before it, whichever of its concurrent runs ends first
(`SeedWindow`).

Pure, except `SeedPlanner.probe`, `run_probe`, `dump_texts` and `lowered_in_log`, which run the probe script
in an Environment and read a run's IR dump or log.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from harness.core.bounded_read import read_bounded, read_text_bounded
from harness.core.confidence import SeedPlan, SeedStrategy, SetCover, default_runs
from harness.core.ir_lines import condense
from harness.environments.base import Environment
from harness.environments.process import InterpreterEnvironment
from harness.core.files import package_path
from harness.core.ir_names import extract_lowered, name_groups
from harness.inputs.process_variables import run_log
from harness.core.model import CellResult, CellSpec
from harness.measure.set_orders import OrderObserver, Probe, pair_orders
from harness.core.runs import Program
from harness.verdicts.finish import with_plan

DEFAULT_CANDIDATES = 32  # seeds 1..K probed; 0 is not a seed (it switches randomisation off)
MAX_NAMES_FOR_ALL_SUBSETS = 8
MAX_DUMP_BYTES = 4 << 20  # a module's text read for names: its start holds the signatures and locations
# A run's dumps read for names, at most (a long suite's run dumps some hundreds of modules)
DUMP_FILES = 2_000
DUMP_TOTAL_BYTES = 256 << 20
MAX_LOG_BYTES = 16 << 20  # a built-in run's log read for the module it printed (JAX's log lines come before it)
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


def choose_seeds(probe: Probe, minimum: int = 2, given: tuple[int, ...] = ()) -> list[int]:
    """Greedy cover of every observed pair order, most new pairs first (ties: the smaller seed), after
    the `given` seeds (already run: a user script's first run), which the list starts with.

    Ordered so that the second seed already differs from the first as much as possible: a cell stops
    at the first later run with a new key, so a reproducing cell usually costs two runs.
    """
    candidates = sorted(probe.orderings)
    features = {s: pair_orders(probe, s) for s in candidates}
    universe = frozenset().union(*features.values()) if features else frozenset()
    chosen: list[int] = [s for s in given if s in features]
    covered: set[tuple[int, str, str]] = set().union(*(features[s] for s in chosen))
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


def dump_texts(folder: Path) -> list[str]:
    """The modules a run dumped (JAX_DUMP_IR_TO), each's start, in file order: at most DUMP_FILES of them and
    DUMP_TOTAL_BYTES read in all (20,000 dump-named files of 1 MiB each were read whole, 20 GB a run), which the
    names of a program's sets never need."""
    texts: list[str] = []
    left = DUMP_TOTAL_BYTES
    for path in sorted(folder.glob("*.mlir"))[:DUMP_FILES] if folder.is_dir() and not folder.is_symlink() else []:
        if left <= 0:
            break
        found = read_bounded(path, min(MAX_DUMP_BYTES, left))  # a pipe or a folder put there is left out
        left -= len(found.data)
        if found.read:
            texts.append(condense(found.text()))  # a long constant as its size and digest: no names in it
    return texts


# A cell's later seeds as its runs end: (the run's index, its seed, its IR dump folder, the seeds started so
# far in run order, how many planned runs have not started) -> the seeds of those runs, in order.
Reseed = Callable[[int, int, Path, list[int], int], list[int]]


@dataclass
class SeedWindow:
    """Which ended runs a later run's seed is chosen from, so that a cell's seeds (and so its bound) do not
    depend on which of its concurrent runs ends first: run n's seed comes from runs 1..`sources(n)`, given to the
    reseeder in run order and no others (a run that ended early waits its turn), and run n starts only once those
    have ended (`ready`). The first runs start after every run before them (`settling`); after that, with
    `window` runs at once, run n's seed comes from runs 1..n-window, the runs between counted as predicted."""

    reseed: Reseed
    window: int
    settling: int
    ended: dict[int, tuple[int, Path]] = field(default_factory=dict)  # index -> (seed, IR dump) of runs not given yet
    given: int = 0  # runs 1..given were given to the reseeder
    # Run 2 runs beside run 1 (harness/measure/beside.py): its seed is the plan's, chosen from no run.
    beside_first: bool = False

    def sources(self, index: int) -> int:
        """The last run whose orders run `index`'s seed is chosen from."""
        if self.beside_first and index == 2:
            return 0
        if index <= self.settling + 1:
            return index - 1
        return max(index - max(1, self.window), self.settling)

    def run_ended(self, index: int, seed: int, dump: Path) -> None:
        self.ended[index] = (seed, dump)

    def ready(self, index: int) -> bool:
        """Whether run `index` may start: every run its seed is chosen from has ended."""
        return all(i in self.ended for i in range(self.given + 1, self.sources(index) + 1))

    def seeds_for(self, index: int, started: list[int], pending: int) -> list[int] | None:
        """Before run `index` starts (`ready`): the seeds of the `pending` runs not started yet, from the runs
        its seed is chosen from; None when no run was given since the last answer (its seeds stand)."""
        return self._give(self.sources(index), started, pending)

    def give_all(self, started: list[int], pending: int) -> list[int] | None:
        """The cell is done: every ended run given, in run order, so that its plan says what all of them lowered."""
        return self._give(max(self.ended, default=0), started, pending)

    def _give(self, through: int, started: list[int], pending: int) -> list[int] | None:
        later = None
        while self.given < through and self.given + 1 in self.ended:
            self.given += 1
            seed, dump = self.ended.pop(self.given)
            later = self.reseed(self.given, seed, dump, started, pending)
        return later


@dataclass
class Reseeder:
    """A cell's seeds, chosen from what its runs lowered (issue 47): after every run the orders it lowered are
    read back (OrderObserver) and the runs not started yet get seeds for orders not seen, then the plan's
    random ones. It rewrites `plan` as it goes, so the plan a cell records is what ran and what was seen.

    A user's script: run 1 has a random seed; its name sets are read from its IR dump and the interpreter
    probed then. The built-in repro (a config's mesh): the probe was asked before run 1 (`observer` given, its
    chosen seeds `kept`), and each run's module is the one it printed in its log."""

    environment: Environment
    plan: SeedPlan
    log_dir: Path
    candidates: int
    timeout_s: float
    observer: OrderObserver | None = None
    inactive: bool = False  # no names to cover, or the probe failed: the plan's seeds as they are
    picked: set[int] = field(default_factory=set)
    groups: list[tuple[str, ...]] = field(default_factory=list)
    kept: frozenset[int] = frozenset()  # seeds chosen before run 1 (the built-in's): chosen when they ran
    printed: bool = False  # the module is the one the run printed in its log (the built-in), not JAX's IR dump
    note: str = ""  # the plan's note before run 1 (the built-in's), kept ahead of the read-back's

    def __call__(self, index: int, seed: int, dump: Path, started: list[int], pending: int) -> list[int]:
        planned = self.plan.seeds[len(started):len(started) + pending]
        if self.inactive:
            return planned
        texts = lowered_in_log(run_log(dump)) if self.printed else dump_texts(dump)
        if self.observer is None and not self._first(seed, texts):
            return planned
        assert self.observer is not None
        self.observer.observe(seed, texts)
        picks = self.observer.next_seeds(started, pending)
        self.picked |= set(picks)
        spare = [s for s in self.plan.random + random_seeds(pending + len(started)) if s not in started and s not in picks]
        later = picks + list(dict.fromkeys(spare))[:pending - len(picks)]
        seeds = started + later
        first = started[0]
        chosen = [s for s in seeds if s == first or s in self.picked or (s in self.kept and s in started)]
        ran = [s for s in started if s in self.observer.lowered]
        self.plan.seeds, self.plan.chosen = seeds, chosen
        self.plan.random = [s for s in seeds if s not in chosen]
        self.plan.covers = self.observer.covers(ran)
        if self.printed:
            self.plan.note = "; ".join(n for n in (self.note, "each run's orders read back from the module it printed")
                                       if n)
        else:
            self.plan.note = (f"names from run 1's lowered module: {'; '.join(', '.join(g) for g in self.groups)}; "
                              "each run's orders read back from its module")
        return later

    def _first(self, first: int, texts: list[str]) -> bool:
        """Run 1 done: its name sets and the probe; False when there is nothing to choose seeds for."""
        self.groups = name_groups(texts)
        if not self.groups:
            self.plan.note = f"{SCRIPT_RANDOM}: run 1's lowered module carries no set of two or more short names"
            self.inactive = True
            return False
        sets = [s for g in self.groups for s in name_sets(g)]
        try:
            probe = run_probe(self.environment, sets, self.candidates, self.log_dir, self.timeout_s,
                              groups=self.groups, seeds=sorted({first, *range(1, self.candidates + 1)}))
        except ProbeFailed as exc:
            self.plan.note = f"seed probe failed ({exc}); random seeds instead"
            self.inactive = True
            return False
        self.plan.strategy, self.plan.python, self.plan.candidates = SeedStrategy.CHOSEN, probe.python, len(probe.orderings)
        self.observer = OrderObserver(probe)
        return True


def lowered_in_log(log: Path) -> list[str]:
    """The module the built-in repro printed in its log (its start), or none when the run never got there."""
    text = read_text_bounded(log, MAX_LOG_BYTES)
    module = extract_lowered(text) if text is not None else None
    return [module[:MAX_DUMP_BYTES]] if module is not None else []


def record_plan(cell: CellResult, plan: SeedPlan) -> None:
    """Put the seeds and the miss bounds into a cell made elsewhere (a measured cell has them from
    `finish_cell`, given the plan): `harness.verdicts.finish.with_plan`."""
    with_plan(cell, plan)


def covers(probe: Probe, seeds: list[int]) -> list[SetCover]:
    """Per probed set: the orderings the seeds give, how many the candidates showed, and whether every
    pair of names appears in both orders."""
    out = []
    for i, names in enumerate(probe.sets):
        seen = {probe.orderings[s][i] for s in probe.orderings}
        ran = [probe.orderings[s][i] for s in seeds if s in probe.orderings]
        pairs = {(a, b) for o in ran for a, b in itertools.combinations(o, 2)}
        both = all((a, b) in pairs and (b, a) in pairs for a, b in itertools.combinations(names, 2))
        out.append(SetCover(list(names), both, orderings_run=[",".join(o) for o in dict.fromkeys(ran)],
                            orderings_seen_in_candidates=len(seen)))
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
        features = {c: pair_orders(probe, c) for c in sorted(probe.orderings)}
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
    runs = default_runs(runs)
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
    _probes: dict[tuple[object, ...], Probe] = field(default_factory=dict)

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
        """For a single-process cell planned with chosen seeds, what picks its later seeds from what its runs
        lowered, rewriting `plan` to say so: a user script's (`plan` still random: its names were unknown) and
        the built-in repro's (its mesh's names probed already: `plan` chosen from the probe's prediction);
        None for any other cell. A job's ranks keep the seeds planned for them."""
        if self.strategy != SeedStrategy.CHOSEN or spec.is_multiprocess:
            return None
        if spec.mesh is None:
            return Reseeder(environment, plan, log_dir, self.candidates, self.timeout_s)
        probe = self._probes.get((interpreter_key(environment), tuple(name_sets(spec.mesh.axis_names))))
        if plan.strategy != SeedStrategy.CHOSEN or probe is None or not probe.sets:
            return None  # random seeds (the probe failed), or no set of two names: nothing to read back
        return Reseeder(environment, plan, log_dir, self.candidates, self.timeout_s, observer=OrderObserver(probe),
                        kept=frozenset(plan.chosen), printed=True, note=plan.note)


def interpreter_key(environment: Environment) -> tuple[object, ...]:
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
