"""The search for the smallest program that keeps a failure signature (pure: the tests are callbacks).

Two kinds of passes, coarse first:
- the harness's own (`passes.COARSE_PASSES`: statement chunks, inlining, fields read as their values,
  unwrapping), whose candidates are independent, so `at_once` of them are measured at once and the first kept
  one (in the pass's order) wins;
- pysource-minimize (AST-level, statements down to expressions and literals: ints halved toward 0,
  strings shortened but names, so shapes and mesh sizes shrink), which calls its checker one candidate at
  a time. Alone it tries hundreds of candidates on a 150-line script, each a few fresh JAX processes; after
  the coarse passes it starts from a few dozen lines.

The memo (by source digest) answers a candidate tried before, in this search or a resumed one; pyflakes
rejects a candidate that uses a name it never defines without running it. The good release is checked at
checkpoints rather than for every candidate (most are rejected on the bad release anyway), and so are the
candidates the quick screen kept provisionally (forked children: harness/reduce/measure_candidate.py), by fresh
processes: when the best program fails the checkpoint, the accepted programs since the last checked one are
bisected back to the last one that passes, the one that broke it is remembered as rejected, and the passes
go on from there.
"""

from __future__ import annotations

import difflib
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import partial

import msgspec
from pysource_minimize import minimize

from harness.reduce.minimizer import Minimizer, Snapshot
from harness.reduce.passes import COARSE_PASSES, MAY_GROW, PASS_NAMES, Pass, PassName, Place, broken, digest, normalise
from harness.reduce.readable import less_readable, restorations

# After a checkpoint undoes programs (not clean on the good release, or a provisional keep that fresh processes
# did not confirm), the passes go on from the last program that passed it, this many times per phase at most
# (each undo rejects one program for good, but a program family the good release rejects can be long).
AGAIN_AFTER_UNDO = 2
# A pass's candidates measured ahead of the first one not answered yet, at most this many per slot: each is wasted
# when that one is kept, and useful when it is rejected (most are; a hang's slot holds the others up longest).
AHEAD = 2
MAX_ROUNDS = 3  # coarse passes then pysource-minimize, again while the coarse passes still shrink its answer


class Tried(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one candidate gave: kept (it has the signature) or rejected, and why."""

    kept: bool
    why: str = ""
    # False: decided without running it (pyflakes, the memo); the state file does not hold it
    # (the state file holds only True: harness/reduce/reduce_state.py reads every remembered one as False)
    measured: bool = True


# Candidates measured on the bad release, all at once where cores allow; results in the same order.
TestBad = Callable[[list[str]], list[Tried]]
# One program at a checkpoint: it must stay clean on the good release (and, kept provisionally by the quick
# screen, keep the signature in fresh processes).
TestGood = Callable[[str], Tried]
# Told about every candidate decided: its source, what it gave, the best program so far.
OnTried = Callable[[str, Tried, str], None]


def _edit(program: str, candidate: str) -> tuple[str, ...]:
    """The lines `candidate` changed in `program`: each one removed (`-`) and added (`+`), in order."""
    lines, changed = program.splitlines(), candidate.splitlines()
    edit: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lines, changed, autojunk=False).get_opcodes():
        if tag != "equal":
            edit += [f"-{line}" for line in lines[i1:i2]] + [f"+{line}" for line in changed[j1:j2]]
    return tuple(edit)


class OutOfCandidates(Exception):
    """The candidate budget is spent: the best so far is the answer."""


@dataclass(frozen=True)
class _Measure:
    candidate: str  # not known yet: pysource-minimize is told it was rejected, and it is measured
    edit: tuple[str, ...]  # what it changed in the program it was made from (`_edit`)
    predicted: int  # how many candidates `_rejected_edits` had answered when it was proposed
    snapshot: Snapshot | None = None  # pysource-minimize waiting at this question, to go on from it if it is kept


@dataclass(frozen=True)
class _Follow:
    candidate: str  # known to be kept (the memo): pysource-minimize goes on from it


Known = Callable[[str], "bool | _Measure | _Follow"]  # pysource-minimize's text -> its answer, or what to do
Window = deque[tuple[_Measure, Future[list[Tried]]]]  # pysource-minimize's proposals measured side by side


def _next(minimizer: Minimizer, known: Known) -> _Measure | _Follow | None:
    """pysource-minimize's next candidate to measure (it was told it was rejected; a copy of it waits for the real
    answer), a kept one it goes on from, or None: it ended (`result`). Known answers are given at once."""
    while True:
        text = minimizer.question()
        if text is None:
            return None
        answer = known(text)
        if isinstance(answer, _Measure):
            return replace(answer, snapshot=minimizer.answer_rejected_for_now())
        minimizer.answer(answer is True or isinstance(answer, _Follow))
        if isinstance(answer, _Follow):
            return answer


@dataclass
class Search:
    best: str  # normalised; known to keep the signature
    test_bad: TestBad
    test_good: TestGood | None = None
    at_once: int = 1
    memo: dict[str, Tried] = field(default_factory=dict)  # by digest
    on_tried: OnTried | None = None
    max_candidates: int | None = None
    on_interrupt: Callable[[], None] | None = None  # ends the runs still going (Ctrl-C while measuring side by side)
    measured: int = 0  # candidates run (memo answers and pyflakes rejections not counted)
    making: PassName = PassName.OTHER  # the pass whose candidates are being decided now (for the progress)
    decided: int = 0  # every candidate decided, however
    _chain: list[str] = field(default_factory=list)  # kept since the last program clean on the good release
    _good: set[str] = field(default_factory=set)  # digests known clean on the good release
    # pysource-minimize's changes (`_edit`) that a measured candidate was rejected for. After each kept candidate
    # it proposes again the changes it proposed before (the same call emptied, the same name made `0`) in a
    # program that differs elsewhere, so their texts are new to the memo; a change rejected once raised, or lost
    # the signature, for what it changed, and is not measured again (reducing examples/train_shard_map_grad.py, a
    # third of pysource-minimize's rejected candidates were such repeats; no later program kept one).
    _rejected_edits: set[tuple[str, ...]] = field(default_factory=set)
    # The candidates `_rejected_edits` answered, in order (digests): those answered after a candidate measured side
    # by side that is then kept were made from a program that is not the best; they are forgotten, as one at a
    # time they would not have been made.
    _predicted: list[str] = field(default_factory=list)
    # The removals (`_edit`: the same lines removed) a measured candidate was rejected for since pysource-minimize last
    # ran: the coarse passes run again after each other pass's keep, and the removals propose every chunk again in
    # a program that changed elsewhere. What made one fail is still there (a removed definition's reader goes with
    # it, and dead code goes by its own pass); reducing the Flax/Optax fixture, 61 of 179 removals were such repeats,
    # and in five reductions none of them was kept. Forgotten when pysource-minimize runs: it changes expressions
    # everywhere.
    _rejected_removals: set[tuple[str, ...]] = field(default_factory=set)
    ahead_wasted: int = 0  # candidates measured ahead of one that was then kept: measured for nothing

    def __post_init__(self) -> None:
        self.best = normalise(self.best)
        self.memo.setdefault(digest(self.best), Tried(True, "the original", measured=False))
        self._chain = [self.best]

    # ---- deciding candidates -----------------------------------------------------------------

    def _quick(self, source: str) -> Tried | None:
        known = self.memo.get(digest(source))
        if known is not None:
            return Tried(known.kept, known.why, measured=False)
        why = broken(source, self.best)
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
        """Candidates of `make` from the best program, `at_once` measured at a time; the first kept one becomes
        the best and the pass goes on from it, at the kept one's place. True when it changed the program.
        `shrink_only`: a candidate no shorter than the best is not tried (the coarse passes'
        progress); the readability pass's candidates are not shorter, and each makes one value readable."""
        start, resume_at = self.best, None
        self.making = name or PASS_NAMES.get(getattr(make, "__wrapped__", make), PassName.OTHER)
        while True:
            kept_at = self._first_kept(make(self.best, resume_at), shrink_only)
            if kept_at is None:
                return self.best != start
            resume_at = kept_at

    def _first_kept(self, candidates: Iterator[tuple[Place, str]], shrink_only: bool) -> Place | None:
        """The pass's candidates measured `at_once` at a time as they come, in its order: an answer frees its slot
        for the next candidate at once (no batch waits for its slowest: a kept one's children, a hang). The first
        kept one in the pass's order (whichever finished first) becomes the best, and its place is returned; those
        after it that were measuring already are answered too (the memo keeps them)."""
        window: deque[tuple[Place, str, Future[list[Tried]]]] = deque()
        pool = ThreadPoolExecutor(max(1, self.at_once), thread_name_prefix="candidate")
        kept_at: Place | None = None
        try:
            for place, candidate in candidates:
                if shrink_only and len(candidate) >= len(self.best):
                    continue  # the coarse passes only ever shrink a program: no progress
                if any(candidate == c for _, c, _ in window):
                    continue  # the same text twice: measured once
                quick = self._quick(candidate)
                if quick is not None and not quick.kept:
                    continue  # already rejected: no slot spent on it
                removal = _edit(self.best, candidate) if quick is None and self.making is PassName.REMOVALS else None
                if removal in self._rejected_removals:
                    self._told([candidate], [self._record(candidate, Tried(
                        False, "not run: the same statements' removal was rejected in an earlier program",
                        measured=False))])
                    continue
                measuring: Future[list[Tried]] = Future()
                if quick is not None:
                    measuring.set_result([quick])  # kept before (the memo): the first kept if all before it are not
                else:
                    if self.max_candidates is not None and self.measured >= self.max_candidates:
                        raise OutOfCandidates()
                    self.measured += 1
                    measuring = pool.submit(self.test_bad, [candidate])
                    if removal is not None:
                        measuring.add_done_callback(partial(self._remember_removal, removal))
                window.append((place, candidate, measuring))
                while window:
                    while kept_at is None and window and window[0][2].done():
                        kept_at = self._answered(*window.popleft())
                    running = [m for _, _, m in window if not m.done()]
                    if kept_at is not None or (len(running) < max(1, self.at_once) and len(window) < AHEAD * self.at_once):
                        break
                    wait(running or [window[0][2]], return_when=FIRST_COMPLETED)
                if kept_at is not None:
                    break
            while window and kept_at is None:
                kept_at = self._answered(*window.popleft())
            for place, candidate, measuring in window:  # after the kept one: measured all the same
                self._answered(place, candidate, measuring, after_kept=True)
        except BaseException as exc:
            self._stop(pool, exc)
            raise
        pool.shutdown()
        return kept_at

    def _remember_removal(self, removal: tuple[str, ...], measuring: Future[list[Tried]]) -> None:
        if not measuring.cancelled() and measuring.exception() is None:
            answer = measuring.result()[0]
            if answer.measured and not answer.kept:
                self._rejected_removals.add(removal)

    def _answered(self, place: Place, candidate: str, measuring: Future[list[Tried]],
                  after_kept: bool = False) -> Place | None:
        """A candidate's answer, remembered and told; the kept one (unless after the kept one) becomes the best."""
        answer = self._record(candidate, measuring.result()[0])
        self.ahead_wasted += after_kept
        kept = answer.kept and not after_kept
        if kept:
            self._accept(candidate)
        self._told([candidate], [answer])
        return place if kept else None

    def _stop(self, pool: ThreadPoolExecutor, exc: BaseException) -> None:
        """Stopped while candidates are measured side by side: on Ctrl-C the fresh runs still going end now
        (`on_interrupt`; nothing they measured is kept); the candidates not started are not, and those in forked
        children end first (within the child's timeout: the screen's servers are closed after this)."""
        if isinstance(exc, KeyboardInterrupt) and self.on_interrupt is not None:
            self.on_interrupt()
        pool.shutdown(cancel_futures=True)

    def polish(self) -> None:
        """pysource-minimize from the best program: statements, expressions, literals; `at_once` of its
        candidates measured at once where cores allow (`_polish_ahead`), else one at a time."""
        if self.at_once > 1:
            self._polish_ahead()
            return

        def checker(source: str) -> bool:
            try:
                candidate = normalise(source)
            except (SyntaxError, ValueError, RecursionError):
                return False
            if candidate == self.best:
                return True
            if less_readable(self.best, candidate):
                return False  # never run: a reproducer must read like a program (harness/reduce/readable.py)
            edit = _edit(self.best, candidate)
            answer = self._same_change_rejected(candidate, edit) or self.decide([candidate])[0]
            self._remember(edit, answer)
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

    def _polish_ahead(self) -> None:
        """pysource-minimize, `at_once` of its candidates measured at once, with the answers it would get one at a
        time. It calls its checker one candidate at a time and its next candidate depends on the answer, so it runs
        in a process of its own (harness/reduce/minimizer.py) that is told at once that a candidate not known yet
        is rejected (most are) and proposes the next: its proposals, in order, are measured side by side. A copy of
        it forked at each such question waits for the real answer: the first kept one becomes the best, and its
        copy goes on from there (the one that went on as if it were rejected ends)."""
        followed = {self.best}
        texts: dict[str, str | None] = {}  # pysource-minimize's text -> the candidate (None: not one to try)
        unreadable: dict[tuple[str, str], bool] = {}  # (program, candidate) -> less readable
        self.making = PassName.MINIMIZE
        pool = ThreadPoolExecutor(self.at_once, thread_name_prefix="minimize")
        minimizer, current = Minimizer(self.best), self.best
        window: Window = deque()
        known = partial(self._known, texts=texts, unreadable=unreadable)
        try:
            while True:
                current = self._propose(minimizer, current, followed, known, window, pool)
                if not window:
                    break  # pysource-minimize ended
                proposed, measuring = window.popleft()
                candidate = proposed.candidate
                answer = self._record(candidate, measuring.result()[0])
                self._remember(proposed.edit, answer)
                assert proposed.snapshot is not None
                if not answer.kept:
                    proposed.snapshot.close()
                    self._told([candidate], [answer])
                    continue
                # The first kept in pysource-minimize's order: its copy goes on from it.
                for made_after in self._predicted[proposed.predicted:]:
                    self.memo.pop(made_after, None)
                followed.add(candidate)
                self._accept(candidate)
                self._told([candidate], [answer])
                minimizer.resume(proposed.snapshot)
                current = candidate
                while window:  # proposed after the kept one: measured all the same
                    after, measuring = window.popleft()
                    if after.snapshot is not None:
                        after.snapshot.close()
                    self.ahead_wasted += 1  # (its change is not remembered: one at a time, it is not measured)
                    self._told([after.candidate], [self._record(after.candidate, measuring.result()[0])])
        except BaseException as exc:
            self._stop(pool, exc)
            raise
        finally:
            for proposed, _ in window:
                if proposed.snapshot is not None:
                    proposed.snapshot.close()
            minimizer.close()
        pool.shutdown()
        result = None if minimizer.result is None else normalise(minimizer.result)
        if result is not None and result != self.best and self.memo.get(digest(result), Tried(False)).kept:
            self._accept(result)  # pysource-minimize's answer is its last kept candidate: normally the best already

    def _propose(self, minimizer: Minimizer, current: str, followed: set[str],
                 known: Callable[..., bool | _Measure | _Follow], window: Window, pool: ThreadPoolExecutor) -> str:
        """pysource-minimize's next proposals, each put in the `window` measured side by side until `at_once` are (one
        the memo knows kept is followed at once: the path goes on from it); the program its path is at now."""
        while len(window) < self.at_once and minimizer.result is None:
            proposed = _next(minimizer, partial(known, current=current, measuring={m.candidate for m, _ in window}))
            if proposed is None:
                break
            if isinstance(proposed, _Follow):  # kept (the memo says): the path goes on from it
                current = proposed.candidate
                if current not in followed:
                    followed.add(current)
                    self._accept(current)
                continue
            if self.max_candidates is not None and self.measured >= self.max_candidates:
                if proposed.snapshot is not None:  # its copy waits for an answer it will not get
                    proposed.snapshot.close()
                raise OutOfCandidates()
            self.measured += 1
            window.append((proposed, pool.submit(self.test_bad, [proposed.candidate])))
        return current

    def _same_change_rejected(self, candidate: str, edit: tuple[str, ...]) -> Tried | None:
        if edit not in self._rejected_edits:
            return None
        self._predicted.append(digest(candidate))
        return self._record(candidate, Tried(False, f"not run: the same change ({len(edit)} lines) was rejected in "
                                                   "an earlier program", measured=False))

    def _remember(self, edit: tuple[str, ...], answer: Tried) -> None:
        if answer.measured and not answer.kept:
            self._rejected_edits.add(edit)

    def _record(self, source: str, answer: Tried) -> Tried:
        self.memo[digest(source)] = answer
        self.decided += 1
        return answer

    def _known(self, text: str, current: str, texts: dict[str, str | None], unreadable: dict[tuple[str, str], bool],
               measuring: set[str]) -> bool | _Measure | _Follow:
        """pysource-minimize's checker, from `current` (the last kept program on its path): True or False where the
        answer is known without running the candidate, `_Follow` where the memo says it was kept, `_Measure` where
        it must be measured (False where it is being measured: if kept, the copy forked when it was first proposed
        goes on from it). A text is normalised once (and judged readable once per program): pysource-minimize
        proposes the same texts again in later rounds."""
        if text not in texts:
            try:
                texts[text] = normalise(text)
            except (SyntaxError, ValueError, RecursionError):
                texts[text] = None
        candidate = texts[text]
        if candidate is None:
            return False
        if candidate == current:
            return True
        if (current, candidate) not in unreadable:
            unreadable[current, candidate] = less_readable(current, candidate) is not None
        if unreadable[current, candidate]:
            return False  # never run: a reproducer must read like a program (harness/reduce/readable.py)
        if candidate in measuring:
            return False  # proposed again while it runs: rejected as it is for now (if kept, all is run again)
        known = self.memo.get(digest(candidate))
        if known is None:
            edit = _edit(current, candidate)
            known = self._same_change_rejected(candidate, edit)
            if known is None:
                why = broken(candidate, current)
                if why is None:
                    return _Measure(candidate, edit, len(self._predicted))
                known = self._record(candidate, Tried(False, why, measured=False))
            self._told([candidate], [known])
        return _Follow(candidate) if known.kept else False

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
        self._rejected_removals.clear()  # (rejected in programs now undone)
        self.best = self._chain[low]
        self._good.add(digest(self.best))
        self._chain = [self.best]
        return False

    def chain_from(self, clean: str) -> None:
        """The programs a checkpoint goes back through start at `clean` (known clean on the good release) and end at
        the best: a resumed search whose best was kept provisionally by forked children goes back to the original,
        measured fresh, if fresh processes do not confirm it."""
        self._chain = [normalise(clean), self.best]

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
                    shrunk = self.run_pass(make, getattr(make, "__wrapped__", make) not in MAY_GROW) or shrunk
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
                    self._rejected_removals.clear()  # pysource-minimize changes expressions everywhere
                    self.polish()
                    # A round after this one checks its answer at its coarse passes' fixpoint, a few candidates
                    # on (a checkpoint is fresh processes on both releases: one fewer in every reduction);
                    # the last round checks it here.
                    if round_number + 1 < MAX_ROUNDS or self.checkpoint():
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
