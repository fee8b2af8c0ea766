"""Where the packages came from is part of a sweep's identity (issue 33.2's follow-up): --resume and merge
refuse another --with-editable folder or content, another --index-url or --extra-index-url, in one line
(exit 2), while folders written before these options (no such keys) go on resuming and merging with a
sweep from PyPI alone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.core.records import plain
from harness.cli import commands as cli
from harness.core.errors import UserError
from harness.inputs.dependencies import Sources, editable_content, sources_from
from harness.results.document import read_document, ResultsDocument
from harness.results.header import ResultsHeader
from harness.results.identity import SweepIdentity
from harness.results.merge import merge_documents
from harness.results.resume import check_same_sweep
from harness.service.measurement import recorded_sources
from harness.results.document import read_header

FIXTURES = Path(__file__).parents[1] / "fixtures"
MIRROR = "https://mirror.example/simple"


def package(tmp_path: Path, name: str = "mypkg") -> Path:
    folder = tmp_path / name
    (folder / name).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0.1"\n')
    (folder / name / "__init__.py").write_text("VALUE = 1\n")
    return folder


def header(sources: Sources = Sources(), base: dict | None = None) -> ResultsHeader:
    """A results header as the sweep writes it: its options with recorded_sources(sources)."""
    data = json.loads(json.dumps(base or json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())))
    data["options"].update({k: list(v) if isinstance(v, tuple) else v
                            for k, v in recorded_sources(sources).items() if v is not None})
    return read_header(data)


def test_an_old_folder_resumes_with_a_sweep_that_gives_no_sources():
    old = read_document(json.loads((FIXTURES / "v1-release-run" / "results.json").read_text()), "v1")
    assert "index_url" not in plain(old.header.options)
    assert check_same_sweep(old.header, header(), "v1") is None
    assert merge_documents([("a", old), ("b", ResultsDocument(header(), old.cells[:0], old.status, "", "x"))])


@pytest.mark.parametrize("given, flag", [
    (Sources(index_url=MIRROR), "--index-url"),
    (Sources(extra_index_urls=(MIRROR,)), "--extra-index-url"),
])
def test_resume_refuses_another_index_in_one_line(given, flag):
    with pytest.raises(UserError) as refused:
        check_same_sweep(header(), header(given), "dir")
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"--resume dir: {flag} differs (none there, {MIRROR} now)")
    with pytest.raises(UserError, match=f"{flag} differs"):  # and the other way round
        check_same_sweep(header(given), header(), "dir")


def test_resume_refuses_another_editable_folder_and_the_same_folder_edited(tmp_path):
    folder = package(tmp_path)
    before = sources_from(None, (), (folder,), {})
    assert check_same_sweep(header(before), header(sources_from(None, (), (folder,), {})), "dir") is None
    other = sources_from(None, (), (package(tmp_path, "other"),), {})
    with pytest.raises(UserError, match=r"--with-editable differs \(.*mypkg \(content [0-9a-f]{10}\) there, "
                                        r".*other \(content [0-9a-f]{10}\) now\)"):
        check_same_sweep(header(before), header(other), "dir")
    with pytest.raises(UserError, match="--with-editable differs"):
        check_same_sweep(header(), header(before), "dir")
    (folder / "mypkg" / "__init__.py").write_text("VALUE = 2\n")
    edited = sources_from(None, (), (folder,), {})
    assert edited.editables == before.editables and edited.editable_digests != before.editable_digests
    with pytest.raises(UserError, match="--with-editable differs"):
        check_same_sweep(header(before), header(edited), "dir")


def test_a_folder_that_recorded_the_editable_without_its_content_compares_the_folder_alone(tmp_path):
    folder = package(tmp_path)
    now = sources_from(None, (), (folder,), {})
    written_before_digests = header(Sources(editables=now.editables))
    assert "editable_digests" not in plain(written_before_digests.options)
    assert check_same_sweep(written_before_digests, header(now), "dir") is None


def test_the_content_digest_ignores_caches_and_version_control(tmp_path):
    folder = package(tmp_path)
    digest = editable_content(folder)
    for name in ("__pycache__/x.pyc", ".git/HEAD", "build/lib/x.py", "mypkg.egg-info/PKG-INFO"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("noise")
    assert editable_content(folder) == digest
    (folder / "mypkg" / "new.py").write_text("")
    assert editable_content(folder) != digest


def test_the_harness_s_own_results_and_environments_inside_the_package_are_not_its_content(tmp_path):
    """Issue 49, item 8: `harness check train.py --with .` from the project folder writes results/ there; its
    --resume was refused ("--with-editable differs") because the results counted as package content."""
    folder = package(tmp_path)
    digest = editable_content(folder)
    for name in ("results/check-1/results.json", "results/check-1/caches/jit_f-0-cache", "results/r/reduce.json",
                 "results/r/best.py", "venv2/pyvenv.cfg", "venv2/lib/x.py", "cache/CACHEDIR.TAG", "cache/entry"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("written by a sweep")
    assert editable_content(folder) == digest


def test_what_a_build_installs_is_content_a_subpackage_named_dist_and_a_linked_file_included(tmp_path):
    folder = package(tmp_path)
    (folder / "mypkg" / "dist").mkdir()
    (folder / "mypkg" / "dist" / "sampling.py").write_text("a = 1\n")
    shared = tmp_path / "shared.py"
    shared.write_text("b = 1\n")
    (folder / "mypkg" / "shared.py").symlink_to(shared)
    digest = editable_content(folder)
    (folder / "mypkg" / "dist" / "sampling.py").write_text("a = 2\n")
    assert editable_content(folder) != digest, "an edit of the subpackage mypkg/dist kept the digest"
    digest = editable_content(folder)
    shared.write_text("b = 2\n")
    assert editable_content(folder) != digest, "an edit through a linked file kept the digest"


def test_a_sweep_from_pypi_alone_keeps_its_bisection_key():
    """The folder a bisection's state lives in is named by identity.key(): unchanged for one without sources,
    so a bisection started before these options finds its state."""
    identity = SweepIdentity.of(header())
    old_fields = {k: getattr(identity, k) for k in ("config", "versions", "runs", "seeds", "all_runs")}

    expected = hashlib.sha256(json.dumps({**old_fields, "good": "0.4.26"}, sort_keys=True,
                                         default=str).encode()).hexdigest()[:10]
    assert identity.key(good="0.4.26") == expected
    assert SweepIdentity.of(header(Sources(index_url=MIRROR))).key(good="0.4.26") != expected


def test_merge_refuses_shards_from_another_index_in_one_line_exit_2(tmp_path, capsys):
    data = json.loads((FIXTURES / "v1-release-run" / "results.json").read_text())
    folders = []
    for label, options in (("a", {}), ("b", {"index_url": MIRROR})):
        doc = json.loads(json.dumps(data))
        doc["options"].update(options)
        (tmp_path / label).mkdir()
        (tmp_path / label / "results.json").write_text(json.dumps(doc))
        folders.append(str(tmp_path / label))
    assert cli.main(["merge", *folders, "--out", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "differs in index_url" in err[0]
    assert not (tmp_path / "merged").exists()
