"""Your own package and your own index (issue 33.2), the pure parts and the release list: where packages
come from (flags, then UV_*/PIP_* variables), an environment's name carrying them, results.json recording
them, and `harness versions` resolving from a real simple-API-only mirror served on the loopback."""

from __future__ import annotations

import json

import pytest

from harness.cli import commands as cli
from harness.inputs.dependencies import (Sources, is_local_path, parse_requirements, read_requirements_file,
                                        read_script_requirements_file, sources_from, split_script_requirements)
from harness.service.measurement import sources_line
from harness.environments.venv import VenvBackend
from harness.core.errors import UserError
from harness.results.header import RecordedOptions
from harness.core.kinds import Platform
from harness.environments.package_index import PyPIIndex, private_projects
from harness.inputs.pythons import PythonVersion
from harness.inputs.versions import parse_simple, simple_html_as_json
from harness.core.records import convert, plain
from tests.local_index import build_wheel, served, simple_index

MIRROR = "https://mirror.example/simple"


def package(tmp_path, name="mypkg"):
    folder = tmp_path / name
    (folder / name).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0.1"\n')
    return folder


def test_the_command_line_wins_over_the_variables_and_uvs_spelling_over_pips():
    environ = {"PIP_INDEX_URL": "https://pip.example/simple", "UV_INDEX_URL": "https://uv.example/simple",
               "PIP_EXTRA_INDEX_URL": "https://a.example/simple https://b.example/simple"}
    from_variables = sources_from(None, (), (), environ)
    assert from_variables.index_url == "https://uv.example/simple"
    assert from_variables.extra_index_urls == ("https://a.example/simple", "https://b.example/simple")
    assert from_variables.index_variable == "UV_INDEX_URL"
    given = sources_from(MIRROR, ("https://c.example/simple",), (), environ)
    assert (given.index_url, given.extra_index_urls, given.index_variable) == (
        MIRROR, ("https://c.example/simple",), None)
    assert not sources_from(None, (), (), {})
    assert given.index_args() == ["--index-url", MIRROR, "--extra-index-url", "https://c.example/simple"]


def test_an_index_that_is_no_url_and_a_folder_that_is_no_package_are_one_line(tmp_path):
    with pytest.raises(UserError, match="not an http"):
        sources_from("mirror.example", (), (), {})
    with pytest.raises(UserError, match="no such folder"):
        sources_from(None, (), (tmp_path / "absent",), {})
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="no pyproject.toml"):
        sources_from(None, (), (tmp_path / "plain",), {})
    folder = package(tmp_path)
    assert sources_from(None, (), (folder, folder / "." ), {}).editables == (str(folder.resolve()),)


def test_the_refusals_of_a_path_requirement_point_to_with_editable(tmp_path, write):
    with pytest.raises(UserError, match="--with-editable"):
        parse_requirements([f"mypkg @ file://{tmp_path}"], "--with")
    with pytest.raises(UserError, match="--with-editable PATH, another index --index-url"):
        read_requirements_file(write("r.txt", "-e .\n"), "--requirements")


def test_another_source_is_another_environment_and_none_keeps_the_old_name(tmp_path, write):
    python = PythonVersion(3, 11)
    plain = VenvBackend(root=tmp_path).env_path("0.4.31", Platform.CPU, python)
    assert plain.name == "jax-0.4.31-cpu-py3.11"
    folder = package(tmp_path)
    own = VenvBackend(root=tmp_path, sources=sources_from(None, (), (folder,), {}))
    other = VenvBackend(root=tmp_path, sources=sources_from(None, (), (package(tmp_path, "other"),), {}))
    mirrored = VenvBackend(root=tmp_path, sources=Sources(index_url=MIRROR))
    names = {b.env_path("0.4.31", Platform.CPU, python).name for b in (own, other, mirrored)}
    assert len(names) == 3 and all(n.startswith("jax-0.4.31-cpu-py3.11-src") for n in names)


def test_results_record_the_sources_and_a_header_without_them_round_trips_as_written():
    recorded = RecordedOptions(runs=4, index_url=MIRROR, extra_index_urls=("https://c.example/simple",),
                               editables=("/home/me/mypkg",))
    data = plain(recorded)
    assert data["index_url"] == MIRROR and data["editables"] == ["/home/me/mypkg"]
    assert convert(data, RecordedOptions) == recorded
    old = {"runs": 4, "jobs": 1, "backend": "venv"}
    assert plain(convert(old, RecordedOptions)) == old


def test_a_simple_page_gives_releases_without_dates_and_json_pages_with_them():
    page = ('<a href="../../f/jax-0.4.28-py3-none-any.whl#sha256=00" data-requires-python="&gt;=3.9">w</a>'
            '<a href="../../f/jax-0.4.28.tar.gz">s</a><a href="jax-0.4.27.tar.gz" data-yanked="">y</a>'
            '<a href="not-a-dist.txt">n</a>')
    releases = parse_simple(json.dumps(simple_html_as_json(page)).encode())
    assert sorted(releases) == ["0.4.27", "0.4.28"]
    assert releases["0.4.28"].uploaded is None and releases["0.4.28"].requires_python == ">=3.9"
    assert releases["0.4.27"].yanked
    dated = parse_simple(b'{"files": [{"filename": "jax-0.4.28.tar.gz", "upload-time": "2024-05-09T12:00:00Z"}]}')
    assert dated["0.4.28"].uploaded.isoformat() == "2024-05-09T12:00:00+00:00"


JAX_FILES = {v: [f"jax-{v}-py3-none-any.whl", f"jax-{v}.tar.gz"] for v in ("0.4.26", "0.4.27", "0.4.28", "0.4.30")}
JAXLIB_FILES = {v: [f"jaxlib-{v}-cp311-cp311-manylinux2014_x86_64.whl"] for v in JAX_FILES}


@pytest.fixture
def mirror(tmp_path):
    """A simple-API-only mirror (no JSON API) listing four jax releases (their files lead nowhere: the list
    is what is read), on the loopback."""
    simple_index(tmp_path / "mirror", {"jax": sum(JAX_FILES.values(), []), "jaxlib": sum(JAXLIB_FILES.values(), [])})
    with served(tmp_path / "mirror") as url:
        yield f"{url}/simple"


def test_harness_versions_resolves_from_a_mirror_with_no_json_api(mirror, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the index's disk copy, kept apart
    code = cli.main(["versions", "configs/smoke.yaml", "--versions", ">=0.4.27", "--index-url", mirror])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [line.split("\t")[0] for line in out.splitlines()] == ["0.4.27", "0.4.28", "0.4.30"]
    assert all(line.split("\t")[1].startswith("Python 3.11") for line in out.splitlines())


def test_pip_index_url_alone_sends_the_release_list_to_the_mirror(mirror, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_INDEX_URL", mirror)
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["versions", "configs/smoke.yaml", "--versions", "latest"]) == 0
    assert capsys.readouterr().out.split("\t")[0] == "0.4.30"  # the mirror's newest, not PyPI's


def test_a_mirror_release_has_no_date_so_its_environment_is_not_dated(mirror, tmp_path):
    index = PyPIIndex(cache_dir=tmp_path, index_url=mirror)
    assert index.release_date("0.4.28") is None and "0.4.26" in index.releases("jax")


def test_an_extra_index_names_its_own_projects_and_a_mirror_of_pypi_none(tmp_path):
    wheel = build_wheel(tmp_path / "built", "tinypkg", "1.0", "VALUE = 42\n")
    simple_index(tmp_path / "private", {"tinypkg": [wheel.name], "Other_Pkg": []}, {wheel.name: wheel})
    with served(tmp_path / "private") as url:
        assert private_projects(f"{url}/simple") == ("other-pkg", "tinypkg")
    with pytest.raises(UserError, match="cannot reach"):
        private_projects(url + "/simple", timeout_s=5)  # stopped now


def test_with_a_folder_path_is_your_own_package_and_a_bare_name_a_requirement(tmp_path, monkeypatch):
    folder = package(tmp_path)
    (tmp_path / "flax").mkdir()  # a folder named as a package: `--with flax` still means the package
    monkeypatch.chdir(folder)
    requirements, folders = split_script_requirements([".", "flax", f"{tmp_path}/mypkg", "../mypkg"], "--with")
    assert requirements.items == ("flax",) and folders == (folder.resolve(),) * 3
    assert is_local_path("~/src/mypkg") and not is_local_path("mypkg @ https://x.example/a.whl")
    with pytest.raises(UserError, match=r"^--with: \./absent: no such folder"):
        split_script_requirements(["./absent"], "--with")
    with pytest.raises(UserError, match="not a package folder"):
        split_script_requirements([str(tmp_path / "flax")], "--with")


def test_minus_e_in_a_script_requirements_file_is_your_own_package_relative_to_the_file(tmp_path, write):
    folder = package(tmp_path)
    listed = write("reqs/r.txt", "flax\n-e ../mypkg\n--editable=../mypkg\n")
    requirements, folders = read_script_requirements_file(listed, "--requirements")
    assert requirements.items == ("flax",) and folders == (folder.resolve(), folder.resolve())
    with pytest.raises(UserError, match="line 1: -e git\\+https://x.example/p.git: only a local folder"):
        read_script_requirements_file(write("g.txt", "-e git+https://x.example/p.git\n"), "--requirements")
    with pytest.raises(UserError, match="pip option '-e'"):  # a config's requirements_file: no --with-editable there
        read_requirements_file(listed, "c.yaml: requirements_file")


@pytest.mark.parametrize("words", [["--with", "PKG"], ["--requirements", "REQS"]])
def test_with_a_folder_reaches_the_backend_as_with_editable(words, tmp_path, write, capsys):
    """--backend local refuses an editable package: that it says so shows `--with .` and `-e .` became one."""
    folder = package(tmp_path)
    script = write("step.py", "import jax\n")
    reqs = write("r.txt", f"-e {folder}\n")
    words = [str(folder) if w == "PKG" else str(reqs) if w == "REQS" else w for w in words]
    code = cli.main(["check", str(script), *words, "--backend", "local", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "--with-editable: --backend local installs nothing" in err, err


def test_docker_refuses_your_index_naming_what_to_use_instead(tmp_path, write, capsys):
    """(--with-editable it installs since: tests/unit/test_docker_own_package.py.)"""
    script = write("step.py", "import jax\n")
    for words, flag in ((["--index-url", MIRROR], "--index-url"),):
        code = cli.main(["check", str(script), *words, "--backend", "docker", "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith(f"harness: error: {flag}") and \
            "--backend venv (the default): drop --backend docker" in err[0], err


def test_versions_says_which_index_it_reads_pypi_too(mirror, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("UV_INDEX_URL", mirror)
    for name in ("UV_DEFAULT_INDEX", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert cli.main(["versions", "configs/smoke.yaml", "--versions", "latest"]) == 0
    assert f"harness: packages from {mirror} (from UV_INDEX_URL)" in capsys.readouterr().err.splitlines()
    assert sources_line(Sources()) == "packages from PyPI (the default; another index: --index-url URL)"


@pytest.mark.parametrize("how", ["named jax", "named jaxlib in setup.cfg", "a jax module", "a src/jaxlib module",
                                 "a jax.py"])
def test_an_editable_package_that_would_stand_in_for_jax_is_refused(how, tmp_path):
    """Issue 49, 6: `--with-editable` of a package named jax replaced the release (the venv's check passed on
    the stub's __version__) where `--with jax` is refused."""
    folder = tmp_path / "stub"
    folder.mkdir()
    if how == "named jax":
        (folder / "pyproject.toml").write_text('[project]\nname = "JAX"\nversion = "0.4.28"\n')
    elif how == "named jaxlib in setup.cfg":
        (folder / "setup.cfg").write_text("[metadata]\nname = jaxlib\n")
    else:
        (folder / "pyproject.toml").write_text('[project]\nname = "innocent"\nversion = "1"\n')
        module = {"a jax module": "jax/__init__.py", "a src/jaxlib module": "src/jaxlib/__init__.py",
                  "a jax.py": "jax.py"}[how]
        (folder / module).parent.mkdir(parents=True, exist_ok=True)
        (folder / module).write_text("__version__ = '0.4.28'\n")
    with pytest.raises(UserError, match="jax and jaxlib come from the release's own index") as refused:
        sources_from(None, (), (folder,), {})
    assert "\n" not in str(refused.value)
    assert sources_from(None, (), (package(tmp_path, "jaxtyping_like"),), {}).editables  # a name that starts so


def test_an_extra_index_that_serves_jax_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    """Issue 49, 6: an --extra-index-url listing jax and jaxlib became their source (uv takes an extra index
    first), with only "undated: jax, jaxlib" said."""
    wheel = build_wheel(tmp_path / "built", "jax", "0.4.28", "__version__ = '0.4.28'\n")
    simple_index(tmp_path / "evil", {"jax": [wheel.name], "jaxlib": []}, {wheel.name: wheel})
    script = tmp_path / "s.py"
    script.write_text("import jax\n")
    monkeypatch.setenv("HARNESS_ENV_DIR", str(tmp_path / "envs"))
    with served(tmp_path / "evil") as url:
        code = cli.main(["check", str(script), "--versions", "0.4.28", "--extra-index-url", f"{url}/simple",
                         "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "serves jax, jaxlib" in err and "--index-url" in err, err
    assert not (tmp_path / "envs").exists() and not (tmp_path / "out").exists()


def test_a_venv_whose_jax_imports_from_elsewhere_is_not_the_release(tmp_path):
    """What a setup.py names at run time is not read before: the venv checks where jax and jaxlib import from."""
    import subprocess
    import sys

    from harness.environments.venv import release_origin_problem
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    for name in ("jax", "jaxlib"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text("")
    assert release_origin_problem(venv, {}) is None
    elsewhere = tmp_path / "mine"
    (elsewhere / "jax").mkdir(parents=True)
    (elsewhere / "jax" / "__init__.py").write_text("__version__ = '0.4.28'\n")
    (site / "0-editable.pth").write_text(f"import sys; sys.path.insert(0, {str(elsewhere)!r})\n")
    problem = release_origin_problem(venv, {})
    assert problem is not None and problem.startswith(f"jax imports from {elsewhere}"), problem
