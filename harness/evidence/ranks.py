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

Only computations compiled for the same devices in both processes are compared. A computation on a
process's own devices (`jnp.ones`, a PRNG key, anything `device_put` on a local device) is compiled with that
process's device assignment, so its `compile_options` and `accelerator_config` differ between processes on
every release, by design; such a module is judged per process across launches, never as a split. The devices
come from JAX's own log (`get_compile_options: ... device_assignment=`, logged before each key from 0.4.26 to
0.10.2, whatever the platform prints a device as), not from counting them: a computation over a process's
4 local devices is as local as one over 1, and the ids say whose devices they are. Keys whose devices the
log did not say (results from before, a summarised assignment) are compared as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

from harness.core.jaxlog import LoggedKey, Outcome, differing_components
from harness.core.runs import RankRecord, RunRecord
from harness.core.findings import RankSplit

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
    def other_devices(self) -> bool:
        """The two processes compiled the module for different devices (each for its own: a local
        computation): the keys differ by the device assignment, and nothing about the programs follows."""
        return bool(self.a.devices) and bool(self.b.devices) and set(self.a.devices) != set(self.b.devices)

    @property
    def host_only(self) -> bool:
        """Only the devices' description differs: the same program, keyed per process."""
        return bool(self.components) and set(self.components) <= HOST_COMPONENTS and not self.other_devices

    @property
    def compared(self) -> bool:
        """A difference between the processes' programs that counts: both compiled for the same devices
        (or the log did not say), and more than the devices' description differs."""
        return bool(self.components) and not self.other_devices and not self.host_only

    def split(self) -> RankSplit:
        names = list(self.a.components) + [n for n in self.b.components if n not in self.a.components]
        hashes = [(n, self.a.components.get(n), self.b.components.get(n)) for n in names]
        return RankSplit(self.module, self.run, self.ranks, (self.a.key, self.b.key), hashes)


def _other_devices(a: LoggedKey, b: LoggedKey) -> bool:
    return bool(a.devices) and bool(b.devices) and set(a.devices) != set(b.devices)


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
                # The same devices first: a local key of one process is not the counterpart of a job's.
                a = min(candidates, key=lambda k: (_other_devices(k, b), len(differing_components(k, b)), k.key))
                components = tuple(differing_components(a, b)) if a.components and b.components else ()
                out.append(RankDifference(module, run.index, (first.rank, other.rank), a, b, components))
    return out


def first_split(runs: Sequence[RunRecord]) -> RankSplit | None:
    """The first run (in order) whose ranks lowered different programs for one module: their keys differ
    in a component other than the devices' description (the computation, most of all). A run that failed
    counts: its processes computed their keys before the collective that then hung or died. A module each
    process compiled for its own devices is no split (`local_differences`)."""
    for run in sorted(runs, key=lambda r: r.index):
        found = [d for d in differences(run) if d.compared]
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


@dataclass(frozen=True)
class LocalModule:
    """A module the processes compiled each for other devices (their own), and what that moved in its key."""

    module: str
    components: tuple[str, ...]  # the components that differed between the processes, JAX's order
    devices: tuple[int, ...]  # how many devices each process compiled it for, by rank


def local_differences(runs: Sequence[RunRecord]) -> list[LocalModule]:
    """The modules whose keys differ between processes because each compiled it for its own devices (a
    local array, a PRNG key, a device_put): not compared between processes, judged per process."""
    found: dict[str, tuple[list[str], dict[int, int]]] = {}
    for run in runs:
        for d in differences(run):
            if not d.other_devices:
                continue
            components, sizes = found.setdefault(d.module, ([], {}))
            components += [c for c in d.components if c not in components]
            sizes.setdefault(d.ranks[0], len(d.a.devices))
            sizes.setdefault(d.ranks[1], len(d.b.devices))
    return [LocalModule(module, tuple(components), tuple(sizes[r] for r in sorted(sizes)))
            for module, (components, sizes) in sorted(found.items())]


def local_note(modules: Sequence[LocalModule]) -> str:
    """`jit_broadcast_in_dim, jit__threefry_seed: each process compiled them for its own devices (1 device
    each) ...`: why their keys differ between the processes, said once."""
    shown = ", ".join(m.module for m in modules[:4]) + (f" (and {len(modules) - 4} more)" if len(modules) > 4 else "")
    sizes = sorted({n for m in modules for n in m.devices})
    each = f" ({sizes[0]} device{'s' if sizes[0] != 1 else ''} each)" if len(sizes) == 1 else ""
    moved = list(dict.fromkeys(c for m in modules for c in m.components))
    them, their = ("it", "its") if len(modules) == 1 else ("them", "their")
    return (f"{shown}: each process compiled {them} for its own devices{each}, so {their} keys differ between the "
            f"processes in {', '.join(moved) or 'the device assignment'} (which hold the device assignment), by "
            "design; not compared between processes, judged per process across launches")


def unattributed(runs: Sequence[RunRecord]) -> list[str]:
    """Modules whose keys differed between ranks while JAX logged no components: it cannot be said whether
    the programs or only the devices differ."""
    return sorted({d.module for run in runs for d in differences(run) if not d.components and not d.other_devices})


def writers(runs: Sequence[RunRecord]) -> tuple[int, ...]:
    """The ranks whose JAX logged writing an entry (JAX writes from process 0 only)."""
    found = {rank.rank for run in runs for rank in run.ranks
             if rank.keys is not None and rank.keys.with_outcome(Outcome.WRITTEN)}
    return tuple(sorted(found))


def split_phrase(split: RankSplit) -> str:
    """`jit_loss: processes 0 and 1 of run 1 computed different keys (computation differs: they lowered
    different programs)`. Whether their collectives differ is the lowered modules' diff to say (the report's
    evidence): two programs that differ only in a constant run the same collectives."""
    components = split.components
    what = ", ".join(components) + (" differs" if len(components) == 1 else " differ")
    if COMPUTATION in components:
        what += ": they lowered different programs"
    a, b = split.ranks
    return f"{split.module}: processes {a} and {b} of run {split.run} computed different keys ({what})"
