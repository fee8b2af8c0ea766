"""What ran, recorded and shown: the devices JAX reported in a cell's first run, in results.json, the table's
platform column and one progress line when they are not what the cell asked for (fake device facts; the real ones
are tests/integration/test_local_environment_integration.py's)."""

import msgspec

from harness.cli.console import ConsoleProgress
from harness.core.kinds import Platform, Verdict
from harness.core.model import CellResult, CellSpec
from harness.core.platforms import devices_differ, open_cost_line
from harness.core.runs import DeviceFacts, RunRecord, read_device_facts
from harness.report.table import render as version_table

TPU = DeviceFacts("tpu", "TPU v5 lite", 1, "PJRT C API\nTFRT TPU v5 lite\nBuilt on Jun 17 2026")
CPU8 = DeviceFacts("cpu", "cpu", 8, "cpu")


def _cell(platform: Platform, count: int, devices: DeviceFacts | None) -> CellResult:
    runs = [RunRecord(index=1, seed=1, exit_code=0, duration_s=14.0, new_entries=[], devices=devices),
            RunRecord(index=2, seed=2, exit_code=0, duration_s=13.0, new_entries=[])]
    return CellResult(CellSpec("0.10.2", platform, count, None), Verdict.CLEAN, runs=runs)


def test_the_label_names_the_device_kind_and_count():
    assert TPU.label == "TPU v5 lite ×1" and CPU8.label == "cpu ×8"
    assert TPU.version_line == "TFRT TPU v5 lite"


def test_the_table_shows_what_jax_saw_and_old_cells_what_they_asked():
    table = version_table([_cell(Platform.AUTO, 8, TPU)])
    assert "TPU v5 lite ×1" in table and "autox8" not in table
    assert "cpux8" in version_table([_cell(Platform.CPU, 8, None)])  # results written before: as they were


def test_a_cell_says_when_jax_saw_other_devices():
    assert devices_differ(Platform.AUTO, 8, TPU) == "asked for 8, JAX saw 1 (TPU v5 lite ×1)"
    assert devices_differ(Platform.CPU, 8, TPU).startswith("asked for cpu ×8, JAX saw TPU v5 lite ×1")
    assert devices_differ(Platform.TPU, 1, TPU) == "" and devices_differ(Platform.CPU, 8, CPU8) == ""
    assert devices_differ(Platform.CUDA, 8, DeviceFacts("gpu", "NVIDIA H100 80GB HBM3", 8)) == ""


def test_the_plan_is_said_once_run_1_shows_a_run_s_cost_on_an_accelerator():
    assert open_cost_line(Platform.TPU, TPU, 12.4, 6) == "each run opens the TPU: ~12 s a run; 6 runs ≈ 74 s"
    assert open_cost_line(Platform.AUTO, TPU, 12.0, 6).startswith("each run opens the TPU v5 lite")
    assert open_cost_line(Platform.CPU, CPU8, 3.0, 11) == "" and open_cost_line(Platform.AUTO, None, 3.0, 11) == ""
    # a GPU's: what run 1 cost (CUDA's start, JAX's preallocation, XLA's autotuning of its first compiles)
    h200 = DeviceFacts("gpu", "NVIDIA H200", 1, "PJRT C API\ncuda 13000")
    assert open_cost_line(Platform.CUDA, h200, 8.4, 6) == "each run opens the GPUs: ~8 s a run; 6 runs ≈ 50 s"
    assert open_cost_line(Platform.AUTO, h200, 8.4, 6).startswith("each run opens the NVIDIA H200: ~8 s")


def test_the_progress_says_the_devices_and_the_plan(capsys):
    progress = ConsoleProgress()
    spec = CellSpec("0.10.2", Platform.AUTO, 8, None)
    progress.run_finished(spec, RunRecord(index=1, seed=1, exit_code=0, duration_s=14.0, new_entries=[],
                                          devices=TPU), 6)
    err = capsys.readouterr().err
    assert "devices: asked for 8, JAX saw 1 (TPU v5 lite ×1)" in err
    assert "plan: each run opens the TPU v5 lite: ~14 s a run; 6 runs ≈ 84 s" in err


def test_the_record_round_trips_and_a_bad_one_is_none():
    text = msgspec.json.encode(TPU).decode()
    assert read_device_facts(text) == TPU
    assert read_device_facts("") is None and read_device_facts("{not json") is None
    assert read_device_facts('{"platform": "tpu"}') is None
    cell = _cell(Platform.TPU, 1, TPU)
    again = msgspec.json.decode(msgspec.json.encode(cell), type=CellResult)
    assert again.devices == TPU
