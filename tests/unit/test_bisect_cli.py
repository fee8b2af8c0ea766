"""`harness bisect` wiring against a fake index and a fake backend: no venvs, no JAX, no network."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.cli.commands as cli
import harness.service as service
from harness.report.bisect_section import bisect_text, confidence_lines
from harness.results.bisect_results import BisectSection, Row
from harness.bisect.logic import Boundary, Role, BoundariesFound
from harness.environments import BackendChoice
from harness.core.errors import EnvironmentUnavailable, UserError
from harness.core.kinds import Verdict
from tests.fakes import INDEX, FakeBackend

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "shard_map_grad.yaml"


@pytest.fixture
def backend(monkeypatch):
    fake = FakeBackend(failure=EnvironmentUnavailable("no environments in this test"))
    index = SimpleNamespace(releases=INDEX.releases, release_date=lambda version: None)
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: index)
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(fake, "test"))
    return fake


def bisect(argv, capsys):
    code = cli.main(["bisect", str(CONFIG), "-q", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(argv, capsys, tmp_path, backend, fragment):
    out_dir = tmp_path / "results"
    code, out, err = bisect([*argv, "--out", str(out_dir)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("harness: error: "), err
    assert fragment in lines[0], lines[0]
    assert not out_dir.exists(), "nothing written"
    assert backend.prepared == [], "nothing measured"


def test_a_jax_repo_that_is_not_a_git_repository_is_refused_up_front(capsys, tmp_path, backend):
    folder = tmp_path / "not a repo"
    folder.mkdir()
    assert_refused(["--jax-repo", str(folder)], capsys, tmp_path, backend, "is not a git repository")
    assert_refused(["--jax-repo", str(tmp_path / "absent")], capsys, tmp_path, backend, "does not exist")


def test_a_git_repository_without_jax_release_tags_is_refused_up_front(capsys, tmp_path, backend):
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    assert_refused(["--jax-repo", str(other)], capsys, tmp_path, backend, "no tag jax-v0.4.25")


@pytest.mark.parametrize("flag", ["--good", "--bad"])
def test_an_unknown_endpoint_release_names_its_flag(capsys, tmp_path, backend, flag):
    other = {"--good": ["--bad", "0.4.28"], "--bad": ["--good", "0.4.26"]}[flag]
    assert_refused([flag, "0.4.99", *other], capsys, tmp_path, backend,
                   f"{flag}: '0.4.99' matches no jax release")


def test_a_malformed_versions_entry_is_refused_as_harness_run_refuses_it(capsys, tmp_path, backend):
    assert_refused(["--versions", "0.4.x"], capsys, tmp_path, backend, "--versions: '0.4.x' is not a version")


def test_an_endpoint_keeps_the_index_spelling(capsys, tmp_path, backend):
    # 0.4.26.0 is 0.4.26; it is recorded (and resumed) as the index spells it.
    bisect(["--good", "0.4.26.0", "--out", str(tmp_path)], capsys)
    [results] = tmp_path.glob("bisect-*/results.json")
    assert json.loads(results.read_text())["options"]["bisect"]["good"] == "0.4.26"


@pytest.mark.parametrize("failure,code", [(RuntimeError("a harness bug"), 3),
                                          (UserError("something the user can fix"), 2)])
def test_a_failure_after_results_exist_marks_them_failed(capsys, tmp_path, backend, failure, code):
    backend.failure = failure
    assert bisect(["--out", str(tmp_path)], capsys)[0] == code
    [results] = tmp_path.glob("bisect-*/results.json")
    assert json.loads(results.read_text())["status"] == "failed"


@pytest.mark.parametrize("problem", ["", "bubblewrap (bwrap) is not installed"])
def test_the_resume_line_says_when_the_programs_run_could_read_the_seal_key(capsys, tmp_path, backend, monkeypatch,
                                                                           problem):
    """Issue 73 #5: where bubblewrap cannot hide the key from the programs run, a resumed state may be one of
    theirs: said before the resume line."""
    from harness.environments import key_hiding

    monkeypatch.setattr(key_hiding, "hiding_problem", lambda: problem)
    backend.failure = KeyboardInterrupt()
    code, _, err = bisect(["--versions", ">=0.4.26,<0.4.32", "--out", str(tmp_path)], capsys)
    said = err.strip().splitlines()
    assert code == 130 and said[-1].startswith("resume with: ")
    if problem:
        assert said[-2].startswith("the programs it runs here can read the seal key ") and problem in said[-2]
        assert said[-2].endswith("a state one of them sealed anew would be resumed as the harness's own")
    else:
        assert "seal key" not in err


def test_ctrl_c_prints_a_resume_command_that_survives_spaces(capsys, tmp_path, backend):
    backend.failure = KeyboardInterrupt()
    out_dir = tmp_path / "my results"
    code, _, err = bisect(["--versions", ">=0.4.26,<0.4.32", "--out", str(out_dir)], capsys)
    assert code == 130
    [results] = out_dir.glob("bisect-*/results.json")
    assert json.loads(results.read_text())["status"] == "interrupted"
    command = err.split("resume with: ", 1)[1].strip()
    words = shlex.split(command)
    assert words[words.index("--out") + 1] == str(out_dir)
    assert words[words.index("--versions") + 1] == ">=0.4.26,<0.4.32"


def test_resume_command_quotes_every_path():
    options = service.BisectOptions(good="0.4.26", jax_repo=Path("/src/my jax"), out=Path("/tmp/out dir"),
                                    versions=(">=0.4.26,<0.4.32",))
    assert shlex.split(service.bisect_command(Path("my configs/a b.yaml"), options)) == [
        "harness", "bisect", "my configs/a b.yaml", "--versions", ">=0.4.26,<0.4.32", "--backend", "venv",
        "--seeds", "chosen", "--jax-repo", "/src/my jax", "--good", "0.4.26", "--out", "/tmp/out dir"]


def outcome_with(*rows: Row) -> BisectSection:
    search = BoundariesFound(appears=Boundary("0.4.26", "0.4.27"), fixed=Boundary("0.4.28", "0.4.29"))
    return BisectSection(search.appears, search.fixed, search.problem, list(rows))


def row(verdict, bound=None, other=None) -> Row:
    return Row("0.4.26", Role.ENDPOINT, verdict, 2, bound, "", miss_bound_other=other)


def test_chosen_seeds_state_both_bounds_and_what_each_assumes():
    text = bisect_text(outcome_with(row(Verdict.CLEAN, 0.0, 1.0), row(Verdict.REPRODUCED)), "cmd")
    assert "0 (set order), 1 (other)" in text
    chosen, other = confidence_lines(outcome_with(row(Verdict.CLEAN, 0.0, 1.0)))
    assert chosen.startswith("- Each clean release: `miss_bound` (chance a regression was missed) ≤ 0, assuming "
                             "the regression makes the cache key follow the iteration order of a set of the mesh's")
    assert other.startswith("- For any other hash-order dependence: `miss_bound_other_mechanisms` ≤ 1 (")
    assert other.endswith("; one seed alone says nothing of it: `--runs N` adds seeds)")
    assert "e+00" not in chosen + other
    _, other = confidence_lines(outcome_with(row(Verdict.CLEAN, 0.0, 2 ** -8)))
    assert "`miss_bound_other_mechanisms` ≤ 0.0039 (" in other and "one seed alone" not in other


def test_random_seeds_state_one_bound():
    text = bisect_text(outcome_with(row(Verdict.CLEAN, 2 ** -10)), "cmd")
    assert "0.00098 |" in text
    (line,) = confidence_lines(outcome_with(row(Verdict.CLEAN, 2 ** -10)))
    assert line.startswith("- Each clean release: `miss_bound` (chance a regression was missed) ≤ 0.00098, "
                           "assuming seeds drawn at random")


class InterruptedBackend(FakeBackend):
    """The first release cannot be made (an error point, recorded); Ctrl-C while making the second."""

    def prepare(self, jax_version, platform, say=None):
        self.prepared.append(jax_version)
        if len(self.prepared) == 2:
            raise KeyboardInterrupt
        raise EnvironmentUnavailable(f"no environment for {jax_version} in this test")


def test_an_interrupted_bisection_resumes_with_every_option_it_was_given(capsys, tmp_path, monkeypatch, backend):
    fake = InterruptedBackend(failure=EnvironmentUnavailable("unused"))
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(fake, "test"))
    pythons = tmp_path / "my pythons"
    code, _, err = bisect(["--python-search", str(pythons), "--jobs", "1", "--cache-thresholds", "script",
                           "--out", str(tmp_path / "out")], capsys)
    assert code == 130, err
    line = err.split("resume with: ", 1)[1].strip().splitlines()[0]
    words = shlex.split(line)
    assert words[words.index("--python-search") + 1] == str(pythons)
    assert words[words.index("--jobs") + 1] == "1"
    assert words[words.index("--cache-thresholds") + 1] == "script"
    [state] = (tmp_path / "out").glob("bisect-*/state.json")
    recorded = json.loads(state.read_text())["points"]
    assert list(recorded) == [f"release:{fake.prepared[0]}"]

    # The line, as a user pastes it, finds the same state: the first point is replayed, not made again.
    first, interrupted = fake.prepared
    fake.prepared.clear()
    assert words[0] == "harness"
    cli.main(words[1:])
    err = capsys.readouterr().err
    assert fake.prepared[:1] == [interrupted] and first not in fake.prepared, fake.prepared
    assert list((tmp_path / "out").glob("bisect-*/state.json")) == [state]
    # Without --cache-thresholds it is another bisection (the config differs), which starts afresh.
    fake.prepared.clear()
    cli.main([w for w in words[1:] if w not in ("--cache-thresholds", "script")])
    capsys.readouterr()
    assert fake.prepared[0] == first and len(list((tmp_path / "out").glob("bisect-*/state.json"))) == 2
