"""report.md from stored results: real 0.4.28/0.4.29 smoke runs (tests/fixtures/smoke-run with --jobs 1,
smoke-run-jobs2 with --jobs 2; caches left out) and real IR dumps of a user script on 0.4.28
(tests/fixtures/ir_dump)."""

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.cli import commands as cli
from harness.core import confidence
from harness.measure import seeds
from harness.bisect import commits, logic
from harness.results import bisect_results
from harness.inputs.config import parse_config
from harness.core.model import CellResult, CellSpec, Mesh
from harness.core.kinds import FolderMode, NothingCached, Platform, Verdict
from harness.core.runs import RunRecord
from harness.core.findings import ScriptCacheFacts
from harness.report.render import REPORT_FILE, render_report
from harness.report.write import write_report
from harness.report.evidence_section import EVIDENCE_TITLE
from harness.report.evidence import (MissingEvidence, arguments, changed_attributes, compare_runs, counterpart,
                                     extract_lowered, key_seeds, moved_module, strip_locations)
from harness.report.reproduce import shell_commands
from harness.report.sources import collect, lowered_texts
from harness.core.hostinfo import parse_nvidia_smi
from harness.results.header import RecordedConfig, ResultsHeader
from harness.results.document import SCHEMA_VERSION, read_cell, read_document
from harness.output.results_folder import ResultsWriter
from harness.core.records import convert, plain
from harness.results.document import read_header
from tests.helpers import github_html, outside_fences, unescaped_pipes

FIXTURES = Path(__file__).parents[1] / "fixtures"
SEEDS_0428 = [1440121757, 544140846, 3145866091, 2410376231]  # the real run's seeds, 4 distinct jit_f keys
# The --jobs 2 run's seeds on 0.4.28: four different lowered jit_f, but every run's new_entries holds two
# jit_f keys (its own and its neighbour's), so no key can be tied to a run.
SEEDS_JOBS2 = [1867005222, 2022119898, 3117898470, 2367125814]


@pytest.fixture
def smoke_run(tmp_path):
    folder = tmp_path / "smoke-run"
    shutil.copytree(FIXTURES / "smoke-run", folder)
    return folder


@pytest.fixture
def two_at_once_run(tmp_path):
    folder = tmp_path / "smoke-run-jobs2"
    shutil.copytree(FIXTURES / "smoke-run-jobs2", folder)
    return folder


def test_report_of_a_real_run(smoke_run):
    report = write_report(smoke_run).read_text()
    assert report.startswith("# smoke: regression present from the first measured release, 0.4.28")
    # The boundary line, as verdicts/boundaries.py says it.
    assert ("**regression present from the first measured release, 0.4.28 (no clean release before it); "
            "fixed in 0.4.29**") in report
    # The evidence: the residual's jax.result_info, permuted between run 1 and run 2.
    diff = report.split("```diff\n", 1)[1].split("```", 1)[0].splitlines()
    removed = [line for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert removed == ["-  func.func private @shmap_body(%arg0: tensor<1x1xf32>) -> (tensor<1x1xf32> "
                       "{jax.result_info = \"[('b', 'a', 'c', 'd'), None]\"}) {"]
    assert added == ["+  func.func private @shmap_body(%arg0: tensor<1x1xf32>) -> (tensor<1x1xf32> "
                     "{jax.result_info = \"[('c', 'a', 'b', 'd'), None]\"}) {"]
    assert "- `jax.result_info`: `[('b', 'a', 'c', 'd'), None]` → `[('c', 'a', 'b', 'd'), None]`" in report
    assert f"PYTHONHASHSEED={SEEDS_0428[0]}" in diff[0] and f"PYTHONHASHSEED={SEEDS_0428[1]}" in diff[1]
    assert len(diff) == 5 and diff[2] == "@@ -19 +19 @@"  # minimal: headers, one hunk, no context
    # Reproduce with: the seeds that gave distinct keys, the env the harness set, the script and mesh.
    assert f"for seed in {' '.join(map(str, SEEDS_0428))}; do" in report
    assert "export XLA_FLAGS=--xla_force_host_platform_device_count=8" in report
    assert "export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0" in report
    assert ("PYTHONHASHSEED=$seed jax-0.4.28/bin/python harness/inside/repros/shard_map_grad.py "
            "--mesh-shape 8,1,1,1 --axis-names a,b,c,d") in report
    assert "jax-0.4.28/bin/pip install -q jax==0.4.28 jaxlib==0.4.28 numpy==1.26.4" in report
    assert "harness run configs/smoke.yaml --versions 0.4.28" in report
    # Environment facts and the listings, folded.
    assert "| 0.4.28 | 0.4.28 | 0.4.28 | 3.11.7 | 1.26.4 | venv" in report
    assert "8 simulated CPU devices" in report
    listings = (smoke_run / "evidence" / "listings.md").read_text()  # beside the report, out of it
    assert "<details><summary>jax 0.4.28, mesh 8x1x1x1 (a,b,c,d), cpu x8: reproduced, 7 file(s)</summary>" in listings
    assert listings.count("jit_f-") >= 5 and "$ ls -1 $JAX_COMPILATION_CACHE_DIR" in listings
    assert "$ ls -1" not in report and "`evidence/listings.md`" in report
    assert "```yaml\nname: smoke\nrepro: shard_map_grad\n" in report
    # The whole diff is kept beside the report.
    assert "jax.result_info" in (smoke_run / "evidence" / "jax-0.4.28-cpu8-8-1-1-1-abcd.diff").read_text()


def test_report_command_regenerates_and_bad_folder_is_one_line(smoke_run, tmp_path, capsys):
    assert not (smoke_run / REPORT_FILE).exists()
    assert cli.main(["report", str(smoke_run)]) == 0
    assert "jax.result_info" in (smoke_run / REPORT_FILE).read_text()
    assert cli.main(["report", str(tmp_path / "nowhere")]) == 2
    assert "no such results file" in capsys.readouterr().err


def test_report_says_why_when_the_logs_are_gone(smoke_run):
    shutil.rmtree(smoke_run / "logs")
    report = write_report(smoke_run).read_text()
    assert "_No diff: the lowered jit_f of run 1 (the first) and of the later runs was not kept" in report
    assert "for seed in" in report  # the seeds do not need the logs


def _cells(folder):
    return [read_cell(c) for c in json.loads((folder / "results.json").read_text())["cells"]]


def test_evidence_pair_and_seeds_from_real_cell(smoke_run):
    cell = _cells(smoke_run)[0]
    evidence, seeds = collect(smoke_run, cell)
    # The first run against the first later run that brought a new key, each with its own key.
    assert (evidence.run_a.index, evidence.run_b.index) == (1, 2)
    assert evidence.key_a == cell.runs[0].new_entries[1] and evidence.key_b == cell.runs[1].new_entries[0]
    assert seeds.values == SEEDS_0428 and key_seeds(cell, "jit_f").values == SEEDS_0428
    text = lowered_texts(smoke_run, evidence.run_a, "jit_f")[0]
    assert text.startswith("module @jit_f") and "BEGIN LOWERED" not in text


def test_seeds_skip_runs_that_hit_the_cache():
    key = "jit_f-" + "a" * 64
    other = "jit_f-" + "b" * 64
    runs = [RunRecord(1, 11, 0, 1.0, [key]), RunRecord(2, 12, 0, 1.0, []),  # a cache hit: no key
            RunRecord(3, 13, 1, 1.0, [other]),  # crashed: not evidence
            RunRecord(4, 14, 0, 1.0, []), RunRecord(5, 15, 0, 1.0, [other])]
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), Verdict.REPRODUCED,
                      {"jit_f": [key, other]}, runs)
    assert moved_module(cell) == "jit_f"
    assert key_seeds(cell, "jit_f").values == [11, 15]
    # Reproduce with: one seed per distinct key, not every run's.
    assert "for seed in 11 15; do" in shell_commands(cell, RecordedConfig(repro="shard_map_grad"))


def test_real_ir_dumps_diff_to_the_result_info_without_locations():
    dumps = FIXTURES / "ir_dump"
    a = (dumps / "run-01.ir" / "jax_ir2_jit_f_compile.mlir").read_text()
    b = (dumps / "run-02.ir" / "jax_ir2_jit_f_compile.mlir").read_text()
    assert "loc(" in a and "loc(" not in strip_locations(a) and "#loc" not in strip_locations(a)
    key_a, key_b = "jit_f-" + "1" * 64, "jit_f-" + "2" * 64
    ev = compare_runs("jit_f", RunRecord(1, 1, 0, 1.0, [key_a]), RunRecord(2, 2, 0, 1.0, [key_b]), a, b,
                      key_a, key_b)
    assert ev.diff[0] == "--- run 1 (PYTHONHASHSEED=1, jit_f-111111111111…)"
    changed = [line for line in ev.diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 2 and all("jax.result_info" in line for line in changed)
    assert [name for name, _, _ in ev.attributes] == ["jax.result_info"]


def test_user_script_evidence_read_from_the_ir_dump_beside_the_log(tmp_path):
    logs = tmp_path / "logs" / "cell"
    logs.mkdir(parents=True)
    keys = ["jit_f-" + c * 64 for c in "12"]
    runs = []
    for i in (1, 2):
        (logs / f"run-0{i}.log").write_text("no markers here\n")
        shutil.copytree(FIXTURES / "ir_dump" / f"run-0{i}.ir", logs / f"run-0{i}.ir")
        runs.append(RunRecord(i, i, 0, 1.0, [keys[i - 1]], log=f"logs/cell/run-0{i}.log"))
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), Verdict.REPRODUCED, {"jit_f": keys}, runs)
    ev, _ = collect(tmp_path, cell)
    assert [a for a, _, _ in ev.attributes] == ["jax.result_info"]
    # Only jit_f's dump is used, not jit_iota's.
    assert "iota" not in "\n".join(ev.diff)


def test_identical_modules_are_said_plainly():
    key_a, key_b = "jit_f-" + "1" * 64, "jit_f-" + "2" * 64
    ev = compare_runs("jit_f", RunRecord(1, 1, 0, 1.0, [key_a]), RunRecord(2, 2, 0, 1.0, [key_b]),
                      "module @jit_f {}\n", "module @jit_f {}\n")
    assert ev.identical and "identical" in ev.note


def test_extract_lowered_needs_both_markers():
    assert extract_lowered("x\n----- BEGIN LOWERED -----\nmodule\n----- END LOWERED -----\n") == "module\n"
    assert extract_lowered("----- BEGIN LOWERED -----\nmodule (crashed before the end)") is None
    assert extract_lowered("Traceback ...") is None


def test_changed_attributes_pairs_removed_and_added_lines():
    diff = ['--- a', '+++ b', '@@ -1 +1 @@', '-x {mhlo.sharding = "{replicated}", jax.result_info = "[a, b]"}',
            '+x {mhlo.sharding = "{replicated}", jax.result_info = "[b, a]"}']
    assert changed_attributes(diff) == [("jax.result_info", "[a, b]", "[b, a]")]


def _render(document, cells, evidence, seeds=None):
    """report.md of a results document given as its JSON (checked and typed as a reader reads it)."""
    return render_report(read_document(document, "test"), cells, evidence, seeds)


def _doc(cells, **extra):
    return {"schema_version": 1, "status": "complete", "config": {"name": "t", "repro": "shard_map_grad",
                                                                  "source": "c.yaml"},
            "host": {"os": "Linux", "python": "3.11", "cpu_count": 2, "backend": "docker",
                     "docker_version": "24.0.7", "gpus": ["NVIDIA H100 (80 GiB)"] * 2, "driver_version": "550.1"},
            "cells": [plain(c) for c in cells], **extra}


def _cell(version, verdict, platform=Platform.CUDA):
    return CellResult(CellSpec(version, platform, 8, Mesh((8, 1), ("a", "b"))), verdict, {}, [])


BISECT = {  # the shape `harness bisect` stored under "bisect" before schema_version 3 (_doc writes version 1)
    "appears": {"last": "0.4.26", "first": "0.4.27", "skipped": []}, "fixed": {"last": "0.4.28", "first": "0.4.29",
                                                                             "skipped": []},
    "problem": None, "releases_tested": 4, "runs_total": 40,
    "steps": [{"point": "0.4.27", "role": "appears", "verdict": "reproduced", "runs": 2, "detail": "jit_f: 2 keys"}],
    "commits": [{"kind": "appears", "releases": ["0.4.26", "0.4.27"], "commits_in_range": 300, "commits_tested": 9,
                 "problem": None, "skipped": [],
                 "culprit": {"sha": "0123456789abcdef0123", "date": "2024-04-20T10:00:00Z",
                             "subject": "shard_map: residual names from a set"},
                 "before_culprit": {"sha": "fedcba9876543210fedc", "date": "2024-04-19T10:00:00Z",
                                    "subject": "an innocent commit"},
                 "steps": [{"point": "0123456789abcdef0123", "role": "appears", "verdict": "reproduced", "runs": 2,
                            "detail": "jit_f: 2 keys", "miss_bound": None}] * 9}]}


def test_bisection_host_facts_and_status_render():
    cells = [_cell("0.4.26", Verdict.CLEAN), _cell("0.4.27", Verdict.REPRODUCED)]
    text = _render(_doc(cells, bisect=BISECT, status="interrupted"), cells, {})
    assert "## Bisection" in text and "- Appears in 0.4.27 (last before: 0.4.26)" in text
    assert ("- Culprit: [`0123456789ab`](https://github.com/jax-ml/jax/commit/0123456789abcdef0123) "
            "shard_map: residual names from a set (2024-04-20)") in text
    assert "**Commits between 0.4.26 and 0.4.27** (appears): 9 of 300 tested" in text
    assert "- Docker: 24.0.7" in text and "- NVIDIA driver: 550.1" in text
    assert "- GPUs: NVIDIA H100 (80 GiB), NVIDIA H100 (80 GiB)" in text
    assert "**Status: interrupted**" in text
    assert "regression appears in 0.4.27 (last clean 0.4.26); not fixed in this range" in text
    # No bisection: no section, no failure.
    assert "## Bisection" not in _render(_doc(cells), cells, {})


def test_report_renders_what_the_bisector_really_stores():
    """Built with harness.bisect's own classes, so a change in what it stores shows up here."""
    culprit = commits.CommitInfo("0123456789abcdef0123", "2024-04-20T10:00:00Z", "residual names from a set")
    before = commits.CommitInfo("fedcba9876543210fedc", "2024-04-19T10:00:00Z", "an innocent commit")
    search = bisect_results.CommitSearch(logic.Role.APPEARS, ("0.4.26", "0.4.27"), count=300,
                                    boundary=logic.Boundary(before.sha, culprit.sha), culprit=culprit, before=before)
    outcome = bisect_results.BisectSection(appears=logic.Boundary("0.4.26", "0.4.27"), fixed=logic.Boundary("0.4.28", "0.4.29"),
                                commits=[search])
    cells = [_cell("0.4.26", Verdict.CLEAN), _cell("0.4.27", Verdict.REPRODUCED)]
    text = _render({**_doc(cells, bisect=plain(outcome)), "schema_version": SCHEMA_VERSION}, cells, {})
    assert "- Appears in 0.4.27 (last before: 0.4.26)" in text and "- Fixed in 0.4.29 (last before: 0.4.28)" in text
    assert "- Culprit: [`0123456789ab`](https://github.com/jax-ml/jax/commit/0123456789abcdef0123)" in text
    assert "- Last commit before it: [`fedcba987654`]" in text


def test_missing_evidence_is_rendered_not_raised():
    cells = [_cell("0.4.27", Verdict.REPRODUCED)]
    text = _render(_doc(cells), cells, {cells[0].spec.key: MissingEvidence("jit_f", "runs overlapped")})
    assert "_No diff: runs overlapped._" in text


def test_results_writer_keeps_report_beside_results(tmp_path):
    writer = ResultsWriter(tmp_path, ResultsHeader(config=RecordedConfig(name="w")))
    assert (tmp_path / REPORT_FILE).is_file()
    writer.add(_cell("0.4.29", Verdict.CLEAN, Platform.CPU))
    writer.finish()
    assert "| 0.4.29 " in (tmp_path / REPORT_FILE).read_text()


def test_results_writer_reads_a_cells_logs_once(smoke_run, monkeypatch):
    # A sweep rewrites report.md after every cell: an earlier cell's evidence must not be gathered
    # again each time (that reread every reproduced cell's logs per cell: quadratic in the sweep).
    from harness.report import write as report_write

    document = json.loads((smoke_run / "results.json").read_text())
    reproduced, clean = (read_cell(c) for c in document["cells"])
    calls = []
    monkeypatch.setattr(report_write, "collect", lambda *a: calls.append(a[1].spec.key) or collect(*a))
    writer = ResultsWriter(smoke_run, read_header(document))
    writer.add(reproduced)
    writer.add(clean)
    writer.finish()
    assert calls == [reproduced.spec.key]
    assert "```diff\n--- run 1 (PYTHONHASHSEED=" in (smoke_run / REPORT_FILE).read_text()


def test_results_writer_keeps_a_cell_as_finished_and_reads_its_cause_for_the_finishing(smoke_run):
    # The cause is the finished cell's (harness/verdicts/finish.py: CellRunner.read_cause is the writer's
    # `cause`); adding the cell to the folder changes nothing of it.
    from harness.core.kinds import Cause

    document = json.loads((smoke_run / "results.json").read_text())
    reproduced, clean = (read_cell(c) for c in document["cells"])
    reproduced.cause = None
    writer = ResultsWriter(smoke_run, read_header(document))
    assert writer.cause(reproduced) == Cause.ORDER and writer.cause(clean) is None
    writer.add(reproduced)
    writer.finish()
    assert writer.cells == [reproduced] and reproduced.cause is None


def test_nvidia_smi_parsing():
    out = "NVIDIA H200, 560.35.03, 143771 MiB\nNVIDIA H200, 560.35.03, 143771 MiB\n"
    assert parse_nvidia_smi(out) == {"gpus": ["NVIDIA H200 (143771 MiB)"] * 2, "driver_version": "560.35.03"}
    assert parse_nvidia_smi("") == {}


def _section(report, title):
    return report.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_overlapping_runs_diff_two_runs_whose_modules_differ(two_at_once_run):
    report = write_report(two_at_once_run).read_text()
    evidence = _section(report, EVIDENCE_TITLE[3:])
    assert "No diff" not in evidence
    diff = evidence.split("```diff\n", 1)[1].split("```", 1)[0].splitlines()
    assert diff[:2] == [f"--- run 1 (PYTHONHASHSEED={SEEDS_JOBS2[0]})", f"+++ run 2 (PYTHONHASHSEED={SEEDS_JOBS2[1]})"]
    assert "- `jax.result_info`: `[('d', 'a', 'b', 'c'), None]` → `[('a', 'b', 'd', 'c'), None]`" in evidence
    assert "wrote `jit_f-" not in evidence  # no key is claimed for a run
    # Reproduce with: the seeds whose modules differ, listed, not an empty list.
    listed = ", ".join(f"`{s}`" for s in SEEDS_JOBS2[1:])
    assert (f"after the first run (hash seed `{SEEDS_JOBS2[0]}`), each of these hash seeds lowered `jit_f` "
            f"differently from every run before it, so computed a new key: {listed}") in report
    assert f"for seed in {' '.join(map(str, SEEDS_JOBS2))}; do" in report
    assert "# expected: each seed after the first adds a jit_f-* file (3 new)" in report


def test_overlapping_runs_without_modules_say_so(two_at_once_run):
    shutil.rmtree(two_at_once_run / "logs")
    report = write_report(two_at_once_run).read_text()
    assert "_No diff: the lowered jit_f of run 1 (the first) and of the later runs was not kept" in report
    assert "0.4.28: ." not in report
    assert "Which hash seeds gave a new `jit_f` key on jax 0.4.28 cannot be told" in report
    assert f"for seed in {' '.join(map(str, SEEDS_JOBS2))}; do" in report  # every run's seed
    assert "# expected: a seed after the first adds a jit_f-* file; when fixed, only the first writes any" in report


def test_overlapping_user_script_runs_are_paired_by_their_ir_dumps(tmp_path):
    logs = tmp_path / "logs" / "cell"
    logs.mkdir(parents=True)
    keys = ["jit_f-" + c * 64 for c in "12"]
    runs = []
    for i, dump in ((1, "run-01.ir"), (2, "run-01.ir"), (3, "run-02.ir")):  # runs 1 and 2 lowered the same
        (logs / f"run-0{i}.log").write_text("no markers here\n")
        shutil.copytree(FIXTURES / "ir_dump" / dump, logs / f"run-0{i}.ir")
        # The first run ran alone; runs 2 and 3 overlapped, so both saw run 3's key appear.
        runs.append(RunRecord(i, 10 + i, 0, 1.0, keys[:1] if i == 1 else keys[1:], log=f"logs/cell/run-0{i}.log"))
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), Verdict.REPRODUCED, {"jit_f": keys}, runs)
    by_keys = collect(tmp_path, cell)[0]  # by keys, runs 2 and 3 both saw the new key; run 2 lowered what run 1 did
    assert by_keys.run_b.index == 3 and not by_keys.identical
    ev, seeds = collect(tmp_path, cell, overlapped=True)
    assert (ev.run_a.index, ev.run_b.index) == (1, 3) and ev.key_a == keys[0] and ev.key_b is None
    assert [a for a, _, _ in ev.attributes] == ["jax.result_info"]
    assert seeds.values == [11, 13]


def _config_block(report):
    return yaml.safe_load(report.split("## Config\n\n```yaml\n", 1)[1].split("```", 1)[0])


def test_config_block_is_a_config_harness_accepts(smoke_run, tmp_path):
    # A config file's sweep (it records `source`) ...
    parse_config(_config_block(write_report(smoke_run).read_text()))
    # ... and `harness check`'s (a script: `meshes: []`), with the config it really records.
    script = tmp_path / "my_step.py"
    script.write_text("print('hi')\n")
    config = as_json(recorded_config(parse_config({"name": "check-my_step", "repro": str(script), "jax_versions": ["0.4.28"]},
                          source="harness check")))
    cells = [_cell("0.4.28", Verdict.CLEAN, Platform.CPU)]
    shown = _config_block(_render(_doc(cells, config=config), cells, {}))
    assert "source" not in shown and "meshes" not in shown
    assert parse_config(shown).repro.path == script.resolve()


def test_report_lists_cells_by_version_then_mesh():
    order = ["0.4.25", "0.4.26", "0.4.28", "0.4.31", "0.4.27", "0.4.29"]  # a bisection's test order
    verdicts = {"0.4.27": Verdict.REPRODUCED, "0.4.28": Verdict.REPRODUCED}
    cells = [_cell(v, verdicts.get(v, Verdict.CLEAN)) for v in order] + [_cell("0.4.10", Verdict.CLEAN)]
    cells.insert(0, CellResult(CellSpec("0.4.27", Platform.CUDA, 8, Mesh((4, 2), ("a", "b"))), Verdict.CLEAN,
                               {}, []))
    report = _render(_doc(cells), cells, {})
    expected = [("0.4.10", "8x1 (a,b)"), ("0.4.25", "8x1 (a,b)"), ("0.4.26", "8x1 (a,b)"), ("0.4.27", "4x2 (a,b)"),
                ("0.4.27", "8x1 (a,b)"), ("0.4.28", "8x1 (a,b)"), ("0.4.29", "8x1 (a,b)"), ("0.4.31", "8x1 (a,b)")]
    rows = [line.split("|")[1:3] for line in _section(report, "Results").splitlines() if line.startswith("| 0.")]
    assert [(v.strip(), m.strip()) for v, m in rows] == expected
    # The other sections follow the same order; the first reproduced cell is the earliest release.
    env = [line.split("|")[1].strip() for line in _section(report, "Environment").splitlines()
           if line.startswith("| 0.")]
    assert env == [v for v, _ in expected]
    assert report.splitlines()[0].endswith("; reproduced on jax 0.4.27")


def test_bisection_shows_both_miss_bounds():
    """Seeds as the bisector plans them (harness/measure/seeds.py), their bounds in the clean release's step as it
    stores them (harness/bisect/bisection.py row_for): the section reads the steps."""
    probe = seeds.Probe("cpython 3.11", (("a", "b"),), {1: (("a", "b"),), 2: (("b", "a"),)})
    plan = seeds.chosen_plan(probe)  # two chosen seeds, no random extra runs
    assert plan.miss_bound == 0 and plan.miss_bound_other == 0.5
    cells = [_cell("0.4.26", Verdict.CLEAN), _cell("0.4.27", Verdict.REPRODUCED)]
    cells[0].seeds, cells[0].miss_bounds = plan, plan.bounds
    clean = {"point": "0.4.26", "role": "endpoint", "verdict": "clean", "runs": 2, "miss_bound": plan.miss_bound,
             "miss_bound_other_mechanisms": plan.miss_bound_other}
    bisect = {**BISECT, "steps": [clean, *BISECT["steps"]], "commits": []}
    bisection = _section(_render(_doc(cells, bisect=bisect), cells, {}), "Bisection")
    assert f"`miss_bound` (chance a regression was missed) ≤ 0, assuming {confidence.ASSUMES_CHOSEN}" in bisection
    assert "`miss_bound_other_mechanisms` ≤ 0.5 (" in bisection and "one seed alone" not in bisection


def test_report_of_a_malformed_cell_is_one_line(smoke_run, capsys):
    document = json.loads((smoke_run / "results.json").read_text())
    del document["cells"][1]["platform"]
    (smoke_run / "results.json").write_text(json.dumps(document))
    assert cli.main(["report", str(smoke_run)]) == 2
    err = capsys.readouterr().err
    assert err == f"harness: error: {smoke_run / 'results.json'}: cells[1].spec.platform: missing\n"


def _module(shape: str, constant: str) -> str:
    return (f"module @jit_f {{\n"
            f"  func.func public @main(%arg0: tensor<{shape}xf32> loc(\"x\")) -> (tensor<{shape}xf32>) {{\n"
            f"    %cst = stablehlo.constant dense<{constant}> : tensor<f32> loc(#loc1)\n"
            f"    return %arg0 : tensor<{shape}xf32>\n  }}\n}}\n")


def test_a_new_key_is_paired_with_the_same_shape_in_the_first_run_never_within_one_run(tmp_path):
    """A function compiled at two shapes: run 2 lowers the 4x4 one differently. The evidence is run 2's
    4x4 module against run 1's 4x4 module, not run 1's 8x3 against its 4x4."""
    logs = tmp_path / "logs" / "cell"
    logs.mkdir(parents=True)
    compiled = {1: [_module("8x3", "1.0"), _module("4x4", "2.0")],
                2: [_module("8x3", "1.0"), _module("4x4", "3.0")]}
    new = {1: ["jit_f-" + "1" * 64, "jit_f-" + "2" * 64], 2: ["jit_f-" + "3" * 64]}
    runs = []
    for i, texts in compiled.items():
        (logs / f"run-0{i}.log").write_text("")
        dump = logs / f"run-0{i}.ir"
        dump.mkdir()
        for n, text in enumerate(texts):
            (dump / f"jax_ir{n}_jit_f_compile.mlir").write_text(text)
        runs.append(RunRecord(i, 10 + i, 0, 1.0, new[i], log=f"logs/cell/run-0{i}.log"))
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.REPRODUCED, {}, runs)
    ev, seeds = collect(tmp_path, cell)
    assert (ev.run_a.index, ev.run_b.index) == (1, 2) and ev.arguments == "tensor<4x4xf32>"
    assert ev.key_a is None and ev.key_b == new[2][0]  # which of run 1's two keys is the 4x4 one is unknown
    assert [line for line in ev.diff if line[:1] in "+-"] == [
        "--- run 1 (PYTHONHASHSEED=11, jit_f(tensor<4x4xf32>))",
        "+++ run 2 (PYTHONHASHSEED=12, jit_f-333333333333…, jit_f(tensor<4x4xf32>))",
        "-    %cst = stablehlo.constant dense<2.0> : tensor<f32>",
        "+    %cst = stablehlo.constant dense<3.0> : tensor<f32>"]
    assert seeds.values == [11, 12]
    text = _one_evidence_text(ev)
    assert "Their lowered `jit_f` for arguments `tensor<4x4xf32>` differs" in text


def _one_evidence_text(ev):
    from harness.report.evidence_section import _one_evidence
    return "\n".join(_one_evidence(ev))


def test_counterpart_falls_back_to_the_closest_text():
    first = [_module("8x3", "1.0"), _module("4x4", "2.0")]
    assert counterpart(_module("2x2", "2.0"), first, []) == first[1]  # no shape matches: the closest text
    assert counterpart(_module("8x3", "2.0"), first, []) == first[0]  # the same shape wins over closeness
    assert arguments(first[0]) == "tensor<8x3xf32>"


def test_a_scripts_own_cache_folder_is_reported_and_listed_by_hand(tmp_path):
    cell = _cell("0.4.28", Verdict.REPRODUCED, platform=Platform.CPU)
    cell.script_cache = ScriptCacheFacts(folders=(("/jax cache", "set_cache_dir"),),
                                         notes=("the script set its cache folder to /jax cache (set_cache_dir); "
                                                "the harness redirected it to the cell's folder",))
    doc = _doc([cell])
    doc["config"] = {"name": "check-sm", "repro": "/s/sm.py", "source": "harness check",
                     "cache_thresholds": "harness"}
    report = _render(doc, [cell], {})
    assert ("- The script set its cache folder to /jax cache (set_cache_dir); the harness redirected it "
            "to the cell's folder (jax 0.4.28).") in _section(report, "The script's own cache settings")
    commands = shell_commands(cell, convert(doc["config"], RecordedConfig))
    assert "ls -1 '/jax cache'" in commands.splitlines()
    assert "--cache-thresholds harness" in report


def test_pasted_reproduce_commands_run_nothing_a_name_smuggles_in(tmp_path):
    """A newline in an axis name (a results file from before config text was checked, or edited)
    stays inside a comment, and every value in a generated command is shell-quoted."""
    import shlex

    mesh = Mesh((8, 1), ("a\ntouch /tmp/pwned", "b"))
    run = RunRecord(1, 7, 0, 1.0, ["jit_f-" + "1" * 64])
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, mesh), Verdict.REPRODUCED, {}, [run])
    block = shell_commands(cell, RecordedConfig(repro="shard_map_grad"))
    words = shlex.split(block, comments=True)  # as the shell splits it: the name stays one quoted word
    assert "touch" not in words and "a\ntouch /tmp/pwned,b" in words, block
    document = _doc([cell], command="harness run 'c.yaml\ntouch /tmp/pwned'")
    document["config"]["source"] = "my configs/c.yaml; rm -rf ~"
    text = _render(document, [cell], {})
    assert "harness run 'my configs/c.yaml; rm -rf ~' --versions 0.4.28" in text
    bash = text.split("With the harness")[1].split("```bash")[1].split("```")[0]
    assert "touch" not in shlex.split(bash, comments=True), bash


def test_report_of_a_folder_whose_listing_has_a_non_utf8_name(smoke_run, capsys):
    """Issue 27, item 2: results.json written before the listing was made readable holds the name's
    bytes as lone surrogates; report, its table and the printed table still come out."""
    data = json.loads((smoke_run / "results.json").read_text())
    data["cells"][0]["listing"].append("odd-\udcff\udcfe-name")
    data["cells"][0]["runs"][0]["new_entries"].append("odd-\udcff\udcfe-name")
    (smoke_run / "results.json").write_text(json.dumps(data))
    assert cli.main(["report", str(smoke_run)]) == 0, capsys.readouterr().err
    assert "odd-\\udcff\\udcfe-name" in (smoke_run / "evidence" / "listings.md").read_text()


# Issue 27, item 5: text a program or a hand-edited results file supplies reads as text in report.md and
# table.md: no HTML, no extra columns or rows, no code span or fence it can close.
EVIL_MODULE = "jit_a|b|c<img src=x onerror=alert(1)>```<!-- "


def test_program_and_results_text_is_escaped_in_report_and_table(smoke_run):
    from harness.results.document import load_results

    data = json.loads((smoke_run / "results.json").read_text())
    data["config"]["name"] = "smoke\n# a title of its own <!--"
    cell = data["cells"][0]
    evil = f"{EVIL_MODULE}-{'c' * 64}-cache"
    cell["listing"] += [evil, "a\n```\n<!-- a line of its own"]
    # the module that moved most: run 1 compiled it too (a headline names a moved key before a module only a later
    # run compiled)
    cell["runs"][0]["new_entries"] = cell["runs"][0]["new_entries"] + [evil]
    cell["runs"][1]["new_entries"] = [evil.replace("c" * 64, h * 64) for h in "def"]
    cell["reason"] = "jit_f: a new key | in run 2\n<details><summary>hidden"
    (smoke_run / "results.json").write_text(json.dumps(data))
    report = write_report(smoke_run).read_text()
    table = _table_md(load_results(smoke_run))
    for text in (report, table):
        markdown = outside_fences(text)
        assert "<img" not in markdown and "<!--" not in markdown and "<details><summary>hidden" not in markdown
        assert "jit\\_a" not in text and "jit_a\\|b\\|c&lt;img src=x onerror=alert(1)&gt;\\`\\`\\`&lt;!--" in text
        assert "# a title of its own" not in text.splitlines()[1:]  # the name stayed on the title line
        rows = [line for line in text.splitlines() if line.startswith("| 0.4.2") and "| cpux8 " in line]
        header = next(line for line in text.splitlines() if line.startswith("| jax ") and "| verdict " in line)
        assert len(rows) == 2 and all(unescaped_pipes(r) == unescaped_pipes(header) for r in rows), rows
    assert report.splitlines()[0].startswith("# smoke # a title of its own &lt;!--: regression")
    # The listing's fence is longer than the backticks a name holds, and each name stays on one line.
    listings = (smoke_run / "evidence" / "listings.md").read_text()
    assert "````console\n$ ls -1 $JAX_COMPILATION_CACHE_DIR" in listings
    assert "\na ``` <!-- a line of its own\n" in listings


def _mentions(markdown: str) -> list[str]:
    """The `@name` mentions and `#123` references GitHub would act on (outside code, which it links not)."""
    return re.findall(r"(?<![A-Za-z0-9_])@[A-Za-z0-9][\w/-]*|#[0-9]+", outside_fences(markdown))


def test_mentions_and_issue_references_from_a_program_notify_nobody(smoke_run):
    """A module name, a reason (a crash's words), a config name or a script's setting that holds `@someone`
    or `#123` would, pasted into an issue, notify that user or cross-reference that issue: the `@` and
    the `#` are followed by a zero-width space there, and code spans and fences keep them as they are."""
    from harness.results.document import load_results

    data = json.loads((smoke_run / "results.json").read_text())
    data["config"]["name"] = "smoke for @octocat (#123)"
    cell = data["cells"][0]
    named = f"jit.@octo-team-{'c' * 64}-cache"
    cell["listing"].append(named)
    cell["runs"][1]["new_entries"] = [named.replace("c" * 64, h * 64) for h in "cdef"]
    cell["reason"] = "ValueError: ask @someone, see jax-ml/jax#25768 and #7"
    (smoke_run / "results.json").write_text(json.dumps(data))
    report = write_report(smoke_run).read_text()
    table = _table_md(load_results(smoke_run))
    for text in (report, table):
        assert _mentions(text) == [], _mentions(text)
        assert "ask @\u200bsomeone, see jax-ml/jax#\u200b25768 and #\u200b7" in text
    assert report.splitlines()[0].startswith("# smoke for @\u200boctocat (#\u200b123): ")
    assert f"\n{named}\n" in (smoke_run / "evidence" / "listings.md").read_text()  # the listing's fence: as it is


AUTOLINKED = "see https://evil.example/pay?to=me, www.evil.example and phish@evil.example"


def test_urls_and_e_mail_addresses_from_a_results_file_are_no_links_on_github(smoke_run):
    """Issue 49, item 19: a reason or a config name holding a URL, a `www.` address or an e-mail address
    became a link in the pasted report (and the job summary); now each is a code span."""
    from harness.results.document import load_results

    data = json.loads((smoke_run / "results.json").read_text())
    data["config"]["name"] = "smoke www.evil.example"
    data["cells"][0]["reason"] = AUTOLINKED
    (smoke_run / "results.json").write_text(json.dumps(data))
    report = write_report(smoke_run).read_text()
    table = _table_md(load_results(smoke_run))
    for text in (report, table):
        assert "evil.example" in text and "<a " not in github_html(text), [
            line for line in github_html(text).splitlines() if "<a " in line]
        assert "`https://evil.example/pay?to=me,` `www.evil.example` and `phish@evil.example`" in text
    assert "<a " in github_html(AUTOLINKED)  # the renderer does link them where they are not code


def test_mention_escaping_leaves_code_and_plain_text_alone():
    from harness.core import markdown as md

    assert md.text("user@host, jax@0123abc, # 1, #x, @ alone") == "user@host, jax@0123abc, # 1, #x, @ alone"
    assert md.text("(@a) `@b` &@c") == "(@\u200ba) \\`@\u200bb\\` &amp;@\u200bc"
    assert md.code("@someone #1") == "`@someone #1`" and md.fence(["@someone #1"]) == ["```", "@someone #1", "```"]


def test_a_report_whose_every_release_reproduces_claims_no_regression_and_points_to_the_diff(smoke_run):
    """Only 0.4.28 (it reproduces) left of the smoke run: no clean release, so no boundary; the headline
    says so, and the Boundaries section names the diff's likely cause instead of where it "appears"."""
    data = json.loads((smoke_run / "results.json").read_text())
    data["cells"] = [c for c in data["cells"] if c["jax_version"] == "0.4.28"]
    (smoke_run / "results.json").write_text(json.dumps(data))
    report = write_report(smoke_run).read_text()
    assert report.startswith("# smoke: fresh processes miss the cache on 0.4.28, the only release measured, so "
                             "the range shows no boundary (measure an earlier release for one); on jax 0.4.28 `jit_f`")
    assert "regression" not in report.split("## Results")[0]
    assert "- Appears in: — (every release measured reproduces, 0.4.28 included)" in report
    assert "- What differs: on jax 0.4.28, `order`: the differing lines hold the same tokens in another order" in report


def test_a_report_tells_the_releases_that_cached_nothing_as_a_boundary():
    too_old = CellResult(CellSpec("0.4.25", Platform.CPU, 8, None), Verdict.UNSUPPORTED, {}, [],
                         reason="nothing is cached, because JAX 0.4.25 has no persistent cache on CPU",
                         nothing_cached=NothingCached.NO_PERSISTENT_CACHE)
    clean = CellResult(CellSpec("0.4.26", Platform.CPU, 8, None), Verdict.CLEAN, {}, [])
    text = _render(_doc([too_old, clean]), [too_old, clean], {})
    line = ("not reproduced in this range; nothing is cached in 0.4.25 (no persistent cache; no release before it "
            "cached); cached from 0.4.26")
    assert text.startswith(f"# t: {line}\n") and f"**{line}**" in text
    assert "- Nothing cached: nothing is cached in 0.4.25 (no persistent cache; " in text


def test_no_boundary_with_identical_modules_points_to_the_note():
    """Every release reproduces and the modules are identical (the keys moved outside them, e.g. XLA flags
    that follow the seed): there is no diff's cause to name, the note is pointed to (it crashed the report)."""
    key_a, key_b = "jit_f-" + "1" * 64, "jit_f-" + "2" * 64
    runs = [RunRecord(1, 1, 0, 1.0, [key_a]), RunRecord(2, 2, 0, 1.0, [key_b])]
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), Verdict.REPRODUCED, {"jit_f": [key_a, key_b]}, runs)
    ev = compare_runs("jit_f", runs[0], runs[1], "module @jit_f {}\n", "module @jit_f {}\n")
    assert ev.cause is None
    text = _render(_doc([cell]), [cell], {cell.spec.key: ev})
    assert f"- What differs: on jax 0.4.28, {ev.note}" in text.replace("\\", "")


def _script_cell(version, folder=None, processes=1):
    cell = CellResult(CellSpec(version, Platform.CPU, 8, None, processes=processes), Verdict.CLEAN, {}, [],
                      cache_folder=folder, cache_folder_why="as the runner says it" if folder else "")
    return cell


def test_the_report_says_where_a_cache_folder_came_from_when_not_from_the_script():
    """cache_folder (the as-it-runs hook's record): a note per cell whose folder the harness set; none where
    the script set its own (the hook redirected it), nor for cells written before it was recorded."""
    cells = [_script_cell("0.4.28", FolderMode.ENVIRONMENT), _script_cell("0.4.29", FolderMode.ENVIRONMENT),
             _script_cell("0.4.30", FolderMode.HOOK), _script_cell("0.4.31"),
             _script_cell("0.5.0", FolderMode.ENVIRONMENT, processes=2)]
    doc = _doc(cells)
    doc["config"] = {"name": "check-s", "repro": "/s/s.py", "source": "harness check"}
    section = _section(_render(doc, cells, {}), "The script's own cache settings")
    assert section.strip().splitlines() == [
        "- The script sets no cache folder; the harness set JAX_COMPILATION_CACHE_DIR to measure (where it is "
        "not set, JAX keeps no persistent cache for this script) (jax 0.4.28, 0.4.29).",
        "- The harness set JAX_COMPILATION_CACHE_DIR for every process of this multi-process cell (a folder "
        "the script sets in code is redirected to it) (jax 0.5.0)."]


def test_no_folder_note_where_the_script_sets_its_own_or_the_field_is_absent():
    cells = [_script_cell("0.4.30", FolderMode.HOOK), read_cell(
        {k: v for k, v in plain(_script_cell("0.4.31", FolderMode.ENVIRONMENT)).items() if k != "cache_folder"})]
    assert cells[1].cache_folder is None  # as results written before the field read
    assert "The script's own cache settings" not in _render(_doc(cells), cells, {})


def _table_md(document):
    """table.md of `document`, its summary line as write_files makes it."""
    from harness.report.reproduce import summary_of
    from harness.report.table import render_markdown
    return render_markdown(document, summary_of(document.header, document.cells))
