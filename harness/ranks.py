"""The processes of one multi-process run compared with each other (pure): did they lower the same programs?

In a job every process runs the same program (SPMD) and computes the cache key of each module itself. When
the processes of one launch compute keys whose `computation` differs (or any other component that does
not name the process's own devices), they lowered different programs for the same function: the
collectives they then run do not match, and the job hangs or dies (jax d8bf7ecce2, 71b36dca84). That is a
finding on its own, certain from one launch.

Keys may also differ between processes for a reason that has nothing to do with the hash seed: the key
names the devices a process compiles for (`accelerator_config`, a fingerprint of the topology). On the
CPU each process's simulated devices are its own, so the ranks' keys differ in that component in every
launch (measured on 0.8.1, 0.8.2 and 0.10.2). Such a difference is reported (the other processes can never
hit what process 0 wrote), not read as a split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from harness.jaxlog import LoggedKey, Outcome, differing_components
from harness.model import RankRecord, RankSplit, RunRecord

# Components that describe the process's own devices, not the program: they may differ between ranks.
HOST_COMPONENTS = frozenset({"accelerator_config"})
# The component that is the lowered program itself.
COMPUTATION = "computation"


@dataclass(frozen=True)
class RankDifference:
    """Two ranks' closest keys of one module in one run, and the components in which they differ."""

    module: str
    run: int
    ranks: tuple[int, int]
    a: LoggedKey
    b: LoggedKey
    components: tuple[str, ...]  # differing components, JAX's order; () when JAX logged none

    @property
    def host_only(self) -> bool:
        """Only the devices' description differs: the same program, keyed per process."""
        return bool(self.components) and set(self.components) <= HOST_COMPONENTS

    def split(self) -> RankSplit:
        names = list(self.a.components) + [n for n in self.b.components if n not in self.a.components]
        hashes = [(n, self.a.components.get(n), self.b.components.get(n)) for n in names]
        return RankSplit(self.module, self.run, self.ranks, (self.a.key, self.b.key), hashes)


def _by_module(rank: RankRecord) -> dict[str, list[LoggedKey]]:
    out: dict[str, list[LoggedKey]] = {}
    for k in rank.keys.keys if rank.keys is not None else []:
        out.setdefault(k.module, []).append(k)
    return out


def differences(run: RunRecord) -> list[RankDifference]:
    """Each module both rank 0 and a later rank computed with different keys: for each key of the later
    rank that rank 0 did not compute, rank 0's closest key that the later rank did not compute. (A rank
    that compiled a module at one more shape has no counterpart: not a difference.)"""
    if len(run.ranks) < 2:
        return []
    ranks = sorted(run.ranks, key=lambda r: r.rank)
    first = ranks[0]
    mine = _by_module(first)
    out = []
    for other in ranks[1:]:
        for module, theirs in sorted(_by_module(other).items()):
            ours = mine.get(module)
            if not ours:
                continue
            our_keys, their_keys = {k.key for k in ours}, {k.key for k in theirs}
            for key in sorted(their_keys - our_keys):
                b = next(k for k in theirs if k.key == key)
                candidates = [k for k in ours if k.key not in their_keys]
                if not candidates:
                    continue
                a = min(candidates, key=lambda k: (len(differing_components(k, b)), k.key))
                components = tuple(differing_components(a, b)) if a.components and b.components else ()
                out.append(RankDifference(module, run.index, (first.rank, other.rank), a, b, components))
    return out


def first_split(runs: Sequence[RunRecord]) -> RankSplit | None:
    """The first run (in order) whose ranks lowered different programs for one module: their keys differ
    in a component other than the devices' description (the computation, most of all). A run that failed
    counts: its processes computed their keys before the collective that then hung or died."""
    for run in sorted(runs, key=lambda r: r.index):
        found = [d for d in differences(run) if d.components and not d.host_only]
        if found:
            best = max(found, key=lambda d: (COMPUTATION in d.components, d.module == "jit_f"))
            return best.split()
    return None


def host_components(runs: Sequence[RunRecord]) -> tuple[str, ...]:
    """The device components in which ranks' keys differed (and nothing else did), over all runs."""
    seen: list[str] = []
    for run in runs:
        for d in differences(run):
            if d.host_only:
                seen += [c for c in d.components if c not in seen]
    return tuple(seen)


def unattributed(runs: Sequence[RunRecord]) -> list[str]:
    """Modules whose keys differed between ranks while JAX logged no components: it cannot be said whether
    the programs or only the devices differ."""
    return sorted({d.module for run in runs for d in differences(run) if not d.components})


def writers(runs: Sequence[RunRecord]) -> tuple[int, ...]:
    """The ranks whose JAX logged writing an entry (JAX writes from process 0 only)."""
    found = {rank.rank for run in runs for rank in run.ranks
             if rank.keys is not None and rank.keys.with_outcome(Outcome.WRITTEN)}
    return tuple(sorted(found))


def split_phrase(split: RankSplit) -> str:
    """`jit_loss: ranks 0 and 1 of run 1 computed different keys (computation differs: ...)`."""
    components = split.components
    what = ", ".join(components) + (" differs" if len(components) == 1 else " differ")
    if COMPUTATION in components:
        what += ": they lowered different programs, so their collectives do not match"
    a, b = split.ranks
    return f"{split.module}: processes {a} and {b} of run {split.run} computed different keys ({what})"
