"""`harness nightly --jax-repo PATH --ref REF` end to end on the synthetic git repository of the commit
bisection tests (test_commit_bisect.py): the release sweep and the commit's cell run real processes
with this interpreter (the fake `jax` needs no JAX); only the package index and the backend are
stand-ins, since the fake releases 0.1.x exist nowhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import service
from harness.cli import commands as cli
from harness.bisect import ref as ref_module
from harness.bisect.commits import CommitSources, GitRepo
from harness.inputs.config import load_config
from harness.environments import BackendChoice
from harness.environments.base import Backend
from harness.environments.local import LocalEnvironment
from harness.core.errors import UserError
from harness.core.kinds import Verdict
from harness.cli.console import ConsoleProgress
from harness.results.document import ResultsHeader
from harness.measure.sweep import Sweep
from harness.output.results_folder import ResultsWriter
from tests.fakes import SET_ORDERED, FakeIndex, commit, git

# A user's script (no mesh arguments): four names, so random seeds show a set order at once.
REPRO = '''
import hashlib, os
import jax
text = jax.lower(("a", "b", "c", "d"))
key = hashlib.sha256(text.encode()).hexdigest()
with open(os.path.join(os.environ["JAX_COMPILATION_CACHE_DIR"], "jit_f-" + key), "w") as f:
    f.write(text)
'''
RELEASES = ("0.1.0", "0.1.1", "0.1.2")


class ReleaseEnvironment(LocalEnvironment):
    """A release's environment: its `jax/` after anything on PYTHONPATH, as site-packages comes after
    PYTHONPATH in a real venv (so a commit's archived jax/ shadows it, as in the real thing)."""

    def __init__(self, folder: Path, version: str):
        super().__init__(sys.executable, {"jax": version, "jaxlib": version, "python": sys.version.split()[0]})
        self.folder = folder

    def run(self, program, env, cache_dir, log_path, timeout_s):
        path = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(self.folder)) if p)
        return super().run(program, {**env, "PYTHONPATH": path}, cache_dir, log_path, timeout_s)


class ReleaseBackend(Backend):
    name = "venv"  # stands in for the venv backend, the one --jax-repo runs with

    def __init__(self, repo: Path, root: Path):
        self.sources = CommitSources(GitRepo(repo), root)
        self.prepared: list[str] = []

    def prepare(self, version, platform, say=None):
        self.prepared.append(version)
        folder, _ = self.sources.get(self.sources.repo.release_commit(version))
        return ReleaseEnvironment(folder, version)


def harness_against(monkeypatch, fake_jax, root: Path) -> ReleaseBackend:
    """`harness ...` in this process measures the synthetic repository's releases, prepared under `root`."""
    backend = ReleaseBackend(fake_jax["repo"], root / "releases")
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda *args, **kwargs: FakeIndex.published(RELEASES))
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(backend, "test"))
    monkeypatch.setattr(service.watching, "DEFAULT_SOURCES", root / "commits")
    return backend


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The repro and its config, one per module: the baseline and every nightly below measure this config."""
    folder = tmp_path_factory.mktemp("project")
    script = folder / "fake_repro.py"
    script.write_text(REPRO)
    config = folder / "fake.yaml"
    config.write_text(f"name: fake\nrepro: {script}\njax_versions: ['0.1.2']\nplatform: auto\n"
                      "device_count: 1\nruns: 6\ntimeout_s: 60\n")
    return config


@pytest.fixture(scope="module")
def baseline(fake_jax, project, tmp_path_factory) -> Path:
    """Tonight's baseline: the newest release, 0.1.2, measured clean; measured once, the tests only read it."""
    root = tmp_path_factory.mktemp("baseline")
    with pytest.MonkeyPatch.context() as monkeypatch:
        harness_against(monkeypatch, fake_jax, root)
        assert cli.main(["run", str(project), "-q", "--out", str(root / "base")]) == 0
    (folder,) = (root / "base").iterdir()
    return folder


@pytest.fixture
def nightly(fake_jax, project, tmp_path, monkeypatch):
    """Runs `harness ...` against the synthetic repository; returns (exit code, stdout, stderr)."""
    backend = harness_against(monkeypatch, fake_jax, tmp_path)

    def main(*argv):
        return cli.main(list(argv))

    main.config, main.backend, main.tmp = project, backend, tmp_path
    return main


def test_a_bad_commit_against_a_clean_baseline_exits_1_and_a_good_one_0(nightly, baseline, fake_jax, capsys):
    capsys.readouterr()
    common = ["nightly", str(nightly.config), "--baseline", str(baseline), "--jax-repo", str(fake_jax["repo"]),
              "-q", "--out", str(nightly.tmp / "out")]

    assert nightly(*common, "--ref", fake_jax["bad"]) == 1
    out = capsys.readouterr().out
    label = f"jax@{fake_jax['bad'][:12]}"
    assert f"ALARM: 1 cell(s) went from clean to reproduced: {label}" in out
    assert "clean (0.1.2)" in out  # compared with the baseline's newest release

    assert nightly(*common, "--ref", fake_jax["fix"]) == 0
    out = capsys.readouterr().out
    assert f"jax@{fake_jax['fix'][:12]}" in out and "ALARM" not in out

    # The results and the report name the commit, its date and the jaxlib it ran with.
    folders = sorted((nightly.tmp / "out").iterdir())
    document = json.loads((folders[0] / "results.json").read_text())
    release, commit_cell = document["cells"]
    assert release["spec"]["jax_version"] == "0.1.2" and release["verdict"] == "clean"
    assert commit_cell["verdict"] == "reproduced"
    info = commit_cell["commit"]
    assert info["sha"] == fake_jax["bad"] and info["ref"] == fake_jax["bad"] and info["date"]
    assert info["jaxlib"] == "0.1.2"  # the newest release the commit (0.1.9, jaxlib >= 0.1.0) accepts
    assert commit_cell["spec"]["jax_version"] == f"0.1.9.dev0+g{fake_jax['bad'][:10]}"  # sorts like a version
    # The release boundary summary is about releases: the commit is compared on its own.
    assert document["summary"]["appears_in"] is None
    report = (folders[0] / "report.md").read_text()
    assert "## jax commits" in report
    assert f"- {label} (`--ref {fake_jax['bad']}`)" in report and "iterate the names as a set" in report
    assert "run with jaxlib 0.1.2" in report and info["date"][:10] in report
    # (the baseline's clean 0.1.2 of 6 runs says its bound after the boundaries and the commit, before the evidence)
    assert report.startswith(f"# fake: not reproduced in this range of releases; jax commit {label} reproduces; "
                             "clean on 0.1.2: a regression would read clean with chance up to 0.031 (--runs 11 would "
                             f"make it at most 0.00098); on {label} `jit_f` got a persistent-cache key the first run "
                             "did not compute")
    assert f"On {label}, after the first run" in report and "jax jax@" not in report  # the seeds
    assert f"--jax-repo /path/to/jax --ref {fake_jax['bad']}" in report  # how to measure it again
    table = (folders[0] / "table.md").read_text()
    assert f"{label} ({info['date'][:10]})" in table


def test_ref_main_is_fetched_from_the_clone_s_remote(nightly, baseline, fake_jax, capfd):
    """A commit pushed upstream after the clone was made is what `--ref <branch>` measures."""
    capfd.readouterr()
    repo = Path(fake_jax["repo"])
    upstream = Path(subprocess.run(["git", "-C", str(repo), "remote", "get-url", "origin"], check=True,
                                   capture_output=True, text=True).stdout.strip())
    git(upstream, "checkout", "-q", "-b", "scratch-main", "main")
    try:
        newest = commit(upstream, "set order again, upstream only", SET_ORDERED)
        git(upstream, "branch", "-f", "tonight", newest)
        assert GitRepo(repo).resolve(newest) is None  # not in the clone yet
        code = nightly("nightly", str(nightly.config), "--baseline", str(baseline), "--jax-repo", str(repo),
                       "--ref", "tonight", "--out", str(nightly.tmp / "out"))
    finally:
        git(upstream, "checkout", "-q", "main")
    captured = capfd.readouterr()
    assert code == 1
    assert f"jax@{newest[:12]}" in captured.out
    (folder,) = (nightly.tmp / "out").iterdir()
    cell = json.loads((folder / "results.json").read_text())["cells"][-1]
    assert cell["commit"]["fetched_from"] == "origin" and cell["commit"]["ref"] == "tonight"


def test_a_commit_no_jaxlib_release_satisfies_is_an_error_cell_not_skipped(fake_jax, tmp_path):
    config = tmp_path / "fake.yaml"
    script = tmp_path / "fake_repro.py"
    script.write_text(REPRO)
    config.write_text(f"name: fake\nrepro: {script}\njax_versions: ['0.1.2']\nplatform: auto\n"
                      "device_count: 1\nruns: 2\n")
    repo = GitRepo(fake_jax["repo"])
    target = ref_module.fetch_ref(repo, fake_jax["bad"], lambda _: None)
    writer = ResultsWriter(tmp_path / "out", ResultsHeader())
    backend = ReleaseBackend(fake_jax["repo"], tmp_path / "releases")
    sweep = Sweep(load_config(config), backend, writer, ConsoleProgress(quiet=True))
    (cell,) = ref_module.measure_ref(target, CommitSources(repo, tmp_path / "src"), ["0.0.7", "0.0.8"], sweep)
    assert cell.verdict == Verdict.ERROR and not cell.runs and backend.prepared == []
    assert cell.reason == (f"no jaxlib release satisfies jax@{fake_jax['bad'][:12]}: its jax/version.py asks "
                           "for jaxlib >= 0.1.0 and <= 0.1.9 (the newest a Python here can run: 0.0.8)")
    assert cell.commit.info.sha == fake_jax["bad"] and cell.commit.jaxlib is None and writer.cells == [cell]


def test_fetch_ref_without_a_remote_and_with_a_bad_ref(fake_jax, tmp_path):
    lone = tmp_path / "lone"
    subprocess.run(["git", "clone", "-q", str(fake_jax["repo"]), str(lone)], check=True)
    git(lone, "remote", "remove", "origin")
    said = []
    target = ref_module.fetch_ref(GitRepo(lone), "main", said.append)
    assert target.fetched_from is None and said == []  # nothing to fetch from
    assert target.info.sha == git(lone, "rev-parse", "main")
    with pytest.raises(UserError, match="'no-such-branch' is not a commit in .* no remote"):
        ref_module.fetch_ref(GitRepo(lone), "no-such-branch", said.append)


def test_fetch_failure_measures_the_local_ref_and_says_so(fake_jax, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--bare", str(fake_jax["repo"]), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", str(tmp_path / "gone"))
    said = []
    target = ref_module.fetch_ref(GitRepo(clone), "main", said.append)
    assert target.fetched_from is None and target.info.sha == git(clone, "rev-parse", "main")
    assert said[-1].startswith("git fetch origin main failed (") and "measuring main as it is here" in said[-1]
    with pytest.raises(UserError, match="'nope' is not a commit .* git fetch origin nope failed"):
        ref_module.fetch_ref(GitRepo(clone), "nope", said.append)
    # A commit id never moves: one already here is not fetched at all.
    said.clear()
    short = fake_jax["fix"][:12]
    assert ref_module.fetch_ref(GitRepo(clone), short, said.append).info.sha == fake_jax["fix"]
    assert said == []


@pytest.mark.parametrize("extra, message", [
    (["--backend", "docker"], "--jax-repo: the commit runs with --backend venv"),
    (["--shard", "1/2"], "run nightly without --shard"),
    (["--ref", "no-such-ref"], "--ref: 'no-such-ref' is not a commit"),
])
def test_nightly_jax_repo_bad_input_is_one_line_and_writes_nothing(nightly, baseline, fake_jax, capsys, extra,
                                                                   message):
    capsys.readouterr()
    out = nightly.tmp / "out"
    code = cli.main(["nightly", str(nightly.config), "--baseline", str(baseline), "--jax-repo",
                     str(fake_jax["repo"]), "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and not out.exists()
    assert [line for line in err.splitlines() if line.startswith("harness: error")] == [err.strip().splitlines()[-1]]
