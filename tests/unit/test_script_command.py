"""Running a script as its author runs it (pure parts): arguments, environment additions, `-m module`,
working folder; the clash rule, XLA_FLAGS merging, and the report's quoted commands."""

import shlex
from pathlib import Path

import pytest

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.core.records import plain, convert
from harness.cli import commands as cli
from harness.inputs.config import parse_config
from harness.environments import docker as dk
from harness.environments import key_hiding
from harness.core.errors import ConfigError
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import Program, RunCommand
from harness.results.header import RecordedConfig
from harness.inputs.options import parse
from harness.report.reproduce import harness_command, narrowing, shell_commands
from harness.inputs.process_variables import merge_user_env, process_env, program_for, run_command
from harness.results.document import read_header

SPEC = CellSpec("0.4.31", Platform.CPU, 4, None)


@pytest.fixture
def script(write):
    return write("proj/train.py", "import jax\n")


def config(script, **keys):
    return parse_config({"name": "t", "repro": str(script), "jax_versions": ["0.4.31"], **keys},
                        base_dir=script.parent)


def test_args_env_and_cwd_are_read_and_recorded_only_when_given(script, tmp_path):
    plain = config(script)
    assert (plain.args, plain.env, plain.cwd) == ((), (), None)
    assert not {"args", "env", "cwd", "module"} & set(as_json(recorded_config(plain)))  # older results: the same sweep
    full = config(script, args=["--steps", "1", "a b"], env={"MODEL_SIZE": "tiny"}, cwd="..")
    assert full.args == ("--steps", "1", "a b") and full.env == (("MODEL_SIZE", "tiny"),)
    assert full.cwd == tmp_path.resolve()
    assert as_json(recorded_config(full))["args"] == ["--steps", "1", "a b"] and as_json(recorded_config(full))["env"] == {"MODEL_SIZE": "tiny"}


@pytest.mark.parametrize("keys, message", [
    ({"args": "--steps 1"}, "args: must be a list of strings"),
    ({"args": ["--steps", 1]}, "args[1]: an argument must be a string, not 1 (quote it)"),
    ({"args": ["a\nb"]}, "args[0]: contains a control character (U+000A)"),
    ({"env": ["A=1"]}, "env: must be a mapping"),
    ({"env": {"MODEL SIZE": "x"}}, "env: 'MODEL SIZE' is not a variable name"),
    ({"env": {"STEPS": 1}}, "env.STEPS: a value must be a string, not 1 (quote it)"),
    ({"env": {"A": "x\x00"}}, "env.A: contains a control character (U+0000)"),
    ({"env": {"PYTHONHASHSEED": "0"}}, "env.PYTHONHASHSEED: is set by the harness for every run and cannot be "
                                       "overridden"),
    ({"env": {"JAX_DUMP_IR_TO": "/x"}}, "env.JAX_DUMP_IR_TO: is set by the harness"),
    ({"env": {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}},
     "env.XLA_FLAGS: sets --xla_force_host_platform_device_count, which the harness sets from device_count"),
    ({"cwd": "nowhere"}, "cwd: 'nowhere' is not a folder"),
])
def test_bad_args_env_and_cwd_are_one_line_naming_the_key(script, keys, message):
    with pytest.raises(ConfigError) as info:
        config(script, **keys)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_module_instead_of_repro(write, tmp_path):
    write("pkg/__init__.py", "")
    write("pkg/train.py", "")
    base = {"name": "t", "jax_versions": ["0.4.31"]}
    cfg = parse_config({**base, "module": "pkg.train"}, base_dir=tmp_path)
    assert cfg.repro.module == "pkg.train" and cfg.cwd == tmp_path.resolve()
    assert as_json(recorded_config(cfg))["module"] == "pkg.train" and "repro" not in as_json(recorded_config(cfg))
    # Not in the working folder: installed in the release's environment, checked there (the run says so)
    installed = parse_config({**base, "module": "pytest"}, base_dir=tmp_path)
    assert installed.repro.module == "pytest" and installed.repro.path == tmp_path.resolve()
    for keys, message in (({"module": "pkg"}, "pkg in the working folder .* is a package without __main__.py"),
                          ({"module": "pkg/train"}, "must be a dotted module name"),
                          ({"module": "pkg.train", "repro": "shard_map_grad"}, "not both"),
                          ({}, "repro: required key is missing")):
        with pytest.raises(ConfigError, match=message):
            parse_config({**base, **keys}, base_dir=tmp_path)


def test_user_variables_are_added_xla_flags_merged_pythonpath_after_the_hook():
    env = {**process_env(SPEC, 5), "PYTHONPATH": "/hook"}
    merged = merge_user_env(env, (("MODEL_SIZE", "tiny"), ("XLA_FLAGS", "--xla_dump_to=/tmp/d"),
                                  ("PYTHONPATH", "/src")))
    assert merged["MODEL_SIZE"] == "tiny"
    assert merged["XLA_FLAGS"] == "--xla_dump_to=/tmp/d --xla_force_host_platform_device_count=4"
    assert merged["PYTHONPATH"] == "/hook:/src"
    assert merged["PYTHONHASHSEED"] == "5"


def test_the_cells_command_records_argv_merged_env_and_folder(script, tmp_path):
    cfg = config(script, args=["--steps", "1"], env={"XLA_FLAGS": "--xla_dump_to=/d", "MODEL_SIZE": "tiny"})
    program = program_for(cfg.repro, SPEC, cfg.args, cfg.cwd)
    assert program.argv() == [str(script.resolve()), "--steps", "1"] and program.workdir == script.parent.resolve()
    command = run_command(program, merge_user_env(process_env(SPEC, 1), cfg.env), cfg.env)
    assert command.env == {"XLA_FLAGS": "--xla_dump_to=/d --xla_force_host_platform_device_count=4",
                           "MODEL_SIZE": "tiny"}
    assert convert(plain(command), RunCommand) == command
    module = Program(None, ("-v",), tmp_path, module="pkg.train")
    assert module.argv() == ["-m", "pkg.train", "-v"] and module.workdir == tmp_path


def test_docker_mounts_the_working_folder_read_only_where_the_script_folder_is_not_it(tmp_path):
    script = tmp_path / "code" / "train.py"
    same = dk.run_kwargs(Program(script, ("x",)), {}, tmp_path / "c", Platform.CPU, "0:0")
    assert same["working_dir"] == dk.SCRIPT_MOUNT and dk.WORK_MOUNT not in {m["Target"] for m in same["mounts"]}
    other = dk.run_kwargs(Program(script, (), tmp_path / "data"), {}, tmp_path / "c", Platform.CPU, "0:0")
    mounts = {m["Target"]: m for m in other["mounts"]}
    assert other["working_dir"] == dk.WORK_MOUNT and mounts[dk.WORK_MOUNT]["ReadOnly"]
    assert mounts[dk.WORK_MOUNT]["Source"] == str((tmp_path / "data").resolve())
    module = Program(None, ("--steps", "1"), tmp_path / "proj", module="pkg.train")
    kwargs = dk.run_kwargs(module, {}, tmp_path / "c", Platform.CPU, "0:0")
    assert kwargs["working_dir"] == dk.WORK_MOUNT and dk.SCRIPT_MOUNT not in {m["Target"] for m in kwargs["mounts"]}
    # (after the shell that gives each run another pid in the container's PID namespace)
    passed_over = [dk.container_command(module)[3] for _ in range(3)]
    assert dk.container_command(module)[:3] == ["/bin/sh", "-c", key_hiding._PASS_OVER_PIDS]
    assert len(set(passed_over)) == 3, passed_over
    assert dk.container_command(module)[4:] == ["python", "-m", "pkg.train", "--steps", "1"]
    assert dk.container_command(Program(script, ("a b",)))[4:] == ["python", f"{dk.SCRIPT_MOUNT}/train.py", "a b"]


def test_reproduce_commands_are_shell_quoted_and_run_the_same_thing():
    cell = CellResult(SPEC, Verdict.CLEAN, {}, [])
    cell.command = RunCommand(("/my proj/train.py", "--name", "it's"), {"MODEL_SIZE": "a b"}, "/my proj")
    text = shell_commands(cell, RecordedConfig(repro="/my proj/train.py"))
    assert "export MODEL_SIZE='a b'" in text and "cd '/my proj'" in text
    run_line = next(line for line in text.splitlines() if "PYTHONHASHSEED=$seed" in line)
    assert shlex.split(run_line.split('"$python" ', 1)[1].split(" >")[0]) == ["/my proj/train.py", "--name", "it's"]
    document = {"config": {"source": "harness check", "repro": "/my proj/train.py", "args": ["--name", "it's"],
                           "env": {"MODEL_SIZE": "a b"}, "cwd": "/my proj"}}
    words = shlex.split(harness_command(read_header(document), cell))
    assert words[:3] == ["harness", "check", "/my proj/train.py"]
    assert words[words.index("--env") + 1] == "MODEL_SIZE=a b" and words[words.index("--cwd") + 1] == "/my proj"
    assert words[words.index("--") + 1:] == ["--name", "it's"]
    module = {"config": {"source": "harness check", "module": "pkg.train"}}
    assert shlex.split(harness_command(read_header(module), cell))[2:4] == ["-m", "pkg.train"]


def test_cli_passes_everything_after_the_double_dash_untouched(script, monkeypatch):
    seen = {}

    def fake_check_config(check, moved_folder=False):
        seen.update(script=check.script, how=check.script_run)
        raise cli.UserError("stop here")

    monkeypatch.setattr(cli.service, "check_config", fake_check_config)
    code = cli.main(["check", str(script), "--env", "A=1=2", "--cwd", str(script.parent), "--",
                     "--versions", "x", "--", "-m"])
    assert code == 2
    assert seen["how"].args == ("--versions", "x", "--", "-m") and seen["how"].env == {"A": "1=2"}
    assert seen["how"].cwd == script.parent


@pytest.mark.parametrize("argv, message", [
    (["check", "--versions", "0.4.31"], "name a script or -m MODULE"),
    (["check", "s.py", "-m", "pkg"], "name a script or -m MODULE"),
    (["check", "-m", "pkg", "--env", "NOEQUALS"], "--env 'NOEQUALS': expected NAME=VALUE"),
    (["check", "-m", "pkg", "--env", "A=1", "--env", "A=2"], "--env A: given twice"),
    (["check", "-m", "pkg", "--env", "PYTHONHASHSEED=0"], "env.PYTHONHASHSEED: is set by the harness"),
])
def test_cli_bad_script_options_are_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__main__.py").write_text("")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_run_refuses_script_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "x.yaml", "--", "a"])
    assert info.value.code == 2 and "takes no script arguments" in capsys.readouterr().err


def test_reproduce_lines_carry_the_options_that_changed_what_was_installed():
    """--with-editable, --with (a package), --index-url and --extra-index-url, as results.json recorded
    them, are in the harness line (parsed back: the same values) and in the pip line by hand."""
    cell = CellResult(SPEC, Verdict.CLEAN, {}, [])
    document = {"config": {"source": "harness check", "repro": "/my proj/train.py", "requirements": ["flax>=0.8"]},
                "options": {"index_url": "https://mirror.example/simple",
                            "extra_index_urls": ["https://extra.example/simple"],
                            "editables": ["/src/my pkg"], "editable_digests": ["sha256:ab"]}}
    header = read_header(document)
    for line in (harness_command(header, cell), narrowing(header)("0.4.26", "0.4.30")):
        given, _ = parse(shlex.split(line)[1:])
        assert given["with_editable"] == (Path("/src/my pkg"),) and given["with_requirements"] == ("flax>=0.8",)
        assert given["index_url"] == "https://mirror.example/simple"
        assert given["extra_index_urls"] == ("https://extra.example/simple",)
    config = {"config": {"source": "sweep.yaml"}, "options": document["options"]}
    run = parse(shlex.split(harness_command(read_header(config), cell))[1:])[0]
    assert run.command == "run" and run["index_url"] == "https://mirror.example/simple"
    assert run["extra_index_urls"] == ("https://extra.example/simple",)  # run takes no --with-editable
    bisect = parse(shlex.split(narrowing(read_header(config))("0.4.26", "0.4.30"))[1:])[0]
    assert bisect["index_url"] == "https://mirror.example/simple"
    pip = next(l for l in shell_commands(cell, header.config, options=header.options).splitlines() if "pip install" in l)
    words = shlex.split(pip.split("&& ", 1)[1])
    assert words[words.index("--index-url") + 1] == "https://mirror.example/simple"
    assert words[words.index("--extra-index-url") + 1] == "https://extra.example/simple"
    assert words[words.index("-e") + 1] == "/src/my pkg" and "flax>=0.8" in words
    # A folder measured from PyPI alone (every folder before the sources were recorded): nothing added.
    plain = read_header({"config": document["config"]})
    assert "--index-url" not in harness_command(plain, cell) and "--with-editable" not in harness_command(plain, cell)
    assert "--index-url" not in shell_commands(cell, plain.config, options=plain.options)


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "smoke-run"


@pytest.mark.parametrize("where, name", [
    ("command", "A=1;touch PWNED;B"), ("command", "A\nB"), ("command", "A "), ("config", "A=$(touch PWNED)"),
    ("config", "NAME\n"),
])
def test_a_results_file_whose_env_holds_no_variable_name_is_refused_on_read(where, name, tmp_path, capsys):
    """Issue 49, 4: report.md's commands printed `export A=1;touch ...;B=v` from a planted cell's command.env
    (and `harness check --env` from config.env): a name that is no variable name is one line, exit 2."""
    import json
    import shutil
    folder = tmp_path / "f"
    shutil.copytree(FIXTURE, folder)
    document = json.loads((folder / "results.json").read_text())
    if where == "command":
        document["cells"][0]["command"] = {"argv": ["/x/t.py"], "env": {name: "v"}, "cwd": "/x"}
    else:
        document["config"]["env"] = {name: "v"}
    (folder / "results.json").write_text(json.dumps(document))
    (folder / "report.md").unlink(missing_ok=True)
    assert cli.main(["report", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a variable name" in err and "env" in err, err
    assert not (folder / "report.md").exists() and not (tmp_path / "PWNED").exists()


def test_every_word_of_the_commands_is_quoted_for_a_shell():
    cell = CellResult(SPEC, Verdict.CLEAN, {}, [])
    cell.command = RunCommand(("/p/t.py",), {"MODEL": "$(touch x); `y`"}, "/p")
    text = shell_commands(cell, RecordedConfig(repro="/p/t.py"))
    line = next(line for line in text.splitlines() if line.startswith("export MODEL="))
    assert shlex.split(line) == ["export", "MODEL=$(touch x); `y`"]
