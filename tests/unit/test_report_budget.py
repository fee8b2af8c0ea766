"""report.md's budgets (issue 60.5: under 20 KB for a real suite on two releases). A synthetic two-cell suite
document shaped like distrax's own tests: long test ids, a dozen modules a cell, three functions closing over
random constants (their keys move in every run), eight tests failing in every run. Each budget cuts, and each cut
says where the rest is."""

from __future__ import annotations

import random
from pathlib import Path

from harness.core.jaxlog import LoggedKey, Outcome, RunLog
from harness.core.kinds import Platform
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.report.table import runs_ok_label
from harness.report.write import ReportWriter
from harness.results.document import ResultsDocument, SweepStatus
from harness.results.header import RecordedConfig, ResultsHeader
from harness.verdicts.judge import Tally

PREFIX = "lib/distributions/normal_distribution_test.py::NormalDistributionTest::"
TESTS = [f"{PREFIX}test_with_two_distributions_case_{n:02d}_distrax_to_tfp__with_jit" for n in range(30)]
FAILING = [f"{PREFIX}test_sample_dtype_float64_case_{n}__with_device" for n in range(8)]
STABLE = [f"jit_stable_module_{n}" for n in range(10)]
MOVED = ["jit_cross_entropy", "jit_kl_divergence", "jit_log_prob"]
SAME = {name: f"{n}" * 64 for n, name in enumerate(["jax_lib version", "XLA flags", "compile_options",
                                                      "accelerator_config", "compression", "custom_hook"])}


def _module(name: str, values: list[float]) -> str:
    dense = "[" + ", ".join(f"{v:.9f}" for v in values) + "]"
    return (f"module @{name} attributes {{mhlo.num_partitions = 1 : i32}} {{\n"
            f"  func.func public @main(%arg0: tensor<{len(values)}xf32>) -> (tensor<{len(values)}xf32>) {{\n"
            f"    %cst = stablehlo.constant dense<{dense}> : tensor<{len(values)}xf32>\n"
            f"    %0 = stablehlo.add %arg0, %cst : tensor<{len(values)}xf32>\n"
            f"    return %0 : tensor<{len(values)}xf32>\n  }}\n}}\n")


def _run(tmp: Path, name: str, index: int) -> RunRecord:
    """Run `index` of a cell: every stable module written by run 1 and hit after, each moved function compiled by
    four tests with other random values baked in (a new key each run); pytest exits 1 (the failing tests)."""
    rng = random.Random(f"{name}-{index}")
    compiled = []
    for n, module in enumerate(STABLE):
        outcome = Outcome.WRITTEN if index == 1 else Outcome.HIT
        key = LoggedKey(module, f"{module}-{str(n) * 64}"[:len(module) + 65], outcome,
                        components={"computation": str(n) * 64}, tests=(TESTS[n],), arg_types=("float32[3]",),
                        compile_time_s=0.1 + n / 100)
        compiled.append((key, _module(module, [float(n)] * 3)))
    for n, module in enumerate(MOVED):
        for t in range(4):
            tag = f"{index}{n}{t}" * 22
            key = LoggedKey(module, f"{module}-{tag[:64]}", Outcome.WRITTEN, components={"computation": tag[:64], **SAME},
                            tests=(TESTS[10 + 4 * n + t],), arg_types=(f"float32[{40 + t}]",), compile_time_s=0.2)
            compiled.append((key, _module(module, [rng.gauss(0, 1) for _ in range(40 + t)])))
    dump = tmp / "logs" / f"{name}-0{index}.ir"
    dump.mkdir(parents=True)
    for n, (k, text) in enumerate(compiled):
        (dump / f"jax_ir{n}_{k.module}_compile.mlir").write_text(text)
    keys = [k for k, _ in compiled]
    tests = {**dict.fromkeys(TESTS, "passed"), **dict.fromkeys(FAILING, "failed")}
    return RunRecord(index, index, 1, 1.0, [k.key for k in keys if k.outcome == Outcome.WRITTEN], keys=RunLog(keys),
                     log=f"logs/{name}-0{index}.log", tests=tests)


def _cell(tmp: Path, version: str) -> CellResult:
    runs = [_run(tmp, f"run-{version}", 1), _run(tmp, f"run-{version}", 2)]
    tally = Tally(2)
    for r in runs:
        tally.add(r)
    return tally.cell(CellSpec(version, Platform.CPU, 1, None), [n for r in runs for n in r.new_entries], {})


def _report(tmp: Path) -> tuple[list[CellResult], str]:
    cells = [_cell(tmp, "0.4.31"), _cell(tmp, "0.10.2")]
    document = ResultsDocument(ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31", "0.10.2"]),
                               cells, SweepStatus.COMPLETE)
    return cells, ReportWriter(tmp).write(document, cells).read_text()


def _section(report: str, title: str) -> str:
    start = report.index(title)
    end = report.find("\n## ", start + 1)
    return report[start:end if end >= 0 else len(report)]


def test_a_two_release_suite_report_stays_under_20_kb_and_the_same_each_time(tmp_path):
    cells, report = _report(tmp_path)
    assert [c.verdict.value for c in cells] == ["reproduced", "reproduced"], [c.reason for c in cells]
    assert len(report.encode()) < 20_000, len(report.encode())
    assert ReportWriter(tmp_path).write(ResultsDocument(
        ResultsHeader(config=RecordedConfig(name="suite"), versions=["0.4.31", "0.10.2"]), cells,
        SweepStatus.COMPLETE), cells).read_text() == report  # deterministic


def test_the_results_table_is_unpadded_and_its_long_detail_says_where_the_rest_is(tmp_path):
    cells, report = _report(tmp_path)
    table = [line for line in _section(report, "## Results").splitlines() if line.startswith("|")]
    assert table[0].startswith("| jax | mesh | platform | verdict | runs ok |") and table[1].startswith("|---|")
    assert not any("  |" in line for line in table), table  # no padding
    assert all(len(line) < 600 for line in table), [len(line) for line in table]
    assert all("(the rest: results.json, harness check --json)" in line for line in table[2:]), table
    assert len(cells[0].reason) > 600  # whole in results.json
    table_md = (tmp_path / "table.md").read_text() if (tmp_path / "table.md").exists() else ""
    assert "the rest: results.json" not in table_md


def test_cache_statistics_show_five_modules_a_cell_and_say_how_many_more(tmp_path):
    _, report = _report(tmp_path)
    stats = _section(report, "## Cache statistics")
    assert stats.count("and 8 more modules, every one in `evidence/listings.md`") == 2, stats
    listings = (tmp_path / "evidence" / "listings.md").read_text()
    assert all(m in listings for m in STABLE + MOVED)


def test_the_per_test_section_shares_one_budget_between_its_cells(tmp_path):
    _, report = _report(tmp_path)
    section = _section(report, "## What missed, per test and function")
    first, second = section.split("### jax 0.10.2")
    assert section.count("```diff") <= 2 and "```diff" not in second, section  # two diffs at most in all
    # the first cell spent the budget: the second's functions give their first line, saying where the rest is
    assert second.count("(its modules compared: `harness check --json`, evidence/)") == len(MOVED), second
    assert section.count("- **moved key**:") == 1  # the legend once, under every cell's
    assert len(section.encode()) < 8_000, len(section.encode())


def test_evidence_past_its_budget_is_a_line_naming_the_whole_diff(tmp_path):
    _, report = _report(tmp_path)
    evidence = _section(report, "## Evidence")
    assert "- jax 0.10.2, user script, cpu x1: `jit_cross_entropy`'s key moved in `computation`; likely cause " \
           "`constant` (its diff: `evidence/jax-0.10.2-cpu1-script.diff`)." in evidence, evidence
    assert (tmp_path / "evidence" / "jax-0.10.2-cpu1-script.diff").exists()
    assert all(len(line) <= 160 for line in evidence.splitlines() if line[:1] in "-+" and line[:2] != "- ")


def test_runs_ok_counts_what_the_verdict_counted(tmp_path):
    """A pytest session that ran to its end with tests failing in every run, the others passing, is counted
    (keys.counted): the column read 0/2 on distrax's 0.4.31 cell."""
    cell = _cell(tmp_path, "0.4.31")
    assert [r.ok for r in cell.runs] == [False, False]
    assert runs_ok_label(cell) == "2/2 (tests failing)"
    _, report = _report(tmp_path / "two")
    assert "| 0.4.31 | script | cpux1 | reproduced | 2/2 (tests failing) |" in report
