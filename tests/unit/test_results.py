"""Result files: atomic, readable by others, host facts not overwritten, tables in version order."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from harness.results.document import read_cell
from harness.core.records import plain, replace
from harness.results.header import host_flat

from harness.core.errors import UserError
from harness.core.files import write_atomic
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import Platform, Verdict
from harness.results.document import load_results, read_document, document_json, ResultsDocument, SweepStatus
from harness.service.measurement import host_facts
from harness.report.table import render


def test_write_atomic_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "results.json"
        write_atomic(path, "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left


def test_backend_facts_do_not_overwrite_the_hosts():
    facts = host_facts({"backend": "docker", "python": "3.11", "docker_version": "20.10"})
    assert facts.python.count(".") == 2  # the host's full version, e.g. 3.11.7
    assert facts.facts == {"docker_version": "20.10", "backend_python": "3.11"}
    written = host_flat(facts)
    assert list(written)[:3] == ["backend", "backend_python", "docker_version"]  # the backend's facts first, as it said them
    assert written["backend"] == "docker" and written["python"] == facts.python


def test_table_rows_in_version_order():
    cells = [CellResult(CellSpec(v, Platform.CPU, 8, None), Verdict.CLEAN, {})
             for v in ("0.4.9", "0.4.31", "0.4.10", "0.4.27")]
    text = render(cells)
    order = [line.split("|")[1].strip() for line in text.splitlines()[2:]]
    assert order == ["0.4.9", "0.4.10", "0.4.27", "0.4.31"]


def test_a_second_process_cannot_write_a_results_folder_being_written(tmp_path):
    import subprocess
    import sys

    from harness.core.errors import UserError
    from harness.results.document import lock_results_folder

    folder = tmp_path / "run"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from harness.results.document import "
                               "lock_results_folder; lock = lock_results_folder(sys.argv[1]); print('held', flush=True); "
                               "time.sleep(60)", str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=rf"another harness process \(pid {holder.pid}: harness {folder}, since "
                                            r"[0-9T:Z-]+\) is writing this results folder"):
            lock_results_folder(folder)
    finally:
        holder.kill()
        holder.wait()
    lock_results_folder(folder).release()  # the kernel dropped the killed holder's lock


# ---------------------------------------------------------------- malformed results folders (issue 10)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "smoke-run"


def _good() -> dict:
    return json.loads((FIXTURE / "results.json").read_text())


def _with(**changes) -> bytes:
    return json.dumps({**_good(), **changes}).encode()


def _with_cell(**changes) -> bytes:
    good = _good()
    return json.dumps({**good, "cells": [{**good["cells"][0], **changes}]}).encode()


MALFORMED = {
    "binary": b"\x00\xff\xfe" * 100,
    "not-json": b"{nope",
    "a-list": b"[]",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "schema-version-string": _with(schema_version="1"),
    "schema-version-null": _with(schema_version=None),
    "config-list": _with(config=[]),
    "config-string": _with(config="x"),
    "config-repro-number": _with(config={**_good()["config"], "repro": 3}),
    "cells-map": _with(cells={}),
    "cells-string": _with(cells="abc"),
    "cell-number": _with(cells=[1]),
    "cell-runs-string": _with_cell(runs="x"),
    "cell-run-number": _with_cell(runs=[1]),
    "cell-keys-list": _with_cell(keys=[]),
    "cell-keys-of-numbers": _with_cell(keys={"jit_f": [1, 2]}),
    "cell-mesh-string": _with_cell(mesh="x"),
    "versions-string": _with(versions="0.4.29"),
    "options-list": _with(options=[]),
    "host-list": _with(host=[]),
    "shard-string": _with(shard="x"),
}


@pytest.fixture
def good_folder(tmp_path):
    folder = tmp_path / "good"
    shutil.copytree(FIXTURE, folder)
    return folder


@pytest.mark.parametrize("name", MALFORMED)
@pytest.mark.parametrize("command", ["report", "compare-new", "compare-baseline", "merge"])
def test_every_reader_of_a_malformed_results_file_says_one_line_and_exits_2(tmp_path, good_folder, capsys,
                                                                             name, command):
    from harness.cli import commands as cli

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_bytes(MALFORMED[name])
    argv = {"report": ["report", str(bad)],
            "compare-new": ["compare", str(bad), "--baseline", str(good_folder)],
            "compare-baseline": ["compare", str(good_folder), "--baseline", str(bad)],
            "merge": ["merge", str(bad), str(good_folder), "--out", str(tmp_path / "merged")]}[command]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(bad) in err, err
    assert not (tmp_path / "merged").exists() or not any((tmp_path / "merged").iterdir())


def test_report_of_dev_zero_is_refused_without_reading_it(capsys):
    from harness.cli import commands as cli

    assert cli.main(["report", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_results_file_past_the_size_limit_is_refused(tmp_path, monkeypatch):
    from harness.results import document as results
    from harness.core.errors import UserError

    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 1000)
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 1, "pad": "x" * 2000}))
    with pytest.raises(UserError, match="larger than"):
        results.load_results(tmp_path)


V1 = Path(__file__).parents[1] / "fixtures" / "v1-release-run" / "results.json"


def test_sections_this_release_does_not_know_are_kept():
    data = json.loads(V1.read_text())
    data["slurm"] = {"job": 7}
    document = read_document(data, "newer")
    assert document.sections == {"slurm": {"job": 7}}
    # written as schema_version 3 (the version 1 file is not rewritten byte for byte): the section is kept, and
    # the whole reads back the same
    again = read_document(json.loads(json.dumps(document_json(document))), "again")
    assert again.sections == document.sections
    assert again.header == document.header and [plain(c) for c in again.cells] == [plain(c) for c in document.cells]


def test_a_newer_schema_or_an_unknown_status_is_one_clear_error():
    data = json.loads(V1.read_text())
    with pytest.raises(UserError, match="schema_version 4 is newer than this harness reads"):
        read_document({**data, "schema_version": 4}, "f")
    with pytest.raises(UserError, match="f: status: 'paused' is not a status"):
        read_document({**data, "status": "paused"}, "f")


def test_a_merge_status_keeps_its_detail():
    data = {**json.loads(V1.read_text()), "status": "incomplete: shard(s) 3 missing"}
    document = read_document(data, "merged")
    assert document.status == SweepStatus.INCOMPLETE and document.status_detail == "shard(s) 3 missing"
    assert document_json(document)["status"] == "incomplete: shard(s) 3 missing"


def test_write_atomic_takes_text_with_lone_surrogates(tmp_path):
    """Issue 27, item 2: an older results file can hold a non-UTF-8 file name as "\\udcff"."""
    write_atomic(tmp_path / "report.md", "odd-\udcff-name\n")
    assert (tmp_path / "report.md").read_text() == "odd-\\udcff-name\n"


def test_a_config_name_of_240_characters_makes_its_folders(tmp_path):
    """Issue 27, item 8: a 300-character name was `OSError: File name too long`; names up to 240 work."""
    from harness.core.files import NAME_MAX, fitting_name
    from harness.results.document import new_results_folder

    for name in ("n" * 240, "n" * 240 + "-slurm", "n" * 239 + "m"):
        folder = new_results_folder(tmp_path, name)
        assert folder.is_dir() and len(folder.name) <= NAME_MAX
    assert len({p.name for p in tmp_path.iterdir()}) == 3  # long names sharing their start stay apart
    assert fitting_name("short") == "short"


def test_a_config_name_past_240_characters_is_one_line():
    import pytest

    from harness.inputs.config import parse_config
    from harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match="name: is 300 characters long; at most 240"):
        parse_config({"name": "n" * 300, "repro": "shard_map_grad", "jax_versions": ["0.4.29"]}, "c.yaml")
    assert parse_config({"name": "n" * 240, "repro": "shard_map_grad", "jax_versions": ["0.4.29"]}, "c.yaml")


def test_check_of_a_script_with_a_long_file_name_gets_a_name_that_fits(tmp_path):
    from harness.service import ScriptCheck, ScriptRunOptions, check_config
    from harness.core.kinds import Platform

    script = tmp_path / ("s" * 250 + ".py")
    script.write_text("import jax\n")
    config = check_config(ScriptCheck(script=script, script_run=ScriptRunOptions(), versions=("0.4.31",), platform=Platform.CPU,
                                      device_count=1, runs=None, timeout_s=60))
    assert len(config.name) <= 240 and config.name.startswith("check-sss")


def _reproduced_runs() -> list:
    from harness.core.runs import RunRecord
    return [RunRecord(1, 11, 0, 0.5, ["jit_f-" + "a" * 64]), RunRecord(2, 12, 0, 0.5, ["jit_f-" + "b" * 64]),
            RunRecord(3, 13, 0, 0.5, [])]


def test_a_cell_keeps_the_comparison_its_verdict_was_judged_from_and_never_writes_it():
    from harness.verdicts.judge import Tally
    from harness.evidence.keys import cell_comparison, comparison_of

    tally = Tally(3)
    for run in _reproduced_runs():
        tally.add(run)
    cell = tally.cell(CellSpec("0.4.28", Platform.CPU, 8, None), [], {})
    assert cell.verdict == Verdict.REPRODUCED
    assert cell.comparison == comparison_of(cell.runs) and cell.comparison.runs_with_new("jit_f") == [2]
    assert cell_comparison(cell) is cell.comparison  # read, not derived again
    data = plain(cell)
    assert "comparison" not in data
    read = read_cell(data)
    assert read.comparison is None and read == cell  # memory only: not part of what a cell is
    derived = cell_comparison(read)
    assert derived == cell.comparison and cell_comparison(read) is derived  # derived once, then kept


def _documents() -> list[ResultsDocument]:
    from harness.results.document import load_results
    fixtures = Path(__file__).parents[1] / "fixtures"
    docs = [load_results(p.parent) for p in sorted(fixtures.glob("*/results.json"))]
    odd = docs[0].cells[0]
    # Text that looks like the file's own structure, text JSON escapes, and a float whose shortest repr is long:
    # the file is as json.dumps writes it.
    odd = read_cell({**plain(odd), "reason": 'x\n  "cells": [],\n é \u2028 \ud800 "'})
    odd.runs[0].duration_s = 0.1 + 0.2
    docs.append(ResultsDocument(docs[0].header, [odd, *docs[0].cells], sections={"bisect": {"cells": []}}))
    docs.append(ResultsDocument(docs[0].header, []))
    return docs


@pytest.mark.parametrize("index", range(5))
def test_results_json_is_json_dumps_of_the_document_with_each_cell_encoded_once(index, monkeypatch):
    from harness.output import results_folder
    from harness.output.results_folder import EncodedCells, results_text

    document = _documents()[index]
    expected = json.dumps(document_json(document), indent=2) + "\n"
    encoded = EncodedCells()
    calls = []
    real = results_folder.cell_json
    monkeypatch.setattr(results_folder, "cell_json", lambda cell: calls.append(cell) or real(cell))
    assert results_text(document, encoded) == expected
    assert results_text(document, encoded) == expected
    assert len(calls) == len(document.cells)  # the second write encoded nothing again
    if document.cells:
        changed = replace(document.cells[0], reason="another reason")
        document.cells[0] = changed  # a new object is a new cell: encoded, not taken for the old one
        assert json.loads(results_text(document, encoded))["cells"][0]["reason"] == "another reason"


def test_a_sweep_derives_each_cells_table_facts_once_and_renders_the_table_it_always_did(tmp_path, monkeypatch):
    """Issue 64.4: table.md renders facts derived as a cell enters the document (a sweep's add), not again on every
    rewrite of the folder; the table is the one the cells alone give."""
    from harness.output.results_folder import ResultsWriter
    from harness.report.table import render_markdown_table
    from harness.results import document as document_module
    from harness.verdicts import cell_facts as facts_module

    source = _documents()[0]
    calls = []
    real = facts_module.cell_facts
    counted = lambda cell: calls.append(cell) or real(cell)  # noqa: E731
    monkeypatch.setattr(document_module, "cell_facts", counted)
    monkeypatch.setattr(facts_module, "cell_facts", counted)
    (tmp_path / "run").mkdir()
    writer = ResultsWriter(tmp_path / "run", replace(source.header, created=None))
    for cell in source.cells * 3:
        writer.add(cell)
    writer.finish()
    assert len(calls) == 3 * len(source.cells)  # once per cell added, none on the folder's rewrites
    table = (tmp_path / "run" / "table.md").read_text()
    assert render_markdown_table(facts_module.cells_facts(writer.cells)) in table


def test_results_json_is_strict_json_a_nan_is_never_written():
    """Issue 49, item 17: a resumed folder's NaN durations were written back as `NaN` (not JSON)."""
    from harness.output.results_folder import EncodedCells, results_text

    document = _documents()[0]
    document.cells[0].runs[0].duration_s = float("nan")
    with pytest.raises(ValueError):
        results_text(document, EncodedCells())


@pytest.mark.parametrize("planted", ["NaN", "Infinity", "-Infinity", "1e400", "1e308"])
def test_a_results_file_with_a_number_json_has_not_is_refused_in_one_line(tmp_path, planted):
    from harness.results.document import load_results

    source = Path(__file__).parents[1] / "fixtures" / "smoke-run" / "results.json"
    text = source.read_text()
    assert '"duration_s": ' in text
    head, _, tail = text.partition('"duration_s": ')
    (tmp_path / "results.json").write_text(head + f'"duration_s": {planted}' + tail[tail.index(","):])
    with pytest.raises(UserError) as refused:
        load_results(tmp_path)
    message = str(refused.value)
    assert "\n" not in message and "not a harness results file" in message and planted.lstrip("-") in message


def test_a_results_file_of_more_cells_or_runs_than_any_sweep_is_refused_before_it_is_built(tmp_path, monkeypatch):
    """Issue 49, item 18: a schema-valid results.json of 1,000,000 small cells (137 MB, under the byte limit)
    took 3.7 GB and 19 minutes to report. The cells and runs are counted first, without building them."""
    from harness.results import document as results_document

    data = json.loads((Path(__file__).parents[1] / "fixtures" / "smoke-run" / "results.json").read_text())
    small = {k: v for k, v in data["cells"][0].items() if k in ("jax_version", "platform", "device_count", "mesh", "verdict", "reason", "runs")}
    (tmp_path / "results.json").write_text(json.dumps({**data, "cells": [small] * (results_document.MAX_CELLS + 1)}))
    with pytest.raises(UserError, match=r"20,001 cells, more than any sweep's \(20,000\): not a harness results file"):
        results_document.load_results(tmp_path)
    three = [{**small, "jax_version": v} for v in ("0.4.28", "0.4.29", "0.4.30")]  # one cell per spec
    (tmp_path / "results.json").write_text(json.dumps({**data, "cells": three}))
    monkeypatch.setattr(results_document, "MAX_RUNS", 3 * len(small["runs"]) - 1)
    with pytest.raises(UserError, match="runs, more than any sweep's"):
        results_document.load_results(tmp_path)
    monkeypatch.setattr(results_document, "MAX_RUNS", 3 * len(small["runs"]))
    assert len(results_document.load_results(tmp_path).cells) == 3


@pytest.mark.parametrize("where, key", [(lambda cell: cell, "cells[1].blame"),
                                        (lambda cell: cell["runs"][0], "cells[1].runs[0].blame"),
                                        (lambda cell: cell["spec"], "cells[1].spec.blame")])
def test_a_cell_key_no_record_has_is_refused_naming_it_never_dropped(tmp_path, where, key):
    """A newer release's cell (an extra key at any depth) is refused by every reader (report, compare, merge,
    --resume): rewriting the folder here would drop what this release does not know."""
    written = json.loads(json.dumps(document_json(read_document(json.loads(V1.read_text()), "v1"))))
    where(written["cells"][1])["blame"] = {"jit_f": "mesh axis order"}
    (tmp_path / "results.json").write_text(json.dumps(written))
    with pytest.raises(UserError) as refused:
        load_results(tmp_path)
    assert str(refused.value) == (f"{tmp_path / 'results.json'}: {key}: a key this harness does not know (written by "
                                  "a newer release? read it with that one)")


def test_a_cells_key_components_are_written_once_per_key_and_read_back_under_every_key():
    """A suite's 150 keys in 12 runs wrote each key's components in every run (half of a 4 MB results.json): the
    file holds them once per cell; every reader gets them back under each run's key, the moved folder's and the
    seed control's too, and an older folder (components under each key) reads as it did."""
    from harness.core.jaxlog import LoggedKey, Outcome, RunLog
    from harness.core.findings import FactorResult
    from harness.core.factors import Factor, FactorOutcome
    from harness.core.runs import RankRecord, RunRecord
    from harness.results.document import KEY_COMPONENTS, cell_json

    def log(*keys: str, cut: bool = False) -> RunLog:
        return RunLog([LoggedKey("jit_f", k, Outcome.HIT, components={"computation": k[-4:] * 16, "XLA flags": "0" * 64}
                                 if not cut else {"computation": k[-4:] * 16}) for k in keys])

    a, b = "jit_f-" + "a" * 64, "jit_f-" + "b" * 64
    runs = [RunRecord(i, 10 + i, 0, 0.5, [], keys=log(a)) for i in (1, 2, 3)]
    runs.append(RunRecord(4, 14, 0, 0.5, [], keys=log(a, b), ranks=[RankRecord(0, 14, keys=log(b)),
                                                                     RankRecord(1, 15, keys=log(b, cut=True))]))
    cell = replace(CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.CLEAN, runs=runs),
                   seed_control=RunRecord(5, 11, 0, 0.5, [], keys=log(a)),
                   moved_folder=FactorResult(Factor.CACHE_PATH, FactorOutcome.HIT, run=RunRecord(6, 11, 0, 0.5, [],
                                                                                                  keys=log(a))))
    written = json.loads(json.dumps(cell_json(cell)))
    assert sorted(written[KEY_COMPONENTS]) == [a, b]
    under_keys = [k for k in json.dumps(written).split('"components"')[1:]]
    assert len(under_keys) == 1  # only the cut key's, which differ from the ones kept
    assert read_cell(written) == cell and cell.runs[0].keys.keys[0].components  # the cell itself is as it was
    for document in _documents()[:3]:  # the fixture folders, written by earlier releases: the same cells again
        for old in document.cells:
            assert read_cell(json.loads(json.dumps(cell_json(old)))) == old
    assert read_cell(plain(cell)) == cell  # a cell with components under its keys (earlier releases) reads as it did
