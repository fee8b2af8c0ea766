"""`harness bisect` honours a config's `runs:` as `harness run` does (issue 47.5); `--runs` still wins.
A fake backend whose runs all write one key (clean) and a fake index: no venvs, no JAX, no network."""

from __future__ import annotations

import html
import json

import pytest

from harness import service
from harness.cli import commands as cli
from harness.environments import BackendChoice
from tests.fakes import INDEX, FakeBackend


@pytest.fixture
def backend(monkeypatch):
    fake = FakeBackend({})
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(fake, "test"))
    return fake


@pytest.mark.parametrize("more, runs", [([], 5), (["--runs", "3"], 3)])
def test_bisect_makes_the_runs_the_config_asks_for_unless_runs_is_given(backend, tmp_path, capsys, write, more, runs):
    config = write("c.yaml", "name: c\nrepro: shard_map_grad\njax_versions: ['0.4.28', '0.4.29']\n"
                             "meshes:\n  - {shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}\nruns: 5\n")
    cli.main(["bisect", str(config), "--out", str(tmp_path / "out"), "-q", "--seeds", "random", *more])
    capsys.readouterr()
    (folder,) = (tmp_path / "out").iterdir()
    data = json.loads((folder / "results.json").read_text())
    assert data["options"]["runs"] == runs
    assert {len(c["runs"]) for c in data["cells"]} == {runs}  # clean cells: every run planned


def test_bisect_md_is_report_md_s_bisection_section_and_the_command(backend, tmp_path, capsys, write):
    """One renderer for the section (harness/report/bisect_section.py): what the command prints and writes is
    what report.md shows of the bisection, then the command that reproduces it."""
    config = write("c.yaml", "name: c\nrepro: shard_map_grad\njax_versions: ['0.4.28', '0.4.29']\n"
                             "meshes:\n  - {shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}\nruns: 3\n")
    cli.main(["bisect", str(config), "--out", str(tmp_path / "out"), "-q", "--seeds", "random"])
    printed = capsys.readouterr().out
    (folder,) = (tmp_path / "out").iterdir()
    written = (folder / "bisect.md").read_text()
    section, command = written.rstrip("\n").rsplit("\n\nReproduce with: ", 1)
    report = (folder / "report.md").read_text()
    assert section.startswith("## Bisection\n") and f"\n{section}\n" in report
    assert "- 2 release(s) tested, 6 runs in all" in section
    # printed as it reads (`-&gt;` as `->`), the command as it is: bisect.md's is a code span
    assert command.startswith("`harness bisect ") and command.endswith("`")
    assert printed.strip() == html.unescape(section) + "\n\nReproduce with: " + command.strip("`")
