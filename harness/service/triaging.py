"""`harness triage RESULTS --baseline DIR` (and `nightly --triage`): from a night's alarm to a bug ready to file.

The steps, each its own command's machinery and its own resumable state, composed here:
1. the alarm: the night's first regressed cell against its baseline cell: the last clean point and the first bad;
2. the bisection (`bisecting.bisect_config`): the commits between them with a clone (its sealed state.json), the
   releases without one;
3. the reduction (`reducing.reduce_config`): the night's program on the first bad point against the last clean
   release (its reduce.json; an unfinished one is resumed);
4. bug.md (harness/report/bug_report.py), written after every step, so a failed step leaves one that says what is
   known and what failed.

What each step did is kept in `triage.json` beside bug.md; a second run skips a finished reduction, replays the
bisection from its own state, and resumes what stopped.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.bisect.commits import GitRepo, commit_label
from harness.core.errors import HarnessFailure, UserError
from harness.core.files import write_atomic
from harness.core.model import CellResult
from harness.inputs.config import Config, load_config
from harness.measure.progress import Progress
from harness.nightly.compare import ALARMS, Change, CellChange, check_same_repro, compare, repro_of
from harness.reduce.passes import size
from harness.report.bisect_section import JAX_COMMIT_URL
from harness.report.bug_report import (BUG_FILE, BugFacts, Culprit, ReducedProgram, TriageStep, StepName, StepState, render)
from harness.report.evidence import Evidence
from harness.report.sources import collect
from harness.report.table import render as render_table
from harness.results.bisect_results import BisectSection
from harness.results.document import SweepStatus, load_results
from harness.service.bisecting import bisect_config
from harness.service.command_options import BisectOptions, ReduceOptions, TriageOptions
from harness.service.reducing import CommitPoint, reduce_config

TRIAGE_STATE = "triage.json"
TRIAGE_DIR = "triage"  # the bisection's and reduction's folders, inside the night's results folder
# A reduction's candidates per line of the original, and runs per candidate, for the estimate said before it.
CANDIDATES_PER_LINE = 3
RUNS_PER_CANDIDATE = 2


@dataclass(frozen=True)
class Alarm:
    """The night's regressed cell and what it is compared with."""

    cell: CellResult
    change: CellChange
    good: str  # the baseline's release
    bad_commit: str | None  # the night's commit, when the cell is one

    @property
    def bad(self) -> str:
        return self.cell.spec.jax_version if self.bad_commit is None else f"jax@{self.bad_commit[:12]}"


def find_alarm(cells: list[CellResult], changes: list[CellChange]) -> Alarm:
    """The first cell that went from clean to compiling again (reproduced, new input, not cached); UserError when
    the night raised no such alarm (a crash or a costlier cell is no cache-key regression to bisect)."""
    for change in changes:
        if change.change not in ALARMS or change.change in (Change.BROKE, Change.COSTLIER):
            continue
        cell = next(c for c in cells if c.spec == change.spec and c.label == change.label)
        assert change.baseline_version is not None  # an alarm has a baseline cell
        return Alarm(cell, change, change.baseline_version, cell.commit.sha if cell.commit else None)
    raise UserError("triage: the night raised no regression alarm (no cell went from clean to reproduced, new input "
                    "or not cached against the baseline): nothing to triage")


@dataclass
class TriageState:
    """triage.json: each step's state, detail, time and folder."""

    path: Path
    steps: dict[str, TriageStep] = field(default_factory=dict)

    @classmethod
    def open(cls, folder: Path) -> TriageState:
        path = folder / TRIAGE_STATE
        state = cls(path)
        if path.exists():
            try:
                data = json.loads(path.read_text())
                state.steps = {name: TriageStep(StepName(s["name"]), StepState(s["state"]), s.get("detail", ""),
                                          float(s.get("seconds", 0.0)), s.get("folder", ""))
                               for name, s in data.get("steps", {}).items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise UserError(f"{path}: not a triage state ({exc}); remove it to start over") from None
        return state

    def record(self, step: TriageStep) -> None:
        self.steps[step.name] = step
        write_atomic(self.path, json.dumps({"steps": {k: asdict(v) for k, v in self.steps.items()}}, indent=1) + "\n")

    def get(self, name: StepName) -> TriageStep | None:
        return self.steps.get(name)


@dataclass(frozen=True)
class Bisected:
    """What the bisection step found: the first bad point, and the culprit commit when there is one."""

    first_bad: str  # a release, or the culprit's sha
    culprit: Culprit | None = None
    commits_tested: int = 0
    commits_in_range: int = 0
    releases_only: bool = False
    jaxlib: str | None = None  # the release whose jaxlib ran the culprit
    before_jaxlib: str | None = None  # and the last clean commit


class TriageSteps(Protocol):
    """The two measuring steps (the service's own, or fakes in the unit tests), and what their estimates need."""

    def points(self, alarm: Alarm) -> int:
        """How many commits (or releases) lie from the last clean point to the first bad one, both included."""
        ...

    def program_lines(self) -> int: ...

    def bisect(self, alarm: Alarm, folder: Path) -> Bisected: ...

    def reduce(self, alarm: Alarm, found: Bisected, folder: Path, resume: bool) -> ReducedProgram: ...


@dataclass(frozen=True)
class TriageOutcome:
    folder: Path  # the night's results folder, holding bug.md
    bug: Path
    steps: tuple[TriageStep, ...]
    text: str

    @property
    def failed(self) -> list[TriageStep]:
        return [s for s in self.steps if s.state == StepState.FAILED]


def triage(results: Path, baseline: Path, options: TriageOptions, progress: Progress) -> TriageOutcome:
    """`harness triage RESULTS --baseline DIR`: the alarm's last clean and first bad points, the commits (or
    releases) between them bisected, the program reduced, bug.md written."""
    night, base = load_results(results), load_results(baseline)
    check_same_repro(results, repro_of(night.header.config), baseline, repro_of(base.header.config))
    folder = results if results.is_dir() else results.parent
    alarm = find_alarm(night.cells, compare(night.cells, base.cells))
    config, config_path = _night_config(night.header.config.source)
    steps = MeasuringSteps(config, config_path, options, progress, folder)
    # The table: the baseline's clean cell the alarm was compared with, then the night's.
    clean = [c for c in base.cells if c.commit is None and c.spec.jax_version == alarm.good
             and c.spec.mesh == alarm.cell.spec.mesh and c.spec.platform == alarm.cell.spec.platform]
    # ...and of the night's, the alarm's cell and the releases the baseline's cell does not already say.
    tonight = [c for c in night.cells if c is alarm.cell or not clean or c.spec.key != clean[0].spec.key]
    return Triage(folder, alarm, clean[:1] + tonight, progress, steps, program=night.header.config.repro or "",
                  host_os=night.header.host.os or "",
                  max_candidates=options.max_candidates, night_folder=folder).run()


def _night_config(source: str | None) -> tuple[Config, Path]:
    if source is None or not Path(source).is_file():
        raise UserError(f"triage: the night's config {source!r} is not here: triage runs where the night ran")
    return load_config(Path(source)), Path(source)


@dataclass
class Triage:
    """The steps in order, each recorded in triage.json, bug.md written after each."""

    folder: Path
    alarm: Alarm
    cells: list[CellResult]
    progress: Progress
    steps: TriageSteps
    program: str = ""  # the night's script or built-in repro, as its results name it
    host_os: str = ""  # the measuring machine's, as the night's results name it
    max_candidates: int | None = None
    night_folder: Path | None = None  # where the night's runs are (their lowered modules); None: not read
    clock: Callable[[], float] = time.monotonic

    def run(self) -> TriageOutcome:
        started = self.clock()
        state = TriageState.open(self.folder)
        alarm = self.alarm
        work = self.folder / TRIAGE_DIR
        work.mkdir(exist_ok=True)
        said = (f"{alarm.change.change} at {alarm.bad} (clean in the baseline's {alarm.good}): "
                f"{alarm.cell.reason or alarm.cell.verdict}")
        state.record(TriageStep(StepName.ALARM, StepState.DONE, said))
        self.progress.say(f"triage 1/3 alarm: {said}")
        found: Bisected | None = None
        reduced: ReducedProgram | None = None
        try:
            found = self._bisect(state, work)
            reduced = self._reduce(state, work, found) if found is not None else None
        finally:
            text = self._write(state, found, reduced)
        total = self.clock() - started
        self.progress.say(f"triage done in {total:.0f} s: {self.folder / BUG_FILE}")
        return TriageOutcome(self.folder, self.folder / BUG_FILE, tuple(state.steps.values()), text)

    def _bisect(self, state: TriageState, work: Path) -> Bisected | None:
        self.progress.say(f"triage 2/3 bisect: between {self.alarm.good} and {self.alarm.bad}; "
                          f"{self._bisect_estimate()}")
        started = self.clock()
        try:
            found = self.steps.bisect(self.alarm, work)
        except (UserError, HarnessFailure) as exc:  # said in bug.md; the reduction still runs on the night's ends
            state.record(TriageStep(StepName.BISECT, StepState.FAILED, str(exc), self.clock() - started))
            self.progress.say(f"triage 2/3 bisect failed: {exc}")
            return Bisected(self.alarm.bad_commit or self.alarm.cell.spec.jax_version,
                            releases_only=self.alarm.bad_commit is None)
        detail = (f"culprit {found.culprit.sha[:12]} {found.culprit.subject}" if found.culprit
                  else f"first bad: {found.first_bad}")
        state.record(TriageStep(StepName.BISECT, StepState.DONE, detail, self.clock() - started, str(work)))
        self.progress.say(f"triage 2/3 bisect: {detail} ({self.clock() - started:.0f} s)")
        return found

    def _bisect_estimate(self) -> str:
        try:
            count = self.steps.points(self.alarm)
        except UserError:
            count = 0
        return bisect_estimate(count, self.alarm.cell)

    def _reduce(self, state: TriageState, work: Path, found: Bisected) -> ReducedProgram | None:
        before = state.get(StepName.REDUCE)
        reduce_folder = work / "reduce"
        if before is not None and before.state == StepState.DONE and (reduce_folder / "reduced.py").exists():
            self.progress.say(f"triage 3/3 reduce: done earlier, {reduce_folder / 'reduced.py'}")
            text = (reduce_folder / "reduced.py").read_text()
            return ReducedProgram(text, size(text), int(before.detail.split(" ")[0]) if before.detail[:1].isdigit() else 0,
                           str(reduce_folder / "reduced.py"))
        # A folder left by an earlier try: reduce resumes it (from the original's check when it stopped before its state).
        resume = reduce_folder.is_dir() and any(reduce_folder.iterdir())
        against = found.culprit.before[:12] if found.culprit and found.culprit.before else self.alarm.good
        self.progress.say(f"triage 3/3 reduce: on {found.first_bad[:12]} against {against}; {self._reduce_estimate()}"
                          + ("; resuming" if resume else ""))
        started = self.clock()
        try:
            reduced = self.steps.reduce(self.alarm, found, reduce_folder, resume)
        except (UserError, HarnessFailure) as exc:
            state.record(TriageStep(StepName.REDUCE, StepState.FAILED, str(exc), self.clock() - started, str(reduce_folder)))
            self.progress.say(f"triage 3/3 reduce failed: {exc}")
            return None
        detail = f"{reduced.original_lines} -> {reduced.lines} lines" + (f"; {reduced.problem}" if reduced.problem else "")
        state.record(TriageStep(StepName.REDUCE, StepState.DONE, detail, self.clock() - started, str(reduce_folder)))
        self.progress.say(f"triage 3/3 reduce: {detail} ({self.clock() - started:.0f} s)")
        return reduced

    def _reduce_estimate(self) -> str:
        return reduce_estimate(self.steps.program_lines(), self.alarm.cell, self.max_candidates)

    def _write(self, state: TriageState, found: Bisected | None, reduced: ReducedProgram | None) -> str:
        facts = bug_facts(self.alarm, self.cells, tuple(state.steps.values()), found, reduced, self.night_folder,
                          self.program, self.host_os)
        text = render(facts)
        write_atomic(self.folder / BUG_FILE, text)
        return text


def bisect_estimate(count: int, cell: CellResult) -> str:
    """Both ends confirmed, then a binary search: about log2(count) + 2 points, each a cell of the night's runs."""
    run_s, runs = _run_seconds(cell), max(len(cell.runs), 2)
    if count < 2:
        return f"no estimate (the points between are not known yet; {run_s:.1f} s a run)"
    points = min(count, 2 + math.ceil(math.log2(max(count - 2, 1))))
    return (f"{count} points, about {points} measured: estimate about {points * runs * run_s:.0f} s "
            f"(up to {runs} runs each, {run_s:.1f} s a run)")


def reduce_estimate(lines: int, cell: CellResult, max_candidates: int | None) -> str:
    """The original's check on both points, then about CANDIDATES_PER_LINE candidates a line (or --max-candidates)."""
    run_s, runs = _run_seconds(cell), max(len(cell.runs), 2)
    candidates = CANDIDATES_PER_LINE * lines if max_candidates is None else min(max_candidates, CANDIDATES_PER_LINE * lines)
    seconds = (3 * runs + candidates * RUNS_PER_CANDIDATE) * run_s
    return (f"{lines} lines: estimate about {seconds:.0f} s (about {candidates} candidates of {RUNS_PER_CANDIDATE} "
            f"runs, {run_s:.1f} s a run)")


def _run_seconds(cell: CellResult) -> float:
    durations = [r.duration_s for r in cell.runs if r.duration_s]
    return sum(durations) / len(durations) if durations else 2.0


def bug_facts(alarm: Alarm, cells: list[CellResult], steps: tuple[TriageStep, ...], found: Bisected | None,
              reduced: ReducedProgram | None, night_folder: Path | None, program: str = "", host_os: str = "") -> BugFacts:
    cell = alarm.cell
    components: tuple[str, ...] = tuple(cell.attribution.components) if cell.attribution else ()
    diff: tuple[str, ...] = ()
    if night_folder is not None:
        try:
            evidence = collect(night_folder, cell)[0]
        except (OSError, ValueError):
            evidence = None
        if isinstance(evidence, Evidence):
            diff = tuple(evidence.diff)
    module = cell.attribution.module if cell.attribution else None
    if module is None:
        moved = [m for m, keys in cell.keys.items() if len(keys) > 1]
        module = moved[0] if moved else None
    not_established = [f"{s.name}: {s.state}: {s.detail}" for s in steps if s.state != StepState.DONE]
    for name in (StepName.BISECT, StepName.REDUCE):
        if all(s.name != name for s in steps):
            not_established.append(f"{name}: not run")
    if found is not None and found.releases_only and found.culprit is None:
        not_established.append("the commit: the regression lies between releases and no jax clone was given "
                               "(--jax-repo): the commits between them were not searched")
    if reduced is not None and reduced.problem:
        not_established.append(f"the reduced program's own check: {reduced.problem}")
    if reduced is not None and any(f"import {lib}" in reduced.text for lib in ("flax", "equinox", "haiku")):
        not_established.append("plain JAX: the reduced program still imports a library")
    facts = cell.environment_facts
    environment = {"jax": f"commit {cell.commit.sha} (the night's)" if cell.commit else cell.spec.jax_version,
                   "jaxlib": str(facts.get("jaxlib_release") or facts.get("jaxlib") or
                                 (cell.commit.jaxlib if cell.commit else "") or ""),
                   "python": str(facts.get("python", "")),
                   "platform": f"{cell.spec.platform}" + (f" ({host_os})" if host_os else ""),
                   "devices": str(cell.spec.device_count)}
    environment = {k: v for k, v in environment.items() if v}
    first_bad = found.first_bad if found else alarm.bad
    culprit = found.culprit if found else None
    return BugFacts(program=program or "the night's program",
                    module=module, good=alarm.good, bad=first_bad if culprit is None else f"jax@{culprit.sha[:12]}",
                    night=alarm.bad, platform=cell.spec.platform, device_count=cell.spec.device_count,
                    table=render_table(cells), culprit=culprit,
                    commits_tested=found.commits_tested if found else 0,
                    commits_in_range=found.commits_in_range if found else 0,
                    releases_only=bool(found and found.releases_only), components=components, diff=diff,
                    reduced=reduced, environment=environment, steps=steps, not_established=tuple(not_established))


@dataclass
class MeasuringSteps:
    """The steps as the harness measures them: `bisect --jax-repo` and `reduce` on the night's own config."""

    config: Config
    config_path: Path
    options: TriageOptions
    progress: Progress
    night_folder: Path

    def _measure(self) -> dict[str, Any]:
        o = self.options
        return {"backend": o.backend, "runs": o.runs, "seeds": o.seeds, "python": o.python, "pythons": o.pythons,
                "runs_at_once": o.runs_at_once, "rebuild": o.rebuild, "command": o.command}

    def points(self, alarm: Alarm) -> int:
        repo = self.options.jax_repo
        if repo is None:
            return 0
        clone = GitRepo(repo)
        end = alarm.bad_commit or clone.release_commit(alarm.cell.spec.jax_version)
        return len(clone.first_parent_range(clone.release_commit(alarm.good), end))

    def program_lines(self) -> int:
        path = self.config.repro.path
        return size(path.read_text()) if path.is_file() else 0

    def bisect(self, alarm: Alarm, folder: Path) -> Bisected:
        repo = self.options.jax_repo
        if alarm.bad_commit is not None:
            if repo is None:
                raise UserError("the night's alarm is at a jax commit: bisecting its commits needs --jax-repo")
            options = BisectOptions(good=alarm.good, versions=(f">={alarm.good}",), jax_repo=repo,
                                    out=folder, **self._measure())
            found = bisect_config(self.config, self.config_path, options, self.progress, bad_commit=alarm.bad_commit)
        else:
            options = BisectOptions(good=alarm.good, bad=alarm.cell.spec.jax_version,
                                    versions=(f">={alarm.good},<={alarm.cell.spec.jax_version}",), jax_repo=repo,
                                    out=folder, **self._measure())
            found = bisect_config(self.config, self.config_path, options, self.progress)
        if found.status == SweepStatus.INTERRUPTED:
            raise KeyboardInterrupt
        return bisected(found.outcome, alarm, GitRepo(repo) if repo else None)

    def reduce(self, alarm: Alarm, found: Bisected, folder: Path, resume: bool) -> ReducedProgram:
        repro = self.config.repro
        if repro.builtin or repro.module is not None or not repro.path.is_file():
            # A built-in repro is already the smallest program; a module has no one file to shrink.
            raise UserError(f"the night's program is {'the built-in repro ' if repro.builtin else ''}{repro.name}, "
                            "not a script of yours: nothing to reduce")
        options = ReduceOptions(versions=None if found.culprit or alarm.bad_commit else (found.first_bad,),
                                good=alarm.good,
                                resume=folder if resume else None, out=folder.parent,
                                max_candidates=self.options.max_candidates, **self._measure())
        commit = good_commit = None
        if found.culprit is not None:
            assert self.options.jax_repo is not None  # a culprit is found only in a clone
            repo = GitRepo(self.options.jax_repo)
            jaxlib = found.jaxlib or (alarm.cell.commit.jaxlib if alarm.cell.commit else None) or alarm.good
            commit = CommitPoint(_label(repo, found.culprit.sha), found.culprit.sha, self.options.jax_repo, jaxlib)
            if found.culprit.before:  # the last clean commit: the culprit's change alone lies between them
                before = found.culprit.before
                good_commit = CommitPoint(_label(repo, before), before, self.options.jax_repo,
                                          found.before_jaxlib or jaxlib)
        elif alarm.bad_commit is not None:  # no culprit (the bisection failed): the night's own commit
            if self.options.jax_repo is None or alarm.cell.commit is None or alarm.cell.commit.jaxlib is None:
                raise UserError("the night's commit runs from a jax clone: give --jax-repo")
            commit = CommitPoint(alarm.cell.spec.jax_version, alarm.bad_commit, self.options.jax_repo,
                                 alarm.cell.commit.jaxlib)
        outcome = reduce_config(self.config, repro.path, options, self.progress, commit, folder=folder,
                                good_commit=good_commit)
        if outcome.status == SweepStatus.INTERRUPTED:
            raise KeyboardInterrupt
        assert outcome.reduced is not None
        text = outcome.reduced.read_text()
        return ReducedProgram(text, size(text), outcome.original_lines, str(outcome.reduced), outcome.problem or "")


def _label(repo: GitRepo, sha: str) -> str:
    return commit_label(repo.version_py(sha), sha)


def _url_base(repo: GitRepo | None) -> str:
    if repo is None:
        return JAX_COMMIT_URL
    url = (repo.remote_url() or "").removesuffix(".git")
    if url.startswith("git@github.com:"):
        url = "https://github.com/" + url.removeprefix("git@github.com:")
    return f"{url}/commit/" if url.startswith("https://github.com/") else JAX_COMMIT_URL


def bisected(outcome: BisectSection | None, alarm: Alarm, repo: GitRepo | None) -> Bisected:
    """What a bisection's section says of the first bad point."""
    if outcome is None:
        raise HarnessFailure("the bisection left no answer")
    if outcome.problem:
        raise UserError(f"the bisection: {outcome.problem}")
    search = next((c for c in outcome.commits if c.kind == "appears"), None)
    if search is not None:
        if search.culprit is None:
            raise UserError(f"the commit search: {search.problem or 'no culprit found'}")
        def jaxlib_of(sha: str | None) -> str | None:
            return next((r.jaxlib for r in search.rows if r.point == sha and r.jaxlib), None)
        before = search.before.sha if search.before else ""
        culprit = Culprit(search.culprit.sha, search.culprit.subject, search.culprit.date, _url_base(repo), before)
        return Bisected(culprit.sha, culprit, len(search.rows), search.count, jaxlib=jaxlib_of(culprit.sha),
                        before_jaxlib=jaxlib_of(before))
    appears = outcome.appears
    if appears is None or appears.first is None:
        raise UserError(f"the bisection did not reproduce between {alarm.good} and {alarm.bad}")
    return Bisected(str(appears.first), releases_only=repo is None)


__all__ = ["Alarm", "Bisected", "Triage", "TriageOutcome", "TriageState", "TriageSteps", "bug_facts", "find_alarm",
           "triage"]
