"""The CLI's contract for bad input: one line on stderr, exit 2, no traceback, nothing written."""

import json
import shlex
import tomllib
from pathlib import Path

import pytest

import harness.cli.commands as cli
import harness.service as service
import harness.inputs.options as options
from harness.results.document import load_results
from tests.helpers import assert_bad_input, run_cli


pytestmark = pytest.mark.usefixtures("fake_index")


def test_version_is_pyprojects(capsys):
    """`harness --version`: the one source, pyproject.toml's version, as installed."""
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    version = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]
    assert done.value.code == 0 and capsys.readouterr().out == f"harness {version}\n"


def test_missing_config(capsys, tmp_path):
    assert_bad_input(["run", str(tmp_path / "nope.yaml")], capsys, tmp_path, "no such config file")


def test_yaml_error(capsys, tmp_path, write):
    assert_bad_input(["run", str(write("c.yaml", "name: [x\n"))], capsys, tmp_path, "YAML syntax error")


def test_unknown_key(capsys, tmp_path, write):
    path = write("c.yaml", "name: x\nrepro: shard_map_grad\njax_versions: ['0.4.28']\nruns_per_cell: 3\n")
    assert_bad_input(["run", str(path)], capsys, tmp_path, f"{path}: runs_per_cell: unknown key")


def test_version_matching_nothing(capsys, tmp_path, write):
    path = write("c.yaml", "name: x\nrepro: shard_map_grad\njax_versions: ['>=9']\n")
    assert_bad_input(["run", str(path)], capsys, tmp_path, "'>=9' matches no jax release")


def test_bad_versions_option(capsys, tmp_path):
    assert_bad_input(["run", "configs/smoke.yaml", "--versions", "0.4.x"], capsys, tmp_path, "--versions")


def test_missing_script_for_check(capsys, tmp_path):
    assert_bad_input(["check", str(tmp_path / "nope.py")], capsys, tmp_path, "no such script")


def test_runs_below_two_is_rejected_by_argparse(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "configs/smoke.yaml", "--runs", "1"])
    assert info.value.code == 2


def test_load_results_rejects_non_results(tmp_path):
    from harness.core.errors import UserError

    (tmp_path / "results.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(UserError, match="no schema_version"):
        load_results(tmp_path)


def test_a_harness_bug_exits_3_with_its_traceback(capsys, monkeypatch):
    def broken(given, words):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "cmd_run", broken)
    code, _, err = run_cli(["run", "configs/smoke.yaml"], capsys)
    assert code == 3
    assert "RuntimeError: boom" in err and "internal error" in err.strip().splitlines()[-1]


def test_out_that_is_a_file(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(["run", "configs/smoke.yaml", "--out", str(blocker / "sub")], capsys)
    assert code == 2 and err.strip().startswith("harness: error: --out") and "Traceback" not in err


@pytest.mark.parametrize("python", ["/nonexistent/python", "/bin/true"])
def test_local_backend_with_an_interpreter_that_cannot_say(capsys, tmp_path, python):
    assert_bad_input(["run", "configs/smoke.yaml", "--backend", "local", "--python", python], capsys,
                     tmp_path, "--backend local")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-3"])
def test_check_timeout_must_be_positive_and_finite(value, tmp_path):
    with pytest.raises(SystemExit) as info:
        cli.main(["check", "examples/stable_script.py", "--timeout", value])
    assert info.value.code == 2


def test_versions_command_prints_the_resolved_releases(capsys):
    code, out, _ = run_cli(["versions", "configs/shard_map_grad.yaml"], capsys)
    releases = [line.split("\t")[0] for line in out.splitlines()]
    assert code == 0 and releases == ["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.31"]
    assert all(line.split("\t")[1].startswith("Python 3.") for line in out.splitlines())
    code, out, _ = run_cli(["versions", "configs/smoke.yaml", "--versions", "latest"], capsys)
    assert code == 0 and out.split("\t")[0] == "0.5.0"


def test_the_resume_command_drops_out_and_an_earlier_resume(tmp_path):
    given, _ = options.parse(["run", "my config.yaml", "--out", "r", "--jobs", "2", "--resume=old"])
    command = service.resume_command(given, tmp_path / "run")
    assert shlex.split(command) == ["harness", "run", "my config.yaml", "--jobs", "2",
                                    "--resume", str(tmp_path / "run")]


@pytest.mark.parametrize("argv, fragment", [
    (["run", "configs/smoke.yaml", "--runs", "1"], "harness run: error: argument --runs: must be at least 2"),
    ([], "harness: error: the following arguments are required: COMMAND"),
    (["frob"], "invalid choice: 'frob'"),
    (["run", "configs/smoke.yaml", "--jobs", "many"], "argument --jobs: 'many': give a number of runs at once or 'auto'"),
    (["run", "configs/smoke.yaml", "--jobs", "0"], "argument --jobs: must be at least 1"),
    (["bisect", "configs/smoke.yaml", "--good"], "harness bisect: error: argument --good: expected one argument"),
])
def test_usage_errors_are_one_line_and_a_hint_not_the_usage_block(argv, fragment, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert len(err.strip().splitlines()) == 1 and fragment in err and "--help)" in err, err


def test_bad_input_found_after_the_setup_lines_is_said_alone(capfd, tmp_path):
    """Issue 27, item 10: the lines printed while a sweep resolves its backend and versions are held,
    so a --resume of another sweep is one line, not the fourth."""
    import shutil
    from pathlib import Path

    folder = tmp_path / "smoke-run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "smoke-run", folder)
    code = cli.main(["run", "configs/smoke.yaml", "--versions", "0.4.29", "--resume", str(folder)])
    err = capfd.readouterr().err  # whatever reached file descriptor 2
    assert code == 2
    assert err.strip().splitlines() == [f"harness: error: --resume {folder}: versions differ (0.4.28, 0.4.29 "
                                        "there, 0.4.29 now): pass --versions 0.4.28 0.4.29"]


def test_held_progress_lines_come_out_after_the_hold(capsys):
    import time

    from harness.cli.console import ConsoleProgress

    progress = ConsoleProgress(hold_s=0.2)
    progress.say("backend: venv")
    assert capsys.readouterr().err == ""
    shown, deadline = "", time.monotonic() + 30
    while "backend: venv" not in shown and time.monotonic() < deadline:  # the hold's timer lets it out
        time.sleep(0.01)
        shown += capsys.readouterr().err
    assert "backend: venv" in shown  # a slow preparation still shows
    progress.say("then at once")
    assert "then at once" in capsys.readouterr().err
