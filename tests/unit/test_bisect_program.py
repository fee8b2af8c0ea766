"""`harness bisect train.py` (issue 51.8): a script bisected as `harness check` runs it, with check's program
options and no config. A fake backend (0.4.28 clean, 0.4.29 on: a new key per run) and a fake index: no venvs,
no JAX, no network."""

from __future__ import annotations

import json
import shlex

import pytest

from harness import service
from harness.cli import commands as cli
from harness.environments import BackendChoice
from harness.inputs.options import PROGRAM, SCRIPTED, options_for
from tests.fakes import INDEX, FakeBackend, ScriptedEnvironment


@pytest.fixture
def backend(monkeypatch):
    # 0.4.28 and before: one key in every run (clean); 0.4.29 and after: the key follows the seed (reproduced).
    made = []

    def environment(version):
        made.append(ScriptedEnvironment((lambda seed: 1) if version <= "0.4.28" else (lambda seed: seed + 2)))
        return made[-1]

    fake = FakeBackend(default=environment)
    fake.environments = made
    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    monkeypatch.setattr(service.measurement, "make_backend", lambda name, options: BackendChoice(fake, "test"))
    return fake


def bisect(argv, capsys):
    code = cli.main(["bisect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_bisect_takes_every_program_option_check_takes():
    """One set of program options (harness/inputs/options.py's PROGRAM): what check's program takes, bisect
    takes, so an option added there for check's program is bisect's too."""
    bisect = {o.dest for o in options_for("bisect")}
    program = {o.dest for o in options_for("check") if o.dest in SCRIPTED - {"script"}}  # a script's, bar itself
    assert PROGRAM <= program <= bisect
    assert "module" in bisect


def test_a_script_is_bisected_with_its_options_and_no_config(backend, tmp_path, capsys, write):
    script = write("train.py", "print('hello')\n")
    out_dir = tmp_path / "out dir"
    argv = [str(script), "--versions", ">=0.4.26,<=0.4.31", "--env", "MODEL=tiny", "--device-count", "4",
            "--seeds", "random", "--runs", "3", "--out", str(out_dir), "-q", "--", "--steps", "1"]
    code, out, err = bisect(argv, capsys)
    assert code == 0, err
    assert "regression appears in 0.4.29 (last clean 0.4.28)" in out
    [folder] = out_dir.iterdir()
    assert folder.name.startswith("bisect-train-")
    data = json.loads((folder / "results.json").read_text())
    assert data["config"]["repro"] == str(script.resolve())
    assert data["config"]["args"] == ["--steps", "1"] and data["config"]["env"] == {"MODEL": "tiny"}
    assert {c["spec"]["device_count"] for c in data["cells"]} == {4}
    assert data["options"]["runs"] == 3
    # Each run got the script's arguments and variables, as check gives them.
    [(args, env), *_] = backend.environments[0].calls
    assert args[-2:] == ["--steps", "1"] and env["MODEL"] == "tiny"
    # The line that reproduces it is the script's, with its options, and resumes the same bisection.
    line = out.strip().splitlines()[-1].removeprefix("Reproduce with: ")
    words = shlex.split(line)
    assert words[:3] == ["harness", "bisect", str(script)]
    assert words[words.index("--env") + 1] == "MODEL=tiny" and words[-3:] == ["--", "--steps", "1"]
    code, again, _ = bisect(words[2:], capsys)
    assert code == 0 and "regression appears in 0.4.29 (last clean 0.4.28)" in again
    assert [p.name for p in out_dir.iterdir()] == [folder.name]  # the same state, replayed


def test_a_script_without_versions_is_searched_between_good_and_bad(backend, tmp_path, capsys, write):
    script = write("step.py", "print('hello')\n")
    code, out, err = bisect([str(script), "--good", "0.4.26", "--bad", "0.4.31", "--seeds", "random", "--runs", "2",
                             "--out", str(tmp_path / "out"), "-q"], capsys)
    assert code == 0, err
    assert "regression appears in 0.4.29 (last clean 0.4.28)" in out


def test_a_script_needs_its_releases(backend, tmp_path, capsys, write):
    script = write("step.py", "print('hello')\n")
    code, _, err = bisect([str(script), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and "give them with --versions" in err
    assert backend.prepared == []


@pytest.mark.parametrize("flag", [["--with", "optax"], ["--env", "A=1"], ["--device-count", "2"], ["--", "--steps"]])
def test_a_config_refuses_a_scripts_options(backend, tmp_path, capsys, write, flag):
    config = write("c.yaml", "name: c\nrepro: shard_map_grad\njax_versions: ['0.4.28', '0.4.29']\n"
                             "meshes:\n  - {shape: [8, 1, 1, 1], axis_names: [a, b, c, d]}\n")
    code, _, err = bisect([str(config), "--out", str(tmp_path / "out"), *flag], capsys)
    assert code == 2 and "a script's option" in err and err.count("\n") == 1, err
    assert backend.prepared == []


def test_neither_or_both_of_a_script_and_a_module_is_refused(backend, tmp_path, capsys, write):
    script = write("step.py", "print('hello')\n")
    for argv in ([], [str(script), "-m", "pkg.train"]):
        code, _, err = bisect([*argv, "--out", str(tmp_path / "out")], capsys)
        assert code == 2 and "name a config, a script or -m MODULE" in err


def test_a_module_is_bisected_in_its_folder(backend, tmp_path, capsys, write):
    write("proj/mypkg/__init__.py", "")
    write("proj/mypkg/train.py", "print('hello')\n")
    code, out, err = bisect(["-m", "mypkg.train", "--cwd", str(tmp_path / "proj"), "--versions", ">=0.4.27,<=0.4.29",
                             "--seeds", "random", "--runs", "2", "--out", str(tmp_path / "out"), "-q"], capsys)
    assert code == 0, err
    assert "regression appears in 0.4.29 (last clean 0.4.28)" in out
    assert "Reproduce with: harness bisect -m mypkg.train --versions" in out
    [folder] = (tmp_path / "out").iterdir()
    data = json.loads((folder / "results.json").read_text())
    assert data["config"]["module"] == "mypkg.train" and data["config"]["cwd"] == str(tmp_path / "proj")


def test_bisect_takes_pytest_as_check_does():
    """--pytest and -m are one declaration for both commands (options.py's AS_PYTHON_MODULE): the same option, help and all."""
    assert {"module", "pytest"} <= {o.dest for o in options_for("bisect")}
    for dest in ("module", "pytest"):
        [in_check] = [o for o in options_for("check") if o.dest == dest]
        [in_bisect] = [o for o in options_for("bisect") if o.dest == dest]
        assert in_check == in_bisect


def test_a_test_suite_is_bisected_as_check_runs_it(backend, tmp_path, capsys, write):
    """`harness bisect --pytest tests/test_x.py` (issue 60.6): `-m pytest`, the file pytest's first argument, pytest
    installed with each release; its reproduce line carries --pytest and finds the same (sealed) state."""
    write("suite/tests/test_x.py", "def test_x():\n    pass\n")
    out_dir = tmp_path / "out"
    argv = ["--pytest", "tests/test_x.py", "--cwd", str(tmp_path / "suite"), "--versions", ">=0.4.27,<=0.4.29",
            "--seeds", "random", "--runs", "2", "--out", str(out_dir), "-q", "--", "-q"]
    code, out, err = bisect(argv, capsys)
    assert code == 0, err
    assert "regression appears in 0.4.29 (last clean 0.4.28)" in out
    [folder] = out_dir.iterdir()
    data = json.loads((folder / "results.json").read_text())
    config = data["config"]
    assert config["module"] == "pytest" and config["args"] == ["tests/test_x.py", "-q"]
    assert "pytest" in config["requirements"]
    [(args, _), *_] = backend.environments[0].calls
    assert args == ["tests/test_x.py", "-q"]  # the run's: `-m pytest` is the config's module, above
    state = json.loads((folder / "state.json").read_text())
    assert state["points"]  # the points measured, recorded for the line below
    line = out.strip().splitlines()[-1].removeprefix("Reproduce with: ")
    words = shlex.split(line)
    assert words[:5] == ["harness", "bisect", "-m", "pytest", "--pytest"]
    assert words[-3:] == ["--", "tests/test_x.py", "-q"]
    prepared = len(backend.prepared)
    code, again, _ = bisect(words[2:], capsys)
    assert code == 0 and "regression appears in 0.4.29 (last clean 0.4.28)" in again
    assert [p.name for p in out_dir.iterdir()] == [folder.name]  # the same state, replayed
    assert len(backend.prepared) == prepared  # nothing measured again


def test_pytest_with_another_module_is_refused_by_bisect_as_by_check(backend, tmp_path, capsys):
    for command in ("bisect", "check"):
        code = cli.main([command, "--pytest", "-m", "mypkg.train", "--versions", "0.4.28", "--out", str(tmp_path)])
        _, err = capsys.readouterr()
        assert code == 2 and "--pytest runs `-m pytest`: not with -m mypkg.train" in err, err


def test_an_edited_script_is_measured_again_and_the_resume_line_says_why(backend, tmp_path, capsys, write):
    """The identity held the script's path, not its text: the same command after an edit replayed the old
    program's verdicts. Now the same program resumes; an edited one is measured again, the line saying why."""
    script = write("train.py", "print('hello')\n")
    argv = [str(script), "--versions", ">=0.4.26,<=0.4.31", "--seeds", "random", "--runs", "3",
            "--out", str(tmp_path / "out"), "--", "--steps", "1"]
    code, _, err = bisect(argv, capsys)
    calls = sum(len(e.calls) for e in backend.environments)
    assert code == 0 and "resuming" not in err
    code, _, err = bisect(argv, capsys)  # the same program: replayed, nothing run
    assert code == 0 and "resuming: " in err and sum(len(e.calls) for e in backend.environments) == calls
    script.write_text("print('hello, edited')\n")
    code, out, err = bisect(argv, capsys)
    assert code == 0 and "regression appears in 0.4.29" in out
    assert "(train's text differs)" in err and "recorded points not replayed, measured again" in err
    assert sum(len(e.calls) for e in backend.environments) == 2 * calls  # every point measured again
    code, _, err = bisect(argv, capsys)  # and the edited program's own points resume
    assert code == 0 and "resuming: " in err and sum(len(e.calls) for e in backend.environments) == 2 * calls
