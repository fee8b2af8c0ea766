"""`harness reduce`: the original's check, the search, the reduced program's check, in one folder.

    <folder>/original/   the original's check on the bad (and good) release: its signature and seeds
    <folder>/reduce.json the search's state (--resume reads it); best.py the best program so far
    <folder>/reduced.py  the answer; results.json, table.md and report.md beside it are its own check,
                         and the report's "Minimal reproducer" section holds it, ready for a JAX issue
"""

from __future__ import annotations

import ast
import os
import re
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from harness.core.records import plain
from harness.inputs.config import Config, Repro
from harness.inputs.dependencies import JAX_OWN
from harness.inputs.process_variables import merge_user_env, process_env
from harness.environments.base import Backend
from harness.core.files import write_atomic
from harness.core.errors import EnvironmentUnavailable, HarnessFailure, UserError
from harness.core.kinds import FolderMode
from harness.core.model import CellResult
from harness.core.kinds import Verdict
from harness.measure.progress import Progress
from harness.reduce.measure import (REFUSED_FOR_WRITING, Launch, Measurer, Release, candidate_timeout, deciding_seeds,
                                    own_failures, wrote_outside)
from harness.reduce.passes import (coarse_passes, digest, imported_packages, normalise, probe_program, probed_values,
                                   size)
from harness.reduce.screen import ForkScreen, child_timeout, preloaded, screen_allowed
from harness.core.factors import Factor
from harness.inside.startup.jax_cache_harness_hook import JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR
from harness.measure.multiprocess_env import GroupPlan, rank_env
from harness.reduce.progress import CandidateCost, SearchProgress, duration, opening
from harness.reduce.sandbox import (HOME_DIR, TMP_DIR, Sandbox, WatchedBackend, Workspace, WriteRecordingBackend,
                                    copy_plan, write_places)
from harness.reduce.search import Search, Tried
from harness.reduce.signature import signature_of, why_not_kept
from harness.results.reduction import REDUCE_SECTION, ProgramText, Reduced
from harness.reduce.state import STATE_FILE, ReduceState, SaveSchedule, load_state
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

# PEP 723's own regular expression for an inline metadata block.
_METADATA_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")

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


def metadata_block(source: str, reduced: str | None = None) -> str:
    """The script's inline metadata (PEP 723) block, to put back on the reduced program; with `reduced`, less
    the dependencies the reduced program no longer imports (unused)."""
    match = next((m for m in _METADATA_RE.finditer(source) if m.group("type") == "script"), None)
    if match is None:
        return ""
    return (match.group(0) if reduced is None else _without_unused(match, source, reduced)) + "\n"


def _top_imports(source: str) -> set[str]:
    """The canonical names of the top-level modules `source` imports (not relative ones)."""
    return {canonicalize_name(n) for n in imported_packages(ast.walk(ast.parse(source)))}


def _without_unused(block: re.Match[str], source: str, reduced: str) -> str:
    """The block with a dependency left out where its name is a module the original imports and the reduced
    program does not (`flax==0.8.3` once no `import flax` is left). What no import of the original names (a
    distribution whose module is named otherwise, a plugin) and JAX's own pin stay: a dependency kept for
    nothing costs an install, one dropped wrongly breaks `uv run reduced.py`."""
    unused = _top_imports(source) - _top_imports(reduced) - JAX_OWN
    lines = block.group("content").splitlines()
    try:
        document = tomlkit.parse("\n".join(line[2:] if line.startswith("# ") else line[1:] for line in lines))
    except tomlkit.exceptions.ParseError:
        return block.group(0)
    dependencies = document.get("dependencies")
    if not isinstance(dependencies, list):
        return block.group(0)
    for i in reversed(range(len(dependencies))):
        try:
            name = canonicalize_name(Requirement(str(dependencies[i])).name)
        except InvalidRequirement:
            continue
        if name in unused:
            del dependencies[i]
    content = "".join(f"# {line}\n" if line else "#\n" for line in tomlkit.dumps(document).splitlines())
    return f"# /// {block.group('type')}\n{content}# ///"


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

    def _release(self, version: str) -> Release:
        spec = plan_cells(self.config, [version])[0]
        try:
            environment = self.backend.prepare(version, self.config.platform, self.progress.say)
        except EnvironmentUnavailable as exc:
            raise UserError(f"jax {version}: its environment cannot be made ({exc})") from None
        return Release(spec, environment)

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
        source = self.script.read_text()
        try:
            ast.parse(source)
        except SyntaxError as exc:
            raise UserError(f"{self.script}: not Python that this harness can parse (line {exc.lineno}: "
                            f"{exc.msg}): nothing to reduce") from None
        original_lines = size(source)
        self.progress.say(opening(original_lines))
        if resume and self._started_before():
            self.progress.say(f"resuming {self.folder}: stopped during the original's check; checking it again")
            resume = False
        if resume:
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
        else:
            # The folder is a reduction's from the start: a signal before reduce.json exists still leaves one that
            # --resume starts again (_started_before).
            (self.folder / ORIGINAL_DIR).mkdir(parents=True, exist_ok=True)
            try:
                self._snapshot()
                state = self._original(source)
            except KeyboardInterrupt:  # nothing reduced yet: --resume of this folder checks the original again
                return ReduceOutcome(self.folder, SweepStatus.INTERRUPTED, None, original_lines)
        state.status = "running"
        state.save(self.folder)
        said = SearchProgress(self.progress.say, original_lines, state.seconds)
        search: Search | None = None
        measurer: Measurer | None = None
        try:
            measurer = self._measurer(source, state)
            self.progress.say(measurer.sandbox.describe())
            measurer.screen = self._screen(source, state, measurer)
            if state.run_seconds:
                self.progress.say(self._cost(state, measurer).said())

            saving = SaveSchedule()

            def tried(candidate: str, answer: Tried, best: str) -> None:
                assert search is not None  # made before any candidate is tried
                if answer.measured:
                    state.measured += 1
                    said.candidate(state.measured, size(candidate), search.making, answer, size(best))
                state.best, state.memo = search.best, search.memo
                state.seconds = said.seconds
                if saving.due(search.best, time.monotonic()):
                    state.save(self.folder)

            # The screen decides only once the original was measured fresh (below); its provisional keeps, and
            # a resumed search's, are confirmed by fresh processes at each checkpoint.
            decides, measurer.screen_decides = measurer.screen_decides, False
            search = Search(state.best, measurer.test_bad, measurer.confirm if self.good or decides else None,
                            at_once=measurer.at_once, memo=dict(state.memo), on_tried=tried,
                            max_candidates=self.max_candidates, on_interrupt=measurer.interrupt)
            if not resume and self.config.processes > 1 and state.signature.ranks is None:
                self._between_processes(state, measurer, source)
                found = state.signature  # the job's signature, where its processes disagreed
                if measurer.screen is None and found.ranks is not None:
                    # Its processes disagree as one job of the two runs' seeds: the job screen is asked now.
                    measurer.screen = self._screen(source, state, measurer)
                    decides, measurer.screen_decides = decides or measurer.screen_decides, False
                    search.test_good = measurer.confirm if self.good or decides else None
            if not resume:
                self._original_as_a_candidate(source, state, search, measurer)
            elif search.memo.get(digest(state.best)) is None:
                search.memo[digest(state.best)] = Tried(True, "the best so far", measured=False)
            if resume:
                measurer.remember_provisional(search.memo)
                if measurer.provisional(state.best):  # the original (measured fresh at the start) is where to go back
                    search._chain = [normalise(source), state.best]
            measurer.screen_decides = decides
            values = self._values(search.best, state, measurer)
            best = search.run(coarse_passes(values)) if values else search.run()
        except KeyboardInterrupt:
            if search is not None:
                state.best = search.best
            return self._interrupted(state, said, original_lines)
        finally:
            if measurer is not None and measurer.good_screen is not None:
                measurer.good_screen.close()
            if measurer is not None and measurer.screen is not None:
                measurer.screen.close()
                shutil.rmtree(self.folder / SCREEN_DIR, ignore_errors=True)
        state.best, state.seconds = best, said.seconds
        state.save(self.folder)
        if said.tallies:
            self.progress.say(f"searched in {duration(said.seconds)}: {said.summary()}"
                              + (f"; {search.ahead_wasted} measured side by side after one that was then kept "
                                 "(for nothing)" if search.ahead_wasted else ""))
        if measurer.screen is not None:
            undone = sum(1 for t in search.memo.values() if t.why.startswith("not confirmed by fresh processes"))
            self.progress.say(f"quick screen: {measurer.screened} candidates rejected by forked children"
                              + (f", {measurer.forked_kept} kept provisionally by them ({undone} undone at a "
                                 "checkpoint: fresh processes did not confirm them)" if measurer.screen_decides else ""))
        self.progress.say(f"candidates' processes: {measurer.fresh_processes} fresh"
                          + (f", {measurer.screen.children} forked children" if measurer.screen is not None else "")
                          + (f" (and {measurer.good_screen.children} on jax {self.good})"
                             if measurer.good_screen is not None else "")
                          + (f"; the children used {self._children_cpu(measurer):.0f} CPU s"
                             if measurer.screen is not None else "")
                          + f"; the harness's own process {_own_cpu_s():.0f} CPU s")
        try:
            return self._finish(source, state, original_lines, measurer)
        except KeyboardInterrupt:  # during the reduced program's check: --resume answers the search from the memo
            return self._interrupted(state, said, original_lines)

    def _interrupted(self, state: ReduceState, said: SearchProgress, original_lines: int) -> ReduceOutcome:
        """The best so far kept (best.py, reduce.json) for `--resume`, whatever phase the signal came in."""
        state.status = "interrupted"
        state.seconds = said.seconds
        state.save(self.folder)
        return ReduceOutcome(self.folder, SweepStatus.INTERRUPTED, state, original_lines)

    def _values(self, source: str, state: ReduceState, measurer: Measurer) -> dict[str, str]:
        """What the program computed where a library made it (`params = model.init(...)`), as plain JAX (arrays
        by shape and dtype), read from one run of it with probes (passes.probe_program) in a forked child of the
        quick screen, contained as a candidate is: `down to plain JAX` puts those values in the library's place.
        Nothing without the screen, or where the program makes no such value."""
        probe = probe_program(source)
        seed = state.bad_seeds[0] if state.bad_seeds else None
        if probe is None or measurer.screen is None or not isinstance(seed, int):
            return {}
        values = probed_values(measurer.screen.screen(probe, seed, values=True).values)
        if values:
            self.progress.say(f"down to plain JAX: {len(values)} values a library made, read from a forked run "
                              f"of the program (arrays as their shapes and dtypes), may take the library's place")
        return values

    def _screen(self, source: str, state: ReduceState, measurer: Measurer) -> ForkScreen | None:
        """The quick screen where it is as contained as a candidate's fresh run and the original passes it (it runs
        to its end in a forked child of its first deciding seed); else None, said once."""
        if not measurer.sandbox.bwrap:
            return None
        python = getattr(measurer.bad.environment, "python", None)
        seed = state.bad_seeds[0] if state.bad_seeds else None
        if state.signature.factor is not None or state.signature.ranks is not None:
            return self._cell_screen(source, state, measurer)
        if python is None or not isinstance(seed, int):
            return None
        if not screen_allowed(state.places):
            self.progress.say("quick screen off: the original wrote outside /tmp and /var/tmp "
                              f"({', '.join(state.places[:2])}{' ...' if len(state.places) > 2 else ''}), where a "
                              "candidate's stand-in is its own; every candidate runs as fresh processes")
            return None
        env = merge_user_env(process_env(measurer.bad.spec, seed, self.config.cache_thresholds), self.config.env)
        env.pop("PYTHONHASHSEED")
        local = (self.script.resolve().parent, self.workdir.resolve())
        screen = ForkScreen(Path(python), {**os.environ, **env}, preloaded(source, local), self.folder / SCREEN_DIR,
                            Path(measurer.workdir), self.script, measurer.files, local, measurer.timeout_s,
                            args=self.config.args, hook_folder=state.folder == FolderMode.HOOK, places=state.places,
                            say=self.progress.say, network=state.network)
        # The two seeds that decide nearly every candidate; a later seed's server starts when a candidate first
        # needs it (one whose first two seeds computed one key: a few in a reduction).
        screen.prestart([s for s in state.bad_seeds if isinstance(s, int)][:2])
        original = screen.screen(state.best, seed)
        if original.finished:
            # A candidate's child is killed much sooner than a fresh run would be (docs/reduce.md): one that hangs
            # costs a few times the original's forked run, not the fresh run's timeout.
            screen.timeout_s = child_timeout(original.seconds, measurer.timeout_s)
            measurer.screen_decides = self._screen_decides(screen, state)
            if measurer.screen_decides:
                measurer.good_screen = self._good_screen(source, state, measurer, local, screen.timeout_s)
            if measurer.screen_decides:
                self.progress.say(
                    f"quick screen: candidates run as children forked from interpreters that imported "
                    f"{', '.join(screen.modules)} (one per seed: {', '.join(map(str, state.bad_seeds))}); one that "
                    f"raises, or computes one key of {state.signature.module} for every seed, is rejected; one whose "
                    "seeds compute different keys is kept provisionally"
                    + (f" if its forked children are clean on jax {self.good}" if measurer.good_screen else "")
                    + ", and confirmed by fresh processes at each checkpoint (after each pass), as the reduced "
                    f"program is at the end; a child is stopped as hanging after {screen.timeout_s:.0f} s (the "
                    f"original ran {original.seconds:.1f} s forked)")
            else:
                self.progress.say(f"quick screen: candidates that raise are rejected in a child forked from an "
                                  f"interpreter that imported {', '.join(screen.modules)} (seed {seed}); the others, "
                                  f"and every kept one, run as fresh processes; a child is stopped as hanging after "
                                  f"{screen.timeout_s:.0f} s (the original ran {original.seconds:.1f} s forked)")
            return screen
        screen.close()
        why = original.rejected or original.why or "it did not run"
        self.progress.say(f"quick screen off: the original does not run to its end in a forked child ({why}); every "
                          "candidate runs as fresh processes")
        return None

    def _cell_screen(self, source: str, state: ReduceState, measurer: Measurer) -> ForkScreen | None:
        """The quick screen under --vary cache-path or between processes (harness/reduce/forked_cells.py): where the
        original's own forked children show its miss (the factor's child misses and the control hits; the job's
        processes disagree), it decides, as the plain screen does; else it only rejects (a child's exception), said
        once. None for any other factor (its run is another user, host, prefix...: fresh processes only)."""
        python = getattr(measurer.bad.environment, "python", None)
        launch = state.bad_seeds[0] if state.bad_seeds else None
        factor, ranks = state.signature.factor, state.signature.ranks
        if python is None or launch is None or (factor is not None and factor != Factor.CACHE_PATH) \
                or not screen_allowed(state.places):
            return None
        screen = self._forked_screen(source, state, measurer, measurer.bad, Path(python), self.folder / SCREEN_DIR)
        if factor is not None and isinstance(launch, int):
            answer = measurer.factor_children(screen, state.best, launch)
            shown = f"{state.signature.module} missed under {factor} and its control hit"
        elif ranks is not None and isinstance(launch, tuple):
            answer = measurer.job_children(screen, state.best, launch)
            shown = f"its processes computed different keys of {state.signature.module}"
        else:
            answer = None
        if answer is None or not answer.kept:
            screen.close()
            self.progress.say("quick screen off: the original's forked children do not show its miss "
                              f"({answer.why if answer else 'they did not run to their key'}); every candidate runs "
                              "as fresh processes")
            return None
        measurer.screen_decides = True
        if factor is not None and isinstance(launch, int) and measurer.good is not None:
            good_python = getattr(measurer.good.environment, "python", None)
            if good_python is not None:
                measurer.good_screen = self._forked_screen(source, state, measurer, measurer.good, Path(good_python),
                                                           self.folder / SCREEN_DIR / "good")
                if measurer.good_factor_children(state.best, launch) is not None:  # the original is clean there
                    measurer.good_screen.close()
                    measurer.good_screen = None
        self.progress.say(
            f"quick screen: candidates run as children forked from interpreters that imported "
            f"{', '.join(screen.modules)} (the original's did: {shown}); "
            + (f"at two cache paths and the first again, seed {launch}" if factor is not None else
               f"one job of children of seeds {', '.join(map(str, launch if isinstance(launch, tuple) else ()))}")
            + "; one that raises or does not miss is rejected, one that misses is kept provisionally"
            + (f" if its forked children hit on jax {self.good}" if measurer.good_screen else "")
            + ", and confirmed by fresh processes at each checkpoint, as the reduced program is at the end")
        return screen

    def _forked_screen(self, source: str, state: ReduceState, measurer: Measurer, release: Release, python: Path,
                       work: Path) -> ForkScreen:
        """Servers of `release`'s environment with a fresh run's variables (a job's process's, between processes: its
        share of the devices, gloo), less the hash seed, the cache folder and the job (set per child)."""
        seed = 0
        if release.spec.is_multiprocess:
            env = rank_env(release.spec, GroupPlan((seed,) * release.spec.processes, ""), 0,
                           self.config.cache_thresholds)
            for name in (JOB_COORDINATOR_VAR, JOB_PROCESSES_VAR, JOB_RANK_VAR):
                env.pop(name, None)
        else:
            env = process_env(release.spec, seed, self.config.cache_thresholds)
        env = merge_user_env(env, self.config.env)
        env.pop("PYTHONHASHSEED")
        local = (self.script.resolve().parent, self.workdir.resolve())
        return ForkScreen(python, {**os.environ, **env}, preloaded(source, local), work, Path(measurer.workdir),
                          self.script, measurer.files, local, measurer.timeout_s, args=self.config.args,
                          hook_folder=state.folder == FolderMode.HOOK, places=state.places,
                          network=release.spec.is_multiprocess or state.network, say=self.progress.say)

    def _good_screen(self, source: str, state: ReduceState, measurer: Measurer,
                     local: tuple[Path, ...], timeout_s: float) -> ForkScreen | None:
        """Forked children on the good release too, where the original's of its two deciding seeds are clean there
        (each computes keys, the second none the first did not): a provisional keep they find not clean is
        rejected at once, rather than undone at the next checkpoint by fresh processes."""
        good = measurer.good
        python = getattr(good.environment, "python", None) if good else None
        seeds = [s for s in state.bad_seeds[:2] if isinstance(s, int)]  # a plain cell's (_screen's test)
        if python is None or good is None or len(seeds) < 2:
            return None
        env = merge_user_env(process_env(good.spec, seeds[0], self.config.cache_thresholds), self.config.env)
        env.pop("PYTHONHASHSEED")
        screen = ForkScreen(Path(python), {**os.environ, **env}, preloaded(source, local),
                            self.folder / SCREEN_DIR / "good", Path(measurer.workdir), self.script, measurer.files,
                            local, timeout_s, args=self.config.args,
                            hook_folder=state.folder == FolderMode.HOOK, places=state.places, say=self.progress.say,
                            network=state.network)
        screen.prestart(seeds)
        first, later = (screen.screen(state.best, s, module=state.signature.module) for s in seeds)
        if first.computed and later.keys is not None and not later.every - first.every:
            return screen
        screen.close()
        return None

    @staticmethod
    def _children_cpu(measurer: Measurer) -> float:
        return sum(s.cpu_s for s in (measurer.screen, measurer.good_screen) if s is not None)

    @staticmethod
    def _screen_decides(screen: ForkScreen, state: ReduceState) -> bool:
        """Whether the original's forked children of its two deciding seeds compute different keys of the
        signature's module, each seed's own (a program that needs the start-up hook to miss, or whose miss the
        forked children do not show, is decided by fresh processes only). Not under --vary or --processes."""
        seeds = [s for s in state.bad_seeds[:2] if isinstance(s, int)]
        if len(seeds) < 2:  # a job's seeds, or one seed only
            return False
        first, later = (screen.screen(state.best, s, module=state.signature.module) for s in seeds)
        return bool(first.keys and later.keys and later.keys - first.keys)

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

    def _finish(self, source: str, state: ReduceState, original_lines: int, measurer: Measurer) -> ReduceOutcome:
        reduced = metadata_block(source, state.best) + state.best
        path = self.folder / REDUCED_FILE
        write_atomic(path, reduced)  # a link planted as reduced.py is replaced, never written through
        self.progress.say(f"reduced: {original_lines} -> {size(reduced)} lines, {state.measured} candidates run "
                          f"in {state.seconds:.0f} s; its own check on jax {', '.join(self.versions)}")
        section = Reduced(ProgramText(state.script, original_lines, len(source.encode())),
                          ProgramText(REDUCED_FILE, size(reduced), len(reduced.encode()), reduced),
                          state.signature, state.bad, state.good, state.vary, state.processes, state.measured,
                          len(state.memo), round(state.seconds, 1), round(state.check_seconds, 1),
                          plain(measurer.sandbox))
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
