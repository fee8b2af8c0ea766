"""The summary line claims only what was measured (issue 31.3): a boundary across releases not measured is
a range with the command that narrows it; a sweep that measured nothing says so and why; `harness check`
exits 1 on `reproduced` or `error` by default, as a test runner does."""

import shlex
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness import service
from harness.cli import commands as cli
from harness.verdicts.boundaries import release_boundaries
from harness.evidence.keys import Comparison
from harness.verdicts.verdict import judge
from harness.report.table import rows
from harness.output.ci import fail_line
from harness.core.errors import ExitCode, meaning
from harness.results.header import RecordedConfig, ResultsHeader
from harness.verdicts.uncached import explain
from harness.report.evidence import likely_cause
from harness.core.kinds import Cause, FolderMode, NothingCached, Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord, ScriptCache
from harness.inputs.options import CHECK_FAILS_ON, Given, option, parse
from harness.report.reproduce import narrowing, summary_of
from harness.results.document import ResultsDocument, SweepStatus, load_results
from harness.inputs.versions import Release, releases_between
from harness.output.results_folder import write_files
from harness.results.document import read_header
from harness.core.records import plain

RELEASES = ("0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31")


def cells_of(rows: dict[str, Verdict], reason: str = "") -> list[CellResult]:
    return [CellResult(CellSpec(v, Platform.CPU, 8, None), verdict, {}, reason=reason) for v, verdict in rows.items()]


def spelled(low: str, high: str) -> str:
    return f"NARROW {low}..{high}"


# ---- boundaries across releases not measured ------------------------------------------------------

def test_a_fix_between_two_measured_releases_with_others_between_is_a_range_not_a_release():
    cells = cells_of({"0.4.28": Verdict.REPRODUCED, "0.4.31": Verdict.CLEAN})
    line = release_boundaries(cells, RELEASES).line(spelled)
    assert line == ("regression present from the first measured release, 0.4.28 (no clean release before it); "
                    "fixed after 0.4.28, by 0.4.31, with 0.4.29-0.4.30 not measured (narrow it: NARROW 0.4.28..0.4.31)")
    assert "fixed in" not in line


def test_where_it_appears_between_releases_not_measured_is_a_range_too():
    cells = cells_of({"0.4.26": Verdict.CLEAN, "0.4.28": Verdict.REPRODUCED, "0.4.29": Verdict.CLEAN})
    line = release_boundaries(cells, RELEASES).line(spelled)
    assert line == ("regression appears after 0.4.26, by 0.4.28, with 0.4.27 not measured (narrow it: "
                    "NARROW 0.4.26..0.4.28); fixed in 0.4.29")


def test_neighbouring_releases_keep_the_exact_words():
    cells = cells_of({"0.4.26": Verdict.CLEAN, "0.4.27": Verdict.REPRODUCED, "0.4.28": Verdict.REPRODUCED,
                      "0.4.29": Verdict.CLEAN})
    assert release_boundaries(cells, RELEASES).line(spelled) == \
        "regression appears in 0.4.27 (last clean 0.4.26); fixed in 0.4.29"


def test_a_release_between_that_failed_is_said_failing_even_without_the_index():
    cells = cells_of({"0.4.28": Verdict.REPRODUCED, "0.4.29": Verdict.ERROR, "0.4.30": Verdict.CLEAN})
    assert release_boundaries(cells).line().endswith("; fixed after 0.4.28, by 0.4.30, with 0.4.29 failing")


def test_the_releases_between_come_from_the_index_final_ones_only():
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)

    class Index:
        def releases(self, package):
            jax = ["0.4.27", "0.4.28", "0.4.29", "0.4.30rc1", "0.4.30", "0.4.31", "0.4.32"]
            return {v: Release(v, when) for v in (jax if package == "jax" else [*jax[:-1]])}

    assert releases_between(Index(), ["0.4.31", "0.4.28"]) == ["0.4.28", "0.4.29", "0.4.30", "0.4.31"]
    assert releases_between(Index(), ["0.4.28"]) == ["0.4.28"]  # one version: the index is not asked


# ---- nothing measured ------------------------------------------------------------------------------

def test_a_sweep_whose_every_cell_failed_says_nothing_was_measured_and_why():
    why = "4 of 4 runs failed (run 1: SystemExit: usage: train.py STEPS)"
    line = release_boundaries(cells_of({"0.4.31": Verdict.ERROR, "0.5.0": Verdict.ERROR}, why)).line()
    assert line == f"nothing was measured: all 2 cells failed or cached nothing (jax 0.4.31: {why})"
    assert "not reproduced" not in line
    one = release_boundaries(cells_of({"0.4.31": Verdict.ERROR}, why)).line()
    assert one.startswith("nothing was measured: the only cell failed or cached nothing")


# ---- the header records the releases; old folders still load ---------------------------------------

def test_the_releases_between_are_kept_in_results_json_and_a_folder_without_them_loads(tmp_path):
    header = ResultsHeader(config=RecordedConfig(name="n", source="configs/smoke.yaml"), versions=["0.4.28", "0.4.31"],
                           releases=list(RELEASES[2:]))
    cells = cells_of({"0.4.28": Verdict.REPRODUCED, "0.4.31": Verdict.CLEAN})
    write_files(tmp_path, ResultsDocument(header, cells, SweepStatus.COMPLETE))
    loaded = load_results(tmp_path)
    assert loaded.header.releases == list(RELEASES[2:])
    line = summary_of(loaded.header, loaded.cells)
    assert "with 0.4.29-0.4.30 not measured" in line
    assert "with 0.4.29-0.4.30 not measured" in (tmp_path / "table.md").read_text()
    assert "0.4.29-0.4.30 not measured" in (tmp_path / "report.md").read_text()
    old = read_header({"versions": ["0.4.28"], "config": {}})  # written before the field
    assert old.releases == [] and "releases" not in plain(old)


def test_the_narrowing_command_is_one_the_harness_parses_back():
    config = ResultsHeader(config=RecordedConfig(name="n", source="configs/smoke.yaml"))
    line = narrowing(config)("0.4.28", "0.4.31")
    assert line == "harness bisect configs/smoke.yaml --versions '>=0.4.28,<=0.4.31'"
    given, _ = parse(shlex.split(line)[1:])
    assert given.command == "bisect" and list(given["versions"]) == [">=0.4.28,<=0.4.31"]
    script = ResultsHeader(config=RecordedConfig(name="check-train", source="harness check", repro="train.py",
                                                 args=["--steps", "2"]))
    spelled_check = narrowing(script)("0.4.28", "0.4.31")
    assert spelled_check.startswith("harness check train.py --versions '>0.4.28,<0.4.31'")
    assert spelled_check.endswith("-- --steps 2")


# ---- harness check fails as a test does --------------------------------------------------------------

def test_check_fails_on_reproduced_and_error_by_default_and_the_others_do_not():
    assert option("check", "fail_on").default == CHECK_FAILS_ON == {Verdict.REPRODUCED, Verdict.ERROR}
    assert option("run", "fail_on").default is None and option("merge", "fail_on").default is None
    given, _ = parse(["check", "train.py", "--fail-on", "none"])
    assert given["fail_on"] == frozenset()
    assert Given("check", {"script": Path("train.py"), "fail_on": frozenset()}).line() == \
        "harness check train.py --fail-on none"


@pytest.fixture
def checked(monkeypatch, tmp_path):
    """The service's sweep replaced by one that returns the cells a test sets (a results folder written)."""
    made: dict[str, list[CellResult]] = {}

    def sweep(config, options, progress, more=None):
        folder = tmp_path / "swept"
        cells = made["cells"]
        write_files(folder, ResultsDocument(ResultsHeader(), cells, SweepStatus.COMPLETE))
        return service.SweepOutcome(folder, cells, SweepStatus.COMPLETE)
    monkeypatch.setattr(service.sweeping, "sweep", sweep)  # what run calls
    monkeypatch.setattr(service, "sweep", sweep)  # what check calls
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return made


@pytest.mark.parametrize("verdict, flags, code", [
    (Verdict.ERROR, [], ExitCode.REGRESSION), (Verdict.REPRODUCED, [], ExitCode.REGRESSION),
    (Verdict.UNSUPPORTED, [], ExitCode.OK), (Verdict.CLEAN, [], ExitCode.OK),
    (Verdict.ERROR, ["--fail-on", "none"], ExitCode.OK),
    (Verdict.UNSUPPORTED, ["--fail-on", "reproduced,error,unsupported"], ExitCode.REGRESSION)])
def test_check_exits_1_on_a_failing_cell_unless_told_otherwise(checked, capsys, verdict, flags, code):
    checked["cells"] = [CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), verdict, {}, reason="why",
                                   runs=[RunRecord(1, 0, 0 if verdict != Verdict.ERROR else 2, 1.0, [])])]
    assert cli.main(["check", "examples/stable_script.py", *flags]) == code
    err = capsys.readouterr().err
    assert ("harness: --fail-on" in err) == (code == ExitCode.REGRESSION)


def test_run_keeps_exiting_0_whatever_the_cells_say(checked, capsys):
    checked["cells"] = cells_of({"0.4.31": Verdict.ERROR}, "why")
    assert cli.main(["run", "configs/smoke.yaml"]) == ExitCode.OK


# ---- a program that never imported JAX ---------------------------------------------------------------

def test_a_program_that_never_imported_jax_compiled_nothing_with_jax():
    runs = [RunRecord(i, i, 0, 0.1, []) for i in (1, 2)]  # no hook record: jax never imported
    cell = explain(CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.UNSUPPORTED, {}, runs=runs,
                              reason="runs succeeded but the cache stayed empty: nothing measured",
                              cache_folder=FolderMode.ENVIRONMENT))
    assert cell.nothing_cached == NothingCached.NO_JAX
    assert cell.reason.startswith("nothing is cached, because the program compiled nothing with JAX")
    # A run whose hook recorded JAX's cache at exit imported jax: not this cause.
    imported = [RunRecord(1, 1, 0, 0.1, [], script_cache=ScriptCache(final={"cache_path": None}))]
    other = explain(CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.UNSUPPORTED, {}, runs=imported,
                               cache_folder=FolderMode.ENVIRONMENT))
    assert other.nothing_cached != NothingCached.NO_JAX
    # The built-in repro has no hook (no cache_folder): its empty record says nothing about imports.
    builtin = explain(CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), Verdict.UNSUPPORTED, {}, runs=runs))
    assert builtin.nothing_cached == NothingCached.UNKNOWN
    line = release_boundaries([cell]).line()
    assert line == "the program compiled nothing with JAX (0.4.31: it never imported jax): nothing measured"


def test_errors_beside_releases_that_cached_nothing_are_both_said():
    cells = cells_of({"0.4.25": Verdict.UNSUPPORTED, "0.4.31": Verdict.ERROR}, "2 of 2 runs failed (run 1: exit code 2)")
    cells[0] = CellResult(cells[0].spec, Verdict.UNSUPPORTED, {}, reason="no cache",
                          nothing_cached=NothingCached.NO_PERSISTENT_CACHE)
    line = release_boundaries(cells).line()
    assert line.startswith("nothing was measured: all 2 cells failed or cached nothing (jax 0.4.31: 2 of 2 runs failed")
    assert line.endswith("; nothing is cached on any release measured (0.4.25: no persistent cache)")
    assert "not reproduced" not in line


# ---- the likely cause: a reordering with the shardings that follow from it -----------------------------

_BEFORE = ('  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,4]<=[8]}"}) -> '
           '(tensor<8x16xf32> {jax.result_info = "[(\'batch\', \'feats\')]", mhlo.sharding = "{devices=[2,4]<=[8]}"}) {')
_AFTER = ('  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,4]<=[4,2]T(1,0)}"}) -> '
          '(tensor<8x16xf32> {jax.result_info = "[(\'feats\', \'batch\')]", mhlo.sharding = "{devices=[2,4]<=[4,2]T(1,0)}"}) {')


def diff(before: list[str], after: list[str]) -> list[str]:
    return ["--- run 1", "+++ run 2", "@@ -3 +3 @@", *("-" + b for b in before), *("+" + a for a in after)]


def test_names_reordered_with_their_shardings_rewritten_are_order_not_unknown():
    """The FSDP+TP shard_map program: jax.result_info [('batch','feats')] -> [('feats','batch')], with the
    mhlo.sharding attributes that follow from the mesh axes' order."""
    sharding_line = '    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{devices=[2,4]<=[8]}"} : tensor<8x16xf32>'
    moved = sharding_line.replace("<=[8]", "<=[4,2]T(1,0)")
    assert likely_cause(diff([_BEFORE, sharding_line], [_AFTER, moved])) == Cause.ORDER
    # Only the shardings differ (no name moved): not a reordering.
    assert likely_cause(diff([sharding_line], [moved])) == Cause.UNKNOWN
    # Names reordered beside a constant that changed: not a reordering either.
    changed = _AFTER.replace("8x16xf32>", "8x17xf32>", 1)
    assert likely_cause(diff([_BEFORE], [changed])) == Cause.UNKNOWN


# ---- the keys column and a clean reason name the user's own function -----------------------------------

def test_a_clean_cell_names_the_users_function_not_the_helper_with_most_keys():
    first = [f"jit_broadcast_in_dim-{c * 64}" for c in "abc"] + [f"jit_f-{'d' * 64}", f"jit_iota-{'e' * 64}"]
    runs = [RunRecord(1, 1, 0, 0.1, first), RunRecord(2, 2, 0, 0.1, [])]
    judged = judge(runs, expected_runs=2)
    assert judged.verdict == Verdict.CLEAN and judged.reason.startswith("jit_f: 1 key per run"), judged.reason
    cell = CellResult(CellSpec("0.4.31", Platform.CPU, 8, None), judged.verdict, judged.keys, runs=runs,
                      reason=judged.reason)
    assert rows([cell])[0][5] == "jit_f: 1 per run"
    # Of the user's own modules, the largest program (the longest compile JAX logged) is named.
    two = Comparison(1, {"jit_f": ["k1"], "jit_train_step": ["k2"], "jit_broadcast_in_dim": ["a", "b"]}, [2])
    assert two.main_module({"jit_f": 0.02, "jit_train_step": 0.4, "jit_broadcast_in_dim": 0.9}) == "jit_train_step"
    assert Comparison(1, {"jit_broadcast_in_dim": ["a"]}, [2]).main_module() == "jit_broadcast_in_dim"  # alone


# ---- the failure line: which module missed, where report.md says why, no culprit named ------------------

def test_the_failure_line_names_the_module_that_missed_and_points_at_the_report():
    first, later = f"jit_f-{'a' * 64}", f"jit_f-{'b' * 64}"
    runs = [RunRecord(1, 1, 0, 0.1, [first]), RunRecord(2, 2, 0, 0.1, [later])]
    reproduced = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), Verdict.REPRODUCED, {}, runs=runs,
                            reason="jit_f: a new key in run 2")
    error = cells_of({"0.4.31": Verdict.ERROR}, "2 of 2 runs failed (run 1: exit code 2)")[0]
    line = fail_line([reproduced, error], CHECK_FAILS_ON, Path("results/x/report.md"))
    assert line == ("--fail-on reproduced,error: 2 cell(s) failed: 0.4.28 script reproduced (jit_f missed the cache in a "
                    "fresh process); 0.4.31 script error (2 of 2 runs failed (run 1: exit code 2)); why, in "
                    "results/x/report.md")
    assert "JAX's cache broke" not in line + meaning(ExitCode.REGRESSION)[1]
    assert "report.md says why" in meaning(ExitCode.REGRESSION)[1]
