"""`harness reduce`: the original's check, the search, the reduced program's check, in one folder.

    <folder>/original/   the original's check on the bad (and good) release: its signature and seeds
    <folder>/reduce.json the search's state (--resume reads it); best.py the best program so far
    <folder>/reduced.py  the answer; results.json, table.md and report.md beside it are its own check,
                         and the report's "Minimal reproducer" section holds it, ready for a JAX issue
"""

from __future__ import annotations

import ast
import resource
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.core.records import plain
from harness.inputs.config import Config, Repro
from harness.environments.base import Backend
from harness.core.files import write_atomic
from harness.core.errors import EnvironmentUnavailable, HarnessFailure, UserError
from harness.core.model import CellResult
from harness.core.kinds import Verdict
from harness.measure.progress import Progress
from harness.reduce.measure_candidate import (REFUSED_FOR_WRITING, Launch, Measurer, PreparedRelease, candidate_timeout, deciding_seeds,
                                    own_failures, wrote_outside)
from harness.reduce.metadata import installed_python_modules, metadata_block
from harness.reduce.passes import (PassName, coarse_passes, digest, imported_packages, library_packages,
                                   normalise, probe_program, probed_values, size)
from harness.reduce.passes.traced import alone_candidates, unspelled
from harness.reduce.plain_said import plain_jax_said
from harness.reduce.screening import QuickScreen, ScreenMaker
from harness.reduce.progress_lines import CandidateCost, SearchProgress, duration, opening
from harness.reduce.sandbox import (HOME_DIR, TMP_DIR, Sandbox, WatchedBackend, Workspace, WriteRecordingBackend,
                                    copy_plan, write_places)
from harness.reduce.search import Search, Tried
from harness.reduce.signature import signature_of, why_not_kept
from harness.results.reduce_results import REDUCE_SECTION, ProgramText, Reduced
from harness.reduce.reduce_state import STATE_FILE, ReduceState, SaveSchedule, load_state
from harness.results.document import SweepStatus, load_results, lock_results_folder
from harness.results.header import ResultsHeader
from harness.measure.seeds import SeedPlanner, random_seeds
from harness.measure.sweep import Sweep, plan_cells
from harness.output.results_folder import ResultsWriter

ORIGINAL_DIR = "original"
REDUCED_FILE = "reduced.py"
SCRATCH_DIR = "candidates"
SNAPSHOT_DIR = "workdir"
SCREEN_DIR = "screened"  # the quick screen's children (harness/reduce/screen.py): the only place its servers write
ORIGINAL_WRITES = "original-writes.jsonl"  # where the original's check wrote outside its folders  # the working folder before anything ran: each candidate's copy is made from it
CHECK_DIR = "reduced-check"  # the reduced program's own check: its HOME, TMPDIR and write record
# Seeds tried after the original's two disagreeing ones, in case a candidate changed the names a set
# orders (a shortened axis name): with two orderings each more seed misses with probability 1/2.
EXTRA_SEEDS = 3
# A job's candidate: the launch whose processes disagreed, then launches of fresh seeds (two processes
# order a set of two names differently with probability 1/2 in each).
EXTRA_LAUNCHES = 2

HeaderFor = Callable[[Config, list[str]], ResultsHeader]


# An original that did not reproduce on --versions, in the words of its refusal: reduce keeps a key that moved, which
# no other verdict is (one entry for each of them: tests/unit/test_reduce_cli.py iterates Verdict).
NOT_A_MISS: dict[Verdict, str] = {
    Verdict.CLEAN: "clean",
    Verdict.UNSUPPORTED: "unsupported (nothing was measured)",
    Verdict.ERROR: "an error, not a cache miss (reduce keeps a cache-miss signature, never a crash)",
    Verdict.NEW_INPUT: "new input, not a cache miss (a later run compiled a function at argument types the first "
                       "never had, which no cache serves; reduce keeps a key that moved)",
    Verdict.NOT_CACHED: "not cached, not a cache miss (JAX never writes a module the runs compiled, whose report "
                        "names it and why; reduce keeps a key that moved)",
}


@dataclass(frozen=True)
class ReduceOutcome:
    folder: Path
    status: SweepStatus
    state: ReduceState | None  # None: interrupted before the original's check was done (nothing reduced yet)
    original_lines: int
    reduced: Path | None = None  # None when interrupted (best.py holds the best so far)
    cells: tuple[CellResult, ...] = ()  # the reduced program's check
    problem: str | None = None  # the reduced program's check did not keep the signature: why

    @property
    def best_file(self) -> Path:
        return self.folder / "best.py"


def local_imports(source: str, folder: Path) -> bool:
    """Whether the script imports a module that sits beside it (candidates then need its folder on
    PYTHONPATH, as they are written elsewhere)."""
    names = imported_packages(ast.walk(ast.parse(source)))
    return any((folder / f"{n}.py").is_file() or (folder / n / "__init__.py").is_file() for n in names)


def program_config(config: Config, path: Path, original: Path, source: str) -> Config:
    """`config` running `path` where the original ran, with the original's folder on PYTHONPATH when the
    original imports modules from it."""
    env = dict(config.env)
    if local_imports(source, original.parent):
        env["PYTHONPATH"] = ":".join(v for v in (env.get("PYTHONPATH"), str(original.parent.resolve())) if v)
    return replace(config, repro=Repro(path.stem, path.resolve(), builtin=False),
                   cwd=config.cwd or original.parent.resolve(), env=tuple(env.items()))


@dataclass
class _Searching:
    """What the search phase holds between its steps: its state written as it goes, read back when it is interrupted,
    and what it did said when it ends."""

    state: ReduceState
    said: SearchProgress
    folder: Path  # the reduction's: where the state is written
    measurer: Measurer | None = None
    search: Search | None = None
    quick: QuickScreen = field(default_factory=QuickScreen)
    saving: SaveSchedule = field(default_factory=SaveSchedule)
    # The pass whose kept candidate took out a package's last import (the report says it); the best it came from.
    taken_out_by: dict[str, str] = field(default_factory=dict)
    # What a run of the program computed (passes.probed_values), and each jitted function whose traced body, put alone
    # in its place, was measured and lost the signature: why (the report's claim that a call needs the library).
    values: dict[str, str] = field(default_factory=dict)
    lost_alone: dict[str, str] = field(default_factory=dict)
    _last_best: str = ""
    _alone: tuple[str, dict[str, str]] = ("", {})

    def __post_init__(self) -> None:
        self._last_best = self.state.best

    def tried(self, candidate: str, answer: Tried, best: str) -> None:
        """Each candidate's answer: said, and the state written when due."""
        search, state = self.search, self.state
        assert search is not None  # made before any candidate is tried
        if answer.measured:
            state.measured += 1
            self.said.candidate(state.measured, size(candidate), search.making, answer, size(best))
            if not answer.kept and search.making == PassName.TRACED and self.values:
                if self._alone[0] != best:
                    self._alone = (best, alone_candidates(best, self.values))
                function = self._alone[1].get(candidate)
                if function is not None:
                    self.lost_alone.setdefault(function, answer.why)
        if search.best != self._last_best and search.making != PassName.GOOD:
            # A kept candidate became the best (the progress hears of a batch's answers after it did, in their
            # order: the first may be a rejected one's); the good release's checkpoint only goes back.
            for package in library_packages(self._last_best) - library_packages(search.best):
                self.taken_out_by[package] = search.making.value
        self._last_best = search.best
        state.best, state.memo = search.best, search.memo
        state.seconds = self.said.seconds
        if self.saving.due(search.best, time.monotonic()):
            state.save(self.folder)


@dataclass
class Reduction:
    config: Config  # the original's check config (versions: the bad release, then the good one)
    script: Path
    backend: Backend
    bad: str
    good: str | None
    folder: Path
    header: HeaderFor
    progress: Progress
    planner: SeedPlanner
    at_once: int = 1
    max_candidates: int | None = None
    # each jitted function the traced pass could not write -> why (the probe's runs said it: passes.unspelled)
    unspelled: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Absolute from here on: candidates run in folders of their own (and bubblewrap binds by path), so a
        # relative --out or script would name another place there (the service makes --cwd absolute).
        self.script, self.folder = self.script.absolute(), self.folder.absolute()

    @property
    def versions(self) -> list[str]:
        return [self.bad] + ([self.good] if self.good else [])

    # ---- the original -------------------------------------------------------------------------

    def _check(self, config: Config, folder: Path, section: Reduced | None = None,
               backend: Backend | None = None) -> list[CellResult]:
        """`harness check` of `config` on the bad and good releases into `folder` (by `backend`, else the
        reduction's)."""
        folder.mkdir(parents=True, exist_ok=True)
        writer = ResultsWriter(folder, self.header(config, self.versions))
        try:
            cells = Sweep(config, backend or self.backend, writer, self.progress, at_once=self.at_once,
                          planner=self.planner).run(plan_cells(config, self.versions))
        except KeyboardInterrupt:
            writer.finish(SweepStatus.INTERRUPTED)
            raise
        except BaseException:
            writer.finish(SweepStatus.FAILED)
            raise
        if section is not None:
            writer.set(REDUCE_SECTION, section)
        writer.finish(SweepStatus.COMPLETE)
        return cells

    def _original(self, source: str) -> ReduceState:
        folder = self.folder / ORIGINAL_DIR
        self.progress.say(f"the original on jax {', '.join(self.versions)}: {folder}")
        started = time.monotonic()
        recorder = None
        if Sandbox.here(self.backend.name).watched:  # where it writes outside its folders: candidates may too
            recorder = WriteRecordingBackend(self.backend, self.folder / ORIGINAL_WRITES,
                                             (self.workdir.resolve(), self.script.resolve().parent,
                                              self.folder.resolve()))
            recorder.record.unlink(missing_ok=True)
        cells = {c.spec.jax_version: c for c in self._check(self.config, folder, backend=recorder)}
        bad = cells[self.bad]
        where = f"(its check: {folder})"
        if bad.verdict != Verdict.REPRODUCED:
            raise UserError(f"{self.script}: {NOT_A_MISS[bad.verdict]} on jax {self.bad}: {bad.reason}; nothing to "
                            f"reduce {where}")
        if self.good and cells[self.good].verdict != Verdict.CLEAN:
            good = cells[self.good]
            raise UserError(f"{self.script}: {good.verdict}, not clean, on --good {self.good}: {good.reason}; "
                            f"a reduced program could not be told from a new bug of its own {where}")
        own = frozenset(f"jit_{n.name}" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef))
        signature = signature_of(bad, self.config.vary, own)
        if signature is None:  # reproduced by its seeds (or the control run), but no factor missed
            raise UserError(f"{self.script}: reproduced on jax {self.bad} ({bad.reason}), but under no --vary "
                            f"factor: nothing of --vary {','.join(map(str, self.config.vary))} to reduce; "
                            f"reduce it without --vary {where}")
        seeds = deciding_seeds(bad, signature)
        processes = self.config.processes
        if signature.factor is not None:
            extra: list[Launch] = []  # one run and the factor's: the miss does not follow the seed
        elif processes > 1:  # launches: a seed per process, as the cell's own were drawn
            drawn = random_seeds(processes * EXTRA_LAUNCHES)
            extra = [tuple(drawn[i:i + processes]) for i in range(0, len(drawn), processes)]
        else:
            extra = [s for s in random_seeds(EXTRA_SEEDS + 2) if s not in seeds]
            del extra[EXTRA_SEEDS:]
        timeout = candidate_timeout([r for c in cells.values() for r in c.runs], self.config.timeout_s)
        measured_runs = [r.duration_s for r in bad.runs if r.ok]
        self.progress.say(f"signature: {signature.describe()} on jax {self.bad}"
                          + (f", clean on jax {self.good}" if self.good else "")
                          + f"; candidates run up to {timeout:.0f} s each")
        return ReduceState(str(self.script), digest(source), self.bad, self.good, signature, seeds + extra,
                           timeout, normalise(source), check_seconds=sum(r.duration_s for r in bad.runs)
                           or time.monotonic() - started, folder=bad.cache_folder,
                           vary=self.config.vary, processes=self.config.processes,
                           tolerated=tuple(own_failures(bad)),
                           places=write_places(recorder.recorded(), recorder.roots) if recorder else (),
                           network=recorder.connected() if recorder else False,
                           run_seconds=sum(measured_runs) / len(measured_runs) if measured_runs else 0.0)

    # ---- the search ---------------------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        return self.config.cwd or self.script.parent.resolve()

    def _snapshot(self) -> None:
        """The working folder as it was before anything ran (all of it but this reduction's folder and the
        results folder holding it, when inside), kept in the reduction's folder: each candidate's copy is made
        from it, so a file the original's check wrote there is no input a candidate may rely on."""
        snapshot = self.folder / SNAPSHOT_DIR
        if snapshot.is_dir():
            return  # a resumed reduction: taken when it started
        left_out = [self.folder]
        parent = self.folder.resolve().parent
        if parent != self.workdir.resolve() and parent.is_relative_to(self.workdir.resolve()):
            left_out.append(parent)
        partial = self.folder / (SNAPSHOT_DIR + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for relative, path in copy_plan(self.workdir, left_out):
            (partial / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, partial / relative)
        partial.mkdir(exist_ok=True)
        partial.rename(snapshot)

    def _release(self, version: str) -> PreparedRelease:
        spec = plan_cells(self.config, [version])[0]
        try:
            environment = self.backend.prepare(version, self.config.platform, self.progress.say)
        except EnvironmentUnavailable as exc:
            raise UserError(f"jax {version}: its environment cannot be made ({exc})") from None
        return PreparedRelease(spec, environment)

    def run(self, resume: bool = False) -> ReduceOutcome:
        """The whole reduction, holding the folder's writer lock throughout: a second reduction or
        `--resume` of this folder is refused in one line (naming this one) before it reads anything."""
        lock = lock_results_folder(self.folder)
        try:
            return self._run(resume)
        finally:
            lock.release()

    def _started_before(self) -> bool:
        """Whether `--resume`'s folder is a reduction stopped before its state was first written (during the
        snapshot or the original's check): it starts again there, from the original's check."""
        return not (self.folder / STATE_FILE).exists() and any(
            (self.folder / name).exists() for name in (ORIGINAL_DIR, SNAPSHOT_DIR, SNAPSHOT_DIR + ".partial"))

    def _run(self, resume: bool) -> ReduceOutcome:
        source = self._source()
        original_lines = size(source)
        self.progress.say(opening(original_lines))
        if resume and self._started_before():
            self.progress.say(f"resuming {self.folder}: stopped during the original's check; checking it again")
            resume = False
        if resume:
            state = self._resumed(source)
        else:
            try:
                state = self._started(source)
            except KeyboardInterrupt:  # nothing reduced yet: --resume of this folder checks the original again
                return ReduceOutcome(self.folder, SweepStatus.INTERRUPTED, None, original_lines)
        state.status = "running"
        state.save(self.folder)
        searching = _Searching(state, SearchProgress(self.progress.say, original_lines, state.seconds), self.folder)
        try:
            best = self._search(source, searching, resume)
        except KeyboardInterrupt:
            if searching.search is not None:
                state.best = searching.search.best
            return self._interrupted(state, searching.said, original_lines)
        finally:
            searching.quick.close()
            if searching.quick.screen is not None:
                shutil.rmtree(self.folder / SCREEN_DIR, ignore_errors=True)
        state.best, state.seconds = best, searching.said.seconds
        state.save(self.folder)
        measurer = self._searched(searching)
        try:
            return self._finish(source, state, original_lines, measurer, searching.taken_out_by, searching.lost_alone)
        except KeyboardInterrupt:  # during the reduced program's check: --resume answers the search from the memo
            return self._interrupted(state, searching.said, original_lines)

    def _source(self) -> str:
        source = self.script.read_text()
        try:
            ast.parse(source)
        except SyntaxError as exc:
            raise UserError(f"{self.script}: not Python that this harness can parse (line {exc.lineno}: "
                            f"{exc.msg}): nothing to reduce") from None
        return source

    def _resumed(self, source: str) -> ReduceState:
        """The state `--resume` continues, where it is this reduction's (the same script, versions and options)."""
        state = load_state(self.folder, normalise(source))
        given = (tuple(map(str, self.config.vary)), self.config.processes)
        if state.original_digest != digest(source) or (state.bad, state.good) != (self.bad, self.good) \
                or (state.vary, state.processes) != given:
            flags = (f" --vary {','.join(state.vary)}" if state.vary else "") + \
                (f" --processes {state.processes}" if state.processes > 1 else "")
            raise UserError(f"--resume {self.folder}: it reduces {state.script} on {state.bad}"
                            f"{' / ' + state.good if state.good else ''}{flags}, as it was then; "
                            "give the same script, versions and options")
        if state.unsealed:
            self.progress.say(f"{self.folder}: its reduce.json was written before states were sealed: its "
                              "best program is not run; resuming from the original, its memo kept")
        self.progress.say(f"resuming {self.folder}: best {size(state.best)} lines, "
                          f"{len(state.memo)} candidate(s) remembered")
        return state

    def _started(self, source: str) -> ReduceState:
        """A new reduction's state: the working folder's snapshot, then the original's check."""
        # The folder is a reduction's from the start: a signal before reduce.json exists still leaves one that
        # --resume starts again (_started_before).
        (self.folder / ORIGINAL_DIR).mkdir(parents=True, exist_ok=True)
        self._snapshot()
        return self._original(source)

    def _search(self, source: str, searching: _Searching, resume: bool) -> str:
        """The search, from the measurer and its quick screen to the best program it finds. The screen decides only
        once the original was measured fresh (`_original_as_a_candidate`); its provisional keeps, and a resumed
        search's, are confirmed by fresh processes at each checkpoint."""
        state = searching.state
        measurer = searching.measurer = self._measurer(source, state)
        self.progress.say(measurer.sandbox.describe())
        screens = ScreenMaker(self.config, self.script, self.folder / SCREEN_DIR, self.good,
                              self.progress.say)
        quick = searching.quick = screens.make(source, state, measurer)
        quick.attach(measurer, deciding=False)
        if state.run_seconds:
            self.progress.say(self._cost(state, measurer).said())
        search = searching.search = Search(
            state.best, measurer.test_bad, measurer.confirm if self.good or quick.decides else None,
            at_once=measurer.at_once, memo=dict(state.memo), on_tried=searching.tried,
            max_candidates=self.max_candidates, on_interrupt=measurer.interrupt)
        if not resume and self.config.processes > 1 and state.signature.ranks is None:
            self._between_processes(state, measurer, source)
            found = state.signature  # the job's signature, where its processes disagreed
            if quick.screen is None and found.ranks is not None:
                # Its processes disagree as one job of the two runs' seeds: the job screen is asked now.
                quick = searching.quick = screens.make(source, state, measurer)
                quick.attach(measurer, deciding=False)
                search.test_good = measurer.confirm if self.good or quick.decides else None
        if not resume:
            self._original_as_a_candidate(source, state, search, measurer)
        else:
            if search.memo.get(digest(state.best)) is None:
                search.memo[digest(state.best)] = Tried(True, "the best so far", measured=False)
            measurer.remember_provisional(search.memo)
            if measurer.provisional(state.best):  # the original (measured fresh at the start) is where to go back
                search.chain_from(source)
        quick.attach(measurer, deciding=True)
        values = searching.values = self._values(search.best, state, measurer)
        return search.run(coarse_passes(values)) if values else search.run()

    def _searched(self, searching: _Searching) -> Measurer:
        """What the search did, said once it ended: its tallies, the quick screen's, the processes it started."""
        said, search, measurer, quick = searching.said, searching.search, searching.measurer, searching.quick
        assert search is not None and measurer is not None  # (made before the search ran)
        if said.tallies:
            self.progress.say(f"searched in {duration(said.seconds)}: {said.summary()}"
                              + (f"; {search.ahead_wasted} measured side by side after one that was then kept "
                                 "(for nothing)" if search.ahead_wasted else ""))
        if quick.screen is not None:
            undone = sum(1 for t in search.memo.values() if t.why.startswith("not confirmed by fresh processes"))
            self.progress.say(f"quick screen: {measurer.screened} candidates rejected by forked children"
                              + (f", {measurer.forked_kept} kept provisionally by them ({undone} undone at a "
                                 "checkpoint: fresh processes did not confirm them)" if quick.decides else ""))
        self.progress.say(f"candidates' processes: {measurer.fresh_processes} fresh"
                          + (f", {quick.screen.children} forked children" if quick.screen is not None else "")
                          + (f" (and {quick.good.children} on jax {self.good})" if quick.good is not None else "")
                          + (f"; the children used {quick.cpu_s:.0f} CPU s" if quick.screen is not None else "")
                          + f"; the harness's own process {_own_cpu_s():.0f} CPU s")
        return measurer

    def _interrupted(self, state: ReduceState, said: SearchProgress, original_lines: int) -> ReduceOutcome:
        """The best so far kept (best.py, reduce.json) for `--resume`, whatever phase the signal came in."""
        state.status = "interrupted"
        state.seconds = said.seconds
        state.save(self.folder)
        return ReduceOutcome(self.folder, SweepStatus.INTERRUPTED, state, original_lines)

    def _values(self, source: str, state: ReduceState, measurer: Measurer) -> dict[str, str]:
        """What the program computed where a library made it (`params = model.init(...)`), as plain JAX (arrays
        by shape and dtype, shardings by their mesh and spec), read from runs of it with probes
        (passes.probe_program) in forked children of the quick screen of its two deciding seeds, contained as a
        candidate is: `down to plain JAX` puts those values in the library's place (a tuple of names the two
        runs ordered differently, a mesh's axis names made from a set, as a set). Nothing without the screen, or
        where the program makes no such value."""
        probe = probe_program(source)
        seeds = [s for s in state.bad_seeds[:2] if isinstance(s, int)]
        if probe is None or measurer.screen is None or not seeds:
            return {}
        screen = measurer.screen
        with ThreadPoolExecutor(len(seeds), thread_name_prefix="probe") as pool:  # each seed has its own server
            lines = "\n".join(pool.map(lambda seed: screen.screen(probe, seed, values=True).values, seeds))
        values = probed_values(lines)
        self.unspelled = unspelled(lines, values)
        for function, why in self.unspelled.items():
            self.progress.say(f"library calls as the JAX they traced to: `{function}` not written: {why}")
        if values:
            self.progress.say(f"down to plain JAX: {len(values)} values a library made, read from forked runs "
                              "of the program (arrays as their shapes and dtypes, shardings as their mesh and "
                              "spec), may take the library's place")
        return values

    def _cost(self, state: ReduceState, measurer: Measurer) -> CandidateCost:
        """What a candidate costs, from the original's mean run: a rejected one stops at its first failing run;
        a kept one at the new key (the factor's and control runs under --vary, the one job between processes)."""
        if state.signature.factor is not None:
            kept, most = 3, 3
        elif state.signature.ranks is not None:
            kept, most = 1, len(state.bad_seeds)
        else:
            kept, most = 2, len(state.bad_seeds)
        return CandidateCost(state.run_seconds, 1, kept, most, measurer.at_once)

    def _measurer(self, source: str, state: ReduceState) -> Measurer:
        """What measures candidates: both releases' environments prepared, the sandbox the machine allows."""
        # A job's candidate takes a run slot per process: fewer candidates at once.
        candidates_at_once = max(1, self.at_once // self.config.processes)
        self._snapshot()  # (a reduction from before snapshots: taken now)
        return Measurer(program_config(self.config, self.script, self.script, source), self.script,
                        self.workdir, self._release(self.bad),
                        self._release(self.good) if self.good else None, state.signature, state.bad_seeds,
                        self.folder / SCRATCH_DIR, state.timeout_s, candidates_at_once, folder=state.folder,
                        tolerated=state.tolerated, sandbox=Sandbox.here(self.backend.name, state.places, state.network),
                        files=copy_plan(self.folder / SNAPSHOT_DIR, []))

    def _original_as_a_candidate(self, source: str, state: ReduceState, search: Search, measurer: Measurer) -> None:
        """The original, in the search's form (`ast.unparse`d), measured as every candidate is (in its own
        folder, in the sandbox): it must still reproduce, or nothing can be. Where it does not, whose failure
        it is: the sandbox's when the original's own text fails there too (it reproduced outside it), exit 3
        with what to change; the rewriting's when only the rewritten form fails, exit 2."""
        search.memo.pop(digest(state.best), None)
        answer = search.decide([state.best])[0]
        if answer.kept:
            return
        why = answer.why
        if why.startswith(REFUSED_FOR_WRITING):
            raise HarnessFailure(
                f"{self.script}: run as each candidate runs (in a copy of its working folder, its own HOME and "
                f"TMPDIR) it {why.removeprefix('refused: ')}, where its own check did not write (candidates may "
                "write only where the original wrote: a path that changes from run to run, a time or a process id "
                "in it, is not followed); give it a path that is the same in every run, or one under its folder, "
                "HOME or TMPDIR (docs/reduce.md)")
        verbatim = measurer.test_bad([source])[0] if source != state.best else answer
        if not verbatim.kept:
            raise HarnessFailure(
                f"{self.script}: reproduced in its own check, but not in the reducer's sandbox "
                f"({measurer.sandbox.confinement}: {verbatim.why}): the harness's setup, not your script; what the "
                "sandbox hides is in docs/reduce.md (a private /tmp and /var/tmp, no /run, no unix socket, no network "
                "but a job's): keep what the script reads in its folder, or report it")
        raise UserError(f"{self.script}: rewritten by ast.unparse (comments and layout dropped) it no longer "
                        f"reproduces ({why}): it cannot be reduced")

    def _between_processes(self, state: ReduceState, measurer: Measurer, source: str) -> None:
        """A job that reproduced by a later run (every process of run 1 lowered one program, every process
        of run 2 another) rather than by its processes disagreeing: one job whose process 0 has run 1's
        seed and process 1 run 2's shows the disagreement itself, which is the signature a multi-process
        reduction keeps (docs/reduce.md). Where that job's processes do not disagree, the later run's
        new key stays the signature."""
        first, later = state.bad_seeds[:2]
        if not isinstance(first, tuple) or not isinstance(later, tuple):
            return
        launch = (first[0], later[0], *first[2:])
        self.progress.say(f"the original as one job with run 1's and run 2's seeds {launch}: do its processes "
                          "disagree?")
        cell = measurer.cell(source, measurer.bad, [launch], "split", None)
        found = signature_of(cell)
        if found is None or found.ranks is None or found.module != state.signature.module:
            self.progress.say(f"  no ({cell.verdict}: {cell.reason}); the signature stays {state.signature.describe()}")
            return
        state.signature, measurer.target = found, found
        state.tolerated = measurer.tolerated = tuple(own_failures(cell))
        state.bad_seeds = [launch, *state.bad_seeds[2:]]
        measurer.bad_seeds = state.bad_seeds
        state.save(self.folder)
        self.progress.say(f"  yes: signature {found.describe()}")

    # ---- the answer ---------------------------------------------------------------------------

    def _finish(self, source: str, state: ReduceState, original_lines: int, measurer: Measurer,
                taken_out_by: dict[str, str] | None = None, lost_alone: dict[str, str] | None = None) -> ReduceOutcome:
        reduced = metadata_block(source, state.best, installed_python_modules(measurer.bad)) + state.best
        path = self.folder / REDUCED_FILE
        write_atomic(path, reduced)  # a link planted as reduced.py is replaced, never written through
        self.progress.say(f"reduced: {original_lines} -> {size(reduced)} lines, {state.measured} candidates run "
                          f"in {state.seconds:.0f} s; its own check on jax {', '.join(self.versions)}")
        section = Reduced(ProgramText(state.script, original_lines, len(source.encode())),
                          ProgramText(REDUCED_FILE, size(reduced), len(reduced.encode()), reduced),
                          state.signature, state.bad, state.good, state.vary, state.processes, state.measured,
                          len(state.memo), round(state.seconds, 1), round(state.check_seconds, 1),
                          plain(measurer.sandbox), plain_jax_said(source, state.best, taken_out_by or {}, self.unspelled,
                                                                lost_alone or {}))
        # Its own check runs where the original ran, as a user would run it, with a HOME and TMPDIR of its own
        # and the write watch: a write outside this folder and the working folder is said, and not kept.
        space = Workspace(self.folder / CHECK_DIR)
        shutil.rmtree(space.folder, ignore_errors=True)
        (space.folder / HOME_DIR).mkdir(parents=True)
        (space.folder / TMP_DIR).mkdir()
        watched = WatchedBackend(self.backend, space, measurer.sandbox,
                                 (self.folder.resolve(), Path(measurer.workdir).resolve()))
        cells = self._check(program_config(self.config, path, self.script, source), self.folder, section, watched)
        by_version = {c.spec.jax_version: c for c in cells}
        bad = by_version[state.bad]
        if state.signature.ranks is not None and bad.verdict == Verdict.REPRODUCED and bad.rank_split is None:
            # Its random launches showed the bug as a later run's new key (each launch's processes agreeing
            # with each other): the launch whose processes disagreed shows the signature itself.
            self.progress.say(f"its check reproduced by a later run; as one job with the seeds {state.bad_seeds[0]} "
                              "whose processes disagreed:")
            bad = measurer.cell(state.best, measurer.bad, state.bad_seeds[:1], "split", None)
        problem = wrote_outside(tuple(space.writes_outside())) or \
            why_not_kept(state.signature, bad, by_version.get(state.good or ""))
        state.status = "complete"
        state.save(self.folder)
        return ReduceOutcome(self.folder, SweepStatus.COMPLETE if problem is None else SweepStatus.PROBLEM, state,
                             original_lines, path, tuple(cells), problem)


def reduce_section(folder: Path) -> Reduced | None:
    """The reduce section of a folder's results (None when it has none)."""
    return load_results(folder).sections.get(REDUCE_SECTION)


__all__ = ["ReduceOutcome", "Reduction", "metadata_block", "reduce_section"]


def _own_cpu_s() -> float:
    """The CPU seconds of the harness's own process so far (its threads; not the processes it ran)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
