"""A script's own dependencies (pure parts): PEP 723 metadata, requirement strings and files, the
identity of a set, what an interpreter lacks, and uv's reason in one line."""

from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.core.records import plain
import harness.cli.commands as cli
import harness.environments.docker as dk
import harness.environments.wheelhouse as wh
import harness.service as service
from harness.inputs.config import load_config, parse_config
from harness.inputs.dependencies import (Requirements, other_distributions, parse_requirements, read_requirements_file,
                                  script_metadata, script_requirements, unmet)
from harness.environments.local import LocalBackend
from harness.environments.requirements import resolver_reason
from harness.environments.venv import VenvBackend
from harness.core.errors import BackendUnavailable, UserError
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.core.runs import RunRecord
from harness.inputs.pythons import PythonVersion
from harness.report.render import render_report
from harness.results.document import read_document
from tests.fakes import INDEX

SCRIPT = '''\
# /// script
# requires-python = ">=3.11"
# dependencies = [
#   "Flax",
#   "optax >= 0.2",
# ]
# ///
import jax
'''


# ---------------------------------------------------------------- PEP 723 inline metadata

def test_inline_metadata_is_read_as_toml():
    assert script_metadata(SCRIPT) == {"requires-python": ">=3.11", "dependencies": ["Flax", "optax >= 0.2"]}


def test_a_script_without_metadata_has_none():
    assert script_metadata("import jax\n# just a comment\n") is None
    # Another tool's block is not ours.
    assert script_metadata("# /// pyproject\n# [x]\n# ///\n") is None


@pytest.mark.parametrize("text, problem", [
    (SCRIPT + "\n" + SCRIPT, "more than one"),
    ("# /// script\n# dependencies = ['flax']\nimport jax\n", "no `# ///` line closes"),
    ("# /// script\n# dependencies = ['flax'\n# ///\n", "not valid TOML"),
])
def test_malformed_metadata_is_an_error(text, problem):
    with pytest.raises(ValueError, match=problem):
        script_metadata(text)


def test_script_requirements_name_the_script_and_the_string(write):
    assert script_requirements(write("ok.py", SCRIPT)).items == ("flax", "optax>=0.2")
    assert script_requirements(write("plain.py", "import jax\n")) == Requirements()
    bad = write("bad.py", "# /// script\n# dependencies = ['flax==']\n# ///\n")
    with pytest.raises(UserError, match=r"bad\.py: inline script metadata \(dependencies\): 'flax==' is not a valid"):
        script_requirements(bad)
    with pytest.raises(UserError, match="must be a list"):
        script_requirements(write("str.py", "# /// script\n# dependencies = 'flax'\n# ///\n"))


# ---------------------------------------------------------------- strings and files

def test_requirement_strings_are_validated_and_name_where_they_came_from():
    with pytest.raises(UserError, match=r"^--with: 'optax>=0\.2,<' is not a valid requirement \(Expected"):
        parse_requirements(["flax", "optax>=0.2,<"], "--with")
    with pytest.raises(UserError, match="pinned by the harness"):
        parse_requirements(["jax==0.4.30"], "--with")
    with pytest.raises(UserError, match="not a requirement string"):
        parse_requirements([3], "c.yaml: requirements")


def test_requirements_files_as_pip_reads_them(write):
    write("base.txt", "chex  # a comment\n")
    path = write("reqs.txt", "# header\nflax \\\n  >=0.8\n\n-r base.txt\noptax; python_version >= '3'\n")
    assert read_requirements_file(path, "--requirements").items == (
        "chex", "flax>=0.8", 'optax; python_version >= "3"')
    bad = write("bad.txt", "flax\n--index-url https://example.invalid/simple\n")
    with pytest.raises(UserError, match=r"bad\.txt line 2: pip option '--index-url' is not supported"):
        read_requirements_file(bad, "--requirements")
    loop = write("loop.txt", "-r loop.txt\n")
    with pytest.raises(UserError, match="includes itself"):
        read_requirements_file(loop, "--requirements")


@pytest.mark.parametrize("direct", ["flax @ file:///tmp/flax", "flax @ https://example.invalid/flax-0.8.whl",
                                    "flax@git+https://example.invalid/flax.git"])
def test_a_direct_reference_is_refused_wherever_it_is_written(direct, write):
    """Issue 27, item 7: `name @ URL` skips the index and the release's date (a file:// one runs its setup.py
    on this host): refused in --with, a requirements file and a script's inline metadata."""
    with pytest.raises(UserError, match=r"^--with: .*a direct reference \(`name @ URL`\) bypasses the package index"):
        parse_requirements([direct], "--with")
    with pytest.raises(UserError, match=r"r\.txt line 1: .*a direct reference"):
        read_requirements_file(write("r.txt", direct + "\n"), "--requirements")
    with pytest.raises(UserError, match=r"s\.py: inline script metadata \(dependencies\): .*a direct reference"):
        script_requirements(write("s.py", f"# /// script\n# dependencies = [{direct!r}]\n# ///\n"))


def test_a_requirements_file_that_is_not_one_says_what_it_is(tmp_path):
    """Issue 27, item 10: /dev/zero is no missing file, and would never end; a huge file is not read."""
    with pytest.raises(UserError, match=r"^--requirements: /dev/zero: not a regular file$"):
        read_requirements_file(Path("/dev/zero"), "--requirements")
    with pytest.raises(UserError, match=r"nope\.txt: no such file$"):
        read_requirements_file(tmp_path / "nope.txt", "--requirements")
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as f:
        f.truncate(2 << 20)
    with pytest.raises(UserError, match="larger than 1 MiB: not a requirements file"):
        read_requirements_file(huge, "--requirements")
    include = tmp_path / "inc.txt"
    include.write_text("-r /dev/zero\n")
    with pytest.raises(UserError, match="/dev/zero: not a regular file"):
        read_requirements_file(include, "--requirements")


# ---------------------------------------------------------------- identity

def test_the_same_set_in_any_spelling_or_order_has_one_identity():
    a = parse_requirements(["Flax", "optax >= 0.2"], "a")
    b = parse_requirements(["optax>=0.2", "flax", "FLAX"], "b")
    assert a == b and a.digest == b.digest and len(a.digest) == 10
    assert parse_requirements(["flax"], "c").digest != a.digest
    assert parse_requirements(["flax", "optax>=0.3"], "d").digest != a.digest
    assert (parse_requirements(["flax"], "x") + parse_requirements(["optax>=0.2"], "y")) == a


def test_venv_folders_differ_by_requirement_set_and_keep_their_old_name_without_one(tmp_path):
    py311 = PythonVersion(3, 11)

    def path(requirements=Requirements()):
        return VenvBackend(root=tmp_path, requirements=requirements).env_path("0.4.31", Platform.CPU, py311)

    plain = path()
    assert plain.name == "jax-0.4.31-cpu-py3.11"  # as before requirements existed: reused as it is
    flax_optax = parse_requirements(["flax", "optax"], "x")
    one, same = path(flax_optax), path(parse_requirements(["optax", "Flax"], "y"))
    other = path(parse_requirements(["flax"], "z"))
    assert one == same and len({plain, one, other}) == 3
    assert one.name == f"jax-0.4.31-cpu-py3.11-req{flax_optax.digest}"
    # The Python chosen for the release is part of the name too, with or without requirements.
    assert VenvBackend(root=tmp_path, requirements=flax_optax).env_path(
        "0.4.31", Platform.CPU, PythonVersion(3, 12)).name == f"jax-0.4.31-cpu-py3.12-req{flax_optax.digest}"


def test_image_tags_and_locks_follow_the_requirement_set(tmp_path):
    args = ("0.4.31", Platform.CPU, "3.11", "FROM x\n", "sha256:base", "jax==0.4.31\n")
    reqs = parse_requirements(["flax"], "x")
    assert dk.image_tag(*args) == dk.image_tag(*args, Requirements())  # old images keep their tags
    assert dk.image_tag(*args, reqs) != dk.image_tag(*args)
    assert dk.image_tag(*args, reqs) != dk.image_tag(*args, parse_requirements(["optax"], "y"))
    # The wheelhouse keeps one lock per set: a lock made without flax is never read back for it.
    house = wh.Wheelhouse(tmp_path)
    (tmp_path / "locks").mkdir()
    cutoff = datetime(2024, 7, 30, tzinfo=timezone.utc)
    (tmp_path / "locks" / "jax-0.4.31-cpu-py3.11-20240730.txt").write_text("jax==0.4.31\n")
    (tmp_path / "locks" / f"jax-0.4.31-cpu-py3.11-20240730-req{reqs.digest}.txt").write_text("flax==0.8.5\n")
    assert house.lock("0.4.31", Platform.CPU, "3.11", cutoff, tmp_path / "log") == "jax==0.4.31\n"
    assert house.lock("0.4.31", Platform.CPU, "3.11", cutoff, tmp_path / "log", extra=reqs) == "flax==0.8.5\n"


# ---------------------------------------------------------------- what an interpreter lacks

def test_unmet_names_what_is_missing_or_too_old():
    reqs = parse_requirements(["flax>=0.8", "optax", "chex", "tomli; python_version < '3.11'"], "x")
    installed = {"Flax": "0.7.0", "chex": "0.1.86", "jax": "0.4.31"}
    assert unmet(reqs, installed, "3.11.7") == ["flax>=0.8 (has 0.7.0)", "optax (not installed)"]
    assert unmet(reqs, {**installed, "flax": "0.8.5", "optax": "0.2.3"}, "3.11.7") == []


def test_local_backend_says_in_one_line_what_the_interpreter_lacks():
    backend = LocalBackend("/usr/bin/python3", parse_requirements(["flax", "optax>=0.2"], "x"))
    backend._facts = {"jax": "0.4.31", "python": "3.11.7", "distributions": {"optax": "0.1.7", "jax": "0.4.31"}}
    with pytest.raises(BackendUnavailable) as caught:
        backend.check(Platform.CPU)
    message = str(caught.value)
    assert "\n" not in message and "flax (not installed)" in message and "optax>=0.2 (has 0.1.7)" in message
    backend._facts["distributions"].update(flax="0.8.5", optax="0.2.3")
    backend.check(Platform.CPU)  # satisfied: no error


def test_other_distributions_leave_out_jax_and_the_installer():
    assert other_distributions({"jax": "1", "jaxlib": "1", "jax-cuda12-plugin": "1", "nvidia-cublas-cu12": "1",
                                "pip": "24", "Flax": "0.8.5", "ml_dtypes": "0.4.0"}) == {
        "flax": "0.8.5", "ml-dtypes": "0.4.0"}


# ---------------------------------------------------------------- uv's reason in one line

def test_uv_reason_in_one_line_both_styles():
    plain = ("$ uv venv x\n$ uv pip install --quiet jax==0.4.31 flax==0.0.1\n"
             "Using Python 3.11.7 environment at: x\nerror: No solution found when resolving dependencies\n"
             "  cause: Because there is no version of flax==0.0.1 and you require flax==0.0.1, we can "
             "conclude that your requirements are unsatisfiable.\n")
    assert resolver_reason(plain) == ("No solution found when resolving dependencies: Because there is no "
                                      "version of flax==0.0.1 and you require flax==0.0.1, we can conclude "
                                      "that your requirements are unsatisfiable.")
    fancy = ("$ uv pip compile -\n  × No solution found when resolving dependencies:\n"
             "  ╰─▶ Because flax==0.10.0 depends on jax>=0.4.27 and you require jax==0.4.26, we can\n"
             "      conclude that your requirements are unsatisfiable.\n\n  hint: pre-releases\n")
    assert resolver_reason(fancy) == ("No solution found when resolving dependencies: Because flax==0.10.0 "
                                      "depends on jax>=0.4.27 and you require jax==0.4.26, we can conclude "
                                      "that your requirements are unsatisfiable.")
    assert resolver_reason("$ uv venv x\nsome output\n") == ""


# ---------------------------------------------------------------- the config keys and the CLI

def test_config_keys_merge_with_the_scripts_metadata(write):
    write("reqs/extra.txt", "chex\n")
    script = write("step.py", SCRIPT)
    config = load_config(write("c.yaml", f"name: x\nrepro: {script.name}\njax_versions: ['0.4.31']\n"
                                         "requirements: [einops]\nrequirements_file: reqs/extra.txt\n"))
    assert config.requirements.items == ("chex", "einops", "flax", "optax>=0.2")
    assert as_json(recorded_config(config))["requirements"] == ["chex", "einops", "flax", "optax>=0.2"]
    plain = parse_config({"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.31"]})
    assert not plain.requirements and "requirements" not in as_json(recorded_config(plain))  # old results stay comparable


@pytest.mark.parametrize("extra, fragment", [
    ("requirements: ['flax==']", "c.yaml: requirements: 'flax==' is not a valid requirement"),
    ("requirements: flax", "c.yaml: requirements: must be a list"),
    ("requirements_file: nope.txt", "c.yaml: requirements_file: no such file"),
    ("requirements_file: bad.txt", "c.yaml: requirements_file: "),
])
def test_bad_requirements_in_a_config_are_one_line(extra, fragment, capsys, tmp_path, write):
    write("bad.txt", "flax\nfl ax\n")
    path = write("c.yaml", f"name: x\nrepro: shard_map_grad\njax_versions: ['0.4.31']\n{extra}\n")
    code, err = _cli(["run", str(path)], capsys, tmp_path, monkeypatch=None)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_bad_requirements_for_check_name_the_flag_or_the_script(capsys, tmp_path, write, monkeypatch):
    script = write("step.py", "import jax\n")
    code, err = _cli(["check", str(script), "--with", "flax", "--with", "optax>=0.2,<"], capsys, tmp_path,
                     monkeypatch)
    assert code == 2 and "--with: 'optax>=0.2,<' is not a valid requirement" in err
    reqs = write("r.txt", "flax\n--index-url https://x.example/simple\n")
    code, err = _cli(["check", str(script), "--requirements", str(reqs)], capsys, tmp_path, monkeypatch)
    assert code == 2 and "--requirements: " in err and "line 2: pip option '--index-url'" in err
    reqs = write("r.txt", "flax\n-e ./local\n")  # your own package, as --with-editable: here no such folder
    code, err = _cli(["check", str(script), "--requirements", str(reqs)], capsys, tmp_path, monkeypatch)
    assert code == 2 and "--requirements: " in err and "line 2: " in err and "/local: no such folder" in err
    bad = write("bad.py", "# /// script\n# dependencies = ['flax @']\n# ///\n")
    code, err = _cli(["check", str(bad)], capsys, tmp_path, monkeypatch)
    assert code == 2 and "bad.py: inline script metadata (dependencies): 'flax @'" in err


def _cli(argv, capsys, tmp_path, monkeypatch):
    if monkeypatch is not None:
        monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    out_dir = tmp_path / "results"
    code = cli.main([*argv, "--out", str(out_dir)])
    _, err = capsys.readouterr()
    assert not out_dir.exists() and "Traceback" not in err
    return code, err


def test_the_shipped_example_carries_its_requirements():
    assert script_requirements(Path("examples/flax_mlp_step.py")).names == ("flax", "optax")


def test_the_report_lists_each_releases_packages_and_pins_them_to_reproduce():
    def cell(version, flax, optax):
        return CellResult(CellSpec(version, Platform.CPU, 8, None), Verdict.CLEAN, {"jit_step": ["k"]},
                          [RunRecord(1, 7, 0, 1.0, ["jit_step-k-cache"])],
                          environment_facts={"backend": "venv", "jax": version, "numpy": "2.0.1",
                                             "distributions": {"jax": version, "jaxlib": version, "flax": flax,
                                                               "optax": optax, "chex": "0.1.86", "pip": "24.0"}})

    cells = [cell("0.4.31", "0.8.5", "0.2.3"), cell("0.10.2", "0.12.7", "0.2.8")]
    document = {"schema_version": 1, "status": "complete", "command": "harness check step.py",
                "config": {"name": "t", "repro": "step.py", "source": "harness check",
                           "requirements": ["flax", "optax>=0.2"]},
                "cells": [plain(c) for c in cells]}
    report = render_report(read_document(document, "test"), cells, {})
    assert "- jax 0.4.31: flax 0.8.5, optax 0.2.3" in report
    assert "- jax 0.10.2: flax 0.12.7, optax 0.2.8" in report
    assert "chex 0.1.86, **flax 0.8.5**, **optax 0.2.3**" in report  # folded: every non-JAX package
    assert "pip 24.0" not in report and "jaxlib 0.4.31" not in report
    assert "jaxlib==0.4.31 numpy==2.0.1 flax==0.8.5 optax==0.2.3" in report
    assert "--with flax --with 'optax>=0.2'" in report
