"""The search for the smallest program that keeps a failure signature (pure: the tests are callbacks).

Two kinds of passes, coarse first:
- the harness's own (`passes.COARSE_PASSES`: statement chunks, inlining, unwrapping), whose candidates
  are independent, so `at_once` of them are measured at once and the first kept one (in the pass's order) wins;
- pysource-minimize (AST-level, statements down to expressions and literals: ints halved toward 0,
  strings shortened, so shapes, mesh sizes and axis names shrink), which calls its checker one candidate at
  a time. Alone it tries hundreds of candidates on a 150-line script, each a few fresh JAX processes; after
  the coarse passes it starts from a few dozen lines.

The memo (by source digest) answers a candidate tried before, in this search or a resumed one; pyflakes
rejects a candidate that uses a name it never defines without running it. The good release is checked at
checkpoints rather than for every candidate (most are rejected on the bad release anyway), and so are the
candidates the quick screen kept provisionally (forked children: harness/reduce/measure.py), by fresh
processes: when the best program fails the checkpoint, the accepted programs since the last checked one are
bisected back to the last one that passes, the one that broke it is remembered as rejected, and the passes
go on from there.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from pysource_minimize import minimize

from harness.reduce.passes import COARSE_PASSES, PASS_NAMES, Pass, PassName, Place, broken, digest, normalise
from harness.reduce.readable import less_readable, restorations

# After a checkpoint undoes programs (not clean on the good release, or a provisional keep that fresh processes
# did not confirm), the passes go on from the last program that passed it, this many times per phase at most
# (each undo rejects one program for good, but a program family the good release rejects can be long).
AGAIN_AFTER_UNDO = 2
MAX_ROUNDS = 3  # coarse passes then pysource-minimize, again while the coarse passes still shrink its answer


class Tried(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one candidate gave: kept (it has the signature) or rejected, and why."""

    kept: bool
    why: str = ""
    # False: decided without running it (pyflakes, the memo); the state file does not hold it
    # (the state file holds only True: harness/reduce/state.py reads every remembered one as False)
    measured: bool = True


# Candidates measured on the bad release, all at once where cores allow; results in the same order.
TestBad = Callable[[list[str]], list[Tried]]
# One program at a checkpoint: it must stay clean on the good release (and, kept provisionally by the quick
# screen, keep the signature in fresh processes).
TestGood = Callable[[str], Tried]
# Told about every candidate decided: its source, what it gave, the best program so far.
OnTried = Callable[[str, Tried, str], None]


class OutOfCandidates(Exception):
    """The candidate budget is spent: the best so far is the answer."""


@dataclass
class Search:
    best: str  # normalised; known to keep the signature
    test_bad: TestBad
    test_good: TestGood | None = None
    at_once: int = 1
    memo: dict[str, Tried] = field(default_factory=dict)  # by digest
    on_tried: OnTried | None = None
    max_candidates: int | None = None
    measured: int = 0  # candidates run (memo answers and pyflakes rejections not counted)
    making: PassName = PassName.OTHER  # the pass whose candidates are being decided now (for the progress)
    decided: int = 0  # every candidate decided, however
    _chain: list[str] = field(default_factory=list)  # kept since the last program clean on the good release
    _good: set[str] = field(default_factory=set)  # digests known clean on the good release

    def __post_init__(self) -> None:
        self.best = normalise(self.best)
        self.memo.setdefault(digest(self.best), Tried(True, "the original", measured=False))
        self._chain = [self.best]

    # ---- deciding candidates -----------------------------------------------------------------

    def _quick(self, source: str) -> Tried | None:
        known = self.memo.get(digest(source))
        if known is not None:
            return Tried(known.kept, known.why, measured=False)
        why = broken(source)
        if why is not None:
            return Tried(False, why, measured=False)
        return None

    def decide(self, sources: list[str]) -> list[Tried]:
        """Each candidate's answer: from the memo or pyflakes, else measured (all of those at once)."""
        answers: list[Tried | None] = [self._quick(s) for s in sources]
        to_measure = [s for s, a in zip(sources, answers) if a is None]
        if to_measure:
            if self.max_candidates is not None and self.measured >= self.max_candidates:
                raise OutOfCandidates()
            measured = iter(self.test_bad(to_measure))
            self.measured += len(to_measure)
            answers = [a if a is not None else next(measured) for a in answers]
        decided: list[Tried] = []
        for source, answer in zip(sources, answers):
            assert answer is not None
            self.memo[digest(source)] = answer
            self.decided += 1
            decided.append(answer)
        return decided

    def _told(self, sources: list[str], answers: list[Tried]) -> None:
        """After the kept one (if any) became the best: the progress hears of each."""
        for source, answer in zip(sources, answers):
            if self.on_tried:
                self.on_tried(source, answer, self.best)

    def _accept(self, source: str) -> None:
        if source != self.best:
            self.best = source
            self._chain.append(source)

    # ---- passes ------------------------------------------------------------------------------

    def run_pass(self, make: Pass, shrink_only: bool = True, name: PassName | None = None) -> bool:
        """Candidates of `make` from the best program, `at_once` at a time; the first kept one becomes the
        best and the pass goes on from it, at the kept one's place. True when it changed the program.
        `shrink_only`: a candidate no shorter than the best is not tried (the coarse passes'
        progress); the readability pass's candidates are not shorter, and each makes one value readable."""
        start, resume_at = self.best, None
        self.making = name or PASS_NAMES.get(getattr(make, "__wrapped__", make), PassName.OTHER)
        while True:
            batch: list[tuple[Place, str]] = []
            kept_at = None
            for place, candidate in make(self.best, resume_at):
                if shrink_only and len(candidate) >= len(self.best):
                    continue  # the coarse passes only ever shrink a program: no progress
                quick = self._quick(candidate)
                if quick is not None and not quick.kept:
                    continue  # already rejected: no slot spent on it
                batch.append((place, candidate))
                if len(batch) < max(1, self.at_once):
                    continue
                kept_at = self._first_kept(batch)
                if kept_at is not None:
                    break
                batch = []
            if kept_at is None and batch:
                kept_at = self._first_kept(batch)
            if kept_at is None:
                return self.best != start
            resume_at = kept_at

    def _first_kept(self, batch: list[tuple[Place, str]]) -> Place | None:
        """Decide the batch; the first kept candidate in the pass's order becomes the best (whichever
        finished first), and its place is returned."""
        sources = [source for _, source in batch]
        answers = self.decide(sources)
        kept = [(place, source) for (place, source), a in zip(batch, answers) if a.kept]
        if kept:
            self._accept(kept[0][1])
        self._told(sources, answers)
        return kept[0][0] if kept else None

    def polish(self) -> None:
        """pysource-minimize from the best program: statements, expressions, literals, one at a time."""
        def checker(source: str) -> bool:
            try:
                candidate = normalise(source)
            except (SyntaxError, ValueError, RecursionError):
                return False
            if candidate == self.best:
                return True
            if less_readable(self.best, candidate):
                return False  # never run: a reproducer must read like a program (harness/reduce/readable.py)
            answer = self.decide([candidate])[0]
            if answer.kept:
                self._accept(candidate)
            self._told([candidate], [answer])
            return answer.kept

        self.making = PassName.MINIMIZE
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            result = normalise(minimize(self.best, checker))
        if result != self.best and self.memo.get(digest(result), Tried(False)).kept:
            self._accept(result)  # pysource-minimize's answer is its last kept candidate: normally the best already

    def restore(self) -> None:
        """Readable values put back where the best program has unreadable ones (int axis names, zero
        sizes), each kept only if it keeps the signature, then the good release's checkpoint."""
        self.run_pass(restorations, shrink_only=False, name=PassName.READABLE)
        while not self.checkpoint():
            pass

    # ---- the good release --------------------------------------------------------------------

    def checkpoint(self) -> bool:
        """True when the best program is clean on the good release (or none was given). Otherwise the
        programs kept since the last clean one are bisected back to the last clean one, which becomes
        the best; the first that was not clean is remembered as rejected."""
        if self.test_good is None or digest(self.best) in self._good:
            return True
        making, self.making = self.making, PassName.GOOD
        try:
            return self._checkpoint()
        finally:
            self.making = making

    def _checkpoint(self) -> bool:
        assert self.test_good is not None
        answer = self.test_good(self.best)
        if answer.kept:
            self._good.add(digest(self.best))
            self._chain = [self.best]
            return True
        self._reject(self.best, answer)
        low, high = 0, len(self._chain) - 1  # chain[0] is clean on the good release; chain[high] is not
        while high - low > 1:
            middle = (low + high) // 2
            answer = self.test_good(self._chain[middle])
            if answer.kept:
                low = middle
            else:
                self._reject(self._chain[middle], answer)
                high = middle
        for source in self._chain[high + 1:]:
            self.memo.pop(digest(source), None)  # made from one that is not clean: measured again if met
        self.best = self._chain[low]
        self._good.add(digest(self.best))
        self._chain = [self.best]
        return False

    def _reject(self, source: str, answer: Tried) -> None:
        self.memo[digest(source)] = Tried(False, answer.why)
        if self.on_tried:
            self.on_tried(source, Tried(False, answer.why), self._chain[0])

    # ---- the whole search --------------------------------------------------------------------

    def _coarse_fixpoint(self, coarse: tuple[Pass, ...]) -> bool:
        """The coarse passes until none shrinks the program (pysource-minimize is the slow part), then the
        good release's checkpoint. True when they shrank it."""
        start = self.best
        for _ in range(1 + AGAIN_AFTER_UNDO):
            shrunk = True
            while shrunk:
                shrunk = False
                for make in coarse:
                    shrunk = self.run_pass(make) or shrunk
            if self.checkpoint():
                break
            # Undone back to the last program the checkpoint passed (the one that failed it is remembered as
            # rejected): the passes go on from there.
        return self.best != start

    def run(self, coarse: tuple[Pass, ...] = COARSE_PASSES, fine: bool = True) -> str:
        """The smallest program found (clean on the good release when one is given). KeyboardInterrupt
        goes on up with `best` as far as it got; a spent budget ends the search quietly."""
        try:
            for round_number in range(MAX_ROUNDS):
                coarse_shrunk = self._coarse_fixpoint(coarse)
                if not fine or (round_number and not coarse_shrunk):
                    break  # pysource-minimize ran to its own fixpoint already: only a coarse change is new
                for _ in range(1 + AGAIN_AFTER_UNDO):
                    self.polish()
                    if self.checkpoint():
                        break  # (else undone: pysource-minimize goes on from the last program that passed it)
            self.restore()
        except OutOfCandidates:
            while not self.checkpoint():
                pass
            # Readable values go back even when the budget is spent: a few candidates, and the answer is
            # pasted into an issue as it is.
            self.max_candidates = None
            self.restore()
        return self.best
