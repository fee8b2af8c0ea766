"""The Python each release runs in: wheel tags from a fake index, fake interpreters, no processes."""

from __future__ import annotations

import os
from itertools import product
from pathlib import Path

import pytest
from packaging.tags import Tag

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.inputs.config import parse_config
from harness.environments import interpreters
from harness.core.errors import ConfigError, UserError
from harness.inputs.pythons import Found, Interpreter, NoPython, PythonChooser, PythonVersion, Why
from harness.inputs.versions import accepts, release_pythons, resolve, target_tags
from tests.fakes import FakeIndex

PY = {minor: PythonVersion(3, minor) for minor in range(9, 16)}
HOST = ("manylinux_2_36_x86_64", "manylinux_2_27_x86_64", "manylinux2014_x86_64", "linux_x86_64")


# Shaped like the real index: 0.10.2 is the last with 3.11 wheels, 0.11 and 0.12 need 3.12+.
INDEX = FakeIndex.of_wheels({
    "0.4.26": [9, 10, 11, 12], "0.4.31": [10, 11, 12], "0.10.2": [11, 12, 13, 14],
    "0.11.0": [12, 13, 14], "0.12.0.1": [12, 13, 14, 15],
}, extra={"0.12.0.1": ["jaxlib-0.12.0.1-cp315-cp315t-manylinux_2_27_x86_64.whl"],
          "0.11.0": ["jaxlib-0.11.0-cp311-cp311-manylinux_2_27_aarch64.whl"]})


def interp(minor: int, found: Found = Found.PYENV) -> Interpreter:
    return Interpreter(PY[minor], f"/fake/python3.{minor}", found)


def chooser(*minors: int, own: int = 11, pinned: int | None = None) -> PythonChooser:
    return PythonChooser(PY[own], release_pythons(INDEX, HOST), find=lambda: [interp(m) for m in minors],
                         own_interpreter=f"/fake/python3.{own}", pinned=PY[pinned] if pinned else None)


def test_the_machine_is_searched_only_when_a_release_needs_another_python():
    def find():
        raise AssertionError("searched")

    lazy = PythonChooser(PY[11], release_pythons(INDEX, HOST), find=find, own_interpreter="/fake/python3.11")
    assert lazy.choose("0.4.31").why == Why.HARNESS
    assert resolve([">=0.4.26,<0.11"], INDEX, pythons=lazy).versions == ["0.4.26", "0.4.31", "0.10.2"]
    with pytest.raises(AssertionError, match="searched"):
        lazy.choose("0.11.0")


def test_wheel_tags_give_the_pythons_for_this_platform_only():
    pythons = release_pythons(INDEX, HOST)
    # The aarch64 cp311 wheel of 0.11.0 does not install here; the free-threaded cp315t is not cp315.
    assert pythons("0.11.0") == {PY[12], PY[13], PY[14]}
    assert pythons("0.12.0.1") == {PY[12], PY[13], PY[14], PY[15]}
    assert release_pythons(INDEX, ("manylinux_2_27_aarch64",))("0.11.0") == frozenset()  # cp311, but >=3.12


def test_a_wheel_tag_is_accepted_exactly_where_the_full_set_of_target_tags_has_it():
    # accepts() reads one platform-free set per Python instead of making every platform's (issue 51 item 7: the
    # full sets cost 0.1 s of CPU at each command's start); it must agree with those sets tag for tag.
    for python, platforms in product(PY.values(), (HOST, ("macosx_11_0_arm64",), ("win_amd64",))):
        full = target_tags(python, platforms)
        asked = full | {Tag(*t) for t in product(("cp311", "cp39", "cp315", "py3", "py2"), ("cp311", "cp315t", "abi3", "none"),
                                                 ("manylinux2014_x86_64", "manylinux_2_27_aarch64", "any", "win_amd64"))}
        assert {t for t in asked if accepts(python, platforms, t)} == full & asked


def test_the_harness_python_is_kept_where_the_release_has_wheels_for_it():
    choice = chooser(12, 13).choose("0.10.2")
    assert (choice.version, choice.why, choice.interpreter) == (PY[11], Why.HARNESS, "/fake/python3.11")


def test_a_base_images_python_is_not_called_the_harnesss():
    """docker: no interpreter of the harness's runs; its default version is the base image's own Python."""
    image = PythonChooser(PY[11], release_pythons(INDEX, HOST), provided=frozenset({PY[11], PY[13]}))
    choice = image.choose("0.10.2")
    assert (choice.version, choice.why, choice.interpreter) == (PY[11], Why.HARNESS, None)
    assert str(choice) == "Python 3.11 (the base image's default Python)"
    assert str(chooser(12).choose("0.10.2")) == "Python 3.11 (the harness's own Python)"


def test_otherwise_the_newest_python_here_with_a_wheel():
    choice = chooser(10, 12, 13).choose("0.12.0.1")
    assert (choice.version, choice.why, choice.interpreter) == (PY[13], Why.NEWEST, "/fake/python3.13")
    assert "not 3.11: the newest of those here" in choice.reason
    assert chooser(12).choose("0.11.0").version == PY[12]


def test_no_python_here_names_what_the_release_needs():
    with pytest.raises(NoPython, match=r"jax 0.12.0.1 needs CPython 3.12, 3.13, 3.14 or 3.15; .*has 3.10 or 3.11"):
        chooser(10).choose("0.12.0.1")


def test_a_pinned_python_is_used_or_refused_in_one_line():
    assert chooser(12, 13, pinned=12).choose("0.12.0.1").why == Why.PINNED
    assert chooser(12, 13, pinned=12).choose("0.4.31").version == PY[12]
    with pytest.raises(NoPython, match="no jaxlib wheel for the pinned Python 3.13"):
        chooser(13, pinned=13).choose("0.4.31")
    with pytest.raises(NoPython, match="pinned Python 3.12 is not on this machine"):
        chooser(13, pinned=12).choose("0.12.0.1")


def test_latest_is_the_newest_release_some_python_here_runs():
    resolution = resolve(["latest"], INDEX, pythons=chooser(12, 13))
    assert resolution.versions == ["0.12.0.1"] and resolution.pythons["0.12.0.1"].version == PY[13]
    only_311 = resolve(["latest"], INDEX, pythons=chooser())
    assert only_311.versions == ["0.10.2"]
    # The newer releases are named, with what they need, not silently skipped.
    assert [p.jax_version for p in only_311.unrunnable] == ["0.11.0", "0.12.0.1"]
    assert "needs CPython 3.12, 3.13 or 3.14" in only_311.notes()[0]


def test_a_range_keeps_every_runnable_release_each_in_its_python():
    resolution = resolve([">=0.10.2"], INDEX, pythons=chooser(12, 13))
    assert resolution.versions == ["0.10.2", "0.11.0", "0.12.0.1"] and not resolution.unrunnable
    assert [str(resolution.pythons[v].version) for v in resolution.versions] == ["3.11", "3.13", "3.13"]


def test_a_range_names_the_releases_left_out():
    resolution = resolve([">=0.10.2"], INDEX, pythons=chooser())
    assert resolution.versions == ["0.10.2"] and len(resolution.notes()) == 2


def test_an_exact_release_no_python_runs_is_an_error_naming_the_need():
    with pytest.raises(UserError, match=r"cfg: jax 0.11.0 needs CPython 3.12, 3.13 or 3.14"):
        resolve(["0.11.0"], INDEX, source="cfg", pythons=chooser())
    with pytest.raises(UserError, match=r"'>=0.11' matches no jax release a Python here can run"):
        resolve([">=0.11"], INDEX, pythons=chooser())


def test_discovery_prefers_the_harness_then_search_path_uv_pyenv_and_drops_what_does_not_run():
    # A pyenv shim for a version pyenv has not enabled is on PATH but does not run (probe: None).
    versions = {"/s/py3.12": PY[12], "/p/python3.12": PY[12], "/p/python3.12-shim": None, "/pyenv/3.13": PY[13]}
    result = interpreters.discover(sources={Found.SEARCH: lambda: ["/s/py3.12"],
                           Found.PATH: lambda: ["/p/python3.12", "/p/python3.12-shim"],
                           Found.UV: lambda: [], Found.PYENV: lambda: ["/pyenv/3.13"]},
                  run=versions.get)
    assert result[0].found == Found.HARNESS
    assert [(i.path, i.found) for i in result[1:]] == [
        ("/s/py3.12", Found.SEARCH), ("/p/python3.12", Found.PATH), ("/pyenv/3.13", Found.PYENV)]
    chosen = PythonChooser(result[0].version, lambda v: frozenset({PY[12]}), find=lambda: result)
    assert chosen.choose("x").interpreter == "/s/py3.12"  # the user's --python-search wins


def test_search_paths_take_interpreters_and_folders_of_them(tmp_path):
    def executable(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        os.chmod(path, 0o755)
        return path

    direct = executable(tmp_path / "mine" / "python")
    in_bin = executable(tmp_path / "tree" / "bin" / "python3.12")
    versions_folder = [executable(tmp_path / "versions" / v / "bin" / f"python{v[:4]}") for v in ("3.12.1", "3.13.0")]
    found = interpreters.search_candidates([direct, tmp_path / "tree", tmp_path / "versions", tmp_path / "none"])
    assert found == [str(direct), str(in_bin), *map(str, versions_folder)]


def test_config_python_key():
    base = {"name": "x", "repro": "shard_map_grad", "jax_versions": ["latest"]}
    assert parse_config(base).python is None and "python" not in as_json(recorded_config(parse_config(base)))
    pinned = parse_config({**base, "python": "3.12"})
    assert pinned.python == PY[12] and as_json(recorded_config(pinned))["python"] == "3.12"
    for bad in (3.12, "3", "python3.12", "2.7"):
        with pytest.raises(ConfigError, match="python: must be auto or a Python 3 version"):
            parse_config({**base, "python": bad})


def test_a_python_is_installed_only_when_the_user_opted_in():
    asked = []

    def install(version):
        asked.append(version)
        return Interpreter(version, f"/uv/python{version}", Found.UV) if version == PY[13] else None

    opted_in = PythonChooser(PY[11], release_pythons(INDEX, HOST), find=list, own_interpreter="/fake/python3.11",
                             install=install)
    choice = opted_in.choose("0.11.0")
    assert (choice.version, choice.why, choice.interpreter) == (PY[13], Why.INSTALLED, "/uv/python3.13")
    assert asked == [PY[14], PY[13]]  # newest first; 3.14 could not be had
    assert opted_in.choose("0.12.0.1").version == PY[13] and asked == [PY[14], PY[13]]  # installed once
    with pytest.raises(NoPython):
        PythonChooser(PY[11], release_pythons(INDEX, HOST), find=list, own_interpreter="/x").choose("0.11.0")


def test_harness_versions_prints_each_release_with_its_python(monkeypatch, capsys, tmp_path):
    from harness import service
    from harness.cli import commands as cli

    monkeypatch.setattr(service.measurement, "PyPIIndex", lambda **_: INDEX)
    monkeypatch.setattr(interpreters, "discover", lambda search=(): [interp(13)])
    monkeypatch.setattr("harness.environments.host_wheel_platforms", lambda: HOST)
    assert cli.main(["versions", "configs/releases.yaml", "--versions", ">=0.10.2", "latest"]) == 0
    out, err = capsys.readouterr()
    assert [line.split("\t")[0] for line in out.splitlines()] == ["0.10.2", "0.11.0", "0.12.0.1"]
    assert out.splitlines()[-1].startswith("0.12.0.1\tPython 3.13 (jaxlib has wheels for 3.12, 3.13, 3.14 or 3.15")
    assert cli.main(["versions", "configs/releases.yaml", "--versions", ">=0.10.2", "--python-version", "3.11"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["0.10.2\tPython 3.11 (pinned)"]
    assert err.count("harness: left out: jax ") == 2 and "0.12.0.1 has no jaxlib wheel for the pinned Python 3.11" in err
    # auto (the example of `harness versions --help`): each release in a Python here, whatever the config pins.
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(Path("configs/releases.yaml").read_text() + 'python: "3.11"\n')
    assert cli.main(["versions", str(pinned), "--versions", ">=0.10.2", "--python-version", "auto"]) == 0
    out, err = capsys.readouterr()
    assert [line.split("\t")[0] for line in out.splitlines()] == ["0.10.2", "0.11.0", "0.12.0.1"], err
