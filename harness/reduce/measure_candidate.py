"""A candidate program measured the way `harness check` measures a script: the harness's own cell runner
(fresh processes, one cache folder, hash seeds recorded, JAX's log read) and the report's evidence (the
likely cause), in the environment the original ran in, with the shortest plan that can decide.

On the bad release: the seeds that disagreed for the original first (the baseline's, then the one that
brought the new key), then a few more in case the candidate changed the names a set orders; the cell stops
at the first new key, and gives up at the first crash or at a first run that did not compute the module the
signature tracks (or nothing at all). On the good release: the two seeds that disagreed for the candidate,
which must agree there. Each run has a timeout derived from the original's run time, so a candidate that
hangs costs a bounded time and is rejected. Under --vary, one run and the signature's factor's (then the
control run); between processes, one job with the seeds whose processes disagreed (then fresh launches),
where a process may hang or die as the original's did, but not crash of its own. The quick screen's forked
children answer first where it is on (harness/reduce/screen.py; under a factor and between processes,
harness/reduce/forked_cells.py), and fresh processes confirm what they keep.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TypeVar

from harness.evidence.keys import cell_comparison
from harness.inputs.config import Config, Repro
from harness.environments.base import Environment
from harness.core.model import CellResult, CellSpec
from harness.core.comparison import Moved
from harness.core.kinds import FolderMode, Verdict
from harness.core.runs import RunRecord
from harness.reduce.passes import digest
from harness.reduce.sandbox import ConfinedEnvironment, Confinement, Sandbox, Workspace
from harness.reduce.forked_cells import More, factor_answer, factor_good_answer, job_answer
from harness.reduce.screen import ForkScreen, Screened, job_variables
from harness.reduce.search import Tried
from harness.reduce.signature import why_not_kept
from harness.results.reduce_results import Signature
from harness.report.write import ReportWriter
from harness.measure.sweep import cell_runner

# A candidate's run may take this many times the original's slowest run (plus the floor) before it is
# killed as hanging: a reduced program does less, but the machine is shared and `import jax` varies.
TIMEOUT_FACTOR = 2.0
TIMEOUT_FLOOR_S = 10.0


def candidate_timeout(original_runs: list[RunRecord], ceiling: float) -> float:
    slowest = max((r.duration_s for r in original_runs if r.ok), default=ceiling)
    return min(ceiling, TIMEOUT_FLOOR_S + TIMEOUT_FACTOR * slowest)


T = TypeVar("T")
Launch = int | tuple[int, ...]  # one run's seed, or a job's seeds by process
GiveUp = Callable[[list[RunRecord]], bool]  # the runs so far -> whether the cell's answer is known already


def launch_of(run: RunRecord) -> Launch:
    """The seeds a run was started with: its own, or (a job) each process's, by rank."""
    return tuple(r.seed for r in sorted(run.ranks, key=lambda r: r.rank)) if run.ranks else run.seed


def disagreeing_seeds(cell: CellResult, module: str) -> list[Launch]:
    """The first run's seed and the seed of the first later run with a new key of `module` (a job's
    launches: a seed per process)."""
    comparison = cell_comparison(cell)
    later = comparison.runs_with_new(module)
    by_index = {r.index: launch_of(r) for r in cell.runs}
    if comparison.baseline_run is None or not later:
        return []
    return [by_index[comparison.baseline_run], by_index[later[0]]]


def deciding_seeds(cell: CellResult, target: Signature) -> list[Launch]:
    """The shortest plan that can show `target` again: under a factor, the reference run's seed (its
    factor's run and the control have it too); between processes, the launch whose processes disagreed;
    otherwise the two seeds that disagreed."""
    if target.factor is not None:
        return [cell.variation.seed] if cell.variation is not None else []
    if target.ranks is not None:
        run = cell.split_run
        return [launch_of(run)] if run is not None else []
    return disagreeing_seeds(cell, target.module)


def failure_kind(reason: str, timed_out: bool) -> str:
    """How a process ended badly, in one word: `timed out`, or the exception's class
    (`exit code 1: jax.errors.JaxRuntimeError: UNKNOWN: ...` -> `jax.errors.JaxRuntimeError`)."""
    if timed_out:
        return "timed out"
    text = reason.rpartition("exit code ")[2]
    text = text.partition(": ")[2] or text
    return text.partition(":")[0].strip() or reason


def own_failures(cell: CellResult) -> list[str]:
    """What the processes of a cell's disagreeing run died of, other than a hang (a multi-process bug's own
    symptom: mismatched collectives hang, or give up with JAX's error, after the keys were computed)."""
    run = cell.split_run
    return sorted({failure_kind(r.reason, r.timed_out) for r in (run.ranks if run else [])
                   if r.exit_code != 0 and not r.timed_out})


def processes_of(cell: CellResult) -> int:
    """The processes a cell started: each run's (a job's, each of its processes), its factors' runs, its control."""
    runs = sum(max(1, len(r.ranks)) for r in cell.runs)
    variation = cell.variation
    return runs + (len(variation.factors) + (variation.control is not None) if variation is not None else 0)


PROVISIONAL = "kept provisionally (forked runs"  # a candidate the quick screen kept: confirmed at a checkpoint
REFUSED_FOR_WRITING = "refused: it wrote outside its own folder"  # and the places the original wrote


@dataclass(frozen=True)
class MeasuredCandidate:
    """A candidate's cell, and the paths outside its own folder its runs wrote (or tried to)."""

    cell: CellResult
    wrote_outside: tuple[str, ...] = ()

    @property
    def refused(self) -> str | None:
        """Why the candidate is refused for what it wrote, whatever it measured; None: it wrote nowhere else."""
        return wrote_outside(self.wrote_outside)


def wrote_outside(paths: tuple[str, ...]) -> str | None:
    if not paths:
        return None
    more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
    return f"{REFUSED_FOR_WRITING} ({paths[0]}{more})"


@dataclass(frozen=True)
class PreparedRelease:
    """Where candidates run for one release: its cell and its prepared environment."""

    spec: CellSpec
    environment: Environment


def side_by_side(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Independent calls (forked children of other servers, fresh cells) at once, their answers in order."""
    with ThreadPoolExecutor(len(calls), thread_name_prefix="beside") as pool:
        return list(pool.map(lambda call: call(), calls))


@dataclass
class Measurer:
    config: Config  # the original's check config: arguments, environment, thresholds, timeout
    script: Path  # the original script (candidates take its file name)
    workdir: Path  # the folder the original's runs start in
    bad: PreparedRelease
    good: PreparedRelease | None
    target: Signature
    bad_seeds: list[Launch]  # the deciding seeds first, then the extras
    work: Path  # scratch: each candidate's folder is removed once measured
    timeout_s: float
    at_once: int = 1
    folder: FolderMode | None = None  # how the original's runs got the cell's cache folder: the candidates' too
    # Between processes: how the original's processes died (own_failures); a candidate's may die so, or hang,
    # but a crash of its own (a TypeError once the keys were computed) is not the bug and is rejected.
    tolerated: tuple[str, ...] = ()
    # Where candidates run (harness/reduce/sandbox.py): each in a copy of `workdir`'s `files`, its own HOME
    # and TMPDIR, under bubblewrap where the machine allows; one that wrote outside its folder is refused.
    sandbox: Sandbox = Sandbox(Confinement.WATCH, "not asked for")
    files: list[tuple[Path, Path]] = field(default_factory=list)
    _good_seeds: dict[str, list[Launch]] = field(default_factory=dict)  # by digest: the seeds that decided
    # The quick screen (harness/reduce/screen.py): rejects a candidate that raises under the first deciding seed
    # in a forked child, before any fresh process; None where it is not used.
    screen: ForkScreen | None = None
    screened: int = 0  # candidates the screen rejected
    # The screen decides too (the original's forked children of its two deciding seeds computed different keys of
    # the signature's module): a candidate whose forked children of every seed compute one key is rejected, one
    # whose children disagree is kept provisionally, and confirmed by fresh processes at the search's checkpoints.
    screen_decides: bool = False
    forked_kept: int = 0  # candidates kept provisionally by forked children
    # The good release's screen (with screen_decides): a provisional keep whose forked children there are not
    # clean is rejected before the checkpoint's fresh processes; None where it is not used.
    good_screen: ForkScreen | None = None
    # Starts the good release's screen (QuickScreen.start_good): called once a checkpoint finds a kept program not
    # clean on the good release, where provisional keeps failing there would otherwise each cost an undo.
    start_good_screen: Callable[[], ForkScreen | None] | None = None
    _provisional: set[str] = field(default_factory=set)  # digests kept by forked children, not yet confirmed
    fresh_processes: int = 0  # processes started by fresh cells (a job's each, a factor's and control runs too)
    _counting: threading.Lock = field(default_factory=threading.Lock)

    def provisional(self, source: str) -> bool:
        return digest(source) in self._provisional

    def remember_provisional(self, memo: dict[str, Tried]) -> None:
        """A resumed search's provisional keeps (said in their answers): confirmed by fresh processes when met."""
        self._provisional |= {d for d, t in memo.items() if t.kept and t.why.startswith(PROVISIONAL)}

    def _config(self, path: Path, space: Workspace) -> Config:
        # The candidate sits in its workspace's copy of the original's working folder and runs there (`config`
        # has the original's folder on PYTHONPATH when it imports modules from there: read-only to it). Under
        # --vary only the signature's factor is run; a job keeps the original's processes (its cell spec's).
        return replace(self.config, repro=Repro(path.stem, path.resolve(), builtin=False), cwd=space.work,
                       timeout_s=self.timeout_s, vary=(self.target.factor,) if self.target.factor else ())

    def cell(self, source: str, release: PreparedRelease, seeds: list[Launch], tag: str, give_up: GiveUp | None) -> CellResult:
        return self.measure(source, release, seeds, tag, give_up).cell

    def measure(self, source: str, release: PreparedRelease, seeds: list[Launch], tag: str, give_up: GiveUp | None) -> MeasuredCandidate:
        # A folder of its own, even for a source measured twice at once (or left by an interrupted reduction).
        self.work.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{digest(source)[:16]}-{tag}-", dir=self.work))
        try:
            space = Workspace.make(folder, self.workdir, self.script, source, self.files)
            path = space.script_for(self.workdir, self.script)
            environment = ConfinedEnvironment(release.environment, space, self.sandbox,
                                              readable=(self.script.parent, self.workdir))
            runner = cell_runner(environment, self._config(path, space), at_once=1,
                                 read_cause=ReportWriter(folder).cause)
            cell = runner.run(release.spec, seeds, folder / "cache", folder / "logs", results_root=folder,
                              stop_when_reproduced=True, give_up=give_up, folder=self.folder)
            with self._counting:
                self.fresh_processes += processes_of(cell)
            if cell.interrupted:
                raise KeyboardInterrupt
            wrote = tuple(space.writes_outside())
            return MeasuredCandidate(cell, wrote)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _give_up_bad(self, records: list[RunRecord]) -> bool:
        if not records:
            return False
        if any(not r.ok for r in records):
            return True  # a crash or a hang: rejected, whatever the later runs would say
        first = min(records, key=lambda r: r.index)
        if len(records) == 1 and first.keys is not None:
            return self.target.module not in {k.module for k in first.keys.keys}
        return len(records) == 1 and first.keys is None and not first.new_entries  # compiled nothing

    def _forked(self, source: str) -> Tried | None:
        """The screen's answer: rejected (an exception; with `screen_decides`, also one key of the module for
        every seed, or none), provisionally kept (with `screen_decides`: two seeds' children computed different
        keys of the module), or None: unsure, measured fresh."""
        seeds = [s for s in self.bad_seeds if isinstance(s, int)]
        if self.screen is None or not seeds or len(seeds) != len(self.bad_seeds):
            return None
        version = self.bad.spec.jax_version
        module = self.target.module if self.screen_decides else None
        screen, first = self.screen, None  # first: the keys of the module the first seed's child computed
        on_good: list[Screened] = []  # the good release's children of the first two seeds, beside the second's
        for i, seed in enumerate(seeds if self.screen_decides else seeds[:1]):
            # The first seed's child runs the whole program (its own exception rejects it, at any point); a later
            # seed's is needed only for its key of the module, and stops once it has one.
            if module is None:
                quick = screen.screen(source, seed)
            elif i == 1 and first and self.good_screen is not None and self.good is not None:
                # What a provisional keep needs next does not depend on the second seed's answer: the good release's
                # children of the same two seeds run beside it (wasted only where it rejects, rarely).
                quick, *on_good = side_by_side(
                    [partial(screen.screen, source, seed, module=module, stop=True)]
                    + [partial(self.good_screen.screen, source, s, module=module, stop=True) for s in (seeds[0], seed)])
            else:
                quick = screen.screen(source, seed, module=module, stop=first is not None)
            if quick.rejected is not None:
                self.screened += 1
                return Tried(False, f"error on {version} (a forked run of seed {seed}: {quick.rejected})")
            if quick.keys is None:
                return None  # unsure (or the screen only rejects): fresh processes
            if first is None:
                if not quick.keys:
                    self.screened += 1
                    return Tried(False, f"{module} not computed on {version} (a forked run of seed {seed}"
                                        f"{'' if quick.computed else ': it compiled nothing'})")
                first = quick.keys
            elif quick.keys - first:
                control = self._seed_control(source, seeds[0], first)
                if control is not None:
                    self.screened += 1
                    return control
                good = self._forked_good(source, [seeds[0], seed], on_good if i == 1 else None)
                if good is not None:
                    self.screened += 1
                    return good
                self._kept_provisionally(source, [seeds[0], seed])
                return Tried(True, f"{PROVISIONAL} of seeds {seeds[0]} and {seed} computed different keys of "
                                   f"{module}; confirmed by fresh processes at the next checkpoint)")
        if first is None:
            return None
        self.screened += 1
        return Tried(False, f"clean on {version} (forked runs of seeds {', '.join(map(str, seeds))} computed one "
                            f"key of {module})")

    def _seed_control(self, source: str, seed: int, first: frozenset[str]) -> Tried | None:
        """Where the cause controls said the hash seed moved the original's key: one more child of the first seed must
        compute no key of the module that its first child (`first`: its keys) did not (a rejection where it does: the
        candidate's key moves for another cause, the program's own randomness, say, not the original's). None: it
        does not, or no control is due."""
        if self.target.moved != Moved.HASH_SEED or self.screen is None:
            return None
        # Its cache folder is the first child's: every server of a reduction warms one folder, at one path (from JAX
        # 0.4.36 until 0.11.0 the path is in every key), so the two children's keys differ only where the program's do.
        again = self.screen.screen(source, seed, module=self.target.module, stop=True)
        if again.keys is None or not (again.keys - first):
            return None
        return Tried(False, f"another cause on {self.bad.spec.jax_version}: two forked runs of seed {seed} computed "
                            f"different keys of {self.target.module} (not the hash seed, which moved the original's)")

    def _kept_provisionally(self, source: str, seeds: list[Launch]) -> None:
        """A candidate forked children kept: counted, confirmed by fresh processes at the next checkpoint, and asked
        of the good release with the seeds that decided it."""
        self.forked_kept += 1
        self._provisional.add(digest(source))
        self._good_seeds[digest(source)] = seeds

    def _forked_good(self, source: str, seeds: list[int], answers: list[Screened] | None = None) -> Tried | None:
        """A provisional keep on the good release, in forked children of the two seeds that disagreed on the bad
        one (`answers`: theirs, where they ran already): rejected where the fresh cell there would not be clean (a
        child's exception, nothing computed at all, or the second seed's child computing a key of the module the
        first did not); None: no objection (or unsure), and the checkpoint's fresh processes decide."""
        if self.good_screen is None or self.good is None:
            return None
        version, first, good_screen = self.good.spec.jax_version, None, self.good_screen
        for seed, quick in zip(seeds, answers or (
                # Each child stops at the module's key (the rest of the program is asked of the bad release's first
                # child, and of the checkpoint's fresh processes): a key of it that moves, or nothing computed.
                good_screen.screen(source, s, module=self.target.module, stop=True) for s in seeds)):
            if quick.rejected is not None:
                return Tried(False, f"error on {version}, the good release (a forked run of seed {seed}: "
                                    f"{quick.rejected})")
            if quick.keys is None:
                return None
            if first is None:
                if not quick.computed:
                    return Tried(False, f"unsupported on {version}, the good release (a forked run of seed {seed} "
                                        "compiled nothing)")
                first = quick.keys
            elif quick.keys - first:
                return Tried(False, f"reproduced on {version}, the good release (forked runs of seeds "
                                    f"{seeds[0]} and {seed} computed different keys)")
        return None

    def _forked_factor(self, source: str) -> Tried | None:
        """Under --vary cache-path: the screen's answer (factor_children); a provisional keep also asked of the good
        release's children; None: unsure, or no screen (fresh processes)."""
        seed = self.bad_seeds[0] if self.bad_seeds else None
        if self.screen is None or not isinstance(seed, int):
            return None
        answer = self.factor_children(self.screen, source, seed)
        if answer is None or (answer.kept and not self.screen_decides):
            return None  # unsure, or the screen only rejects: fresh processes
        if answer.kept:
            on_good = self.good_factor_children(source, seed)
            if on_good is not None:
                self.screened += 1
                return on_good
            self._kept_provisionally(source, [seed])
        else:
            self.screened += 1
        return answer

    def factor_children(self, screen: ForkScreen, source: str, seed: int) -> Tried | None:
        """The reference run's seed's children at one cache path, at another (the factor's), and at the first again
        (the control), answered as harness/reduce/forked_cells.py says (None: unsure)."""
        assert self.target.factor is not None
        factor, module, version = str(self.target.factor), self.target.module, self.bad.spec.jax_version
        children: list[Screened] = []
        answer: Tried | None | More = More.CHILD
        with self._factor_paths(screen) as (here, elsewhere):
            # The reference child runs the whole program (its exception rejects it at any point, as the fresh
            # reference run's does); the factor's and the control's are needed for their key of the module only.
            for cache in (here, elsewhere, here):
                if cache.exists():
                    shutil.rmtree(cache)  # the control's folder: empty, its key read from the entry it writes
                cache.mkdir(parents=True)
                children.append(screen.screen(source, seed, module=module, stop=bool(children), cache=cache))
                answer = factor_answer(module, factor, version, seed, children)
                if not isinstance(answer, More):
                    break
        return None if isinstance(answer, More) else answer

    def good_factor_children(self, source: str, seed: int, screen: ForkScreen | None = None) -> Tried | None:
        """The good release's children (`screen`'s, else the good screen's) at two cache paths: None where they hit,
        or are unsure; else why the candidate is not clean there."""
        good_screen = screen or self.good_screen
        if good_screen is None or self.good is None or self.target.factor is None:
            return None
        children = []
        with self._factor_paths(good_screen) as (here, elsewhere):
            for cache in (here, elsewhere):
                cache.mkdir(parents=True)
                children.append(good_screen.screen(source, seed, module=self.target.module, stop=True, cache=cache))
                if children[-1].keys is None:
                    break
        return factor_good_answer(self.target.module, str(self.target.factor), self.good.spec.jax_version, children)

    @staticmethod
    @contextmanager
    def _factor_paths(screen: ForkScreen) -> Iterator[tuple[Path, Path]]:
        """Two cache folders at different paths in the screen's scratch (its servers may write only there)."""
        screen.work.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="factor-", dir=screen.work))
        try:
            yield folder / "cache", folder / "elsewhere" / "cache"
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _forked_job(self, source: str) -> Tried | None:
        """Between processes: the screen's answer (job_children); None: unsure, or no screen (fresh processes)."""
        launch = self.bad_seeds[0] if self.bad_seeds else None
        if self.screen is None or not isinstance(launch, tuple):
            return None
        answer = self.job_children(self.screen, source, launch)
        if answer is None or (answer.kept and not self.screen_decides):
            return None
        if answer.kept:
            self._kept_provisionally(source, [launch])
        else:
            self.screened += 1
        return answer

    def job_children(self, screen: ForkScreen, source: str, launch: tuple[int, ...]) -> Tried | None:
        """The launch whose processes disagreed, as one job of children forked from each seed's server (each that
        process: the job's variables, a coordinator of its own), each running the whole program (a process that
        crashes of its own after its key, which fresh processes reject, is rejected here too), compared by what
        each lowered for the module (their keys differ anyway: each names its own devices); answered as
        harness/reduce/forked_cells.py says (None: unsure)."""
        if len(set(launch)) != len(launch):
            return None  # a seed twice would need two of its servers at once: fresh processes
        module, variables = self.target.module, job_variables(len(launch))
        with ThreadPoolExecutor(len(launch), thread_name_prefix="forked-job") as pool:
            processes = list(pool.map(
                lambda rank: screen.screen(source, launch[rank], module=module, env=variables(rank),
                                           computations=True), range(len(launch))))
        return job_answer(module, self.bad.spec.jax_version, launch, processes, self.tolerated)

    def one_bad(self, source: str, fresh: bool = False) -> Tried:
        """A candidate on the bad release: the quick screen's answer where it has one (unless `fresh`), else
        fresh processes' (harness check's)."""
        if not fresh:
            quick = self._forked_factor(source) if self.target.factor is not None else \
                self._forked_job(source) if self.target.ranks is not None else self._forked(source)
            if quick is not None:
                return quick
        measured = self.measure(source, self.bad, self.bad_seeds, "bad", self._give_up_bad)
        cell = measured.cell
        why = measured.refused or why_not_kept(self.target, cell)
        if why is None and self.target.ranks is not None:
            crashed = [f for f in own_failures(cell) if f not in self.tolerated]
            if crashed:
                why = f"a process crashed on its own ({crashed[0]}), not as the original's did"
        if why is None:
            self._good_seeds[digest(source)] = deciding_seeds(cell, self.target)
            return Tried(True, f"reproduced in {len(cell.runs)} runs")
        return Tried(False, why)

    def test_bad(self, sources: list[str]) -> list[Tried]:
        if len(sources) == 1 or self.at_once <= 1:
            return [self.one_bad(s) for s in sources]
        distinct = list(dict.fromkeys(sources))  # the same candidate twice in a batch is measured once
        with ThreadPoolExecutor(min(self.at_once, len(distinct)), thread_name_prefix="candidate") as pool:
            try:
                tried = dict(zip(distinct, pool.map(self.one_bad, distinct)))
                return [tried[s] for s in sources]
            except KeyboardInterrupt:
                self.interrupt()
                raise

    def interrupt(self) -> None:
        """The runs still going end now (Ctrl-C while candidates are measured side by side); nothing they measured
        is kept."""
        for release in (self.bad, self.good):
            if release is not None:
                release.environment.interrupt()

    def confirm(self, source: str) -> Tried:
        """A checkpoint's question (harness/reduce/search.py): does the best program keep the signature as fresh
        processes measure it (asked again only of a provisional keep), and is it clean on the good release?"""
        key = digest(source)
        if key not in self._provisional:
            return self._good_checked(self.test_good(source)) if self.good is not None else \
                Tried(True, "confirmed by fresh processes")
        if self.good is None:
            answer, good = self.one_bad(source, fresh=True), Tried(True, "confirmed by fresh processes")
        else:
            # The good release's cell beside the bad one's (each its own fresh processes): it needs only the seeds
            # that disagreed in the forked children, which the fresh cell on the bad release tries first.
            seeds = self._seeds_on_good(source)
            answer, good = side_by_side([partial(self.one_bad, source, fresh=True),
                                         partial(self.test_good, source, seeds)])
            if answer.kept and self._seeds_on_good(source) != seeds:
                good = self.test_good(source)  # the fresh cell disagreed by other seeds: those are asked on G
        if not answer.kept:
            return Tried(False, f"not confirmed by fresh processes: {answer.why}")
        self._provisional.discard(key)
        return self._good_checked(good)

    def _good_checked(self, good: Tried) -> Tried:
        """A checkpoint's answer on the good release; where it found the kept program not clean there, from now on
        each provisional keep is asked of the good release's forked children too (QuickScreen.start_good)."""
        if not good.kept and self.start_good_screen is not None:
            start, self.start_good_screen = self.start_good_screen, None
            self.good_screen = start()
        return good

    def _seeds_on_good(self, source: str) -> list[Launch]:
        return self._good_seeds.get(digest(source)) or self.bad_seeds[:1 if self.target.factor or
                                                                        self.target.ranks else 2]

    def test_good(self, source: str, seeds: list[Launch] | None = None) -> Tried:
        assert self.good is not None
        seeds = seeds or self._seeds_on_good(source)
        measured = self.measure(source, self.good, seeds, "good", lambda records: any(not r.ok for r in records))
        cell = measured.cell
        if measured.refused:
            return Tried(False, measured.refused)
        if cell.verdict == Verdict.CLEAN:
            return Tried(True, f"clean on {self.good.spec.jax_version}")
        return Tried(False, f"{cell.verdict} on {self.good.spec.jax_version}, the good release"
                            + (f" ({cell.reason})" if cell.reason else ""))
