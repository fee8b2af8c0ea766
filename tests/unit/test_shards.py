"""--shard I/N and merge: the shards of a sweep, merged, equal the unsharded sweep."""

import argparse
import json

import pytest

from harness.core.records import plain
from harness.cli import commands as cli
from harness.core.errors import UserError
from harness.results.document import read_document, document_json, summaries_by_mesh, summarise
from harness.results.merge import merge_documents
from harness.inputs.sharding import Shard, parse_shard
from tests.cells import CONFIG, VERSIONS, document, measured, planned, shard_documents

def merge(documents):
    """merge_documents on the documents as results.json holds them: (merged JSON, cells)."""
    merged = merge_documents([(label, read_document(doc, label)) for label, doc in documents])
    return document_json(merged), merged.cells


@pytest.mark.parametrize("text, expected", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 4 / 4 ", Shard(4, 4))])
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "-1/2", "1/2/3"])
def test_parse_shard_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 11, 12])
def test_shards_are_disjoint_and_cover_the_plan(count):
    cells = planned()
    chosen = [s.key for i in range(1, count + 1) for s in Shard(i, count).select(cells)]
    assert sorted(chosen) == sorted(s.key for s in cells) and len(set(chosen)) == len(cells)


@pytest.mark.parametrize("count", [1, 2, 3, 10, 12])
def test_merged_shards_equal_the_unsharded_sweep(count):
    whole = [measured(s) for s in planned()]
    docs = shard_documents(count)
    merged, cells = merge(list(reversed(docs)))  # in any order
    assert [plain(c) for c in cells] == [plain(c) for c in whole]
    assert json.loads(json.dumps(merged["cells"])) == [plain(c) for c in whole]
    assert merged["summary"] == summarise(whole) and merged["summaries"] == summaries_by_mesh(whole)
    assert merged["summary"]["appears_in"] == "0.4.27" and merged["summary"]["fixed_in"] == "0.4.29"
    assert merged["status"] == "complete" and len(merged["merged_from"]) == count


def test_mismatched_configs_are_refused():
    docs = shard_documents(2)
    docs[1] = (docs[1][0], {**docs[1][1], "config": {**CONFIG, "runs": 8}})
    with pytest.raises(UserError, match=r"shard2 is not from the same sweep as shard1 \(differs in config.runs\)"):
        merge(docs)
    docs = shard_documents(2)
    docs[1] = (docs[1][0], {**docs[1][1], "versions": VERSIONS[:2]})
    with pytest.raises(UserError, match="differs in versions"):
        merge(docs)
    docs = shard_documents(2)  # the same rule as --resume: seeds chosen one way, and randomly the other
    docs[1] = (docs[1][0], {**docs[1][1], "options": {"runs": 4, "seeds": "random"}})
    with pytest.raises(UserError, match=r"differs in seeds\)"):
        merge(docs)


def test_config_path_may_differ_between_machines():
    docs = shard_documents(2)
    docs[1][1]["config"]["source"] = "/elsewhere/s.yaml"
    merged, cells = merge(docs)
    assert merged["status"] == "complete" and len(cells) == sum(len(d["cells"]) for _, d in docs)


def test_same_shard_twice_or_mixed_with_a_whole_sweep_is_refused():
    docs = shard_documents(2)
    with pytest.raises(UserError, match="shard 1/2 given twice"):
        merge([docs[0], docs[0]])
    whole = ("whole", document([measured(s) for s in planned()]))
    with pytest.raises(UserError, match="whole is a whole sweep, not a shard"):
        merge([docs[0], whole])
    with pytest.raises(UserError, match="cut 2 and 3 ways"):
        merge([docs[0], shard_documents(3)[1]])


def test_a_malformed_cell_is_bad_input_naming_the_shard():
    label, doc = shard_documents(2)[1]
    del doc["cells"][0]["spec"]["platform"]
    with pytest.raises(UserError, match="shard2: cells\\[0\\].spec.platform: missing"):
        merge([shard_documents(2)[0], (label, doc)])


def test_a_missing_shard_makes_an_incomplete_merge():
    merged, cells = merge(shard_documents(3)[:2])
    assert merged["status"] == "incomplete: shard 3 missing"
    assert len(cells) < len(planned())
    assert merged["shards"] == {"count": 3, "missing": [3], "unfinished": {}}


def test_an_interrupted_shard_is_named_in_the_merge():
    docs = shard_documents(3)
    docs[1][1]["status"] = "interrupted"
    merged, _ = merge(docs[:2])
    assert merged["status"] == "incomplete: shard 3 missing, shard 2 interrupted"
    assert merged["shards"] == {"count": 3, "missing": [3], "unfinished": {"2": "interrupted"}}


def test_cli_rejects_a_bad_shard(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "configs/smoke.yaml", "--shard", "3/2"])
    assert exc.value.code == 2 and "--shard" in capsys.readouterr().err


def test_merge_command_refuses_before_writing(tmp_path, capsys):
    folders = []
    for label, doc in shard_documents(2):
        folder = tmp_path / label
        folder.mkdir()
        doc["config"]["runs"] = 4 if label == "shard1" else 5
        (folder / "results.json").write_text(json.dumps(doc))
        folders.append(str(folder))
    out = tmp_path / "merged"
    assert cli.main(["merge", *folders, "--out", str(out)]) == 2
    assert "differs in config.runs" in capsys.readouterr().err
    assert not out.exists()


def test_shards_of_two_backends_are_refused_and_each_part_keeps_its_provenance():
    """Issue 49, item 9: merge joined folders of another backend or harness version silently, recording the
    first's. Another backend is refused; each part's harness version and backend are recorded, and the
    report says when the harness versions differ."""
    from harness.report.render import render_report

    docs = shard_documents(2)
    docs[1] = (docs[1][0], {**docs[1][1], "options": {**docs[1][1].get("options", {}), "backend": "docker"}})
    docs[0] = (docs[0][0], {**docs[0][1], "options": {**docs[0][1].get("options", {}), "backend": "venv"}})
    with pytest.raises(UserError, match="shard2 was measured with --backend docker, shard1 with venv"):
        merge(docs)
    docs = shard_documents(2)
    for i, version in enumerate(("0.5.0", "0.6.0")):
        label, doc = docs[i]
        docs[i] = (label, {**doc, "host": {**doc.get("host", {}), "harness_version": version}})
    merged = merge_documents([(label, read_document(doc, label)) for label, doc in docs])
    parts = document_json(merged)["merged_from"]
    assert [p["host"]["harness_version"] for p in parts] == ["0.5.0", "0.6.0"]
    assert "Merged from 2 shard result(s), measured by harness 0.5.0 and 0.6.0." in render_report(merged, merged.cells, {})


def test_a_newer_releases_cell_is_refused_by_merge_and_resume_and_nothing_is_written(tmp_path, capsys):
    """A cell key this release does not know (a newer release wrote the folder): merge and --resume would rewrite
    the cells without it, so both refuse, naming the key, before writing anything."""
    folders = []
    for label, doc in shard_documents(2):
        folder = tmp_path / label
        folder.mkdir()
        doc["cells"][0]["runs"][0]["blame"] = "mesh axis order"  # at any depth of a cell
        (folder / "results.json").write_text(json.dumps(doc))
        folders.append(folder)
    before = (folders[0] / "results.json").read_bytes()
    out = tmp_path / "merged"
    assert cli.main(["merge", *map(str, folders), "--out", str(out)]) == 2
    said = "cells[0].runs[0].blame: a key this harness does not know (written by a newer release? read it with that one)"
    assert said in capsys.readouterr().err and not out.exists()
    assert cli.main(["run", "configs/smoke.yaml", "--resume", str(folders[0])]) == 2
    assert said in capsys.readouterr().err
    assert (folders[0] / "results.json").read_bytes() == before and sorted(p.name for p in folders[0].iterdir()) == \
        ["results.json"]
