"""A cell as its program really runs (harness/verdicts/uncached.py), on JAX logs and start-up hook records
recorded from real releases (tests/fixtures/jax_logs): why nothing was cached, and what the program's
own thresholds would not write.

Recorded with `harness check tests/fixtures/as_it_runs/SCRIPT --runs 2` (the folder through the hook):
init_order.py on 0.5.0 (jax#25768: nothing is ever written) and 0.5.1 (fixed), docs_example.py on
0.4.31 with the harness's zero thresholds (`zeros`) and with `--cache-thresholds script` (`script`).
"""

from pathlib import Path

import pytest

from harness.results.document import read_cell
from harness.core.records import plain
from harness.core import jaxlog
from harness.verdicts.verdict import judge
from harness.verdicts.uncached import explain
from harness.core.jaxlog import Outcome
from harness.core.model import CellResult, CellSpec
from harness.core.kinds import NothingCached, Platform, ThresholdMode, Verdict
from harness.core.runs import RunRecord
from harness.evidence.script_settings import parse_record, with_script_cache
from harness.verdicts.judge import Tally

LOGS = Path(__file__).parents[1] / "fixtures" / "jax_logs"


def recorded_run(index: int, name: str) -> RunRecord:
    """A run as the runner records it: its log's keys, its hook record, the entries its log wrote."""
    log = jaxlog.parse((LOGS / f"{name}.err").read_text())
    record = LOGS / f"{name}.cache.jsonl"
    written = [k.key for k in log.with_outcome(Outcome.WRITTEN)]
    return RunRecord(index, index, 0, 0.5, sorted(written), keys=log if not log.empty else None,
                     script_cache=parse_record(record.read_text()) if record.exists() else None)


def cell_of(version: str, runs: list[RunRecord], mode: ThresholdMode) -> CellResult:
    """The cell as the runner finishes it: the tally's verdict, the script's settings, then explain()."""
    tally = Tally(len(runs))
    for run in runs:
        tally.add(run)
    cell = tally.cell(CellSpec(version, Platform.CPU, 8, None), [], {})
    return explain(with_script_cache(cell, mode))


def recorded_cell(script: str, version: str, mode: ThresholdMode = ThresholdMode.HARNESS,
                  recorded: str = "") -> CellResult:
    """`recorded`: which recording (`-zeros`, `-script`) where a script has several."""
    return cell_of(version, [recorded_run(i, f"{script}-{version}{recorded}-hs{i}") for i in (1, 2)], mode)


def test_init_order_on_0_5_0_is_never_clean_and_names_the_uninitialised_cache():
    cell = recorded_cell("init_order", "0.5.0")
    assert cell.verdict == Verdict.UNSUPPORTED
    assert cell.nothing_cached == NothingCached.UNINITIALISED
    assert cell.reason.startswith("nothing is cached, because JAX's cache was never initialised: a computation "
                                  "ran before the script set its folder (jax.config.update("
                                  "'jax_compilation_cache_dir', '/tmp/jax-25768-cache'))")
    assert cell.script_cache.uninitialised.startswith("jax.config.update('jax_compilation_cache_dir'")


def test_init_order_on_0_5_0_from_jaxs_log_alone():
    """Without the hook's record (a folder from the environment), JAX's own refusals say it had no cache."""
    runs = [recorded_run(i, f"init_order-0.5.0-hs{i}") for i in (1, 2)]
    for run in runs:
        run.script_cache = None
    cell = cell_of("0.5.0", runs, ThresholdMode.HARNESS)
    assert cell.nothing_cached == NothingCached.UNINITIALISED
    assert 'JAX: "cache is disabled/not initialized"' in cell.reason


def test_init_order_on_0_5_1_is_clean_though_its_first_computation_was_not_written():
    cell = recorded_cell("init_order", "0.5.1")
    refused = [k for k in cell.runs[0].keys.keys if k.outcome == Outcome.NOT_WRITTEN]
    assert refused and all(jaxlog.refused_for_no_cache(k.reason) for k in refused)  # made before the folder
    assert cell.verdict == Verdict.CLEAN, cell.reason
    assert cell.nothing_cached is None and cell.script_cache.uninitialised is None


def test_docs_example_measured_with_zeros_says_what_its_default_threshold_keeps_out():
    cell = recorded_cell("docs_example", "0.4.31", recorded="-zeros")
    assert cell.verdict == Verdict.CLEAN, cell.reason
    assert cell.as_you_run_it.startswith("as you run it, nothing is written: ")
    assert "jit_f in 0.03 s" in cell.as_you_run_it
    assert cell.as_you_run_it.endswith("below JAX's default 1 s threshold (jax_persistent_cache_min_compile_time_secs)")
    # The verdict's reason leads; the note follows, shortened to its head (report.md has it whole).
    assert cell.detail.startswith("jit_f: 1 key per run") and cell.as_you_run_it not in cell.detail
    assert cell.detail.endswith("; with the harness's cache settings (as you run it, nothing is written: its compiles are under "
        "JAX's thresholds; see report.md)")


def test_docs_example_as_it_runs_caches_nothing_because_of_its_threshold():
    """Every module under JAX's 1 s threshold as the program runs: measured (the same keys every run, never
    written), the finding is the headline: never `unsupported`, never "nothing measured" (issue 62, item 6)."""
    cell = recorded_cell("docs_example", "0.4.31", ThresholdMode.SCRIPT, "-script")
    assert cell.verdict == Verdict.NOT_CACHED, cell.reason
    assert cell.nothing_cached == NothingCached.THRESHOLDS
    assert cell.reason.startswith("as you run it, nothing is cached: every module compiles under JAX's default 1 s "
                                  "threshold (jit_convert_element_type in 0.04 s, "), cell.reason
    assert "jit_f in 0.03 s" in cell.reason
    assert "s lost per start; `jax_persistent_cache_min_compile_time_secs=0` would keep them" in cell.reason
    assert "nothing measured" not in cell.reason
    assert cell.as_you_run_it == ""  # measured as it runs: nothing differs from what was measured


def test_a_threshold_the_script_sets_is_yours():
    runs = [recorded_run(i, f"docs_example-0.4.31-zeros-hs{i}") for i in (1, 2)]
    line = ('{"kind": "setting", "option": "jax_persistent_cache_min_compile_time_secs", "api": '
            '"jax.config.update", "requested": 0.5, "applied": 0.0}\n')
    for run in runs:
        run.script_cache = parse_record(line)
    cell = cell_of("0.4.31", runs, ThresholdMode.HARNESS)
    assert "below your 0.5 s threshold" in cell.as_you_run_it


def test_modules_over_the_threshold_are_named_apart():
    runs = [recorded_run(i, f"docs_example-0.4.31-zeros-hs{i}") for i in (1, 2)]
    for k in runs[0].keys.keys:
        if k.module == "jit_f":
            k.compile_time_s = 2.5
    cell = cell_of("0.4.31", runs, ThresholdMode.HARNESS)
    assert cell.as_you_run_it.startswith("as you run it, 2 modules of 3 are never written: ")
    assert cell.as_you_run_it.endswith("jit_f compiles slower and is written")  # never a sentence cut at "would be"


def test_host_callbacks_alone_are_the_cause_when_nothing_else_is_compiled():
    runs = [recorded_run(i, f"host_callback-0.10.2-hs{i}") for i in (1, 2)]
    for run in runs:  # only the module that uses the callback
        run.keys.keys = [k for k in run.keys.keys if k.module == "jit_f"]
        run.new_entries = []
    cell = cell_of("0.10.2", runs, ThresholdMode.HARNESS)
    assert cell.nothing_cached == NothingCached.HOST_CALLBACKS and cell.verdict == Verdict.NOT_CACHED
    assert cell.reason.startswith("nothing is cached: jit_f uses a host callback; never written by JAX, so every "
                                  "fresh process compiles it again"), cell.reason


def test_a_release_before_the_cpu_cache_says_so_and_keeps_the_stop_note():
    runs = [RunRecord(i, i, 0, 0.5, []) for i in (1, 2)]
    tally = Tally(8, stop_when_reproduced=True)
    for run in runs:
        tally.add(run)
    cell = explain(tally.cell(CellSpec("0.4.25", Platform.CPU, 8, None), [], {}))
    assert cell.nothing_cached == NothingCached.NO_PERSISTENT_CACHE
    assert cell.reason.startswith("nothing is cached, because JAX 0.4.25 has no persistent cache on CPU "
                                  "(it starts at 0.4.26): nothing measured; stopped after 2 of 8 runs")


@pytest.mark.parametrize("setting, cause", [
    ('{"kind": "setting", "option": "jax_enable_compilation_cache", "api": "jax.config.update", '
     '"requested": false, "applied": false}', NothingCached.DISABLED),
    ('{"kind": "final", "cache_path": "/elsewhere", "target": "/cell"}', NothingCached.ELSEWHERE),
])
def test_what_the_script_did_is_the_cause(setting, cause):
    runs = [RunRecord(i, i, 0, 0.5, [], script_cache=parse_record(setting + "\n")) for i in (1, 2)]
    cell = cell_of("0.10.2", runs, ThresholdMode.HARNESS)
    assert cell.verdict == Verdict.UNSUPPORTED and cell.nothing_cached == cause
    assert cell.reason.startswith("nothing is cached")


def test_a_cell_that_cached_something_has_no_cause_and_the_json_round_trips():
    cell = recorded_cell("init_order", "0.5.0")
    again = read_cell(plain(cell))
    assert again.nothing_cached == NothingCached.UNINITIALISED and again.reason == cell.reason
    clean = recorded_cell("docs_example", "0.4.31", recorded="-zeros")
    assert read_cell(plain(clean)).as_you_run_it == clean.as_you_run_it
    assert judge(clean.runs).verdict == Verdict.CLEAN


def test_a_failure_is_not_led_by_the_thresholds():
    runs = [recorded_run(i, f"docs_example-0.4.31-zeros-hs{i}") for i in (1, 2)]
    runs.append(RunRecord(3, 3, 1, 0.5, [], reason="exit code 1: ValueError: boom"))
    cell = cell_of("0.4.31", runs, ThresholdMode.HARNESS)
    assert cell.verdict == Verdict.ERROR and cell.as_you_run_it == "" and cell.detail == cell.reason


def test_as_it_runs_a_module_below_its_threshold_is_told_beside_those_written():
    """--cache-thresholds script: JAX refused the fast modules and wrote the slow one."""
    runs = [recorded_run(i, f"docs_example-0.4.31-script-hs{i}") for i in (1, 2)]
    for run in runs:  # run 1 wrote jit_f, run 2 loaded it
        f = next(k for k in run.keys.keys if k.module == "jit_f")
        f.outcome, f.reason, f.compile_time_s = (Outcome.WRITTEN, "", 1.5) if run.index == 1 else (Outcome.HIT, "", None)
        run.new_entries = [f.key] if run.index == 1 else []
    cell = cell_of("0.4.31", runs, ThresholdMode.SCRIPT)
    # The finding, as the headline (a TPU's case: issue 62, item 6): not `unsupported`, nothing said twice.
    assert cell.verdict == Verdict.NOT_CACHED and cell.nothing_cached == NothingCached.THRESHOLDS
    assert cell.reason.startswith("as you run it, 2 modules of 3 are never written: "), cell.reason
    assert "; jit_f compiles slower and is written; " in cell.reason
    assert "s lost per start; `jax_persistent_cache_min_compile_time_secs=0` would keep them" in cell.reason
    assert cell.as_you_run_it == "" and cell.detail == cell.reason


def test_a_silenced_log_under_the_scripts_own_threshold_names_it_as_the_likely_cause():
    """--cache-thresholds script, JAX's log silenced by the script (logging.disable): no compile time to
    go on, but the 5 s minimum it set was in force; said, without claiming it as the certain cause."""
    setting = ('{"kind": "setting", "option": "jax_persistent_cache_min_compile_time_secs", '
               '"api": "jax.config.update", "requested": 5.0, "applied": 5.0}\n')
    runs = [RunRecord(i, i, 0, 0.5, [], script_cache=parse_record(setting)) for i in (1, 2)]
    cell = cell_of("0.5.1", runs, ThresholdMode.SCRIPT)
    assert cell.verdict == Verdict.UNSUPPORTED and cell.nothing_cached == NothingCached.UNKNOWN
    assert cell.reason.startswith("runs succeeded but the cache stayed empty: nothing measured (JAX logged no "
                                  "compile times to tell why; your 5 s threshold "
                                  "(jax_persistent_cache_min_compile_time_secs) was in force")
    zeroed = ('{"kind": "setting", "option": "jax_persistent_cache_min_compile_time_secs", '
              '"api": "jax.config.update", "requested": 5.0, "applied": 0.0}\n')
    runs = [RunRecord(i, i, 0, 0.5, [], script_cache=parse_record(zeroed)) for i in (1, 2)]
    assert "in force" not in cell_of("0.5.1", runs, ThresholdMode.HARNESS).reason


def test_a_folder_set_in_os_environ_after_import_jax_is_the_cause():
    setting = ('{"kind": "setting", "option": "jax_compilation_cache_dir", "api": "os.environ after import jax", '
               '"requested": "/mine", "applied": "/mine", "cache_then": {"initialized": false, "path": null}}\n')
    runs = [RunRecord(i, i, 0, 0.5, [], script_cache=parse_record(setting)) for i in (1, 2)]
    cell = cell_of("0.5.1", runs, ThresholdMode.HARNESS)
    assert cell.verdict == Verdict.UNSUPPORTED and cell.nothing_cached == NothingCached.SET_TOO_LATE
    assert cell.reason.startswith("nothing is cached, because the script set JAX_COMPILATION_CACHE_DIR=/mine in "
                                  "os.environ after importing jax")
    assert any("after importing jax: only processes it starts read it" in n for n in cell.script_cache.notes)


def test_a_script_that_sets_no_folder_is_told_that_first_not_a_threshold():
    """no_folder.py sets no cache folder: as its author runs it JAX keeps no cache at all, so that leads;
    JAX's default threshold comes after, for a run given JAX_COMPILATION_CACHE_DIR as the harness gave it."""
    cell = recorded_cell("no_folder", "0.4.31", recorded="-zeros")
    assert cell.verdict == Verdict.CLEAN, cell.reason
    assert cell.as_you_run_it.startswith(
        "as you run it, nothing is cached: the script sets no cache folder, so JAX keeps no persistent cache "
        "unless JAX_COMPILATION_CACHE_DIR is set (the harness set it to measure); even with it, jit_f compiles in ")
    assert cell.as_you_run_it.endswith("below JAX's default 1 s threshold (jax_persistent_cache_min_compile_time_secs)")
    assert cell.detail == ("jit_f: 1 key per run, the same in all 2 runs; with the harness's cache settings "
                           "(as you run it, nothing is cached: the script sets no cache folder; see report.md)")


def test_a_script_that_sets_no_folder_caches_nothing_as_written_because_it_has_no_cache():
    cell = recorded_cell("no_folder", "0.4.31", ThresholdMode.SCRIPT, "-script")
    assert cell.verdict == Verdict.NOT_CACHED  # measured: the same keys every run, each refused
    assert cell.nothing_cached == NothingCached.UNINITIALISED
    assert cell.reason.startswith("as you run it, nothing is cached: the script sets no cache folder, so JAX keeps "
                                  "no persistent cache unless JAX_COMPILATION_CACHE_DIR is set")
    assert "; even with it, every module compiles under JAX's default 1 s threshold (" in cell.reason
    assert cell.as_you_run_it == ""


def test_a_folder_set_in_code_is_not_told_as_no_folder():
    for cell in (recorded_cell("docs_example", "0.4.31", recorded="-zeros"),
                 recorded_cell("docs_example", "0.4.31", ThresholdMode.SCRIPT, "-script")):
        assert "sets no cache folder" not in cell.as_you_run_it + cell.reason


def test_modules_compiled_before_the_folder_was_set_are_told_under_that_reason_not_the_threshold():
    """init_order_default_threshold.py on 0.5.1: jnp.ones runs before the folder is set, so JAX refuses its
    modules ("cache is disabled/not initialized") whatever the threshold; jit_f and the sum, compiled
    after, are the ones JAX's default 1 s threshold keeps out."""
    cell = recorded_cell("init_order_default_threshold", "0.5.1", recorded="-zeros")
    assert cell.verdict == Verdict.CLEAN, cell.reason
    told = cell.as_you_run_it
    threshold_part, _, early_part = told.partition("below JAX's default 1 s threshold")
    assert threshold_part.startswith("as you run it, nothing is written: ") and "jit_f" in threshold_part
    assert "jit_broadcast_in_dim" not in threshold_part and "jit_convert_element_type" not in threshold_part
    assert early_part.startswith(" (jax_persistent_cache_min_compile_time_secs); jit_broadcast_in_dim, "
                                 "jit_convert_element_type were compiled before the script set its folder, when JAX "
                                 "had no cache yet, and are never written whatever the threshold (JAX: "
                                 '"cache is disabled/not initialized")')
