"""Commit bisection end to end on a synthetic git repository: a tiny fake `jax` whose lowering becomes
set-ordered at a known commit and ordered again at a later one. Runs with this interpreter: the fake
package needs no JAX, and the "jaxlib environment" is injected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.core.signals import stop_signals_interrupt

from harness.report.bisect_section import bisect_text
from harness.bisect.bisection import Bisection
from harness.bisect.commits import (CommitEnvironment, CommitSources, GitRepo, JaxSource,
                                    acceptable_jaxlibs, parse_version_py)
from harness.bisect.logic import Boundary
from harness.bisect.bisect_state import BisectState
from harness.inputs.config import Config, Repro
from harness.environments.base import Backend, Environment
from harness.environments.local import LocalEnvironment
from harness.core.model import Mesh
from harness.core.kinds import Platform, Verdict
from harness.core.runs import ProcessOutcome, Program
from harness.cli.console import ConsoleProgress
from harness.results.header import ResultsHeader, recorded_config
from harness.output.results_folder import ResultsWriter
from harness.measure.seeds import SeedPlanner

REPRO = '''
import argparse, hashlib, os
import jax
p = argparse.ArgumentParser()
p.add_argument("--mesh-shape")
p.add_argument("--axis-names")
args = p.parse_args()
text = jax.lower(tuple(args.axis_names.split(",")))
key = hashlib.sha256(text.encode()).hexdigest()
with open(os.path.join(os.environ["JAX_COMPILATION_CACHE_DIR"], "jit_f-" + key), "w") as f:
    f.write(text)
'''


def plain_python() -> LocalEnvironment:
    # The "jaxlib environment": an interpreter; the commit's archived jax/ comes first on its path.
    return LocalEnvironment(sys.executable, {"jax": "none", "python": sys.version.split()[0]})


class ReleaseBackend(Backend):
    """Releases are the tagged commits, run like any commit (with the plain interpreter)."""

    name = "fake"

    def __init__(self, repo: GitRepo, root: Path):
        self.sources, self.prepared = CommitSources(repo, root), []

    def prepare(self, version, platform, say=None):
        self.prepared.append(version)
        sha = self.sources.repo.release_commit(version)
        folder, _ = self.sources.get(sha)
        return CommitEnvironment(plain_python(), folder, sha, version, "none")


# The seed probe's answer (32 child interpreters) depends on the interpreter only, and every bisection here
# runs this one: they share it, as a sweep's cells do, instead of probing again per bisection.
PROBES: dict = {}


def make_bisection(fake, tmp_path: Path, jaxlib_environment=None, backend=None) -> Bisection:
    script = tmp_path / "repro" / "fake_repro.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(REPRO)
    config = Config(name="fake", repro=Repro("fake", script, builtin=True), jax_versions=("0.1.*",),
                    platform=Platform.AUTO, device_count=2, meshes=(Mesh((2, 1), ("x", "y")),),
                    runs=2, timeout_s=60)
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    repo = GitRepo(fake["repo"])
    state = BisectState.open(folder, {"test": "fake"})
    writer = ResultsWriter(folder, ResultsHeader(config=recorded_config(config)))
    return Bisection(config, ["0.1.0", "0.1.1", "0.1.2"], backend or ReleaseBackend(repo, tmp_path / "src"),
                     SeedPlanner(_probes=PROBES), state, writer, ConsoleProgress(quiet=True), jax_repo=repo,
                     sources_root=tmp_path / "src",
                     jaxlib_environment=jaxlib_environment or (lambda version: plain_python()))


def test_version_py_and_jaxlib_choice():
    source = parse_version_py('_version = "0.4.27"\n_minimum_jaxlib_version = "0.4.23"\n')
    assert source == JaxSource("0.4.27", "0.4.23")
    # jax refuses a jaxlib newer than itself: 0.4.27 is too new for a 0.4.27.dev commit? No: equal
    # numeric prefixes are accepted, as jax's own check does.
    assert acceptable_jaxlibs(source, ["0.4.22", "0.4.26", "0.4.27", "0.4.28"]) == ["0.4.27", "0.4.26"]
    assert acceptable_jaxlibs(JaxSource("0.4.29", "0.4.29"), ["0.4.28"]) == []
    assert parse_version_py("nothing here") is None


@pytest.fixture(scope="module")
def whole(fake_jax, tmp_path_factory):
    """One bisection from start to end, uninterrupted: the tests that only read its outcome share it."""
    return make_bisection(fake_jax, tmp_path_factory.mktemp("whole")).run()


def test_bisects_to_the_commit_that_breaks_and_the_one_that_fixes(fake_jax, whole):
    outcome = whole
    assert outcome.problem is None
    assert outcome.appears == Boundary("0.1.0", "0.1.1")
    assert outcome.fixed == Boundary("0.1.1", "0.1.2")
    appears, fixed = outcome.commits
    assert appears.problem is None and fixed.problem is None
    assert appears.culprit.sha == fake_jax["bad"]
    assert appears.culprit.subject == "iterate the names as a set"
    assert fixed.culprit.sha == fake_jax["fix"]
    assert len(appears.rows) < appears.count and len(fixed.rows) < fixed.count
    # The unimportable commit, if the search met it, was skipped: never judged good or bad.
    for row in appears.rows:
        if row.point == fake_jax["broken"]:
            assert row.verdict == Verdict.ERROR
    # Two chosen seeds cover both orders of two names: every clean commit is certain under that model.
    assert all(r.miss_bound == 0 for r in appears.rows + fixed.rows if r.verdict == Verdict.CLEAN)
    # ...and, as two draws, halves the bound for any other hash-order dependence.
    assert all(r.miss_bound_other == 0.5 for r in appears.rows + fixed.rows if r.verdict == Verdict.CLEAN)
    text = bisect_text(outcome, "cmd")
    assert "- Each clean release or commit: `miss_bound` (chance a regression was missed) ≤ 0," in text
    assert "`miss_bound_other_mechanisms` ≤ 0.5 (" in text
    # A reproducing cell stops at its second key: two runs.
    assert all(r.runs == 2 for r in appears.rows if r.verdict == Verdict.REPRODUCED)


def test_an_interrupted_bisection_resumes_without_remeasuring_and_gives_the_same_answer(fake_jax, tmp_path):
    calls = []

    def interrupting(version):
        calls.append(version)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return plain_python()

    with pytest.raises(KeyboardInterrupt):
        make_bisection(fake_jax, tmp_path, jaxlib_environment=interrupting).run()
    recorded = len(BisectState.open(tmp_path / "out", {"test": "fake"}).points)
    assert recorded >= 3 + 3  # three releases and the commits before the interruption

    measured = []

    def counting(version):
        measured.append(version)
        return plain_python()

    backend = ReleaseBackend(GitRepo(fake_jax["repo"]), tmp_path / "src")
    outcome = make_bisection(fake_jax, tmp_path, jaxlib_environment=counting, backend=backend).run()
    assert backend.prepared == [], "releases were replayed from the state"
    assert outcome.commits[0].culprit.sha == fake_jax["bad"]
    assert outcome.commits[1].culprit.sha == fake_jax["fix"]
    total = len(outcome.commits[0].rows) + len(outcome.commits[1].rows)
    assert len(measured) == total - (recorded - 3), "only the unrecorded commits were measured"


def searched(outcome):
    """What a bisection found and how: every tested point with its verdict, and the culprits."""
    return ([(s.point, s.verdict) for s in outcome.release_rows],
            [([(r.point, r.verdict) for r in c.rows], c.boundary, c.culprit) for c in outcome.commits])


@pytest.fixture(scope="module")
def uninterrupted(whole):
    return searched(whole)


class StopAfter(Environment):
    """Runs like `base` until `stop()` says so, then raises KeyboardInterrupt (Ctrl-C mid-run)."""

    def __init__(self, base: Environment, stop):
        self.base, self.stop, self.jax_version = base, stop, base.jax_version

    def run(self, program, env, cache_dir, log_path, timeout_s):
        if self.stop(program.script):
            raise KeyboardInterrupt
        return self.base.run(program, env, cache_dir, log_path, timeout_s)

    def describe(self):
        return self.base.describe()


@pytest.mark.parametrize("k", [0, 4, 7, 10])  # 4: the unimportable commit
def test_interrupted_after_k_commits_resumes_to_the_same_culprits(fake_jax, tmp_path, uninterrupted, k):
    """Ctrl-C in the second run of the commit after the first k, i.e. with that commit's cache half
    written: the resumed bisection must take the same steps to the same culprits."""
    holder, repro_runs = {}, []

    def stop(script) -> bool:
        commits = [p for p in holder["bisection"].state.points if p.startswith("commit:")]
        if len(commits) < k or script.name == "seeds_probe.py":
            return False
        repro_runs.append(script)
        return len(repro_runs) == 2

    first = make_bisection(fake_jax, tmp_path,
                           jaxlib_environment=lambda version: StopAfter(plain_python(), stop))
    holder["bisection"] = first
    with pytest.raises(KeyboardInterrupt), stop_signals_interrupt():  # each a command of its own, as cli.main runs
        first.run()  # (after it no run starts in this command)
    points = BisectState.open(tmp_path / "out", {"test": "fake"}).points
    recorded = [p for p in points if p.startswith("commit:")]
    assert len(recorded) == k, "the interrupted commit was not recorded"

    with stop_signals_interrupt():
        assert searched(make_bisection(fake_jax, tmp_path).run()) == uninterrupted


def test_a_commits_jax_goes_first_and_a_scripts_hook_folder_stays_on_the_path(tmp_path):
    seen = {}

    class Base(Environment):
        jax_version = "0.4.26"

        def run(self, program, env, cache_dir, log_path, timeout_s):
            seen.update(env)
            return ProcessOutcome(0, 0.1)

        def describe(self):
            return {}

    commit = CommitEnvironment(Base(), tmp_path / "src", "abc", "0.4.27.dev+abc", "0.4.26")
    commit.run(Program(tmp_path / "s.py"), {"PYTHONPATH": "/hook"}, tmp_path, tmp_path / "l.log", 10)
    assert seen["PYTHONPATH"] == f"{tmp_path / 'src'}:/hook"


class StoppingReleaseBackend(ReleaseBackend):
    """Releases as above; Ctrl-C in the second repro run of release `stop_in`."""

    def __init__(self, repo: GitRepo, root: Path, stop_in: str):
        super().__init__(repo, root)
        self.stop_in, self.runs = stop_in, 0

    def prepare(self, version, platform, say=None):
        environment = super().prepare(version, platform, say)
        if version != self.stop_in:
            return environment

        def stop(script) -> bool:
            if script.name == "seeds_probe.py":
                return False
            self.runs += 1
            return self.runs == 2
        return StopAfter(environment, stop)


def test_a_release_cell_cut_short_is_kept_in_the_results_but_never_recorded_as_a_point(fake_jax, tmp_path):
    """The one Ctrl-C policy (sweep.keep_then_stop), as a sweep keeps its cell: results.json holds what the
    cell measured, `interrupted`; the state does not, so the resumed bisection measures it again."""
    backend = StoppingReleaseBackend(GitRepo(fake_jax["repo"]), tmp_path / "src", stop_in="0.1.2")
    with pytest.raises(KeyboardInterrupt):
        make_bisection(fake_jax, tmp_path, backend=backend).run()
    cells = json.loads((tmp_path / "out" / "results.json").read_text())["cells"]
    cut = [c for c in cells if c["spec"]["jax_version"] == "0.1.2"]
    assert len(cut) == 1 and cut[0]["interrupted"] and len(cut[0]["runs"]) == 1, cut
    assert "release:0.1.2" not in BisectState.open(tmp_path / "out", {"test": "fake"}).points


def test_a_bisection_to_a_commit_after_the_release_searches_only_those_commits(fake_jax, tmp_path):
    """harness triage of a night at a commit: from --good's release commit to that commit, no release search."""
    repo = GitRepo(fake_jax["repo"])
    night = repo.resolve("jax-v0.1.1")  # set-ordered, after the culprit
    bisection = make_bisection(fake_jax, tmp_path)
    bisection.good, bisection.bad_commit = "0.1.0", night
    outcome = bisection.run()
    assert outcome.release_rows == [] and outcome.fixed is None
    (search,) = outcome.commits
    assert search.problem is None and search.culprit.sha == fake_jax["bad"]
    assert search.count == len(repo.first_parent_range(repo.release_commit("0.1.0"), night))
    assert {r.point for r in search.rows} >= {repo.release_commit("0.1.0"), night}  # both ends confirmed
