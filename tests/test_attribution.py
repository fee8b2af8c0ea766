"""Verdicts that see JAX's log, attribution, disk/log inconsistencies and the likely cause: runs built from
real stored logs (tests/fixtures/jax_logs), no JAX needed."""

import shutil
from pathlib import Path

from harness import jaxlog
from harness.analysis import judge
from harness.jaxlog import Outcome
from harness.model import Cause, CellResult, CellSpec, Platform, RunRecord, Verdict
from harness.report.evidence import likely_cause
from harness.report.render import _attribution
from harness.report.write import write_report

LOGS = Path(__file__).parent / "fixtures" / "jax_logs"


def run_from_log(index: int, seed: int, name: str | None, disk: bool = True, extra_entries=()) -> RunRecord:
    """A run as the runner records it: its log's keys, and as new entries the keys its log wrote."""
    log = jaxlog.parse((LOGS / name).read_text()) if name else None
    written = [k.key for k in log.with_outcome(Outcome.WRITTEN)] if (log and disk) else []
    return RunRecord(index, seed, 0, 0.5, sorted(written + list(extra_entries)), keys=log,
                     log_note="" if log else "JAX 0.4.25 logs no cache key (the CPU persistent cache starts at 0.4.26)")


def test_seed_0_4_28_attribution_is_the_computation():
    runs = [run_from_log(1, 1, "seed-0.4.28-hs1-0.err"), run_from_log(2, 2, "seed-0.4.28-hs2-4.err")]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED
    assert j.reason == "jit_f: a new key in run 2 (on disk and in JAX's log)"
    assert j.attribution.components == ["computation"]
    assert (j.attribution.run_a, j.attribution.run_b) == (1, 2)
    assert j.attribution.key_b.startswith("jit_f-6337b97e")
    assert j.inconsistencies == []


def test_stable_runs_are_clean_with_logs():
    runs = [run_from_log(1, 1, "seed-0.6.2-hs1-0.err"), run_from_log(2, 2, "seed-0.6.2-hs2-4.err")]
    j = judge(runs)
    assert j.verdict == Verdict.CLEAN and j.attribution is None


def test_host_callback_whose_key_moves_is_reproduced_from_the_log_alone():
    runs = [run_from_log(1, 1, "host_callback-0.4.31-hs1.err"), run_from_log(2, 2, "host_callback-0.4.31-hs2.err")]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED
    assert j.reason.startswith("jit_f: a new key in run 2 (in JAX's log only, never written; "
                               'JAX: "it uses host callbacks')
    assert "computation" in j.attribution.components


def test_host_callback_never_written_with_a_stable_key_is_unsupported():
    runs = [run_from_log(1, 1, "host_callback-0.10.2-hs1.err"), run_from_log(2, 2, "host_callback-0.10.2-hs2.err")]
    j = judge(runs)
    assert j.verdict == Verdict.UNSUPPORTED
    assert j.reason.startswith('jit_f: never written to the cache, JAX: "it uses host callbacks')
    assert j.reason.endswith("no module's keys differ between the 2 runs")


def test_xla_flags_attribution():
    runs = [run_from_log(1, 1, "xla_flags-0.4.28-hs1.err"), run_from_log(2, 2, "xla_flags-0.4.28-hs2.err")]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED and j.attribution.components == ["XLA flags"]
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), j.verdict, j.keys, runs, j.reason,
                      attribution=j.attribution)
    text = "\n".join(_attribution(cell))
    assert "The lowered modules are identical" in text and "`XLA flags`" in text
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=8" in text
    assert "| **XLA flags** " in text


def test_parallel_runs_keys_come_from_their_own_logs():
    """Run 2 and 3 overlapped: run 3's listing holds run 2's entry, its log says it only hit it."""
    new_f = "jit_f-6337b97ed54dcc614cfc64cd27e7d3f6b44970e768b192c84bb6aed5c8e119bb"
    runs = [run_from_log(1, 1, "seed-0.4.28-hs1-0.err"), run_from_log(2, 2, "seed-0.4.28-hs2-4.err", disk=False),
            run_from_log(3, 1, "seed-0.4.28-hs1-0.err", disk=False, extra_entries=[new_f])]
    runs[2].keys = jaxlog.parse((LOGS / "seed-0.4.28-hs1-5.err").read_text())  # run 3 hit every first-run key
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED and j.comparison.runs_with_new("jit_f") == [2]
    assert j.attribution.run_b == 2


def test_disk_and_log_disagreements_are_reported():
    stray = "jit_g-" + "0" * 64
    runs = [run_from_log(1, 1, "seed-0.4.31-hs1-0.err", extra_entries=[stray]),
            run_from_log(2, 2, "seed-0.4.31-hs2-8.err")]
    runs[0].new_entries.remove(next(e for e in runs[0].new_entries if e.startswith("jit_iota")))
    j = judge(runs)
    assert j.verdict == Verdict.CLEAN
    assert any(line.startswith(stray) and "no run's log computed it" in line for line in j.inconsistencies)
    assert any(line.startswith("jit_iota-") and "run 1's JAX logged writing it" in line for line in j.inconsistencies)
    assert j.reason.endswith("the cache folder and JAX's log disagree on 2 keys")


def test_without_logs_the_listing_still_judges_and_attribution_says_why():
    h = "a" * 64
    runs = [RunRecord(1, 1, 0, 0.5, [f"jit_f-{h}"], log_note="JAX logged no cache key"),
            RunRecord(2, 2, 0, 0.5, [f"jit_f-{'b' * 64}"], log_note="JAX logged no cache key")]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED and j.reason == "jit_f: a new key in run 2"
    assert j.attribution is None and j.attribution_unavailable == "run 1: JAX logged no cache key"
    cell = CellResult(CellSpec("0.4.25", Platform.CPU, 8, None), j.verdict, j.keys, runs, j.reason,
                      attribution_unavailable=j.attribution_unavailable)
    assert "Attribution unavailable: run 1: JAX logged no cache key" in "\n".join(_attribution(cell))


def test_cell_fields_round_trip_and_old_cells_load():
    runs = [run_from_log(1, 1, "seed-0.4.28-hs1-0.err"), run_from_log(2, 2, "seed-0.4.28-hs2-4.err")]
    j = judge(runs)
    cell = CellResult(CellSpec("0.4.28", Platform.CPU, 8, None), j.verdict, j.keys, runs, j.reason,
                      attribution=j.attribution, cause=Cause.ORDER)
    data = cell.to_json()
    assert data["attribution"] == ["computation"] and data["cause"] == "order"
    again = CellResult.from_json(data)
    assert again.attribution == cell.attribution and again.cause == Cause.ORDER
    assert again.runs[1].keys.to_json() == runs[1].keys.to_json()
    for key in ("attribution", "attribution_detail", "cause"):
        data.pop(key)
    for r in data["runs"]:
        r.pop("keys")
    old = CellResult.from_json(data)
    assert old.attribution is None and old.cause is None and old.runs[0].keys is None


def test_likely_cause():
    order = ['--- a', '+++ b', '-  %0 = "x"() {jax.result_info = "[(\'a\', \'b\'), \'c\']"}',
             '+  %0 = "x"() {jax.result_info = "[(\'b\', \'a\'), \'c\']"}']
    address = ["--- a", "+++ b", "-  backend_config = \"140234567890123\"", "+  backend_config = \"140234512345678\""]
    hex_address = ["-  callback = 0x7f3a2b4c5d60", "+  callback = 0x7f3a2b4c9e10"]
    other = ["-  %1 = stablehlo.add %0, %0", "+  %1 = stablehlo.multiply %0, %0"]
    assert likely_cause(order) == Cause.ORDER
    assert likely_cause(address) == Cause.ADDRESS
    assert likely_cause(hex_address) == Cause.ADDRESS
    assert likely_cause(other) == Cause.OTHER
    assert likely_cause([]) is None
    # Seen on 0.4.31 with examples/host_callback.py: the callback's address, as a constant and a config.
    callback = ['-    %c = stablehlo.constant dense<93876316516960> : tensor<i64>',
                '-    %0 = stablehlo.custom_call @xla_python_cpu_callback(%c, %arg0) {backend_config = "93876316516960"}',
                '+    %c = stablehlo.constant dense<94677762927680> : tensor<i64>',
                '+    %0 = stablehlo.custom_call @xla_python_cpu_callback(%c, %arg0) {backend_config = "94677762927680"}']
    assert likely_cause(callback) == Cause.ADDRESS


def test_the_seeds_stored_diff_is_an_order_change(tmp_path):
    """A real 0.4.28 folder from before the logs were read: its report says the cause, and that
    attribution is unavailable, and why."""
    folder = tmp_path / "r"
    shutil.copytree(Path(__file__).parent / "fixtures" / "smoke-run", folder)
    report = write_report(folder).read_text()
    assert "Likely cause (`order`)" in report
    assert "_Attribution unavailable: the runs' JAX logs were not read" in report
