"""Verdicts that see JAX's log, attribution, disk/log inconsistencies and the likely cause: runs built from
real stored logs (tests/fixtures/jax_logs), no JAX needed."""

import shutil
from pathlib import Path

from harness.results.document import read_cell
from harness.core.records import plain
from harness.core import jaxlog
from harness.verdicts.verdict import judge
from harness.core.jaxlog import Outcome
from harness.core.kinds import Cause, Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.runs import RunRecord
from harness.report.evidence import likely_cause
from harness.report.evidence_section import _attribution
from harness.report.write import write_report

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"


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


def test_host_callback_whose_key_moves_is_not_cached_never_reproduced():
    """A module JAX never writes costs a compile per start whether or not its key moves (0.4.31 lowers the callback's
    address into it): `not cached`, its moving key said, never a moved key."""
    runs = [run_from_log(1, 1, "host_callback-0.4.31-hs1.err"), run_from_log(2, 2, "host_callback-0.4.31-hs2.err")]
    j = judge(runs)
    assert j.verdict == Verdict.NOT_CACHED and j.attribution is None, j.reason
    assert j.reason == ("jit_f uses a host callback; never written by JAX, so every fresh process compiles it again "
                        "(jit_f: its key differs between runs too, which costs nothing more: never written either "
                        "way); the other 2 modules hit, the same keys in all 2 runs")


def test_host_callback_never_written_while_the_rest_hit_is_not_cached_never_unsupported():
    """Issue 60, item 2: the keys JAX wrote hit, one module it never writes: measured, `not cached`."""
    runs = [run_from_log(1, 1, "host_callback-0.10.2-hs1.err"), run_from_log(2, 2, "host_callback-0.10.2-hs2.err")]
    j = judge(runs)
    assert j.verdict == Verdict.NOT_CACHED
    assert j.reason == ("jit_f uses a host callback; never written by JAX, so every fresh process compiles it "
                        "again; the other 2 modules hit, the same keys in all 2 runs")


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
    assert j.reason.endswith("the cache folder and JAX's log disagree on 2 keys, so the JAX logs of runs 1-2 "
                             "are not trusted (the cache folder's entries count)")
    # Run 1 does not name the stray entry and logged writing jit_iota; run 2 logged a hit on it.
    assert set(j.untrusted_logs) == {1, 2} and "does not name" in j.untrusted_logs[1]
    assert "logged a hit or a write of 1 key never in the cache folder (jit_iota-" in j.untrusted_logs[1]


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
    data = plain(cell)
    assert data["attribution_detail"]["module"] and data["cause"] == "order"  # the components: derived
    assert cell.attribution is not None and cell.attribution.components == ["computation"]
    again = read_cell(data)
    assert again.attribution == cell.attribution and again.cause == Cause.ORDER
    assert plain(again.runs[1].keys) == plain(runs[1].keys)
    for key in ("attribution_detail", "cause"):
        data.pop(key)
    for r in data["runs"]:
        r.pop("keys")
    old = read_cell(data)
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
    assert likely_cause(other) == Cause.UNKNOWN  # `other` before issue 47.5
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
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "smoke-run", folder)
    report = write_report(folder).read_text()
    assert "Likely cause (`order`)" in report
    assert "_Attribution unavailable: the runs' JAX logs were not read" in report


# Issue 27, item 1: a log that misses lines (silenced loggers, cut output) or holds lines JAX never wrote
# never outvotes the cache folder.
def _first_lines(name: str, count: int | None = None) -> jaxlog.RunLog:
    """The log's first `count` lines; by default those before it mentions jit_f (then the script set the
    `jax` loggers to ERROR)."""
    lines = (LOGS / name).read_text().splitlines()
    if count is None:
        count = next(i for i, line in enumerate(lines) if "jit_f" in line)
    return jaxlog.parse(lines[:count])


def test_new_entries_a_silenced_log_does_not_name_reproduce():
    """Each run writes a new jit_f entry after the script set the `jax` loggers to ERROR: every log names
    jit_iota and jit_reshape only, the folder shows three jit_f keys."""
    new_f = [f"jit_f-{c * 64}" for c in "abc"]
    runs = []
    for index in (1, 2, 3):
        log = _first_lines("seed-0.6.2-hs1-0.err" if index == 1 else "seed-0.6.2-hs2-4.err")
        written = [k.key for k in log.with_outcome(Outcome.WRITTEN)]
        runs.append(RunRecord(index, index, 0, 0.5, sorted(written + [new_f[index - 1]]), keys=log))
    assert {k.module for r in runs for k in r.keys.keys} == {"jit_iota", "jit_reshape"}
    j = judge(runs, expected_runs=3)
    assert j.verdict == Verdict.REPRODUCED, j.reason
    assert j.reason.startswith("jit_f: a new key in each of runs 2-3;")
    assert j.reason.endswith("so the JAX logs of runs 1-3 are not trusted (the cache folder's entries count)")
    assert "1 entry appeared in the cache folder while it ran that it does not name (jit_f-bbbb" in j.untrusted_logs[2]
    assert j.attribution is None and "seen only in the cache folder" in j.attribution_unavailable


def test_a_fake_hit_line_does_not_hide_a_new_entry():
    """Run 2 prints a hit line for run 1's jit_f key (no JAX log of its own) and writes a new entry."""
    first = run_from_log(1, 1, "seed-0.4.31-hs1-0.err")
    (old_f,) = [k.key for k in first.keys.keys if k.module == "jit_f"]
    fake = jaxlog.parse(f"Persistent compilation cache hit for 'jit_f' with key '{old_f}'\n")
    second = RunRecord(2, 2, 0, 0.5, [f"jit_f-{'d' * 64}-cache", f"jit_f-{'d' * 64}-atime"], keys=fake)
    j = judge([first, second])
    assert j.verdict == Verdict.REPRODUCED and j.reason.startswith("jit_f: a new key in run 2"), j.reason
    assert list(j.untrusted_logs) == [2]


def test_a_fake_hit_on_a_key_never_in_the_folder_is_not_a_new_key():
    """A line JAX cannot have written (a hit on an entry that never existed) does not reproduce a cell."""
    runs = [run_from_log(1, 1, "seed-0.6.2-hs1-0.err"), run_from_log(2, 2, "seed-0.6.2-hs2-4.err")]
    phantom = f"jit_f-{'e' * 64}"
    runs[1].keys.keys.append(jaxlog.LoggedKey("jit_f", phantom, Outcome.HIT))
    j = judge(runs)
    assert j.verdict == Verdict.CLEAN, j.reason
    assert f"it logged a hit or a write of 1 key never in the cache folder ({phantom})" in j.untrusted_logs[2]
    assert "run 2's JAX log is not trusted" in j.reason


def test_an_untrusted_log_cannot_say_a_run_compiled_fewer_things():
    """A log cut short names fewer keys than the first run's; the folder shows the run wrote a new one."""
    runs = [run_from_log(1, 1, "seed-0.6.2-hs1-0.err"),
            RunRecord(2, 2, 0, 0.5, [f"jit_g-{'f' * 64}"], keys=_first_lines("seed-0.6.2-hs2-4.err", 40))]
    j = judge(runs)
    assert j.verdict == Verdict.REPRODUCED and "jit_g: a new key in run 2" in j.reason
    assert j.comparison.fewer == {}


def test_an_entry_no_run_computed_is_never_a_new_key_of_the_run_beside_it():
    """Issue 61 item 3: while run 2 ran, another of the cell's processes (the moved-folder run) wrote an
    entry-shaped file into the cell's folder. No run's account computed it, and run 2 ran beside another process:
    it is written by no run, said in the row, and the cell is clean. Where run 2 ran alone its process wrote it,
    and it is run 2's (the folder still outranks an account that names nothing)."""
    first, second = run_from_log(1, 1, "seed-0.6.2-hs1-0.err"), run_from_log(2, 2, "seed-0.6.2-hs2-4.err")
    planted = f"jit_planted-{'e' * 64}"
    second.new_entries = [f"{planted}-cache", f"{planted}-atime"]
    second.overlapped = True
    j = judge([first, second])
    assert j.verdict == Verdict.CLEAN, j.reason
    said = (f"{planted}: in the cache folder, written by no run (no run's recorder or JAX log computed it; it "
            "appeared while run 2 ran beside another of the harness's runs)")
    assert said in j.reason and said in j.inconsistencies and not j.untrusted_logs
    second.overlapped = False
    j = judge([first, second])
    assert j.verdict == Verdict.REPRODUCED and j.reason.startswith("jit_planted: a new key in run 2"), j.reason
