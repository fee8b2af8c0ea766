"""The quick screen's answer under a factor (`--vary cache-path`) and between processes (`--processes`), from the
forked children harness/reduce/measure_candidate.py runs (pure: what they computed in, an answer out).

Under cache-path (docs/reduce.md): the reference child (the reference run's seed, its cache folder at one path),
the factor's child (the same seed, its folder at another path) and the control child (the same seed, the
reference's path again) stand for the fresh cell's reference, factor and control runs: the factor misses where
the factor's child computes a key of the module the reference's did not, and the control hits where its child
computes none the reference's did not. Between processes: two children forked from the servers of the two seeds
whose processes disagreed, each that process of one job, stand for the job; they disagree where their keys of
the module differ.

Like the plain screen, it rejects (a child's own exception, the module not computed, no miss, a control that
misses too, processes that agree) or keeps provisionally (confirmed by fresh processes at the search's
checkpoints: the components moved and the cause are fresh processes' answers only); anything else is unsure,
and the candidate is measured fresh.
"""

from __future__ import annotations

import enum

from harness.reduce.screen import Screened
from harness.reduce.search import Tried

PROVISIONAL = "kept provisionally (forked runs"  # measure.PROVISIONAL: the same words, confirmed at a checkpoint


class More(enum.Enum):
    """The children so far decide nothing yet: run the next one."""

    CHILD = "the next child"


def factor_answer(module: str, factor: str, version: str, seed: int, children: list[Screened]) -> Tried | None | More:
    """The answer from the children run so far, in order [reference, factor's, control]: a Tried, None (unsure:
    fresh processes decide), or More (run the next child)."""
    said = f"a forked run of seed {seed}"
    for child in children:
        if child.rejected is not None:
            return Tried(False, f"error on {version} ({said}: {child.rejected})")
        if child.keys is None:
            return None  # it exited otherwise: unsure
    reference = children[0]
    if not reference.keys:
        return Tried(False, f"{module} not computed on {version} ({said}"
                            f"{'' if reference.computed else ': it compiled nothing'})")
    if len(children) == 1:
        return More.CHILD
    moved = children[1]
    assert moved.keys is not None
    if not moved.keys - reference.keys:
        return Tried(False, f"{factor} hits on {version} (forked runs of seed {seed} computed one key of {module} "
                            f"at both cache paths)")
    if len(children) == 2:
        return More.CHILD
    control = children[2]
    assert control.keys is not None
    if control.keys - reference.keys:
        return Tried(False, f"its control misses too on {version} (forked runs of seed {seed} at one cache path "
                            f"computed different keys of {module}: not the factor's miss)")
    return Tried(True, f"{PROVISIONAL} of seed {seed}: {module} missed under {factor}, its control hit; confirmed "
                       "by fresh processes at the next checkpoint)")


def factor_good_answer(module: str, factor: str, version: str, children: list[Screened]) -> Tried | None:
    """A provisional keep on the good release, from its reference and factor's children there (each stopped at
    the module's key): rejected where the fresh cell there would not be clean (a child's exception, nothing
    computed, or the factor's child computing a key of the module the reference's did not); None: no objection,
    the checkpoint's fresh processes decide."""
    for child in children:
        if child.rejected is not None:
            return Tried(False, f"error on {version}, the good release (a forked run: {child.rejected})")
        if child.keys is None:
            return None
    reference, moved = children
    assert reference.keys is not None and moved.keys is not None
    if not reference.computed:
        return Tried(False, f"unsupported on {version}, the good release (a forked run compiled nothing)")
    if moved.keys - reference.keys:
        return Tried(False, f"{factor} misses on {version}, the good release, too (forked runs computed different "
                            f"keys of {module})")
    return None


def job_answer(module: str, version: str, seeds: tuple[int, ...], processes: list[Screened],
               tolerated: tuple[str, ...]) -> Tried | None:
    """The answer from a job's processes run as forked children (by rank): rejected where a process raised of its own
    (an exception the original's processes did not die of), where the processes computed one key of the module,
    or where the first computed none at all; kept provisionally where their keys of the module differ; None
    (unsure) otherwise: a hang, an exception like the original's, a process that exited otherwise."""
    said = f"forked runs of seeds {', '.join(map(str, seeds))} as one job"
    for rank, process in enumerate(processes):
        if process.rejected is not None and not process.rejected.startswith("timed out") \
                and process.rejected.partition(":")[0].strip() not in tolerated:
            return Tried(False, f"error on {version} ({said}: process {rank}: {process.rejected})")
    if any(p.keys is None for p in processes):
        return None
    if any(p.keys and not p.joined for p in processes):
        # As a fresh job's processes that never join are refused (separate programs): each orders its own sets.
        return Tried(False, f"its processes never called jax.distributed.initialize(): separate programs, not one "
                            f"job ({said})")
    first = processes[0]
    assert first.keys is not None
    if not first.keys:
        return Tried(False, f"{module} not computed on {version} ({said}"
                            f"{'' if first.computed else ': process 0 compiled nothing'})")
    if any(not p.keys for p in processes[1:]):
        return None  # a later process computed no key of it (it ended before, of the first): unsure
    if all(p.keys == first.keys for p in processes[1:]):
        return Tried(False, f"clean on {version} ({said}: its processes computed one key of {module})")
    return Tried(True, f"{PROVISIONAL} of seeds {', '.join(map(str, seeds))} as one job: its processes computed "
                       f"different keys of {module}; confirmed by fresh processes at the next checkpoint)")
