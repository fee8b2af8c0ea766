"""harness triage's pure parts: bug.md's rendering, and the steps' order, record and resume with fake steps."""


import pytest

from harness.core.errors import UserError
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellResult, CellSpec, MeasuredCommit
from harness.nightly.compare import compare
from harness.report.bug_report import (BugFacts, Culprit, ReducedProgram, TriageStep, StepName, StepState, pull_request, render,
                                       title)
from harness.service.triaging import Bisected, Triage, TriageState, find_alarm


class Say:
    def __init__(self):
        self.lines = []

    def say(self, line):
        self.lines.append(line)


def cell(version, verdict, commit=None):
    c = CellResult(CellSpec(version, "cpu", 8, None), Verdict(verdict), keys={"jit_step": ["k1", "k2"]}
                   if verdict == "reproduced" else {"jit_step": ["k1"]})
    if commit:
        c.commit = MeasuredCommit(commit, "2026-01-01", "head", "main", None, "0.4.31")
    return c


SHA = "c0cfc7ae9ff9" + "0" * 28


def night():
    base = [cell("0.4.31", "clean")]
    cells = [cell("0.4.31", "clean"), cell("0.4.31.dev0+gc0cfc7ae9f", "reproduced", SHA)]
    return cells, compare(cells, base)


def test_the_alarm_is_the_commit_cell_against_the_baselines_release():
    cells, changes = night()
    alarm = find_alarm(cells, changes)
    assert (alarm.good, alarm.bad_commit, alarm.bad) == ("0.4.31", SHA, f"jax@{SHA[:12]}")


def test_a_night_without_an_alarm_is_bad_input():
    cells = [cell("0.4.31", "clean")]
    with pytest.raises(UserError, match="no regression alarm"):
        find_alarm(cells, compare(cells, cells))


def facts(**more):
    base = {"program": "step.py", "module": "jit_step", "good": "0.4.31", "bad": "jax@c0cfc7ae9ff9", "night": "jax@head",
                "platform": Platform.CPU, "device_count": 8, "table": "| jax | verdict |\n|---|---|\n| 0.4.31 | clean |",
                "culprit": Culprit(SHA, "Merge pull request #21032 from mattjj:vmap-grad-shmap-bug", "2024-05-03"),
                "commits_tested": 4, "commits_in_range": 9, "components": ("computation",),
                "diff": ("--- run 1", "+++ run 2", "-  jax.result_info = \"('a', 'b')\"", "+  jax.result_info = \"('b', 'a')\""),
                "reduced": ReducedProgram("import jax\nprint(jax.jit(lambda x: x)(1))\n", 2, 30, "reduced.py"),
                "environment": {"jax": SHA, "jaxlib": "0.4.31", "python": "3.11.2", "platform": "cpu (linux)",
                             "devices": "8"},
                "steps": (TriageStep(StepName.ALARM, StepState.DONE, "regressed"), TriageStep(StepName.BISECT, StepState.DONE, "x", 12.0))}
    base.update(more)
    return BugFacts(**base)


def test_bug_md_has_every_part_of_an_issue():
    text = render(facts())
    assert text.startswith("# Persistent compilation cache misses for jit_step in every fresh process since jax commit c0cfc7ae9ff9")
    for heading in ("## Reproduce", "## Releases and commits measured", "## Culprit", "## What moved in the key",
                    "## Environment", "## Not established"):
        assert heading in text
    assert f"https://github.com/jax-ml/jax/commit/{SHA}" in text and "pull request: #21032" in text
    assert "```python\nimport jax\nprint(jax.jit(lambda x: x)(1))\n```" in text
    assert "PYTHONHASHSEED=$seed" in text and "xla_force_host_platform_device_count=8" in text
    assert f"jax @ git+https://github.com/jax-ml/jax@{SHA}" in text
    assert "`computation`" in text and "+  jax.result_info" in text
    assert "- nothing: every step finished" in text
    assert "sets its own cache folder" not in text
    own = render(facts(reduced=ReducedProgram("import jax\njax.config.update('jax_compilation_cache_dir', '/c')\n", 2, 30, "r.py")))
    assert "The program sets its own cache folder" in own


def test_a_failed_step_is_said_and_no_reduced_program_is_claimed():
    text = render(facts(reduced=None, culprit=None, releases_only=True, bad="0.4.28", good="0.4.27",
                        not_established=("reduce: failed: the original is clean on 0.4.28",)))
    assert "No reduced program" in text and "reduce: failed: the original is clean on 0.4.28" in text
    assert "With a clone of jax (`--jax-repo`)" in text
    assert title(facts(culprit=None, bad="0.4.28")).endswith("since 0.4.28")


def test_pull_request_numbers_from_merge_and_squash_subjects():
    assert pull_request("Merge pull request #21032 from mattjj:vmap") == 21032
    assert pull_request("[shard_map] order residual axes (#21278)") == 21278
    assert pull_request("Fix a typo") is None


class FakeSteps:
    def __init__(self, fail_bisect=False, fail_reduce=False):
        self.calls = []
        self.fail_bisect, self.fail_reduce = fail_bisect, fail_reduce

    def points(self, alarm):
        return 9

    def program_lines(self):
        return 30

    def bisect(self, alarm, folder):
        self.calls.append("bisect")
        if self.fail_bisect:
            raise UserError("no tag jax-v0.4.31")
        return Bisected(SHA, Culprit(SHA, "Merge pull request #7 from a:b"), 4, 9)

    def reduce(self, alarm, found, folder, resume):
        self.calls.append(("reduce", resume))
        if self.fail_reduce:
            raise UserError("the original is clean")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "reduced.py").write_text("import jax\n")
        return ReducedProgram("import jax\n", 1, 30, str(folder / "reduced.py"))


def triage(tmp_path, steps):
    cells, changes = night()
    say = Say()
    outcome = Triage(tmp_path, find_alarm(cells, changes), cells, say, steps).run()
    return outcome, say.lines


def test_the_steps_run_in_order_with_a_line_each_estimates_and_a_total(tmp_path):
    steps = FakeSteps()
    outcome, lines = triage(tmp_path, steps)
    assert steps.calls == ["bisect", ("reduce", False)]
    assert [s.state for s in outcome.steps] == [StepState.DONE] * 3
    assert any(line.startswith("triage 2/3 bisect: between 0.4.31 and jax@") and "estimate about" in line
               for line in lines)
    assert any(line.startswith("triage 3/3 reduce: on") and "estimate about" in line for line in lines)
    assert lines[-1].startswith("triage done in")
    assert "pull request: #7" in (tmp_path / "bug.md").read_text()


def test_a_finished_reduction_is_not_run_again_and_a_failed_bisection_still_writes_bug_md(tmp_path):
    triage(tmp_path, FakeSteps())
    again = FakeSteps()
    triage(tmp_path, again)
    assert again.calls == ["bisect"]  # the bisection replays from its own state; the reduction is done

    other = tmp_path / "other"
    other.mkdir()
    failing = FakeSteps(fail_bisect=True, fail_reduce=True)
    outcome, _lines = triage(other, failing)
    assert [s.name for s in outcome.failed] == [StepName.BISECT, StepName.REDUCE]
    bug = (other / "bug.md").read_text()
    assert "bisect: failed: no tag jax-v0.4.31" in bug and "reduce: failed: the original is clean" in bug
    assert TriageState.open(other).get(StepName.REDUCE).state == StepState.FAILED


def test_an_unfinished_reduction_is_resumed(tmp_path):
    (tmp_path / "triage" / "reduce").mkdir(parents=True)
    (tmp_path / "triage" / "reduce" / "reduce.json").write_text("{}")
    steps = FakeSteps()
    triage(tmp_path, steps)
    assert steps.calls == ["bisect", ("reduce", True)]


def write_night(folder, cells, source=None):
    import json

    from harness.core.records import plain
    folder.mkdir(parents=True, exist_ok=True)
    config = {"name": "n", **({"source": source} if source else {})}
    (folder / "results.json").write_text(json.dumps(
        {"schema_version": 1, "status": "complete", "config": config, "cells": [plain(c) for c in cells]}))
    return folder


def test_triage_of_a_night_without_an_alarm_or_without_its_config_is_bad_input_in_one_line(tmp_path, capsys):
    from harness.cli import commands as cli
    base = write_night(tmp_path / "base", [cell("0.4.31", "clean")])
    quiet = write_night(tmp_path / "quiet", [cell("0.4.31", "clean")])
    assert cli.main(["triage", str(quiet), "--baseline", str(base)]) == 2
    assert "no regression alarm" in capsys.readouterr().err
    alarmed = write_night(tmp_path / "alarmed", [cell("0.4.31", "reproduced")], source=str(tmp_path / "gone.yaml"))
    assert cli.main(["triage", str(alarmed), "--baseline", str(base)]) == 2
    err = capsys.readouterr().err
    assert "the night's config" in err and "Traceback" not in err
    assert not (alarmed / "bug.md").exists()


def test_the_culprits_link_follows_the_clones_github_remote(tmp_path):
    import subprocess

    from harness.bisect.commits import GitRepo
    from harness.service.triaging import _url_base
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert _url_base(GitRepo(tmp_path)) == "https://github.com/jax-ml/jax/commit/"  # no remote: jax's own
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "git@github.com:me/jax.git"], check=True)
    assert _url_base(GitRepo(tmp_path)) == "https://github.com/me/jax/commit/"
    assert _url_base(None) == "https://github.com/jax-ml/jax/commit/"
