"""What moved a function's keys between fresh processes, decided by controls with a stated bound (pure).

A later run computed keys for a function in a test that run 1 did not compute there (new keys, new argument types,
or fewer things). Three things can move them: the hash seed (a set's order traced into the module: the seed's own
bug class, whatever it changes, shapes included), something JAX puts into a key per process, or the program's own
randomness (an unseeded generator, a clock). A control repeats one run's own hash seed in a fresh folder holding
that run's entries and computes the same function in the same test again:

- a control that computes other keys there than its run did shows that something the seed does not fix moved them:
  certain, since a seed's keys are fixed when the seed decides them;
- controls that each gave their run's keys again, for at least two different runs' keys (run 1's and a later
  run's: two outcomes), say the hash seed decides them, with an error bound. Were the keys the program's own
  draw, with chance p(v) of giving keys v in any process, every control agreeing has probability prod p(v)^n(v)
  over the outcomes v the controls repeated (n(v) controls each); the sum of the p(v) is at most 1, so that is at
  most prod (n(v)/N)^n(v) for N controls, whatever the program draws (`agreement_bound`). One control repeating
  run 1 alone bounds nothing: a coin agrees with it half the time. Run 1's seed three times and a later run's twice
  give 0.035, under the default CAUSE_BOUND of 0.05.

The controls are made one at a time (`next_repeat`), each chosen to shrink the largest bound still open, and stop
as soon as every function is decided, or after MAX_CONTROLS. This module sees only keys grouped by function and
test (harness/evidence/keys.py groups a run's); it knows no process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.core.comparison import CauseDecision, Moved

# The largest chance of calling a program's own randomness the hash seed's that a decision allows.
CAUSE_BOUND = 0.05
# Controls a cell makes at most: with two outcomes, 5 reach 0.035 and 9 reach 0.0039; past that the cell's own
# environment is in doubt (a control that cannot repeat its run for another reason), and the rest stay undecided.
MAX_CONTROLS = 9

Group = tuple[str, str]  # (module, test): a function's keys in one test ("" for a plain script)
GroupKeys = Mapping[Group, frozenset[str]]  # a run's keys by function and test


def agreement_bound(counts: Sequence[int]) -> float:
    """The largest chance that controls repeating runs with these outcome counts (controls per distinct outcome)
    all agree when the outcome is the program's own draw: prod (n/N)^n over the counts; 1.0 with fewer than two
    distinct outcomes (repeating one outcome alone bounds nothing)."""
    counts = [c for c in counts if c > 0]
    if len(counts) < 2:
        return 1.0
    total = sum(counts)
    bound = 1.0
    for count in counts:
        bound *= (count / total) ** count
    return bound


def decide(group: Group, runs: Mapping[int, GroupKeys], controls: Sequence[tuple[int, GroupKeys]],
           target: float = CAUSE_BOUND) -> CauseDecision:
    """The controls' word on one function in one test. `runs`: run index -> its keys by group; `controls`: (the run
    whose seed it repeated, its keys by group), in the order they were made; a control of a run not in `runs` says
    nothing."""
    outcomes: dict[frozenset[str], int] = {}
    repeated: list[int] = []
    for index, keys in controls:
        if index not in runs:
            continue
        theirs = runs[index].get(group, frozenset())
        repeated.append(index)
        if keys.get(group, frozenset()) != theirs:
            return CauseDecision(*group, Moved.NOT_SEED, len(repeated), tuple(repeated), 0.0, disagreed=index)
        outcomes[theirs] = outcomes.get(theirs, 0) + 1
    bound = agreement_bound(list(outcomes.values()))
    return CauseDecision(*group, Moved.HASH_SEED if bound <= target else Moved.UNDECIDED, len(repeated),
                         tuple(repeated), bound)


def next_repeat(questioned: Mapping[Group, int], first: int, runs: Mapping[int, GroupKeys],
                controls: Sequence[tuple[int, GroupKeys]], target: float = CAUSE_BOUND,
                most: int = MAX_CONTROLS) -> int | None:
    """The run whose seed the next control repeats, or None when every questioned function is decided (or `most`
    controls were made). `questioned`: each function and test whose keys differed -> the later run that differed
    from run `first` there. For the first one still undecided, the side (run 1's outcome, or the later run's) fewer
    controls have repeated: both are needed, and balanced they bound fastest."""
    if len(controls) >= most:
        return None
    for group, other in questioned.items():
        if decide(group, runs, controls, target).moved != Moved.UNDECIDED:
            continue
        mine = runs[first].get(group, frozenset())
        agreed = [index for index, _ in controls if index in runs]
        same = sum(runs[i].get(group, frozenset()) == mine for i in agreed)
        return first if same <= len(agreed) - same else other
    return None
